"""Spans arriving over time -> traces in the store.

The receiver hands every new span to :class:`TraceAssembler`, which groups spans by trace id
(a span id it already holds is a duplicate delivery and changes nothing). A trace that got new
spans is *dirty*. A background thread has the dirty traces that are *due* stored: quiet for
``quiet_seconds`` (the exporter has probably sent what it had), or dirty for ``max_wait_seconds``
while spans keep coming (a long agent run is updated while it grows, at most that often), or
all of them when the receiver stops. The spans of every due trace of one round, ALL its spans,
go to ``store`` in one call (:class:`ingest.otlp_store.SpanStore`: each trace built again with
:func:`ingest.formats.otlp.trace_of`, all of them imported as one import run written in
batches), so many small exports cost one transaction, not one each.

That is the seam with trace versions: a trace is always re-assembled whole, under the same
identity (format ``otlp`` + the OTel trace id), so storing it again is importing a changed
trace: the store updates it in place (a new version; notes and corrections carried over), or
finds it unchanged. The token counts of its unchanged messages come from the count cache
(:class:`ingest.tokens.CountCache`), so a growing trace is not tokenized again whole.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from ingest.otlp_decode import OtlpSpan
from ingest.otlp_store import RECEIVER_SOURCE

log = logging.getLogger(__name__)

#: How long a trace must go without new spans before it is stored.
DEFAULT_QUIET_SECONDS = 0.2
#: A trace getting new spans all the time is still stored at least this often (never more
#: often than ``quiet_seconds`` allows, when that is longer).
DEFAULT_MAX_WAIT_SECONDS = 2.0
#: After a failed store (database down), wait this long before trying again.
RETRY_SECONDS = 5.0
#: Stores traces, given the spans of each (all it holds of them).
StoreFn = Callable[[list[list[OtlpSpan]]], None]


class TraceAssembler:
    """Groups spans by trace and stores quiet dirty traces from a background thread."""

    def __init__(
        self,
        store: StoreFn,
        *,
        quiet_seconds: float = DEFAULT_QUIET_SECONDS,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.quiet_seconds = quiet_seconds
        self.max_wait_seconds = max(max_wait_seconds, quiet_seconds)
        self.clock = clock
        self._spans: dict[str, dict[str, OtlpSpan]] = {}
        #: Dirty traces: when their last new span arrived, since when they are dirty, and the
        #: spool bytes they wait with.
        self._dirty: dict[str, float] = {}
        self._dirty_since: dict[str, float] = {}
        self._pending: dict[str, int] = {}
        self._retry_at = 0.0
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

    def add(self, spans: Sequence[OtlpSpan], *, spooled_bytes: int = 0) -> int:
        """Take spans (already durable); the number that were new. ``spooled_bytes`` counts
        toward :attr:`pending_bytes` until their traces are stored."""
        now = self.clock()
        added = 0
        with self._lock:
            share = spooled_bytes // len(spans) if spans else 0
            for span in spans:
                held = self._spans.setdefault(span.trace_id, {})
                if span.span_id in held:
                    continue
                held[span.span_id] = span
                added += 1
                self._dirty[span.trace_id] = now
                self._dirty_since.setdefault(span.trace_id, now)
                self._pending[span.trace_id] = self._pending.get(span.trace_id, 0) + share
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

    # -- traces out -------------------------------------------------------------------------

    def flush(self, *, everything: bool = True) -> int:
        """Store the dirty traces (all, or only the quiet ones); how many were stored."""
        with self._lock:
            now = self.clock()
            if not everything and now < self._retry_at:
                return 0
            due = [
                trace_id
                for trace_id, last in self._dirty.items()
                if everything
                or now - last >= self.quiet_seconds
                or now - self._dirty_since[trace_id] >= self.max_wait_seconds
            ]
            # Assembled under the lock from a snapshot: spans arriving meanwhile make the
            # trace dirty again (their arrival time is later than ``now``).
            batch = [
                (trace_id, self._dirty[trace_id], list(self._spans[trace_id].values()))
                for trace_id in due
            ]
        if not batch:
            return 0
        try:
            self.store([spans for _, _, spans in batch])
        except Exception:
            log.exception(
                "storing %d OTLP traces failed; retrying in %ss", len(batch), RETRY_SECONDS
            )
            with self._lock:
                self._retry_at = self.clock() + RETRY_SECONDS
            return 0
        with self._lock:
            for trace_id, arrived, _ in batch:
                if self._dirty.get(trace_id) == arrived:
                    del self._dirty[trace_id]
                    del self._dirty_since[trace_id]
                    self._pending.pop(trace_id, None)
                else:  # it grew meanwhile: what came after the snapshot waits from then on
                    self._dirty_since[trace_id] = arrived
        return len(batch)

    def _run(self) -> None:
        tick = min(0.2, self.quiet_seconds / 2) if self.quiet_seconds > 0 else 0.05
        while True:
            with self._lock:
                if self._stopping:
                    break
                self._wake.wait(tick)
            self.flush(everything=False)

    def start(self) -> None:
        """Start the background thread that stores quiet traces."""
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
    "DEFAULT_MAX_WAIT_SECONDS",
    "DEFAULT_QUIET_SECONDS",
    "RECEIVER_SOURCE",
    "StoreFn",
    "TraceAssembler",
]
