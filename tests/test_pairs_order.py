"""A range's pairs put in trace order (``db.queries.pairs._in_trace_order``): the rows after
the first one out of order slotted in among those before it, or, past a bound, all sorted;
either way exactly Arrow's stable sort by trace, message and call index (a lone Tool Message
first)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from db.queries.pairs import _in_trace_order, _slotted

# (trace_id, seq, call_index): a call; call_index None: a lone Tool Message.
calls = st.tuples(st.integers(0, 6), st.integers(0, 30), st.integers(0, 3))
lone = st.tuples(st.integers(0, 6), st.integers(0, 30), st.none())


def _table(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table(
        {
            "trace_id": pa.array([r[0] for r in rows], pa.int64()),
            "seq": pa.array([r[1] for r in rows], pa.int32()),
            "call_index": pa.array([r[2] for r in rows], pa.int64()),
            "payload": pa.array([f"row {i}" for i in range(len(rows))]),
        }
    )


def _sorted(table: pa.Table) -> pa.Table:
    position = pc.coalesce(table["call_index"], pa.scalar(-1, pa.int64()))
    return (
        table.append_column("_p", position)
        .sort_by([("trace_id", "ascending"), ("seq", "ascending"), ("_p", "ascending")])
        .drop_columns("_p")
    )


def _unique(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """One row per (trace, seq, call index); a message's seq holds calls or one result."""
    kinds: dict[tuple[int, int], bool] = {}
    kept = []
    for row in rows:
        if kinds.setdefault((row[0], row[1]), row[2] is None) != (row[2] is None):
            continue
        if row[2] is None or row not in kept:
            kept.append(row)
    return kept


@settings(max_examples=400, deadline=None)
@given(
    st.lists(calls, max_size=40),
    st.lists(lone, max_size=8),
    st.sampled_from(["drawn", "indexed", "unanswered last"]),
    st.lists(st.booleans(), max_size=40),
)
@example(
    [(1, 2, 0), (1, 2, 1), (2, 0, 0)], [(1, 1, None), (3, 0, None), (0, 9, None)], "indexed", []
)
@example([(2, 0, 0), (1, 2, 0)], [(1, 1, None)], "indexed", [])
@example(
    [(1, 2, 0), (1, 2, 1), (2, 0, 0), (0, 1, 0)], [(1, 1, None)], "unanswered last", [False, True]
)
def test_the_rows_come_out_in_trace_order(
    call_rows: list[tuple[Any, ...]],
    lone_rows: list[tuple[Any, ...]],
    order: str,
    unanswered: list[bool],
) -> None:
    """The rows as drawn; or as SQLite gives the union (the calls in index order, then the
    lone rows); or as PostgreSQL does (the answered calls in order, then the unanswered ones,
    drawn by ``unanswered``, in no order, then the lone rows)."""
    rows = _unique(call_rows + lone_rows)
    lone_part = [r for r in rows if r[2] is None]
    calls_part = sorted(r for r in rows if r[2] is not None)
    if order == "indexed":
        rows = calls_part + lone_part
    elif order == "unanswered last":
        late = [r for i, r in enumerate(calls_part) if i < len(unanswered) and unanswered[i]]
        rows = [r for r in calls_part if r not in late] + late[::-1] + lone_part
    table = _table(rows)
    ordered = _in_trace_order(table)
    assert ordered.schema == table.schema
    assert ordered.to_pylist() == _sorted(table).to_pylist()


def test_rows_mostly_in_order_are_slotted_in_as_one_chunk() -> None:
    """As the databases give a range: calls in order, an unanswered call and a lone row last."""
    table = _table([(1, 0, 0), (1, 2, 0), (2, 1, 0), (2, 3, 0), (1, 1, None), (2, 0, 0)])
    slotted = _slotted(table)
    assert slotted is not None
    assert [(r["trace_id"], r["seq"], r["payload"]) for r in slotted.to_pylist()] == [
        (1, 0, "row 0"), (1, 1, "row 4"), (1, 2, "row 1"), (2, 0, "row 5"), (2, 1, "row 2"),
        (2, 3, "row 3"),
    ]  # fmt: skip
    assert slotted["payload"].num_chunks == 1


def test_a_range_with_many_rows_out_of_order_is_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``SLOTTED_ROWS`` rows after the first out of order, Arrow's sort."""
    import db.queries.pairs

    monkeypatch.setattr(db.queries.pairs, "SLOTTED_ROWS", 2)
    table = _table([(1, 0, 0), (1, 2, 0), (1, 3, None), (1, 1, None), (0, 5, None), (0, 1, 0)])
    assert _slotted(table) is None
    ordered = _in_trace_order(table)
    assert [(r["trace_id"], r["seq"]) for r in ordered.to_pylist()] == [
        (0, 1), (0, 5), (1, 0), (1, 1), (1, 2), (1, 3),
    ]  # fmt: skip


# A Tool Message: (trace_id, seq); a call: (trace_id, answer seq or None).
held_results = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 40)), max_size=30, unique=True)
asking_calls = st.lists(st.tuples(st.integers(0, 6), st.none() | st.integers(0, 41)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(held_results, asking_calls, st.permutations(range(7)))
@example([], [(1, 3), (2, None)], list(range(7)))
@example([(5, 40)], [(5, 40), (6, 40), (5, 0)], list(range(7)))
@example([(3, 2), (4, 2)], [(3, 2), (4, 2)], [0, 1, 2, 4, 5, 6, 3])
def test_each_call_finds_the_tool_message_at_its_answer_seq(
    results: list[tuple[int, int]], calls: list[tuple[int, int | None]], trace_order: list[int]
) -> None:
    """``_answer_rows``: the row of the Tool Message of the call's trace at the call's answer
    seq, in any order the driver gives the rows; NULL for a call without answer seq, for one
    whose Tool Message is not there, and for one whose trace is not among the range's."""
    from db.queries.pairs import _answer_rows

    ids = pa.chunked_array([pa.array([t * 1000 for t in trace_order[:6]], pa.int64())])
    result_table = pa.table(
        {
            "trace_id": pa.array([t * 1000 for t, _ in results], pa.int64()),
            "result_seq": pa.array([s for _, s in results], pa.int32()),
        }
    )
    call_table = pa.table(
        {
            "trace_id": pa.array([t * 1000 for t, _ in calls], pa.int64()),
            "answer_seq": pa.array([s for _, s in calls], pa.int32()),
        }
    )
    at = {(t, s): row for row, (t, s) in enumerate(results)}
    outside = trace_order[6]
    expected = [at.get((t, s)) if s is not None and t != outside else None for t, s in calls]
    assert _answer_rows(call_table, result_table, ids).to_pylist() == expected
