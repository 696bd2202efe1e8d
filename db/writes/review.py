"""Incident review: the review queue of traces with problems, and the reviewed flag.

Notes live in ``db.writes.annotations`` and verdict / error-type corrections in
``db.writes.corrections``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import pandas as pd
from sqlalchemy import Connection, Engine, exists, func, or_, select, update

from db.contract.vocabulary import DEFAULT_LOOP_K
from db.queries.common import effective_verdict
from db.queries.filters import NO_FILTERS, Filters, restrict_traces
from db.schema import AnnotationRow, ToolCallRow, ToolResultRow, TraceRow
from db.writes.annotations import (
    ReviewError,
    UnknownTargetError,
    now_or_utc,
)
from db.writes.transaction import writing

#: Kinds of problem the review queue can be narrowed to.
Problem = Literal["errors", "pairing", "loops", "ignored"]
PROBLEMS: tuple[str, ...] = ("errors", "pairing", "loops", "ignored")


def trace_header(engine: Engine, trace: int | str) -> dict[str, Any] | None:
    """A trace's row as a dict, by id (``int``) or display id (``str``; as on the Trace page the
    first imported wins), plus ``same_display_id``: how many traces share its display id."""
    t = TraceRow
    where = t.id == trace if isinstance(trace, int) else t.display_id == trace
    with engine.connect() as conn:
        row = conn.execute(select(t.__table__).where(where).order_by(t.id).limit(1)).first()
        if row is None:
            return None
        header = dict(row._mapping)
        header["same_display_id"] = conn.execute(
            select(func.count()).where(t.display_id == header["display_id"])
        ).scalar_one()
    return header


def _problem_condition(problem: Problem, loop_k: int) -> Any:
    t = TraceRow
    if problem == "errors":
        return t.error_count > 0
    if problem == "loops":
        return t.max_occurrence >= loop_k
    if problem == "pairing":
        return or_(
            exists().where(ToolCallRow.trace_id == t.id, ToolCallRow.pair_state != "paired"),
            exists().where(ToolResultRow.trace_id == t.id, ToolResultRow.call_seq.is_(None)),
        )
    if problem == "ignored":
        return exists().where(ToolResultRow.trace_id == t.id, effective_verdict == "ignored")
    raise ReviewError(f"unknown problem {problem!r}; choose one of {', '.join(PROBLEMS)}")


def _queue_statement(
    filters: Filters, problem: Problem | None, include_reviewed: bool, loop_k: int
) -> Any:
    stmt = restrict_traces(select(TraceRow.id).where(TraceRow.problem_count > 0), filters)
    if not include_reviewed:
        stmt = stmt.where(TraceRow.reviewed_at.is_(None))
    if problem is not None:
        stmt = stmt.where(_problem_condition(problem, loop_k))
    return stmt


#: Columns of :func:`review_queue`, in order.
QUEUE_COLUMNS: tuple[str, ...] = (
    "trace_id", "display_id", "title", "agent", "model", "started_at", "severity", "errors",
    "pairing", "loop_calls", "ignored", "notes", "reviewed_at", "reviewed_by",
)  # fmt: skip


def review_queue(
    engine: Engine,
    *,
    filters: Filters = NO_FILTERS,
    problem: Problem | None = None,
    include_reviewed: bool = False,
    loop_k: int = DEFAULT_LOOP_K,
    limit: int = 100,
    offset: int = 0,
) -> pd.DataFrame:
    """Traces with problems, most severe first (``severity`` = the trace's problem count:
    errors + pairing problems + loop calls + ignored suggestions), not yet reviewed unless
    ``include_reviewed``; one page of ``limit`` rows with the problems broken down."""
    t = TraceRow
    order = (t.problem_count.desc(), t.started_at.desc().nulls_last(), t.id)
    # The page's ids first: sorting the queue's narrow keys, then reading 100 whole rows, is far
    # cheaper than sorting whole rows (their JSON columns included).
    ids = (
        _queue_statement(filters, problem, include_reviewed, loop_k)
        .order_by(*order)
        .limit(limit)
        .offset(offset)
        .subquery()
    )
    page = select(t).where(t.id.in_(select(ids.c.id))).order_by(*order)
    with engine.connect() as conn:
        traces = conn.execute(page).all()
        counts = _breakdown(conn, [tr.id for tr in traces], loop_k)
    rows = [
        (tr.id, tr.display_id, tr.title, tr.agent, tr.model, tr.started_at, tr.problem_count,
         tr.error_count, *counts[tr.id], tr.reviewed_at, tr.reviewed_by)
        for tr in traces
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(QUEUE_COLUMNS))


def _count_by_trace(conn: Connection, stmt: Any) -> dict[int, int]:
    return {int(tid): int(n) for tid, n in conn.execute(stmt)}


def _breakdown(
    conn: Connection, ids: Sequence[int], loop_k: int
) -> dict[int, tuple[int, int, int, int]]:
    """(pairing problems, loop calls, ignored suggestions, notes) per trace of one page."""
    if not ids:
        return {}
    c, r, a = ToolCallRow, ToolResultRow, AnnotationRow
    unpaired_calls = _count_by_trace(
        conn,
        select(c.trace_id, func.count())
        .where(c.trace_id.in_(ids), c.pair_state != "paired")
        .group_by(c.trace_id),
    )
    unpaired_results = _count_by_trace(
        conn,
        select(r.trace_id, func.count())
        .where(r.trace_id.in_(ids), r.call_seq.is_(None))
        .group_by(r.trace_id),
    )
    groups = (
        select(c.trace_id, func.count().label("n"))
        .where(c.trace_id.in_(ids))
        .group_by(c.trace_id, c.signature)
        .having(func.max(c.occurrence) >= loop_k)
        .subquery()
    )
    loops = _count_by_trace(
        conn, select(groups.c.trace_id, func.sum(groups.c.n)).group_by(groups.c.trace_id)
    )
    ignored = _count_by_trace(
        conn,
        select(r.trace_id, func.count())
        .where(r.trace_id.in_(ids), effective_verdict == "ignored")
        .group_by(r.trace_id),
    )
    notes = _count_by_trace(
        conn, select(a.trace_id, func.count()).where(a.trace_id.in_(ids)).group_by(a.trace_id)
    )
    return {
        tid: (
            unpaired_calls.get(tid, 0) + unpaired_results.get(tid, 0),
            loops.get(tid, 0),
            ignored.get(tid, 0),
            notes.get(tid, 0),
        )
        for tid in ids
    }


def queue_size(
    engine: Engine,
    *,
    filters: Filters = NO_FILTERS,
    problem: Problem | None = None,
    include_reviewed: bool = False,
    loop_k: int = DEFAULT_LOOP_K,
) -> int:
    """How many traces :func:`review_queue` would list over all pages."""
    sub = _queue_statement(filters, problem, include_reviewed, loop_k).subquery()
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(sub)).scalar_one())


def mark_reviewed(
    engine: Engine, trace_id: int, author: str, *, now: datetime | None = None
) -> None:
    """Mark a trace reviewed by ``author`` (it leaves the review queue)."""
    if not author.strip():
        raise ReviewError("author is empty: say who reviewed the trace")
    with writing(engine) as conn:
        done = conn.execute(
            update(TraceRow)
            .where(TraceRow.id == trace_id)
            .values(reviewed_at=now_or_utc(now), reviewed_by=author.strip())
        ).rowcount
    if done != 1:
        raise UnknownTargetError(f"no trace with id {trace_id}")


def clear_reviewed(engine: Engine, trace_id: int) -> None:
    """Put a trace back into the review queue."""
    with writing(engine) as conn:
        conn.execute(
            update(TraceRow)
            .where(TraceRow.id == trace_id)
            .values(reviewed_at=None, reviewed_by=None)
        )
