"""Queries behind the Loops page: repeated-call signatures at a threshold k, and ping-pong.

A loop is a (trace, signature) whose calls reach ``occurrence >= k``. ``occurrence`` is stored per
call at import, so changing k re-filters in SQL without re-importing. Every loop figure counts all
calls of a looping signature in its trace (as :func:`db.queries.summary.loop_counts` does), and
wasted tokens are the tokens of the results answering the repeats (``occurrence >= 2``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import Connection, Engine, Select, Text, and_, cast, func, select, true

from db import figures
from db.catalogue import PING_PONG_CALLS
from db.queries.common import TRACE, to_frame, total
from db.queries.filters import NO_FILTERS, Filters
from db.queries.planner import grouping_key, restrict_calls_in_index
from db.rollups.read import SIGNATURES, TRACES, scope
from db.schema import (
    RollupSignatureRow,
    RollupTraceRow,
    ToolCallRow,
    ToolResultRow,
    aliased,
)

#: Characters of a call's arguments shown to identify a loop.
ARGS_PREVIEW_CHARS = 200


def _loop_groups(k: int, filters: Filters, *, nested: bool = False) -> Select[*tuple[Any, ...]]:
    """One row per looping (trace, signature) with its figures, unordered and unpaged.

    Occurrences of a signature in a trace are numbered 1 … n, so each looping signature has
    exactly one call at ``occurrence == k``: those few calls (off the occurrence index) are the
    keys, and each key's calls are read from its trace. A group's figures do not depend on
    ``k``: with a higher ``k`` the rows are the groups of at least ``k`` calls
    (:func:`top_occurrence`).
    """
    keys = restrict_calls_in_index(
        select(
            grouping_key(ToolCallRow.trace_id).label("trace_id"),
            ToolCallRow.signature.label("signature"),
        ).where(ToolCallRow.occurrence == k),
        filters,
    ).subquery()
    call = aliased(ToolCallRow)
    result = aliased(ToolResultRow)
    if nested:
        return _nested_loop_groups(keys, call, result)
    return (
        select(
            keys.c.trace_id,
            keys.c.signature,
            func.max(call.tool_name).label("tool"),
            func.count().label("occurrences"),
            func.max(call.run_length).label("run_length"),
            func.count().filter(result.status == "error").label("errors"),
            func.coalesce(func.sum(result.tokens).filter(call.occurrence >= 2), 0).label(
                "wasted_tokens"
            ),
        )
        .select_from(keys)
        .join(call, and_(call.trace_id == keys.c.trace_id, call.signature == keys.c.signature))
        # The result that answers the call (its pairing is stored on the call at import).
        .outerjoin(
            result,
            and_(result.trace_id == call.trace_id, result.message_seq == call.result_seq),
        )
        .group_by(keys.c.trace_id, keys.c.signature)
    )


def _nested_loop_groups(keys: Any, call: Any, result: Any) -> Select[*tuple[Any, ...]]:
    """:func:`_loop_groups`' form for ClickHouse 18.16, which joins once per SELECT: the keys'
    calls first, then their results."""
    calls = (
        select(
            keys.c.trace_id,
            keys.c.signature,
            call.tool_name,
            call.run_length,
            call.occurrence,
            call.result_seq,
        )
        .select_from(keys)
        .join(call, and_(call.trace_id == keys.c.trace_id, call.signature == keys.c.signature))
        .subquery("loop_calls")
    )
    return (
        select(
            calls.c.trace_id,
            calls.c.signature,
            func.max(calls.c.tool_name).label("tool"),
            func.count().label("occurrences"),
            func.max(calls.c.run_length).label("run_length"),
            func.count().filter(result.status == "error").label("errors"),
            func.coalesce(func.sum(result.tokens).filter(calls.c.occurrence >= 2), 0).label(
                "wasted_tokens"
            ),
        )
        .select_from(calls)
        .outerjoin(
            result,
            and_(result.trace_id == calls.c.trace_id, result.message_seq == calls.c.result_seq),
        )
        .group_by(calls.c.trace_id, calls.c.signature)
    )


def top_occurrence(conn: Connection, k: int, filters: Filters, needed: int) -> int:
    """The highest ``o >= k`` at which ``needed`` looping signatures have ``o`` or more calls
    (``k`` when fewer than ``needed`` reach ``k``).

    A signature with n calls has exactly one call at each occurrence 1 … n, so the calls at
    occurrence ``o`` count the signatures of ``o`` or more calls: a list of the ``needed`` most
    repeated signatures holds only signatures of ``o`` or more calls, and reads their groups
    (:func:`_loop_groups` at ``o``) instead of every looping signature's. Counted off the
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
    nested = engine.dialect.name == "clickhouse"
    groups = _loop_groups(k, filters, nested=nested).subquery()
    stmt = select(
        func.count(),
        func.coalesce(func.sum(groups.c.occurrences), 0),
        func.count(groups.c.trace_id.distinct()),
        func.coalesce(func.sum(groups.c.errors), 0),
        func.coalesce(func.sum(groups.c.wasted_tokens), 0),
    )
    with engine.connect() as conn:
        at = scope(conn, SIGNATURES, filters)
        traces_at = scope(conn, TRACES, filters, tool="all")
        if at is not None and traces_at is not None:
            sg, tr = RollupSignatureRow, RollupTraceRow
            looping = select(
                func.coalesce(total(sg.n), 0),
                func.coalesce(total(sg.n * sg.occurrences), 0),
                func.coalesce(total(sg.errors), 0),
                func.coalesce(total(sg.wasted_tokens), 0),
            ).where(*at, sg.occurrences >= k)
            with_loops = select(func.coalesce(total(tr.n), 0)).where(
                *traces_at, tr.max_occurrence >= k
            )
            sigs, calls, errors, wasted = conn.execute(looping).one()
            traces = conn.execute(with_loops).scalar_one()
        else:
            sigs, calls, traces, errors, wasted = conn.execute(stmt).one()
    return {
        "signatures": int(sigs),
        "calls": int(calls),
        "traces": int(traces),
        "errors": int(errors),
        "wasted_tokens": int(wasted),
    }


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
    every = _loop_groups(at, filters, nested=nested).subquery()
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
            first.message_seq.label("message_seq"),
            first.call_index.label("call_index"),
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
    nested = engine.dialect.name == "clickhouse"
    groups = _loop_groups(k, filters, nested=nested).subquery()
    stmt = (
        select(
            groups.c.tool,
            func.count().label("loops"),
            func.sum(groups.c.occurrences).label("calls"),
            func.sum(groups.c.wasted_tokens).label("wasted_tokens"),
        )
        .group_by(groups.c.tool)
        .order_by(func.count().desc(), func.sum(groups.c.occurrences).desc(), groups.c.tool)
        .limit(top_tools)
    )
    with engine.connect() as conn:
        at = scope(conn, SIGNATURES, filters)
        if at is not None:
            sg = RollupSignatureRow
            loops, calls = total(sg.n), total(sg.n * sg.occurrences)
            stmt = (
                select(
                    sg.tool.label("tool"),
                    loops.label("loops"),
                    calls.label("calls"),
                    total(sg.wasted_tokens).label("wasted_tokens"),
                )
                .where(*at, sg.occurrences >= k)
                .group_by(sg.tool)
                .order_by(loops.desc(), calls.desc(), sg.tool)
                .limit(top_tools)
            )
        return to_frame(conn, stmt)


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
