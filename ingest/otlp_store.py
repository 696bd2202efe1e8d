"""Where the OTLP receiver's traces are built and stored: in a store process beside it.

:class:`~ingest.otlp_assembler.TraceAssembler` decides *which* traces are due and hands their
spans (one list per trace) to a :class:`SpanStore`. Building a conversation from spans, counting
its tokens, analyzing and writing it is most of the receiver's CPU, and in the process that
decodes and spools requests it would hold the GIL against them. So a :class:`SpanStore` runs
:func:`store_spans` in one long-lived worker process (a ``ProcessPoolExecutor`` of one,
forked when the receiver starts, before it has other threads): receiving and storing run
on two cores, and the worker's token count cache (:data:`ingest.tokens.COUNTS`) lives as long
as the receiver, so a growing trace stored again is not tokenized again whole.

A database only this process can open (in-memory SQLite) is stored into in-process instead.
The worker dies with the receiver (``PR_SET_PDEATHSIG``), even after a ``kill -9``: a write it
was doing rolls back, and the spool holds the spans. If the worker dies, the round it was
storing fails (the assembler retries it) and the next round starts a new worker.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import signal
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from sqlalchemy import Engine

from ingest.otlp_decode import OtlpSpan
from ingest.trace_redaction import RedactionSettings

#: The source name stored with the receiver's traces and import runs.
RECEIVER_SOURCE = "otlp-receiver"
_PR_SET_PDEATHSIG = 1


def store_spans(
    engine: Engine, groups: Sequence[Sequence[OtlpSpan]], redaction: RedactionSettings | None
) -> int:
    """Build one trace of each group's spans and import them all as one import run; how many
    traces were imported, updated or found unchanged."""
    from ingest.formats.otlp import trace_of
    from ingest.pipeline import import_traces

    traces = [trace_of(list(spans), source_file=RECEIVER_SOURCE) for spans in groups]
    # Spans are redacted before they are spooled; the pipeline redacts the assembled
    # traces once more with the same settings (a secret split across spans, say).
    summary = import_traces(
        engine, traces, origin="otlp", source=RECEIVER_SOURCE, redaction=redaction
    )
    return summary.traces + summary.updated + summary.unchanged


# ---- the worker process -----------------------------------------------------------------------

_engine: Engine | None = None


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _init_worker(url: str) -> None:
    from db.engine import make_engine

    global _engine
    _die_with_parent()
    # The receiver stops its worker (SIGINT goes to the whole process group on Ctrl-C, and
    # the worker must finish the round it is storing).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _engine = make_engine(url, migrate=False)


def _store_in_worker(
    groups: Sequence[Sequence[OtlpSpan]], redaction: RedactionSettings | None
) -> int:
    assert _engine is not None, "store worker not initialized"
    return store_spans(_engine, groups, redaction)


def _ready() -> bool:
    return _engine is not None


class SpanStore:
    """Stores span groups as traces, in a worker process when the database allows it.

    Call :meth:`start` from the main thread before other threads run (it forks), then call
    the store with span groups from any one thread; :meth:`close` at the end.
    """

    def __init__(self, engine: Engine, redaction: RedactionSettings | None = None) -> None:
        from db.engine import other_processes_can_open

        self.engine = engine
        self.redaction = redaction
        self.in_process = not other_processes_can_open(engine.url)
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the worker (no-op where the store is in-process)."""
        if not self.in_process:
            self._worker().submit(_ready).result()

    def _worker(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                url = self.engine.url.render_as_string(hide_password=False)
                self._pool = ProcessPoolExecutor(
                    1,
                    mp_context=multiprocessing.get_context("fork"),
                    initializer=_init_worker,
                    initargs=(url,),
                )
            return self._pool

    def __call__(self, groups: list[list[OtlpSpan]]) -> None:
        if self.in_process:
            store_spans(self.engine, groups, self.redaction)
            return
        pool = self._worker()
        try:
            pool.submit(_store_in_worker, groups, self.redaction).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None  # the next round starts a new worker
            pool.shutdown(wait=False)
            raise

    def close(self) -> None:
        """Stop the worker once it has finished what it was given."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


__all__ = ["RECEIVER_SOURCE", "SpanStore", "store_spans"]
