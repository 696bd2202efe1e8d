"""The dashboard freezes what its process holds once, after the first page run
(``dashboard.heap``): later runs leave the collector to their own objects."""

from __future__ import annotations

import subprocess
import sys

import pytest
from dbfixture import OpenPage, fixture_store

from dashboard import heap


def test_the_first_page_run_freezes_the_heap_and_later_runs_do_not(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    frozen: list[str] = []
    monkeypatch.setattr(heap, "_frozen", False)
    monkeypatch.setattr(heap.gc, "freeze", lambda: frozen.append("freeze"))
    at = open_page(fixture_store(sqlite_url))
    assert frozen == ["freeze"]
    at.run()
    at.run()
    assert frozen == ["freeze"]


def test_freezing_moves_the_live_objects_out_of_the_collectors_reach_once() -> None:
    script = (
        "import gc; from dashboard import heap; "
        "print(gc.get_freeze_count() == 0, heap.freeze_startup_heap(), "
        "gc.get_freeze_count() > 1000, heap.freeze_startup_heap())"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "True", "True", "False"]
