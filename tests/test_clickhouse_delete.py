"""Deleting on ClickHouse (``toollens delete``): a trace and an import, each an insert (no
mutation), leave the store answering exactly as SQLite does after the same deletions — on the
2-shard cluster and on chdb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingest.cli import app

runner = CliRunner()


def _run(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _batches(realdata: Path) -> list[list[str]]:
    """Two imports: Langfuse exports, then OpenAI legacy files (the trace deleted: the first
    one ``toollens pairs`` lists)."""
    return [
        sorted(str(p) for p in (realdata / folder).iterdir())
        for folder in ("langfuse-export", "openai-legacy")
    ]


def _delete_and_read(db: str, realdata: Path, trace: str) -> dict[str, str]:
    for batch in _batches(realdata):
        _run("import", "--db", db, *batch)
    return {
        "trace": _run("delete", "--db", db, "--trace", trace, "--yes"),
        "import": _run("delete", "--db", db, "--import", "2", "--yes"),
        "again": _run("delete", "--db", db, "--import", "2", "--yes"),
        "summary": _run("summary", "--json", "--db", db),
        "pairs": _run("pairs", "--format", "csv", "--db", db),
    }


@pytest.fixture(scope="module")
def on_sqlite(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    db = str(tmp_path_factory.mktemp("sqlite") / "store.db")
    for batch in _batches(realdata):
        _run("import", "--db", db, *batch)
    trace = json.loads(_run("pairs", "--db", db).splitlines()[0])["trace"]
    db2 = str(tmp_path_factory.mktemp("sqlite") / "store.db")
    return {"trace_id": trace, **_delete_and_read(db2, realdata, trace)}


def test_deleting_a_trace_and_an_import_answers_as_sqlite(
    clickhouse_db: str, realdata: Path, on_sqlite: dict[str, str]
) -> None:
    found = _delete_and_read(clickhouse_db, realdata, on_sqlite["trace_id"])
    assert found["trace"] == on_sqlite["trace"]
    assert found["trace"] == (
        f"trace {on_sqlite['trace_id']}: traces 1, annotations 0, error_streaks 0, findings 0, "
        "messages 5, tool_calls 1, tool_results 1, trace_updates 0, trace_versions 0\n"
        "Deleted. `toollens vacuum` gives the space back to the disk.\n"
    )
    assert found["import"] == on_sqlite["import"]
    assert found["import"].startswith(
        "import 2: imports 1, import_files 15, rejected_records 0, source_files 0, traces 15, "
    )
    assert found["again"] == on_sqlite["again"] == "import 2: nothing to delete.\n"
    assert found["summary"] == on_sqlite["summary"]
    assert found["pairs"] == on_sqlite["pairs"]
