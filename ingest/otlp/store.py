"""Where the OTLP receiver's traces are built and stored: in store processes beside it.

:class:`~ingest.otlp.assembler.TraceAssembler` decides *which* traces are due and hands where
their spans are (a :class:`~ingest.otlp.spool.TraceGroup` per trace) to a :class:`SpanStore`;
the worker reads the spans from the spool itself, so only spool offsets cross the process
boundary, never pickled spans. Building a conversation from spans, counting its tokens,
analyzing and writing it is most of the receiver's CPU, and in the process that decodes and
spools requests it would hold the GIL against them. So a :class:`SpanStore` runs
:func:`store_spans` in long-lived worker processes (each a ``ProcessPoolExecutor`` of one,
forked when the receiver starts, before it has other threads): receiving and storing run side by
side. A round of at least :data:`SPLIT_SPANS` spans per worker is split between the workers,
each part its own import run, each trace going to its own worker (:func:`worker_of`), so that a
growing trace stored again finds the counts of its unchanged messages in that worker's token
count cache (:data:`ingest.analysis.tokens.COUNTS`, which lives as long as the receiver). A
smaller round is stored whole by the worker most of its spans belong to: a part costs an import
run's fixed costs whatever its size, and on SQLite, which takes one writer at a time, a second
part also waits for the first one's write transaction. So while spans trickle in, each round is
one import run (a round of one trace goes to that trace's worker), and when a backlog builds up
(rounds grow while one is stored) every worker stores part of it. Rounds do not overlap, so no
trace is ever written by two workers at once.

How many workers by default (:func:`default_workers`): one per core for a server database, one
for SQLite. SQLite takes one writer at a time, and on a machine whose cores are busy anyway a
second worker only adds a part's costs and waits: on ``make bench-otlp`` alternating on the
shared machine (load 14-19), one worker stored a span with 0.32-0.34 ms of CPU against 0.35-0.42
for two, and no later (wall 9.0-13.0 s against 11.2-17.4).

A database only this process can open (in-memory SQLite) is stored into in-process instead,
and so is a ClickHouse store (:meth:`db.session.WorkerConnection.reaches`): it takes one writer,
whose new trace ids follow the largest stored one, and chdb's engine lives in this process.
Workers die with the receiver (``PR_SET_PDEATHSIG``), even after a ``kill -9``: a write one was
doing rolls back, and the spool holds the spans. If a worker dies while storing, its round
fails (the assembler retries it; parts already stored are then found unchanged); a new worker
takes its place for the next part it is given.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from sqlalchemy import Engine

from db.session import WorkerConnection
from ingest.importing.gc_pause import cyclic_gc_paused
from ingest.input.otlp_spans import OtlpSpan
from ingest.otlp.spool import TraceGroup
from ingest.redaction.traces import RedactionSettings

#: The source name stored with the receiver's traces and import runs.
RECEIVER_SOURCE = "otlp-receiver"
_PR_SET_PDEATHSIG = 1


#: A group of spans to store: where they are in the spool, or the spans themselves.
Group = TraceGroup | Sequence[OtlpSpan]
#: Spooled spans were redacted before they were written: their traces are not redacted again.
_ALREADY_REDACTED = RedactionSettings("off")


def store_spans(
    engine: Engine, groups: Sequence[Group], redaction: RedactionSettings | None
) -> int:
    """Build one trace of each group's spans and import them all as one import run; how many
    traces were imported, updated or found unchanged.

    Spans read from the spool (:class:`TraceGroup`) were redacted before they were spooled
    (the spool is a store too), so their traces are redacted once, not a second time; spans
    given as they are, are redacted with ``redaction``.
    """
    from ingest.formats.otlp import trace_of
    from ingest.importing.pipeline import import_traces

    spooled = bool(groups) and all(isinstance(group, TraceGroup) for group in groups)
    traces = []
    for group in groups:
        spans = group.spans() if isinstance(group, TraceGroup) else list(group)
        if spans:
            traces.append(trace_of(spans, source_file=RECEIVER_SOURCE))
    summary = import_traces(
        engine,
        traces,
        origin="otlp",
        source=RECEIVER_SOURCE,
        redaction=_ALREADY_REDACTED if spooled else redaction,
    )
    return summary.traces + summary.updated + summary.unchanged


def worker_of(trace_id: str, workers: int) -> int:
    """The worker that stores a trace, always the same one (by its hex id's last 32 bits), so
    a trace stored again finds its counts in that worker's token count cache.

    >>> worker_of("5b8efff798038103d269b633813fc60c", 2)
    0
    >>> worker_of("000000000000000000000000000000a1", 2)
    1
    """
    return int(trace_id[-8:], 16) % workers


#: A round is split between the workers only when it holds at least this many spans per
#: worker: each part is an import run, which costs about as much as 40 spans whatever its size
#: (its run, rollup upserts over much the same keys, a commit; on SQLite a wait for the other
#: part's write transaction), so a smaller round is stored whole by one worker.
SPLIT_SPANS = 1_000


def default_workers(engine: Engine) -> int:
    """Store workers when none are asked for: one for SQLite (one writer at a time), else one
    per core."""
    if engine.dialect.name == "sqlite":
        return 1
    return os.cpu_count() or 1


def split(
    groups: Sequence[Group], workers: int, split_spans: int = SPLIT_SPANS
) -> dict[int, list[Group]]:
    """``groups`` (one trace each) by the worker that stores them: each by its trace's
    (:func:`worker_of`) when there are ``split_spans`` spans per worker, else all of them by the
    worker most of their spans belong to."""
    parts: dict[int, list[Group]] = {}
    spans: dict[int, int] = {}
    for group in groups:
        trace_id = group.trace_id if isinstance(group, TraceGroup) else group[0].trace_id
        n = worker_of(trace_id, workers)
        parts.setdefault(n, []).append(group)
        spans[n] = spans.get(n, 0) + (
            len(group.refs) if isinstance(group, TraceGroup) else len(group)
        )
    if len(parts) > 1 and sum(spans.values()) < split_spans * workers:
        return {max(spans, key=spans.__getitem__): list(groups)}
    return parts


# ---- the worker processes -----------------------------------------------------------------------

_engine: Engine | None = None


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _init_worker(connection: WorkerConnection) -> None:
    global _engine
    _die_with_parent()
    # The receiver stops its worker (SIGINT goes to the whole process group on Ctrl-C, and
    # the worker must finish the round it is storing).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _engine = connection.engine()
    # What the worker inherited (modules, the tokenizer, the pipeline) lives as long as it
    # does: the cyclic GC need not scan it again at every collection (nor touch its pages,
    # which stay shared with the receiver).
    gc.freeze()


def _store_in_worker(groups: Sequence[Group], redaction: RedactionSettings | None) -> int:
    assert _engine is not None, "store worker not initialized"
    with cyclic_gc_paused():
        return store_spans(_engine, groups, redaction)


def _ready() -> bool:
    return _engine is not None


class SpanStore:
    """Stores span groups as traces, in ``workers`` worker processes (default:
    :func:`default_workers`) when the database allows it; a round of fewer than
    ``split_spans`` spans per worker goes whole to one worker (:func:`split`).

    Call :meth:`start` from the main thread before other threads run (it forks), then call
    the store with span groups from any one thread; :meth:`close` at the end.
    """

    def __init__(
        self,
        engine: Engine,
        redaction: RedactionSettings | None = None,
        *,
        workers: int | None = None,
        split_spans: int = SPLIT_SPANS,
    ) -> None:
        self.engine = engine
        self.split_spans = split_spans
        self.redaction = redaction
        self.workers = max(1, workers if workers is not None else default_workers(engine))
        self.in_process = not WorkerConnection.reaches(engine)
        self._pools: list[ProcessPoolExecutor | None] = [None] * self.workers
        self._lock = threading.Lock()

    def start(self) -> None:
        """Import what storing needs, then start the workers (no-op where the store is
        in-process).

        The import pipeline and its analysis take about a CPU second to import (modules,
        compiled patterns, JSON schemas); imported here, before the fork, every worker
        inherits them instead of importing them itself while the first traces wait.
        """
        import ingest.formats.otlp
        import ingest.importing.pipeline  # noqa: F401

        if not self.in_process:
            for n in range(self.workers):
                self._worker(n).submit(_ready).result()

    def _worker(self, n: int) -> ProcessPoolExecutor:
        with self._lock:
            pool = self._pools[n]
            if pool is None:
                # The URL object goes through the initializer's arguments, never through a
                # command line (see WorkerConnection).
                pool = self._pools[n] = ProcessPoolExecutor(
                    1,
                    mp_context=multiprocessing.get_context("fork"),
                    initializer=_init_worker,
                    initargs=(WorkerConnection.of(self.engine),),
                )
            return pool

    def __call__(self, groups: Sequence[Group]) -> None:
        if self.in_process:
            with cyclic_gc_paused():
                store_spans(self.engine, groups, self.redaction)
            return
        parts = {
            n: self._submit(n, part)
            for n, part in split(groups, self.workers, self.split_spans).items()
        }
        wait(parts.values())
        failure: BaseException | None = None
        for n, part in parts.items():
            exc = part.exception()
            if isinstance(exc, BrokenProcessPool):
                self._drop(n)  # the next round starts a new worker
            failure = failure or exc
        if failure is not None:
            raise failure

    def _submit(self, n: int, part: list[Group]) -> Future[int]:
        try:
            return self._worker(n).submit(_store_in_worker, part, self.redaction)
        except BrokenProcessPool:  # it died while idle: a new one takes the part
            self._drop(n)
            return self._worker(n).submit(_store_in_worker, part, self.redaction)

    def _drop(self, n: int) -> None:
        with self._lock:
            pool, self._pools[n] = self._pools[n], None
        if pool is not None:
            pool.shutdown(wait=False)

    def close(self) -> None:
        """Stop the workers once they have finished what they were given."""
        with self._lock:
            pools, self._pools = self._pools, [None] * self.workers
        for pool in pools:
            if pool is not None:
                pool.shutdown(wait=True)


__all__ = [
    "RECEIVER_SOURCE",
    "SPLIT_SPANS",
    "SpanStore",
    "default_workers",
    "split",
    "store_spans",
    "worker_of",
]
