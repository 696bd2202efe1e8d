"""The receiver's span store: traces built and written in a worker process (SQLite file and
PostgreSQL), in-process for an in-memory database, a new worker after one died; a trace
evicted from the receiver's memory and completed by late spans is stored as if they had all
come together."""

from __future__ import annotations

import os
import signal
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import psutil
import sqlalchemy as sa
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_agent import OPENINFERENCE_PAIRS, openinference_run, provider, stored_pairs

from db.engine import make_engine
from db.schema import ImportRun
from ingest.input.otlp_spans import OtlpSpan, decode_protobuf
from ingest.otlp.assembler import DEFAULT_EVICT_IDLE_SECONDS, TraceAssembler
from ingest.otlp.spool import Spool
from ingest.otlp.store import SPLIT_SPANS, SpanStore, default_workers, split


def run_spans(trace_base: int) -> list[OtlpSpan]:
    """The spans of one agent run, whose trace id is ``trace_base + 1``."""
    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter, trace_base=trace_base))
    return decode_protobuf(encode_spans(exporter.get_finished_spans()).SerializeToString()).spans


def workers() -> set[int]:
    return {child.pid for child in psutil.Process().children()}


def test_traces_are_stored_by_a_worker_process(engine: sa.Engine) -> None:
    before = workers()
    store = SpanStore(engine, workers=1)
    try:
        store.start()
        assert not store.in_process
        (worker,) = workers() - before
        store([run_spans(0x100), run_spans(0x101)])
        assert stored_pairs(engine) == {
            f"{0x101:032x}": OPENINFERENCE_PAIRS,
            f"{0x102:032x}": OPENINFERENCE_PAIRS,
        }
        assert workers() - before == {worker}  # one long-lived worker for every round
    finally:
        store.close()
    assert workers() - before == set()


def test_a_dead_worker_is_replaced(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    before = workers()
    store = SpanStore(engine, workers=1)
    try:
        store.start()
        (worker,) = workers() - before
        os.kill(worker, signal.SIGKILL)
        psutil.Process(worker).wait(10)
        # Depending on when the pool notices, the death fails this round (the assembler
        # retries it) or a new worker takes it at once; by the second try it is stored.
        try:
            store([run_spans(0x100)])
        except BrokenProcessPool:
            store([run_spans(0x100)])
        assert stored_pairs(engine) == {f"{0x101:032x}": OPENINFERENCE_PAIRS}
        assert len(workers() - before - {worker}) == 1
    finally:
        store.close()
        engine.dispose()


def test_the_traces_of_a_large_round_are_split_between_the_workers(engine: sa.Engine) -> None:
    before = workers()
    store = SpanStore(engine, workers=2, split_spans=1)
    try:
        store.start()
        assert len(workers() - before) == 2
        store([run_spans(0x100 + n) for n in range(4)])
        assert stored_pairs(engine) == {f"{0x101 + n:032x}": OPENINFERENCE_PAIRS for n in range(4)}
        assert import_runs(engine) == 2  # one import run per worker's part
        # A round under the default split size (1,000 spans per worker) is one import run.
        store_whole = SpanStore(engine, workers=2)
        try:
            store_whole([run_spans(0x200 + n) for n in range(4)])
        finally:
            store_whole.close()
        assert import_runs(engine) == 3
        assert len(stored_pairs(engine)) == 8
    finally:
        store.close()


def import_runs(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(ImportRun)).scalar_one())


def test_a_round_is_split_only_when_each_worker_gets_enough_spans() -> None:
    # Traces 0x101, 0x102 and 0x104: workers 1, 0 and 0 (by the id's last 32 bits).
    groups = [run_spans(0x100), run_spans(0x101), run_spans(0x103)]
    size = len(groups[0])
    assert [len(g) for g in groups] == [size] * 3 and SPLIT_SPANS == 1_000
    by_trace = {1: [groups[0]], 0: [groups[1], groups[2]]}
    assert split(groups, 2, split_spans=3 * size // 2) == by_trace
    # Fewer spans than that per worker: the whole round to the worker most of them belong to.
    assert split(groups, 2, split_spans=3 * size // 2 + 1) == {0: groups}
    assert split(groups, 2) == {0: groups}
    assert split(groups[:1], 2, split_spans=1) == {1: groups[:1]}  # one trace: its own worker


def test_one_worker_for_sqlite_one_per_core_for_a_server_database(engine: sa.Engine) -> None:
    # SQLite takes one writer at a time: a second worker would mostly wait for the first.
    cores = os.cpu_count() or 1
    assert default_workers(engine) == (1 if engine.dialect.name == "sqlite" else cores)
    assert SpanStore(engine).workers == default_workers(engine)
    assert SpanStore(engine, workers=3).workers == 3


def test_an_in_memory_database_is_stored_into_in_process() -> None:
    engine = make_engine("sqlite://")
    before = workers()
    store = SpanStore(engine)
    try:
        store.start()
        assert store.in_process
        store([run_spans(0x100)])
        assert stored_pairs(engine) == {f"{0x101:032x}": OPENINFERENCE_PAIRS}
        assert workers() == before
    finally:
        store.close()
        engine.dispose()


def stored_trace(engine: sa.Engine, trace_id: str) -> tuple[Any, ...]:
    """What the store holds of one trace, its ids left out (two runs differ only in them)."""
    from db.schema import MessageRow, TraceRow

    with engine.connect() as conn:
        trace = conn.execute(
            sa.select(
                TraceRow.id, TraceRow.agent, TraceRow.model, TraceRow.started_at, TraceRow.meta
            ).where(TraceRow.external_id == trace_id)
        ).one()
        messages = conn.execute(
            sa.select(
                MessageRow.seq,
                MessageRow.role,
                MessageRow.content,
                MessageRow.tokens,
                MessageRow.usage,
                MessageRow.timestamp,
            )
            .where(MessageRow.trace_id == trace.id)
            .order_by(MessageRow.seq)
        ).all()
    return (tuple(trace[1:]), [tuple(m) for m in messages])


def test_late_spans_after_eviction_give_the_trace_all_spans_together_give(
    engine: sa.Engine, tmp_path: Path
) -> None:
    store = SpanStore(engine, workers=1)
    spool = Spool(tmp_path / "spool")
    clock = [100.0]
    assembler = TraceAssembler(store, spool.path, quiet_seconds=0.2, clock=lambda: clock[0])
    together, apart = run_spans(0x100), run_spans(0x200)
    try:
        store.start()
        spool.open()
        assembler.add(spool.append(together))
        assert assembler.flush(everything=True) == 1
        early, late = apart[:3], apart[3:]
        assert all(span.parent_span_id for span in early)  # the root comes late
        assembler.add(spool.append(early))
        assembler.flush(everything=True)
        partial = stored_trace(engine, f"{0x201:032x}")
        clock[0] += DEFAULT_EVICT_IDLE_SECONDS
        assembler.flush(everything=False)
        assert assembler.held == (0, 0, 2)  # both traces are forgotten
        assembler.add(spool.append(late))
        assert assembler.held == (1, len(late), 1)
        assert assembler.flush(everything=True) == 1
    finally:
        spool.close()
        store.close()
    whole = stored_trace(engine, f"{0x101:032x}")
    assert len(partial[1]) < len(whole[1])
    assert stored_trace(engine, f"{0x201:032x}") == whole
    assert whole[0][3]["span_count"] == len(together)
    assert stored_pairs(engine)[f"{0x201:032x}"] == OPENINFERENCE_PAIRS


def test_a_nul_in_span_values_is_stored_and_the_traces_after_it_too(engine: sa.Engine) -> None:
    """An escaped NUL in a tool call's arguments and a raw NUL in a span attribute are stored
    with U+FFFD on every engine; the receiver's later traces are stored as usual."""
    odd = run_spans(0x200)
    for span in odd:
        for key, value in list(span.attributes.items()):
            if key.endswith("function.arguments"):
                span.attributes[key] = value.replace('"Paris"', '"Pa\\u0000ris"')
        span.attributes["note"] = "nul\x00here"
    store = SpanStore(engine, workers=1)
    try:
        store.start()
        store([odd])
        store([run_spans(0x201)])
    finally:
        store.close()
    pairs = stored_pairs(engine)
    assert sorted(pairs) == [f"{0x201:032x}", f"{0x202:032x}"]
    assert pairs[f"{0x202:032x}"] == OPENINFERENCE_PAIRS
    assert [p[2] for p in pairs[f"{0x201:032x}"]] == [
        p[2].replace('"Paris"', '"Pa\\u0000ris"') for p in OPENINFERENCE_PAIRS
    ]
    with engine.connect() as conn:
        arguments = conn.execute(sa.text("SELECT arguments FROM tool_calls")).scalars().all()
    assert sum("Pa\ufffdris" in str(a) for a in arguments) == len(OPENINFERENCE_PAIRS)
