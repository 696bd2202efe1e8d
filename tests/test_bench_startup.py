"""``benchmarks.startup_bench``: one ``toollens summary`` in a process of its own, by the code
of a given tree; a command that fails is an error, not a time."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbfixture import build_fixture

from benchmarks import startup_bench
from benchmarks.ingest_bench import REPO
from db.engine import make_engine


def test_one_summary_is_timed_by_the_trees_code(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    engine = make_engine(f"sqlite:///{store}")
    build_fixture(engine)
    engine.dispose()
    assert startup_bench.summary_seconds(REPO, str(store)) > 0


def test_a_failing_summary_raises(tmp_path: Path) -> None:
    not_a_store = tmp_path / "notes.db"
    not_a_store.write_text("not a database\n" * 100)
    with pytest.raises(RuntimeError, match="toollens summary failed"):
        startup_bench.summary_seconds(REPO, str(not_a_store))
