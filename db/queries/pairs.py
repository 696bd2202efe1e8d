"""The pairs table behind the Tool calls page: every call beside its Tool Message, paged.

One row per tool call (with the result that answers it, if any) plus one row per Tool Message
that no call shows as its answer (results answering no call, and second answers to an answered
call). Rows are filtered, sorted and paged in SQL; only one page travels to pandas.

A row's ``pair`` is its address in the trace, the ``pair`` URL parameter of the Trace page:
``"<message seq>:<call index>"`` for a call, ``"r<message seq>"`` for a Tool Message of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import (
    ColumnElement,
    Engine,
    Integer,
    and_,
    cast,
    func,
    null,
    select,
    union_all,
)

from db.filters import NO_FILTERS, Filters, restrict_calls, restrict_results
from db.planner import restrict_results_in_index
from db.queries.common import effective_error_type, effective_verdict, unpaired_result
from db.schema import ToolCallRow, ToolResultRow, TraceRow
from db.summary import PAIR_STATES, STATUSES, VERDICTS

SORT_KEYS: tuple[str, ...] = (
    "trace", "tool", "status", "error_type", "pair_state", "tokens", "occurrence", "verdict",
)  # fmt: skip
#: Columns of :func:`list_pairs`, in display order.
PAIR_COLUMNS: tuple[str, ...] = (
    "trace", "pair", "tool", "status", "error_type", "pair_state", "tokens", "occurrence",
    "verdict", "trace_id", "seq", "call_index", "result_seq",
)  # fmt: skip
#: Most distinct error types offered as a filter.
ERROR_TYPE_CHOICES = 200


@dataclass(frozen=True, slots=True)
class PairQuery:
    """What the Tool calls page narrows the pairs to, and how it sorts them.

    Empty fields mean "all". ``trace`` matches a part of the trace's display id (any case);
    ``sort`` is one of :data:`SORT_KEYS`.
    """

    status: str | None = None
    error_type: str | None = None
    pair_state: str | None = None
    verdict: str | None = None
    trace: str | None = None
    sort: str = "trace"
    descending: bool = False


ALL_PAIRS = PairQuery()


def _result_conditions(q: PairQuery) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if q.status:
        conds.append(ToolResultRow.status == q.status)
    if q.error_type:
        conds.append(effective_error_type == q.error_type)
    if q.verdict:
        conds.append(effective_verdict == q.verdict)
    return conds


def _traces_named(q: PairQuery) -> Any:
    """Ids of the traces whose display id contains ``q.trace`` (any case)."""
    return select(TraceRow.id).where(TraceRow.display_id.icontains(q.trace, autoescape=True))


def _call_rows(f: Filters, q: PairQuery, *, count: bool = False) -> Any:
    """Every call, with the Tool Message that answers it (outer join: unanswered calls too);
    ``count``: only the number of those rows (joining the answer only when a condition needs
    it: a call has at most one answer, so the join adds no rows).

    The trace's display id is joined later, to the rows of one page: a join here lets the
    planner start from ``traces`` and sort every call.
    """
    stmt: Any
    if count:
        stmt = select(func.count()).select_from(ToolCallRow)
        if q.status or q.error_type or q.verdict:
            stmt = stmt.outerjoin(ToolResultRow, _answer())
    else:
        stmt = (
            select(
                ToolCallRow.trace_id.label("trace_id"),
                ToolCallRow.message_seq.label("seq"),
                ToolCallRow.call_index.label("call_index"),
                ToolCallRow.tool_name.label("tool"),
                ToolResultRow.status.label("status"),
                effective_error_type.label("error_type"),
                ToolCallRow.pair_state.label("pair_state"),
                ToolResultRow.tokens.label("tokens"),
                ToolCallRow.occurrence.label("occurrence"),
                effective_verdict.label("verdict"),
                ToolResultRow.message_seq.label("result_seq"),
            )
            .select_from(ToolCallRow)
            .outerjoin(ToolResultRow, _answer())
        )
    stmt = restrict_calls(stmt, f).where(*_result_conditions(q))
    if q.trace:
        stmt = stmt.where(ToolCallRow.trace_id.in_(_traces_named(q)))
    if q.pair_state:
        stmt = stmt.where(ToolCallRow.pair_state == q.pair_state)
    return stmt


def _answer() -> ColumnElement[bool]:
    # A call's answer: the Tool Message at its result seq (at most one row per call).
    return and_(
        ToolResultRow.trace_id == ToolCallRow.trace_id,
        ToolResultRow.message_seq == ToolCallRow.result_seq,
    )


def _lone_result_rows(f: Filters, q: PairQuery, *, count: bool = False) -> Any:
    """Tool Messages no call shows as its answer: orphans, early results, second answers."""
    stmt: Any
    if count:
        stmt = select(func.count()).select_from(ToolResultRow)
    else:
        stmt = select(
            ToolResultRow.trace_id.label("trace_id"),
            ToolResultRow.message_seq.label("seq"),
            cast(null(), Integer).label("call_index"),
            ToolResultRow.tool.label("tool"),
            ToolResultRow.status.label("status"),
            effective_error_type.label("error_type"),
            ToolResultRow.pair_state.label("pair_state"),
            ToolResultRow.tokens.label("tokens"),
            cast(null(), Integer).label("occurrence"),
            effective_verdict.label("verdict"),
            ToolResultRow.message_seq.label("result_seq"),
        )
    stmt = restrict_results(stmt, f).where(unpaired_result, *_result_conditions(q))
    if q.trace:
        stmt = stmt.where(ToolResultRow.trace_id.in_(_traces_named(q)))
    if q.pair_state:
        stmt = stmt.where(ToolResultRow.pair_state == q.pair_state)
    return stmt


def count_pairs(engine: Engine, filters: Filters = NO_FILTERS, query: PairQuery = ALL_PAIRS) -> int:
    """How many rows the pairs table has under ``filters`` and ``query``."""
    stmt = select(
        _call_rows(filters, query, count=True).scalar_subquery(),
        _lone_result_rows(filters, query, count=True).scalar_subquery(),
    )
    with engine.connect() as conn:
        calls, lone = conn.execute(stmt).one()
    return int(calls) + int(lone)


def _order(columns: Any, query: PairQuery) -> list[Any]:
    """``ORDER BY`` of the pairs table over ``columns`` (a subquery's or the union's)."""
    position = [columns.trace_id, columns.seq, func.coalesce(columns.call_index, -1)]
    if query.sort == "trace":
        return [c.desc() for c in position] if query.descending else position
    column = columns[query.sort]
    return [column.is_(None), column.desc() if query.descending else column, *position]


def list_pairs(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    query: PairQuery = ALL_PAIRS,
    *,
    limit: int = 100,
    offset: int = 0,
) -> pd.DataFrame:
    """One page of the pairs table (columns: :data:`PAIR_COLUMNS`).

    Sorted by ``query.sort`` (empty values last, in both directions), then by trace and
    position. ``sort="trace"`` keeps the import order of traces and the message order inside.
    """
    if query.sort not in SORT_KEYS:
        raise ValueError(f"unknown sort key {query.sort!r} (one of {', '.join(SORT_KEYS)})")
    # The page is among the first ``offset + limit`` rows of each part under the same order, so
    # each part is cut there before the union is sorted: sorted by trace, the calls part comes
    # in the order of its (trace_id, message_seq, call_index) index and stops early.
    first = offset + limit
    parts = []
    for rows in (_call_rows(filters, query), _lone_result_rows(filters, query)):
        part = rows.subquery()
        parts.append(select(select(part).order_by(*_order(part.c, query)).limit(first).subquery()))
    pairs = union_all(*parts).subquery("pairs")
    page = select(pairs).order_by(*_order(pairs.c, query)).limit(limit).offset(offset).subquery()
    stmt = (
        select(page, TraceRow.display_id.label("trace"))
        .join(TraceRow, TraceRow.id == page.c.trace_id)
        .order_by(*_order(page.c, query))
    )
    with engine.connect() as conn:
        result = conn.execute(stmt)
        df = pd.DataFrame(result.all(), columns=list(result.keys()))
    df["pair"] = [
        f"r{seq}" if pd.isna(idx) else f"{seq}:{int(idx)}"
        for seq, idx in zip(df["seq"], df["call_index"], strict=True)
    ]
    for col in ("call_index", "occurrence", "tokens", "result_seq"):
        df[col] = df[col].astype("Int64")
    return df[list(PAIR_COLUMNS)]


def pair_choices(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, list[str]]:
    """Values the pairs filters offer: ``status``, ``error_type`` (those present),
    ``pair_state`` and ``verdict``."""
    # Only error results have an error type: the distinct ones come off the errors index,
    # filtered where they lie.
    stmt = restrict_results_in_index(
        select(effective_error_type)
        .where(ToolResultRow.status == "error", effective_error_type.is_not(None))
        .distinct()
        .order_by(effective_error_type)
        .limit(ERROR_TYPE_CHOICES),
        filters,
    )
    with engine.connect() as conn:
        error_types = [str(v) for v in conn.execute(stmt).scalars()]
    return {
        "status": list(STATUSES),
        "error_type": error_types,
        "pair_state": list(PAIR_STATES),
        "verdict": list(VERDICTS),
    }
