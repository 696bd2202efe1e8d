"""The Makefile's first-ten-minutes targets: ``make help`` only prints, ``make demo`` says the
next commands and the demo store's path before the dashboard takes the terminal."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _make(*args: str) -> list[str]:
    result = subprocess.run(
        ["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    assert result.stderr == ""
    return result.stdout.splitlines()


def test_make_help_runs_nothing_it_names() -> None:
    """The backticks reach the terminal: inside double quotes the shell would run them."""
    assert all(line.startswith("echo '") for line in _make("-n", "help"))
    shown = _make("help")
    assert "make bench-pairs     seconds of `toollens pairs` on the bench store (MESSAGES, DB)" in (
        shown
    )
    assert (
        'make test-fast  the tests without a browser or PostgreSQL (pytest -m "not browser and '
        'not pg")'
    ) in shown


def test_make_demo_says_the_next_commands_before_it_serves() -> None:
    planned = _make("-n", "demo", "DEMO_DB=.demo/x.db")
    summary = planned.index(".venv/bin/toollens summary --db .demo/x.db")
    serve = planned.index(".venv/bin/toollens serve --db .demo/x.db --port 8501")
    said = [line.removeprefix("echo ").strip("'") for line in planned[summary + 1 : serve]]
    assert said == [
        "",
        "The demo store is .demo/x.db. In another terminal, from this folder:",
        "  . .venv/bin/activate    (puts toollens on the PATH of that shell)",
        "  toollens summary --db .demo/x.db",
        "  toollens pairs --db .demo/x.db --format csv > pairs.csv",
        "  toollens import --db .demo/x.db YOUR_TRACES.jsonl",
        "  export TOOLLENS_DB=.demo/x.db    (then --db can be left out)",
        "The dashboard starts now on http://127.0.0.1:8501 (Ctrl-C stops it; make serve opens "
        "it again).",
        "",
    ]
