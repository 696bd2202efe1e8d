"""When the assembler has traces stored: quiet ones, growing ones at least every
``max_wait_seconds``, one whose root span arrived at once, all due traces of a round in one
store call, a failed round retried; stored traces evicted, and reloaded when late spans come."""

from __future__ import annotations

import pytest

from ingest.input.otlp_spans import OtlpSpan
from ingest.otlp.assembler import MAX_ATTEMPTS, RETRY_SECONDS, TraceAssembler
from ingest.otlp.spool import SpanRef, TraceGroup


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Store:
    """Records each round as ``{trace id: sorted span ids}``; fails while ``failing``."""

    def __init__(self) -> None:
        self.rounds: list[dict[str, list[str]]] = []
        self.reloaded: list[str] = []
        self.failing = False

    def __call__(self, groups: list[TraceGroup]) -> None:
        if self.failing:
            raise RuntimeError("database down")
        self.rounds.append({g.trace_id: sorted(r.span_id for r in g.refs) for g in groups})
        self.reloaded += [g.trace_id for g in groups if g.reload]


def span(trace: str, span_id: str, length: int = 10) -> SpanRef:
    """A child span's reference (``length`` spool bytes)."""
    return SpanRef(trace, span_id, False, 0, length)


def root(trace: str, span_id: str) -> SpanRef:
    return SpanRef(trace, span_id, True, 0, 10)


def otlp(trace: str, span_id: str) -> OtlpSpan:
    return OtlpSpan(trace, span_id, "p", "s", 1, 1, 2)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store() -> Store:
    return Store()


def assembler(store: Store, clock: Clock) -> TraceAssembler:
    return TraceAssembler(
        store,
        "spool.jsonl",
        quiet_seconds=0.2,
        max_wait_seconds=2.0,
        evict_finished_seconds=5.0,
        evict_idle_seconds=300.0,
        clock=clock,
    )


def test_a_trace_is_stored_once_quiet_and_all_due_traces_go_in_one_round(
    store: Store, clock: Clock
) -> None:
    spans = assembler(store, clock)
    assert spans.add([span("a", "1"), span("b", "1"), span("a", "2")]) == 3
    clock.now += 0.125
    assert spans.flush(everything=False) == 0
    clock.now += 0.125
    assert spans.flush(everything=False) == 2
    assert store.rounds == [{"a": ["1", "2"], "b": ["1"]}]
    assert (spans.dirty_traces, spans.pending_bytes) == (0, 0)


def test_a_trace_whose_root_span_arrived_is_stored_at_once(store: Store, clock: Clock) -> None:
    spans = assembler(store, clock)
    spans.add([span("a", "1"), span("b", "1")])
    assert spans.flush(everything=False) == 0
    spans.add([root("a", "0")])  # children end first: the root completes the trace
    assert spans.flush(everything=False) == 1
    assert store.rounds == [{"a": ["0", "1"]}]
    spans.add([span("a", "2")])  # a late span: the quiet rule again
    assert spans.flush(everything=False) == 0
    clock.now += 0.25
    assert spans.flush(everything=False) == 2
    assert store.rounds[1] == {"a": ["0", "1", "2"], "b": ["1"]}


def test_stored_traces_are_evicted_and_a_late_span_reloads_its_trace(
    store: Store, clock: Clock
) -> None:
    spans = assembler(store, clock)
    spans.add([span("a", "1"), root("a", "0"), span("b", "1")])
    clock.now += 0.25
    assert spans.flush(everything=False) == 2
    assert spans.held == (2, 3, 0)
    clock.now += 5  # "a" is finished (its root came): forgotten after 5 s
    spans.flush(everything=False)
    assert spans.held == (1, 1, 1)
    clock.now += 295  # "b" never got a root: forgotten after 300 s idle
    spans.flush(everything=False)
    assert spans.held == (0, 0, 2)
    assert spans.fresh([otlp("a", "1")]) == [otlp("a", "1")]  # its ids are gone too
    spans.add([span("a", "2")])
    clock.now += 0.25
    assert spans.flush(everything=False) == 1
    # Only the late span is held; the store finds the rest in the spool.
    assert (store.rounds[-1], store.reloaded) == ({"a": ["2"]}, ["a"])
    spans.add([span("a", "3")])
    clock.now += 0.25
    spans.flush(everything=False)
    assert (store.rounds[-1], store.reloaded) == ({"a": ["2", "3"]}, ["a", "a"])


def test_a_trace_that_keeps_growing_is_stored_every_max_wait_seconds(
    store: Store, clock: Clock
) -> None:
    spans = assembler(store, clock)
    for n in range(20):  # a span every 0.125 s: never quiet for 0.2 s
        spans.add([span("a", f"{n:02}")])
        spans.flush(everything=False)
        clock.now += 0.125
    # Stored once 2 s after its first span (spans 0-16), then waiting again from span 17 on.
    assert [len(r["a"]) for r in store.rounds] == [17]
    for n in range(20, 40):
        spans.add([span("a", f"{n:02}")])
        spans.flush(everything=False)
        clock.now += 0.125
    assert [len(r["a"]) for r in store.rounds] == [17, 34]
    spans.flush(everything=True)
    assert [len(r["a"]) for r in store.rounds] == [17, 34, 40]


def test_a_duplicate_span_makes_nothing_dirty(store: Store, clock: Clock) -> None:
    spans = assembler(store, clock)
    spans.add([span("a", "1")])
    spans.flush(everything=True)
    assert spans.fresh([otlp("a", "1"), otlp("a", "2"), otlp("a", "2")]) == [otlp("a", "2")]
    assert spans.add([span("a", "1")]) == 0
    assert spans.flush(everything=True) == 0
    assert store.rounds == [{"a": ["1"]}]


def test_a_failed_round_is_retried_after_retry_seconds(store: Store, clock: Clock) -> None:
    spans = assembler(store, clock)
    spans.add([span("a", "1", length=40)])
    clock.now += 0.25
    store.failing = True
    assert spans.flush(everything=False) == 0
    assert (spans.dirty_traces, spans.pending_bytes) == (1, 40)
    store.failing = False
    clock.now += RETRY_SECONDS - 0.25
    assert spans.flush(everything=False) == 0  # still waiting to retry
    clock.now += 0.25
    assert spans.flush(everything=False) == 1
    assert store.rounds == [{"a": ["1"]}]
    assert (spans.dirty_traces, spans.pending_bytes) == (0, 0)


def test_a_quiet_period_longer_than_max_wait_is_kept(store: Store, clock: Clock) -> None:
    spans = TraceAssembler(
        store, "spool.jsonl", quiet_seconds=3600, max_wait_seconds=2.0, clock=clock
    )
    spans.add([span("a", "1")])
    clock.now += 3599
    assert spans.flush(everything=False) == 0
    clock.now += 1
    assert spans.flush(everything=False) == 1


class PickyStore(Store):
    """A store that refuses every round holding one of the ``refused`` traces."""

    def __init__(self, refused: set[str]) -> None:
        super().__init__()
        self.refused = refused

    def __call__(self, groups: list[TraceGroup]) -> None:
        if self.refused & {g.trace_id for g in groups}:
            raise ValueError("a value the database refuses")
        super().__call__(groups)


def test_a_trace_the_store_refuses_is_set_aside_and_the_others_are_stored(clock: Clock) -> None:
    store = PickyStore({"bad"})
    spans = assembler(store, clock)
    spans.add([span("a", "1"), span("bad", "2"), span("b", "3")])
    assert spans.flush(everything=True) == 2
    assert store.rounds == [{"a": ["1"]}, {"b": ["3"]}]
    assert spans.set_aside == {"bad": "ValueError: a value the database refuses"}
    assert spans.dirty_traces == 0
    # Good traces after it are stored at once, in one round.
    spans.add([span("c", "4")])
    assert spans.flush(everything=True) == 1
    assert store.rounds[-1] == {"c": ["4"]}


def test_a_lone_trace_that_keeps_failing_is_set_aside_after_max_attempts(clock: Clock) -> None:
    store = PickyStore({"bad"})
    spans = assembler(store, clock)
    spans.add([span("bad", "1")])
    for attempt in range(1, MAX_ATTEMPTS):
        assert spans.flush(everything=True) == 0
        assert (spans.dirty_traces, spans.set_aside) == (1, {}), attempt
    assert spans.flush(everything=True) == 0
    assert (spans.dirty_traces, list(spans.set_aside)) == (0, ["bad"])
    assert store.rounds == []
