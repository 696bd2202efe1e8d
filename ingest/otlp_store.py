"""Where the OTLP receiver's traces are built and stored: in store processes beside it.

:class:`~ingest.otlp_assembler.TraceAssembler` decides *which* traces are due and hands their
spans (one list per trace) to a :class:`SpanStore`. Building a conversation from spans, counting
its tokens, analyzing and writing it is most of the receiver's CPU, and in the process that
decodes and spools requests it would hold the GIL against them. So a :class:`SpanStore` runs
:func:`store_spans` in long-lived worker processes (a ``ProcessPoolExecutor``, one worker per
core by default, forked when the receiver starts, before it has other threads): receiving and
storing run side by side, and the traces of one round are split between the workers (each
part its own import run; a trace is never in two parts, and rounds do not overlap, so no trace
is ever written by two workers at once). Each worker's token count cache
(:data:`ingest.tokens.COUNTS`) lives as long as the receiver, so a growing trace stored again
is mostly not tokenized again (the same trace usually lands on a worker that counted it).

A database only this process can open (in-memory SQLite) is stored into in-process instead.
Workers die with the receiver (``PR_SET_PDEATHSIG``), even after a ``kill -9``: a write one was
doing rolls back, and the spool holds the spans. If a worker dies, the round it was storing
fails (the assembler retries it; parts already stored are then found unchanged) and the next
round starts new workers.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
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


def split(groups: list[list[OtlpSpan]], parts: int) -> list[list[list[OtlpSpan]]]:
    """``groups`` in at most ``parts`` non-empty parts of about as many spans each (the
    largest trace first into the lightest part).

    >>> [[len(g) for g in part] for part in split([[1], [1, 1, 1], [1, 1]], 2)]
    [[3], [2, 1]]
    """
    shares: list[list[list[OtlpSpan]]] = [[] for _ in range(min(parts, len(groups)))]
    weights = [0] * len(shares)
    for group in sorted(groups, key=len, reverse=True):
        lightest = weights.index(min(weights))
        shares[lightest].append(group)
        weights[lightest] += len(group)
    return shares


# ---- the worker processes -----------------------------------------------------------------------

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
    """Stores span groups as traces, in ``workers`` worker processes (default: one per core)
    when the database allows it.

    Call :meth:`start` from the main thread before other threads run (it forks), then call
    the store with span groups from any one thread; :meth:`close` at the end.
    """

    def __init__(
        self,
        engine: Engine,
        redaction: RedactionSettings | None = None,
        *,
        workers: int | None = None,
    ) -> None:
        from db.engine import other_processes_can_open

        self.engine = engine
        self.redaction = redaction
        self.workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
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
                    self.workers,
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
            parts: list[Future[int]] = [
                pool.submit(_store_in_worker, part, self.redaction)
                for part in split(groups, self.workers)
            ]
            wait(parts)
            for part in parts:
                part.result()  # the first failure, if any
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


__all__ = ["RECEIVER_SOURCE", "SpanStore", "split", "store_spans"]
