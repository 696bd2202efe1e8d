"""The receiver's span store: traces built and written in a worker process (SQLite file and
PostgreSQL), in-process for an in-memory database, a new worker after one died."""

from __future__ import annotations

import os
import signal
from concurrent.futures.process import BrokenProcessPool

import psutil
import sqlalchemy as sa
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_agent import OPENINFERENCE_PAIRS, openinference_run, provider, stored_pairs

from db.engine import make_engine
from db.schema import ImportRun
from ingest.otlp_decode import OtlpSpan, decode_protobuf
from ingest.otlp_store import SpanStore


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


def test_the_traces_of_a_round_are_split_between_the_workers(engine: sa.Engine) -> None:
    before = workers()
    store = SpanStore(engine, workers=2)
    try:
        store.start()
        assert len(workers() - before) == 2
        store([run_spans(0x100 + n) for n in range(4)])
        assert stored_pairs(engine) == {f"{0x101 + n:032x}": OPENINFERENCE_PAIRS for n in range(4)}
        with engine.connect() as conn:
            runs = conn.execute(sa.select(sa.func.count()).select_from(ImportRun)).scalar_one()
        assert runs == 2  # one import run per worker's part
    finally:
        store.close()


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
