"""Spans arriving over time -> traces in the store.

The receiver spools every new span and hands :class:`TraceAssembler` where it is (a
:class:`~ingest.otlp.spool.SpanRef`), which groups them by trace id (a span id it already holds
is a duplicate delivery and changes nothing). The assembler holds references, never spans: the
store workers read the spans of a trace from the spool themselves. A trace that got new spans
is *dirty*. A background thread has the dirty traces that are *due* stored: at once when its
root span arrived (the SDK ends a parent after its children, so the root comes last: the trace
is most likely complete), else quiet for ``quiet_seconds`` (the exporter has probably sent what
it had), or dirty for ``max_wait_seconds`` while spans keep coming (a long agent run is updated
while it grows, at most that often), or all of them when the receiver stops. Every due trace of
one round, ALL its spans, goes to ``store`` in one call (:class:`ingest.otlp.store.SpanStore`:
each trace built again with :func:`ingest.formats.otlp.trace_of`, all of them imported as one
import run written in batches), so many small exports cost one transaction, not one each.
Rounds start at most every ``round_seconds`` (one a second on ClickHouse,
:func:`db.door.round_seconds`, where every write is a part per partition per shard to merge):
what becomes due meanwhile waits for the next round, which is one write whatever it holds.

That is the seam with trace versions: a trace is always re-assembled whole, under the same
identity (format ``otlp`` + the OTel trace id), so storing it again is importing a changed
trace: the store updates it in place (a new version; notes and corrections carried over), or
finds it unchanged. The token counts of its unchanged messages come from the count cache
(:class:`ingest.analysis.tokens.CountCache`), so a growing trace is not tokenized again whole.

Memory stays bounded by the traces in flight: a stored trace is *evicted* (its references
dropped, only its id remembered) once it has been clean for ``evict_finished_seconds`` with its
root span held, or ``evict_idle_seconds`` without. A late span of an evicted trace makes it
dirty again with ``reload`` set (for as long as it is held again): the store then finds the
trace's earlier spans by scanning the spool (:func:`ingest.otlp.spool.scan_trace`), so the
stored trace is the one all spans arriving together would have given. A duplicate of an
evicted trace's span is spooled again (the assembler no longer knows its id) and found
unchanged by the store.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ingest.input.otlp_spans import OtlpSpan
from ingest.otlp.spool import SpanRef, TraceGroup
from ingest.otlp.store import RECEIVER_SOURCE

log = logging.getLogger(__name__)

#: How long a trace must go without new spans before it is stored.
DEFAULT_QUIET_SECONDS = 0.2
#: A trace getting new spans all the time is still stored at least this often (never more
#: often than ``quiet_seconds`` allows, when that is longer).
DEFAULT_MAX_WAIT_SECONDS = 2.0
#: A stored trace whose root span arrived is forgotten after this long without new spans.
DEFAULT_EVICT_FINISHED_SECONDS = 5.0
#: Any other stored trace is forgotten after this long without new spans.
DEFAULT_EVICT_IDLE_SECONDS = 300.0
#: After a failed store (database down), wait this long before trying again.
RETRY_SECONDS = 5.0
#: Rounds in a row a trace may fail alone before it is set aside (it stays in the spool: the
#: receiver's next start tries it again).
MAX_ATTEMPTS = 5


#: Stores traces, given where the spans of each are (all it holds of them).
StoreFn = Callable[[list[TraceGroup]], None]


class TraceAssembler:
    """Groups spooled spans by trace and stores due dirty traces from a background thread."""

    def __init__(
        self,
        store: StoreFn,
        spool_file: Path | str,
        *,
        quiet_seconds: float = DEFAULT_QUIET_SECONDS,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
        evict_finished_seconds: float = DEFAULT_EVICT_FINISHED_SECONDS,
        evict_idle_seconds: float = DEFAULT_EVICT_IDLE_SECONDS,
        round_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.spool_file = str(spool_file)
        self.quiet_seconds = quiet_seconds
        self.max_wait_seconds = max(max_wait_seconds, quiet_seconds)
        self.evict_finished_seconds = evict_finished_seconds
        self.evict_idle_seconds = max(evict_idle_seconds, evict_finished_seconds)
        #: The least time between the starts of two rounds of the background thread (a
        #: store that wants few, large writes: ClickHouse); stopping stores at once.
        self.round_seconds = round_seconds
        self._last_round = -float("inf")
        self.clock = clock
        self._spans: dict[str, dict[str, SpanRef]] = {}
        #: Dirty traces: when their last new span arrived, since when they are dirty, and the
        #: spool bytes they wait with; those whose root span came while dirty.
        self._dirty: dict[str, float] = {}
        self._dirty_since: dict[str, float] = {}
        self._pending: dict[str, int] = {}
        self._rooted: set[str] = set()
        #: Stored, clean traces by when they were stored (oldest first); held traces with a
        #: root span; forgotten traces, and those of them that got late spans (held again,
        #: but only in part: every store of theirs reloads the rest from the spool).
        self._clean: dict[str, float] = {}
        self._finished: set[str] = set()
        self._evicted: set[str] = set()
        self._reload: set[str] = set()
        self._retry_at = 0.0
        #: Rounds in a row each trace failed alone; traces set aside, with the reason.
        self._attempts: dict[str, int] = {}
        self.set_aside: dict[str, str] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._stopping = False
        self._thread: threading.Thread | None = None

    # -- spans in ---------------------------------------------------------------------------

    def fresh(self, spans: Iterable[OtlpSpan]) -> list[OtlpSpan]:
        """The spans not held yet (one of each span id): what needs spooling."""
        with self._lock:
            seen: set[tuple[str, str]] = set()
            new = []
            for span in spans:
                key = (span.trace_id, span.span_id)
                if key in seen or span.span_id in self._spans.get(span.trace_id, {}):
                    continue
                seen.add(key)
                new.append(span)
            return new

    def add(self, refs: Iterable[SpanRef]) -> int:
        """Take spooled spans (already durable); the number that were new. Their spool bytes
        count toward :attr:`pending_bytes` until their traces are stored."""
        now = self.clock()
        added = 0
        with self._lock:
            for ref in refs:
                trace_id = ref.trace_id
                held = self._spans.get(trace_id)
                if held is None:
                    held = self._spans[trace_id] = {}
                    if trace_id in self._evicted:
                        self._evicted.discard(trace_id)
                        self._reload.add(trace_id)
                elif ref.span_id in held:
                    continue
                held[ref.span_id] = ref
                added += 1
                self._dirty[trace_id] = now
                self._dirty_since.setdefault(trace_id, now)
                self._pending[trace_id] = self._pending.get(trace_id, 0) + ref.length
                self._clean.pop(trace_id, None)
                if ref.root:
                    self._rooted.add(trace_id)
                    self._finished.add(trace_id)
            if added:
                self._wake.notify()
        return added

    @property
    def pending_bytes(self) -> int:
        """Spool bytes of spans whose traces are not stored yet (the receiver's backlog)."""
        with self._lock:
            return sum(self._pending.values())

    @property
    def dirty_traces(self) -> int:
        """How many traces wait to be stored."""
        with self._lock:
            return len(self._dirty)

    @property
    def held(self) -> tuple[int, int, int]:
        """What is in memory: traces held, span references held, evicted trace ids."""
        with self._lock:
            return len(self._spans), sum(map(len, self._spans.values())), len(self._evicted)

    # -- traces out -------------------------------------------------------------------------

    def flush(self, *, everything: bool = True) -> int:
        """Store the dirty traces (all, or only the due ones); how many were stored."""
        with self._lock:
            now = self.clock()
            if not everything and (
                now < self._retry_at or now - self._last_round < self.round_seconds
            ):
                return 0
            due = [
                trace_id
                for trace_id, last in self._dirty.items()
                if everything
                or trace_id in self._rooted
                or now - last >= self.quiet_seconds
                or now - self._dirty_since[trace_id] >= self.max_wait_seconds
            ]
            # Taken under the lock from a snapshot: spans arriving meanwhile make the trace
            # dirty again (their arrival time is later than ``now``).
            batch = [
                (
                    self._dirty[trace_id],
                    TraceGroup(
                        trace_id,
                        self.spool_file,
                        tuple(self._spans[trace_id].values()),
                        trace_id in self._reload,
                    ),
                )
                for trace_id in due
            ]
        if not batch:
            self._evict()
            return 0
        self._last_round = now
        failed = self._store([group for _, group in batch])
        if failed:
            if len(failed) == len(batch):
                with self._lock:
                    self._retry_at = self.clock() + RETRY_SECONDS
                return 0
            batch = [item for item in batch if item[1].trace_id not in failed]
        with self._lock:
            stored = self.clock()
            for arrived, group in batch:
                trace_id = group.trace_id
                if self._dirty.get(trace_id) == arrived:
                    del self._dirty[trace_id]
                    del self._dirty_since[trace_id]
                    self._pending.pop(trace_id, None)
                    self._rooted.discard(trace_id)
                    self._clean[trace_id] = stored
                else:  # it grew meanwhile: what came after the snapshot waits from then on
                    self._dirty_since[trace_id] = arrived
        self._evict()
        return len(batch)

    def _store(self, groups: list[TraceGroup]) -> dict[str, str]:
        """Store ``groups`` in one call, or, when that fails, each alone; the traces that failed
        (all of them, where even the first call stored nothing and they are retried as a round),
        with the reason. A trace that fails alone while another of the round is stored, or that
        failed alone :data:`MAX_ATTEMPTS` rounds in a row, is set aside: no longer dirty, so one
        trace the store cannot take never holds back the others."""
        try:
            self.store(groups)
        except Exception as exc:
            if len(groups) == 1:
                failed = {groups[0].trace_id: f"{type(exc).__name__}: {exc}"}
            else:
                failed = {}
                for group in groups:
                    try:
                        self.store([group])
                    except Exception as alone:
                        failed[group.trace_id] = f"{type(alone).__name__}: {alone}"
        else:
            failed = {}
        some_stored = len(failed) < len(groups)
        with self._lock:
            for group in groups:
                trace_id = group.trace_id
                if trace_id not in failed:
                    self._attempts.pop(trace_id, None)
                    continue
                attempts = self._attempts.get(trace_id, 0) + 1
                self._attempts[trace_id] = attempts
                if not some_stored and attempts < MAX_ATTEMPTS:
                    continue
                log.error("OTLP trace %s set aside, not stored: %s", trace_id, failed[trace_id])
                self.set_aside[trace_id] = failed[trace_id]
                del self._attempts[trace_id]
                self._dirty.pop(trace_id, None)
                self._dirty_since.pop(trace_id, None)
                self._pending.pop(trace_id, None)
                self._rooted.discard(trace_id)
                self._clean[trace_id] = self.clock()  # evicted in time like a stored trace
        if failed and not some_stored:
            log.warning(
                "storing %d OTLP traces failed; retrying in %ss", len(groups), RETRY_SECONDS
            )
        return failed

    def _evict(self) -> None:
        """Forget stored traces clean for long enough (oldest first)."""
        with self._lock:
            now = self.clock()
            gone = []
            for trace_id, since in self._clean.items():
                idle = now - since
                if idle < self.evict_finished_seconds:
                    break  # the rest were stored later still
                if idle >= self.evict_idle_seconds or trace_id in self._finished:
                    gone.append(trace_id)
            for trace_id in gone:
                del self._clean[trace_id]
                del self._spans[trace_id]
                self._finished.discard(trace_id)
                self._reload.discard(trace_id)
                self._evicted.add(trace_id)

    def _run(self) -> None:
        tick = min(0.2, self.quiet_seconds / 2) if self.quiet_seconds > 0 else 0.05
        while True:
            with self._lock:
                if self._stopping:
                    break
                self._wake.wait(tick)
            self.flush(everything=False)

    def start(self) -> None:
        """Start the background thread that stores due traces."""
        self._thread = threading.Thread(target=self._run, name="otlp-assembler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then store every dirty trace."""
        with self._lock:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()
        self.flush(everything=True)


__all__ = [
    "DEFAULT_EVICT_FINISHED_SECONDS",
    "DEFAULT_EVICT_IDLE_SECONDS",
    "DEFAULT_MAX_WAIT_SECONDS",
    "DEFAULT_QUIET_SECONDS",
    "RECEIVER_SOURCE",
    "StoreFn",
    "TraceAssembler",
]
