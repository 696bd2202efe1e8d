"""Worker processes analyze and write batches: exactly what an in-process import stores, on both
databases; repeated traces judged in input order; a failing batch fails the import, no hang."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from benchmarks.workload import generate_traces, write_workload
from db import session as session_module
from db.engine import make_engine
from db.schema import Base, ImportRun, TraceRow
from ingest import formats
from ingest.importing import batches, pipeline


def _stored(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every stored row, typed (JSON decoded, datetimes parsed), with its trace named by its
    dedupe key instead of its id (PostgreSQL batches write concurrently, so ids differ), in a
    content order; the traces without their ids and import time."""
    engine = make_engine(url)
    traces = Base.metadata.tables["traces"]
    stored: dict[str, list[tuple[object, ...]]] = {}
    with engine.connect() as conn:
        for table in ("traces", "messages", "tool_calls", "tool_results", "findings"):
            columns = [
                traces.c.dedupe_key if c.name == "trace_id" else c
                for c in Base.metadata.tables[table].c
                if c.name not in ("id", "imported_at")
            ]
            query = sa.select(*columns)
            if table != "traces":
                query = query.join(traces, traces.c.id == Base.metadata.tables[table].c.trace_id)
            stored[table] = sorted((tuple(row) for row in conn.execute(query)), key=repr)
    engine.dispose()
    return stored


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small batches, so that several are in flight at once and must be written in order.
    monkeypatch.setattr(batches, "BATCH_MESSAGES", 300)


@pytest.mark.usefixtures("small_batches")
def test_workers_store_exactly_what_an_in_process_import_stores(
    tmp_path: Path, db_url: str, sqlite_url: str
) -> None:
    path = tmp_path / "w.jsonl"
    stats = write_workload(path, 1_500, seed=9, invalid_arguments=0.02)
    in_process_url = sqlite_url.replace("toollens.db", "in-process.db")
    for workers, url in ((0, in_process_url), (2, db_url)):
        engine = make_engine(url)
        summary = pipeline.import_paths(engine, [path], workers=workers)
        engine.dispose()
        assert (summary.traces, summary.messages, summary.rejected) == (stats.traces, 1_500, 0)
    in_process, pooled = _stored(in_process_url), _stored(db_url)
    assert len(pooled["messages"]) == 1_500
    assert len(pooled["tool_results"]) == stats.tool_messages
    assert len(pooled["traces"]) == stats.traces
    assert pooled == in_process
    engine = make_engine(db_url)
    with engine.connect() as conn:
        query = "SELECT count(*) FROM tool_calls WHERE NOT args_valid AND arguments IS NULL"
        assert conn.exec_driver_sql(query).scalar_one() == 14
        # Trace ids follow the input order, though PostgreSQL batches commit in any order.
        lines = conn.exec_driver_sql("SELECT source_line FROM traces ORDER BY id").scalars().all()
    engine.dispose()
    assert lines == list(range(1, stats.traces + 1))


def test_workers_finish_the_deferred_records_of_every_format_as_one_process_reads_them(
    tmp_path: Path, sqlite_url: str
) -> None:
    # Every golden case: conversation formats and one-trace-per-record formats (Langfuse,
    # ToolBench) defer records to the workers; Claude Code sessions are parsed in the parent.
    golden = sorted(Path(__file__).parent.glob("golden/*/*/input.json*"))
    names = [f"{p.parent.parent.name}/{p.parent.name}/{p.name}" for p in golden]
    urls = [sqlite_url.replace("toollens.db", f"{w}.db") for w in (0, 2)]
    for workers, url in zip((0, 2), urls, strict=True):
        engine = make_engine(url)
        summary = pipeline.import_paths(engine, golden, workers=workers, display_names=names)
        engine.dispose()
        assert (summary.files, summary.rejected) == (len(golden), 0)
    in_process, pooled = (_stored(url) for url in urls)
    assert pooled == in_process
    engine = make_engine(urls[1])
    with engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT DISTINCT format FROM traces").scalars().all()
    engine.dispose()
    assert sorted(stored) == sorted(formats.format_names())


@pytest.mark.usefixtures("small_batches")
def test_a_repeat_in_a_later_batch_is_the_one_recognized_as_unchanged(
    tmp_path: Path, db_url: str
) -> None:
    traces = list(generate_traces(1_200, seed=5))
    lines = [orjson.dumps(t) for t in traces]
    lines.append(lines[0])  # the first trace again, many batches later
    path = tmp_path / "dup.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    engine = make_engine(db_url)
    summary = pipeline.import_paths(engine, [path], workers=2)
    with engine.connect() as conn:
        first_lines = conn.execute(sa.select(sa.func.min(TraceRow.source_line))).scalar_one()
        stored = conn.execute(sa.select(sa.func.count()).select_from(TraceRow)).scalar_one()
    engine.dispose()
    assert (summary.traces, summary.unchanged, summary.records) == (len(traces), 1, len(lines))
    assert (summary.records_imported, summary.records_unchanged) == (len(traces), 1)
    assert (stored, first_lines) == (len(traces), 1)


@pytest.mark.usefixtures("small_batches")
def test_a_batch_that_fails_to_write_fails_the_import_without_hanging(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.jsonl"
    write_workload(path, 1_500, seed=2)
    real_write = session_module.write_traces

    def failing_later_write(engine: Any, import_id: int, rows: Any, ids: Any = None) -> Any:
        # Runs in the forked workers, which inherit this patch.
        if rows and rows[0].trace.source_line > 30:
            raise RuntimeError("disk on fire")
        return real_write(engine, import_id, rows, ids)

    monkeypatch.setattr(session_module, "write_traces", failing_later_write)
    engine = make_engine(db_url)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            pipeline.import_paths(engine, [path], workers=2)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the import hung after a worker's write failed"
    with engine.connect() as conn:
        state, error = conn.execute(sa.select(ImportRun.state, ImportRun.error)).one()
    engine.dispose()
    assert isinstance(outcome[0], RuntimeError)
    assert str(outcome[0]) == "disk on fire"
    assert (state, error) == ("failed", "RuntimeError('disk on fire')")
