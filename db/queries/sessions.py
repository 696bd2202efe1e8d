"""Queries behind the Sessions page: the traces that share a session or conversation thread.

A trace's session is ``traces.session_id`` (what its source named: OTLP ``session.id``, Claude
Code's and Langfuse's ``sessionId``, a LangSmith thread). A session's figures sum its traces'
(under the sidebar's filters: a session lists the traces that pass them); its first and last
times are its traces' earliest and latest starts. Each statement groups the index on
``(session_id, started_at)``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import Engine, Select, func, select

from db.queries.common import labelled, to_frame
from db.queries.filters import NO_FILTERS, Filters, restrict_traces
from db.schema import TraceRow

#: Columns of :func:`list_sessions`.
SESSION_COLUMNS: tuple[str, ...] = (
    "session", "traces", "messages", "tool_calls", "errors", "problems", "first", "last",
)  # fmt: skip
#: Columns of :func:`session_traces`.
SESSION_TRACE_COLUMNS: tuple[str, ...] = (
    "trace", "title", "agent", "started_at", "messages", "tool_calls", "errors", "problems",
)  # fmt: skip


def _sessions(filters: Filters, text: str | None, shared: bool) -> Select[Any]:
    """The sessions (one row each, column ``session``) of the traces that pass ``filters``,
    ``text`` matching part of the session id (any case), ``shared``: of two traces or more."""
    t = TraceRow
    stmt = restrict_traces(
        select(t.session_id.label("session")).where(t.session_id.is_not(None)), filters
    )
    if text and text.strip():
        stmt = stmt.where(t.session_id.icontains(text.strip(), autoescape=True))
    stmt = stmt.group_by(t.session_id)
    if shared:
        stmt = stmt.having(func.count() > 1)
    return stmt


def list_sessions(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    *,
    text: str | None = None,
    shared: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> pd.DataFrame:
    """The sessions, the latest activity first (columns :data:`SESSION_COLUMNS`), ``limit``
    from ``offset``: how many traces, messages, tool calls, errors and problems each holds,
    its first and last trace start. ``text`` and ``shared`` as in :func:`count_sessions`."""
    t = TraceRow
    stmt = (
        _sessions(filters, text, shared)
        .add_columns(
            func.count().label("traces"),
            func.sum(t.message_count).label("messages"),
            func.sum(t.tool_call_count).label("tool_calls"),
            func.sum(t.error_count).label("errors"),
            func.sum(t.problem_count).label("problems"),
            func.min(t.started_at).label("first"),
            func.max(t.started_at).label("last"),
        )
        .order_by(func.max(t.started_at).desc().nulls_last(), t.session_id)
        .limit(limit)
        .offset(offset)
    )
    with engine.connect() as conn:
        frame = to_frame(conn, stmt)
    for name in ("first", "last"):
        frame[name] = pd.to_datetime(frame[name], utc=True)
    for name in SESSION_COLUMNS[1:6]:
        frame[name] = frame[name].astype("int64")
    return frame


def count_sessions(
    engine: Engine, filters: Filters = NO_FILTERS, *, text: str | None = None, shared: bool = False
) -> int:
    """How many sessions :func:`list_sessions` pages through: those of the traces passing
    ``filters`` whose id contains ``text``; ``shared``: only those of two traces or more."""
    inner = _sessions(filters, text, shared).subquery()
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(inner)).scalar_one())


def session_traces(
    engine: Engine, session: str, filters: Filters = NO_FILTERS, *, limit: int = 200
) -> pd.DataFrame:
    """The traces of ``session`` that pass ``filters``, in order of start (columns
    :data:`SESSION_TRACE_COLUMNS`), at most ``limit``."""
    t = TraceRow
    stmt = restrict_traces(
        select(
            t.display_id.label("trace"),
            *labelled(t.title, t.agent, t.started_at),
            t.message_count.label("messages"),
            t.tool_call_count.label("tool_calls"),
            t.error_count.label("errors"),
            t.problem_count.label("problems"),
        ).where(t.session_id == session),
        filters,
    )
    stmt = stmt.order_by(t.started_at.nulls_last(), t.id).limit(limit)
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def session_of(engine: Engine, trace_id: int) -> tuple[str | None, int]:
    """The session of the trace ``trace_id`` and how many stored traces it holds (0 without
    one)."""
    t = TraceRow
    with engine.connect() as conn:
        session = conn.execute(select(t.session_id).where(t.id == trace_id)).scalar()
        if session is None:
            return None, 0
        count = conn.execute(select(func.count()).where(t.session_id == session)).scalar_one()
    return str(session), int(count)
