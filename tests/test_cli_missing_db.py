"""A mistyped ``--db`` is an error, except for the commands that create a store."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingest.cli import app

runner = CliRunner()


@pytest.mark.parametrize("command", ["summary", "pairs", "reanalyze", "serve"])
def test_a_missing_sqlite_file_is_a_one_line_error(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "typo.db"
    result = runner.invoke(app, [command, "--db", str(missing)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: no database at {missing} (check --db / TOOLLENS_DB; "
        f"`toollens import --db {missing} FILE…` creates one)\n"
    )
    assert not missing.exists()


def test_import_creates_the_store(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_text(
        '{"id": "a", "messages": [{"role": "user", "content": "hi"},'
        ' {"role": "assistant", "content": "hello"}]}\n'
    )
    store = tmp_path / "new.db"
    assert runner.invoke(app, ["import", "--db", str(store), str(traces)]).exit_code == 0
    assert store.exists()
    assert runner.invoke(app, ["summary", "--db", str(store)]).exit_code == 0
