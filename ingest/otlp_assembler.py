"""Spans arriving over time -> traces in the store.

The receiver hands every new span to :class:`TraceAssembler`, which groups spans by trace id
(a span id it already holds is a duplicate delivery and changes nothing). A trace that got new
spans is *dirty*; once it has been quiet for ``quiet_seconds`` (the exporter has probably sent
the whole run), or when the receiver stops, a background thread builds it again from ALL its
spans with :func:`ingest.formats.otlp.trace_of` and hands it to ``store``.

That is the seam with trace versions: a trace is always re-assembled whole, under the same
identity (format ``otlp`` + the OTel trace id), so storing it again is importing a changed
trace: the store updates it in place (a new version; notes and corrections carried over), or
finds it unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from ingest.formats.otlp import trace_of
from ingest.model import Trace
from ingest.otlp_decode import OtlpSpan

log = logging.getLogger(__name__)

#: How long a trace must go without new spans before it is stored.
DEFAULT_QUIET_SECONDS = 1.0
#: After a failed store (database down), wait this long before trying again.
RETRY_SECONDS = 5.0
#: The source name stored with the receiver's traces and import runs.
RECEIVER_SOURCE = "otlp-receiver"

StoreFn = Callable[[list[Trace]], None]


class TraceAssembler:
    """Groups spans by trace and stores quiet dirty traces from a background thread."""

    def __init__(
        self,
        store: StoreFn,
        *,
        quiet_seconds: float = DEFAULT_QUIET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.quiet_seconds = quiet_seconds
        self.clock = clock
        self._spans: dict[str, dict[str, OtlpSpan]] = {}
        #: Dirty traces: when their last new span arrived, and the spool bytes they wait with.
        self._dirty: dict[str, float] = {}
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
                if everything or now - last >= self.quiet_seconds
            ]
            # Assembled under the lock from a snapshot: spans arriving meanwhile make the
            # trace dirty again (their arrival time is later than ``now``).
            batch = [
                (trace_id, self._dirty[trace_id], list(self._spans[trace_id].values()))
                for trace_id in due
            ]
        if not batch:
            return 0
        traces = [trace_of(spans, source_file=RECEIVER_SOURCE) for _, _, spans in batch]
        try:
            self.store(traces)
        except Exception:
            log.exception(
                "storing %d OTLP traces failed; retrying in %ss", len(traces), RETRY_SECONDS
            )
            with self._lock:
                self._retry_at = self.clock() + RETRY_SECONDS
            return 0
        with self._lock:
            for trace_id, arrived, _ in batch:
                if self._dirty.get(trace_id) == arrived:
                    del self._dirty[trace_id]
                    self._pending.pop(trace_id, None)
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


__all__ = ["DEFAULT_QUIET_SECONDS", "RECEIVER_SOURCE", "StoreFn", "TraceAssembler"]
