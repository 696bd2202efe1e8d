"""`toollens copy`: a whole store moved between SQLite and PostgreSQL, both ways, with the real
traces of ../shared/realdata (plus a trace update, an annotation, a rejected record and a second
import, so every kind of row is there), interrupted and resumed, and refused where it must be."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import fresh_pg_schema
from typer.testing import CliRunner

from db.bulk.copy import STATE, CopyInterrupted, CopyRefused, differences
from db.bulk.copy_across import copy_store
from db.engine import make_engine
from db.migrate import downgrade, head_revision
from db.queries.search import search_content
from db.queries.summary import summarize
from db.schema import Base, TraceRow
from db.writes.annotations import add_annotation
from db.writes.deletion import delete_rows, traces_by_id
from ingest.cli import app
from ingest.importing.pipeline import import_paths
from ingest.input.paths import expand

pytestmark = pytest.mark.realdata

runner = CliRunner()

SESSION = "claude-code/069508a5-1193-487c-a9b5-a6f5f3ae4f98.jsonl"

#: Rows per table of the source store (:func:`build_source`).
ROWS = {
    "imports": 2,
    "rollup_activity": 1055,
    "rollup_activity_days": 686,
    "rollup_calls": 762,
    "rollup_duration_buckets": 2185,
    "rollup_durations": 3250,
    "rollup_findings": 227,
    "rollup_fingerprints": 532,
    "rollup_input_shares": 444,
    "rollup_results": 827,
    "rollup_signatures": 602,
    "rollup_size_buckets": 1766,
    "rollup_sizes": 4503,
    "rollup_state": 1,
    "rollup_traces": 1456,
    "import_files": 48,
    "rejected_records": 1,
    "source_files": 48,
    "traces": 245,
    "annotations": 1,
    "error_streaks": 36,
    "findings": 526,
    "messages": 8564,
    "tool_calls": 2320,
    "tool_results": 2306,
    "trace_updates": 1,
    "trace_versions": 1,
}


def build_source(url: str, realdata: Path, folder: Path) -> None:
    """The real traces in two imports: the first holds the first 30 lines of a Claude Code
    session and a line that is no trace (a rejected record), the second every real file, whose
    full session replaces the short one (a trace update); then a reviewer's note."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (realdata / SESSION).read_bytes().splitlines(keepends=True)
    short = folder / "session-start.jsonl"
    short.write_bytes(b"".join(lines[:30]))
    bad = folder / "broken.jsonl"
    bad.write_bytes(b'{"role": "user", "content": "hello"\n')
    engine = make_engine(url)
    first = import_paths(engine, [short, bad])
    second = import_paths(engine, expand([realdata]).files)
    assert (first.traces, first.rejected, second.updated) == (1, 1, 1)
    with engine.connect() as conn:
        trace_id = conn.execute(sa.select(sa.func.min(TraceRow.id))).scalar_one()
    add_annotation(engine, trace_id, label="tool-bug", note="kept across engines", author="mia")
    engine.dispose()


def table_counts(url: str) -> dict[str, int]:
    engine = make_engine(url, migrate=False)
    with engine.connect() as conn:
        counts = {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in Base.metadata.sorted_tables
        }
    engine.dispose()
    return counts


@pytest.fixture(scope="module")
def sqlite_source(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("sqlite-source")
    url = f"sqlite:///{folder / 'source.db'}"
    build_source(url, realdata, folder / "files")
    return url


@pytest.fixture(scope="module")
def pg_source(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fresh_pg_schema() as url:
        build_source(url, realdata, tmp_path_factory.mktemp("pg-source"))
        yield url


def expected_table(rows: dict[str, int]) -> str:
    width = max(map(len, rows))
    lines = [f"{'table':<{width}}  {'source':>12}  {'target':>12}"]
    lines += [f"{name:<{width}}  {n:>12,}  {n:>12,}" for name, n in rows.items()]
    return "\n".join(lines)


def search_hits(url: str, phrase: str) -> int:
    engine = make_engine(url)
    page = search_content(engine, phrase)
    engine.dispose()
    return page.total


def test_the_source_store_holds_every_kind_of_row(sqlite_source: str) -> None:
    assert table_counts(sqlite_source) == ROWS


def test_a_copy_from_sqlite_to_postgresql_prints_every_table_and_an_identical_summary(
    sqlite_source: str, pg_url: str
) -> None:
    result = runner.invoke(app, ["copy", "--from", sqlite_source, "--to", pg_url])
    assert result.exit_code == 0, result.output
    assert expected_table(ROWS) in result.stdout
    assert "copied 32,395 rows in " in result.stdout
    assert result.stdout.endswith("summary: identical\n")
    assert table_counts(pg_url) == ROWS
    assert summarize(make_engine(pg_url)) == summarize(make_engine(sqlite_source))
    engine = make_engine(pg_url)
    with engine.connect() as conn:
        assert not sa.inspect(conn).has_table(STATE.name)
        notes = conn.execute(sa.text("SELECT trace_id, note FROM annotations")).all()
        first_trace = conn.execute(sa.select(sa.func.min(TraceRow.id))).scalar_one()
    assert notes == [(first_trace, "kept across engines")]
    # The sequences were moved past the copied ids: a new note gets the next id.
    note = add_annotation(engine, first_trace, label="tool-bug", note="after", author="ana")
    engine.dispose()
    assert note.id == 2
    assert search_hits(pg_url, "permission denied") == search_hits(
        sqlite_source, "permission denied"
    )


def test_a_copy_from_postgresql_to_sqlite_prints_every_table_and_an_identical_summary(
    pg_source: str, tmp_path: Path, realdata: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    result = runner.invoke(app, ["copy", "--from", pg_source, "--to", target])
    assert result.exit_code == 0, result.output
    assert expected_table(ROWS) in result.stdout
    assert result.stdout.endswith("summary: identical\n")
    assert table_counts(target) == ROWS
    # The content search of the SQLite copy indexes every copied message and call.
    assert search_hits(target, "permission denied") == search_hits(pg_source, "permission denied")
    engine = make_engine(target)
    with engine.connect() as conn:
        indexed = conn.exec_driver_sql("SELECT count(*) FROM messages_search_docsize").scalar()
    # The copy keeps what an import compares with: the real session read again is unchanged.
    again = import_paths(engine, [realdata / SESSION], incremental=False)
    engine.dispose()
    assert indexed == ROWS["messages"]
    assert (again.traces, again.unchanged) == (0, 1)


@pytest.mark.parametrize("direction", ["sqlite->postgresql", "postgresql->sqlite"])
def test_an_interrupted_copy_continues_where_it_stopped(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if direction == "sqlite->postgresql":
        source = request.getfixturevalue("sqlite_source")
        target = request.getfixturevalue("pg_url")
    else:
        source = request.getfixturevalue("pg_source")
        target = f"sqlite:///{tmp_path / 'copy.db'}"
    with pytest.raises(CopyInterrupted):
        copy_store(source, target, batch_rows=1000, stop_after_batches=37)
    engine = make_engine(target, migrate=False)
    with engine.connect() as conn:
        state = {r.table_name: (r.rows, r.done) for r in conn.execute(sa.select(STATE))}
    engine.dispose()
    # 37 batches of at most 1,000 rows: 34 for the tables before messages, 3 of messages.
    assert sum(rows for rows, _ in state.values()) == 22_203
    assert state["traces"] == (245, True)
    assert state["messages"] == (3000, False)
    assert state["tool_calls"] == (0, False)
    assert table_counts(target)["messages"] == 3000
    result = runner.invoke(app, ["copy", "--from", source, "--to", target, "--batch-rows", "700"])
    assert result.exit_code == 0, result.output
    assert "resumed: 22,203 rows had been copied before" in result.stdout
    assert "copied 10,192 rows in " in result.stdout
    assert expected_table(ROWS) in result.stdout
    assert result.stdout.endswith("summary: identical\n")


def test_a_killed_copy_process_is_continued_by_running_it_again(
    sqlite_source: str, pg_url: str
) -> None:
    command = [sys.executable, "-m", "ingest.cli", "copy", "--from", sqlite_source, "--to", pg_url]
    process = subprocess.Popen(
        [*command, "--batch-rows", "50"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    probe = sa.create_engine(pg_url)
    copied = 0
    deadline = time.monotonic() + 120
    while copied < 500 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
        with probe.connect() as conn:
            if sa.inspect(conn).has_table(STATE.name):
                copied = conn.execute(
                    sa.select(STATE.c.rows).where(STATE.c.table_name == "messages")
                ).scalar_one()
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    probe.dispose()
    assert 500 <= copied < ROWS["messages"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "resumed: " in result.stdout
    assert expected_table(ROWS) in result.stdout
    assert result.stdout.endswith("summary: identical\n")


def test_a_target_holding_data_is_refused_in_one_line(sqlite_source: str, tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    assert runner.invoke(app, ["copy", "--from", sqlite_source, "--to", target]).exit_code == 0
    result = runner.invoke(app, ["copy", "--from", sqlite_source, "--to", target])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: the target at {tmp_path / 'copy.db'} already holds data (table imports): "
        "copy into an empty store\n"
    )


def test_a_target_at_another_schema_is_refused_in_one_line(
    sqlite_source: str, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(target)
    downgrade(engine, "0027")
    engine.dispose()
    result = runner.invoke(app, ["copy", "--from", sqlite_source, "--to", target])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: the target at {tmp_path / 'old.db'} is at schema 0027, the source at "
        f"{head_revision()}: both must be at the same schema (copy into an empty store)\n"
    )


def test_an_unfinished_copy_from_another_store_is_refused(
    sqlite_source: str, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    with pytest.raises(CopyInterrupted):
        copy_store(sqlite_source, target, stop_after_batches=1)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    make_engine(other).dispose()
    with pytest.raises(CopyRefused) as refused:
        copy_store(other, target)
    source_file = sqlite_source.removeprefix("sqlite:///")
    assert str(refused.value) == (
        f"the target at {tmp_path / 'copy.db'} holds an unfinished copy from {source_file}: "
        f"continue it with --from {source_file}, or copy into another empty store"
    )


def test_a_source_written_during_the_copy_shows_in_the_counts_and_the_summary(
    sqlite_source: str, tmp_path: Path
) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    copy_store(sqlite_source, source)
    engine = make_engine(source)
    with engine.connect() as conn:
        last = conn.execute(sa.select(sa.func.max(TraceRow.id))).scalar_one()

    def delete_one_trace_once_traces_are_copied(table: str, _rows: int) -> None:
        if table == "traces":
            delete_rows(engine, traces_by_id([last]))

    result = copy_store(
        source, f"sqlite:///{tmp_path / 'copy.db'}",
        progress=delete_one_trace_once_traces_are_copied,
    )  # fmt: skip
    engine.dispose()
    assert result.counts["traces"] == (244, 245)
    assert not result.counts_match
    assert "traces: 244 → 245" in result.summary_differences


def test_differences_name_each_differing_value_by_its_path() -> None:
    source = {"traces": 3, "status": {"error": 1, "success": 2}, "loops": {"k": 3}}
    target = {"traces": 3, "status": {"error": 2, "success": 2}, "tokens": 7}
    assert differences(source, target) == [
        "loops: only in the source",
        "status.error: 1 → 2",
        "tokens: only in the target",
    ]
