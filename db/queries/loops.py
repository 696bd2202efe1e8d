"""Queries behind the Loops page: repeated-call signatures at a threshold k, and ping-pong.

A loop is a (trace, signature) whose calls reach ``occurrence >= k``. ``occurrence`` is stored per
call at import, so changing k re-filters in SQL without re-importing. Every loop figure counts all
calls of a looping signature in its trace (as :func:`db.queries.summary.loop_counts` does), and
wasted tokens are the tokens of the results answering the repeats (``occurrence >= 2``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import Connection, Engine, Text, and_, cast, func, select, true

from db import figures
from db.catalogue import PING_PONG_CALLS, loop_groups, loops_at
from db.queries.common import TRACE, labelled, to_frame
from db.queries.filters import NO_FILTERS, Filters
from db.queries.planner import restrict_calls_in_index
from db.schema import ToolCallRow, aliased

#: Characters of a call's arguments shown to identify a loop.
ARGS_PREVIEW_CHARS = 200


def top_occurrence(conn: Connection, k: int, filters: Filters, needed: int) -> int:
    """The highest ``o >= k`` at which ``needed`` looping signatures have ``o`` or more calls
    (``k`` when fewer than ``needed`` reach ``k``).

    A signature with n calls has exactly one call at each occurrence 1 … n, so the calls at
    occurrence ``o`` count the signatures of ``o`` or more calls: a list of the ``needed`` most
    repeated signatures holds only signatures of ``o`` or more calls, and reads their groups
    (``db.catalogue.loop_groups`` at ``o``) instead of every looping signature's. Counted off the
    occurrence index from the highest occurrence down, the filters tested in its entries.
    """
    at = restrict_calls_in_index(
        select(ToolCallRow.occurrence)
        .where(ToolCallRow.occurrence >= k)
        .group_by(ToolCallRow.occurrence)
        .having(func.count() >= needed)
        .order_by(ToolCallRow.occurrence.desc())
        .limit(1),
        filters,
    )
    found = conn.execute(at).scalar()
    return k if found is None else int(found)


def loop_totals(engine: Engine, k: int, filters: Filters = NO_FILTERS) -> dict[str, int]:
    """Headline loop figures at ``k``: ``signatures``, ``calls``, ``traces``, ``errors``,
    ``wasted_tokens``."""
    at = loops_at(k)
    measures = [at.signatures, at.calls, at.traces, at.errors, at.wasted_tokens]
    with engine.connect() as conn:
        return figures.counts(conn, measures, filters=filters)


def loop_signatures(
    engine: Engine, k: int, filters: Filters = NO_FILTERS, *, limit: int = 50, offset: int = 0
) -> pd.DataFrame:
    """One page of looping signatures at ``k``, the most repeated first.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value of the first call), ``tool``,
    ``arguments`` (preview of the first call's arguments), ``occurrences``, ``run_length``
    (longest consecutive run), ``errors`` (error results among the calls), ``wasted_tokens``,
    ``signature``.
    """
    with engine.connect() as conn:
        # Only signatures with as many calls as the page's last row can be on the page.
        at = top_occurrence(conn, k, filters, offset + limit)
        nested = conn.dialect.name == "clickhouse"
        df = to_frame(conn, _signature_page(at, filters, limit, offset, nested=nested))
    pair = df["message_seq"].astype(str) + ":" + df["call_index"].astype(str)
    df.insert(1, "pair", pair)
    return df.drop(columns=["message_seq", "call_index"])


def _signature_page(
    at: int, filters: Filters, limit: int, offset: int, *, nested: bool = False
) -> Any:
    """One page of the signatures of ``at`` or more calls, with their first call (``nested``:
    joined one SELECT at a time, for ClickHouse 18.16)."""
    every = loop_groups(at, filters).subquery()
    groups = (
        select(every)
        .order_by(
            every.c.occurrences.desc(),
            every.c.wasted_tokens.desc(),
            every.c.trace_id,
            every.c.signature,
        )
        .limit(limit)
        .offset(offset)
        .subquery()
    )
    first = aliased(ToolCallRow)
    args = func.coalesce(first.arguments_raw, cast(first.arguments, Text))
    if nested:
        return _nested_signature_page(groups, first, args)
    return (
        select(
            TRACE.display_id.label("trace"),
            *labelled(first.message_seq, first.call_index),
            groups.c.tool,
            func.substr(args, 1, ARGS_PREVIEW_CHARS).label("arguments"),
            groups.c.occurrences,
            groups.c.run_length,
            groups.c.errors,
            groups.c.wasted_tokens,
            groups.c.signature,
        )
        .select_from(groups)
        .join(TRACE, TRACE.id == groups.c.trace_id)
        .join(
            first,
            and_(
                first.trace_id == groups.c.trace_id,
                first.signature == groups.c.signature,
                first.occurrence == 1,
            ),
        )
        .order_by(
            groups.c.occurrences.desc(),
            groups.c.wasted_tokens.desc(),
            groups.c.trace_id,
            groups.c.signature,
        )
    )


def _nested_signature_page(groups: Any, first: Any, args: Any) -> Any:
    """:func:`_signature_page`'s rows joined one SELECT at a time: the groups with their
    traces, then with their first calls."""
    named = (
        select(groups, TRACE.display_id.label("trace"))
        .select_from(groups)
        .join(TRACE, TRACE.id == groups.c.trace_id)
        .subquery("named")
    )
    firsts = (
        select(
            first.trace_id,
            first.signature,
            first.message_seq,
            first.call_index,
            func.substr(args, 1, ARGS_PREVIEW_CHARS).label("arguments"),
        )
        .where(first.occurrence == 1)
        .subquery("firsts")
    )
    n = named.c
    return (
        select(
            n.trace,
            firsts.c.message_seq,
            firsts.c.call_index,
            n.tool,
            firsts.c.arguments,
            n.occurrences,
            n.run_length,
            n.errors,
            n.wasted_tokens,
            n.signature,
        )
        .select_from(named)
        .join(
            firsts,
            and_(firsts.c.trace_id == n.trace_id, firsts.c.signature == n.signature),
        )
        .order_by(n.occurrences.desc(), n.wasted_tokens.desc(), n.trace_id, n.signature)
    )


def loops_by_tool(
    engine: Engine, k: int, filters: Filters = NO_FILTERS, *, top_tools: int = 20
) -> pd.DataFrame:
    """Loop counts per tool at ``k`` for the ``top_tools`` tools with the most loops.

    Columns: ``tool``, ``loops`` (looping signatures), ``calls``, ``wasted_tokens``.
    """
    at = loops_at(k)
    with engine.connect() as conn:
        return figures.read(
            conn,
            [at.signatures.named("loops"), at.calls, at.wasted_tokens],
            by=[at.tool],
            filters=filters,
            order=[("loops", True), ("calls", True), ("tool", False)],
            limit=top_tools,
        )


def ping_pong_calls(engine: Engine, filters: Filters = NO_FILTERS) -> int:
    """How many calls are part of an A-B-A-B ping-pong between two signatures."""
    # (On the base tables, off the small partial index of ping-pong calls, filtered where it
    # lies.)
    with engine.connect() as conn:
        return figures.counts(conn, [PING_PONG_CALLS], filters=filters)["calls"]


def ping_pong_traces(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 20
) -> pd.DataFrame:
    """Traces with ping-pong calls, the most first.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value of the first ping-pong call),
    ``calls``, ``tools`` (``A ↔ B``: the alphabetically first and last tool involved).
    """
    clickhouse = engine.dialect.name == "clickhouse"
    c = ToolCallRow
    # ClickHouse has no correlated subquery: the first call's index picked as the groups are
    # counted (the index of the least (seq, index)).
    first_call = (
        (func.argMin(c.call_index, c.message_seq * 65536 + c.call_index).label("first_index"),)
        if clickhouse
        else ()
    )
    groups = (
        restrict_calls_in_index(
            select(
                ToolCallRow.trace_id.label("trace_id"),
                func.count().label("calls"),
                func.min(ToolCallRow.message_seq).label("first_seq"),
                func.min(ToolCallRow.tool_name).label("tool_a"),
                func.max(ToolCallRow.tool_name).label("tool_b"),
                *first_call,
            )
            .where(ToolCallRow.ping_pong == true())
            .group_by(ToolCallRow.trace_id),
            filters,
        )
        .order_by(func.count().desc(), ToolCallRow.trace_id)
        .limit(limit)
        .subquery()
    )
    inner = aliased(ToolCallRow)
    first_index = (
        select(func.min(inner.call_index))
        .where(
            inner.trace_id == groups.c.trace_id,
            inner.message_seq == groups.c.first_seq,
            inner.ping_pong == true(),
        )
        .scalar_subquery()
    )
    stmt = (
        select(
            TRACE.display_id.label("trace"),
            groups.c.first_seq,
            groups.c.first_index if clickhouse else first_index.label("first_index"),
            groups.c.calls,
            groups.c.tool_a,
            groups.c.tool_b,
        )
        .select_from(groups)
        .join(TRACE, TRACE.id == groups.c.trace_id)
        .order_by(groups.c.calls.desc(), groups.c.trace_id)
    )
    with engine.connect() as conn:
        df = to_frame(conn, stmt)
    pair = df["first_seq"].astype(str) + ":" + df["first_index"].astype(str)
    tools = df["tool_a"].where(df["tool_a"] == df["tool_b"], df["tool_a"] + " ↔ " + df["tool_b"])
    return pd.DataFrame({"trace": df["trace"], "pair": pair, "calls": df["calls"], "tools": tools})
