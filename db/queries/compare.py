"""Queries behind the Compare page and ``toollens compare``: one trace set, aggregated per trace.

A trace set is what a :class:`~db.queries.filters.Filters` picks (an import, a time range, an agent,
a model, a tag; ``tool``: the traces that call that tool). Every figure is aggregated in SQL per
trace (and tool), because the statistics in :mod:`db.queries.compare_stats` treat traces as the
independent units; only the Tool Message sizes come back one row per message, for the
percentiles' cluster bootstrap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine, Select, String, and_, cast, func, literal, select

from db.queries.common import effective_error_type, effective_verdict, labelled, total
from db.queries.compare_stats import TOOL_COUNTS, Comparison, TraceSet, compare
from db.queries.errors import result_pair_key, to_frame
from db.queries.filters import Filters, restrict_traces
from db.schema import FindingRow, MessageRow, ToolCallRow, ToolResultRow, TraceRow, aliased

CALL = aliased(ToolCallRow, name="call")
RESULT = aliased(ToolResultRow, name="result")


def trace_ids(f: Filters) -> Select[tuple[int]]:
    """The ids of the traces ``f`` picks, as a subquery to test ``IN`` against."""
    return restrict_traces(select(TraceRow.id), f)


def _traces(conn: Any, ids: Select[tuple[int]]) -> pd.DataFrame:
    span = (
        select(
            MessageRow.trace_id.label("trace_id"),
            func.min(MessageRow.timestamp).label("first"),
            func.max(MessageRow.timestamp).label("last"),
        )
        .where(MessageRow.trace_id.in_(ids), MessageRow.timestamp.is_not(None))
        .group_by(MessageRow.trace_id)
        .subquery()
    )
    stmt = (
        select(TraceRow.id.label("trace_id"), TraceRow.display_id, span.c.first, span.c.last)
        .outerjoin(span, span.c.trace_id == TraceRow.id)
        .where(TraceRow.id.in_(ids))
        .order_by(TraceRow.id)
    )
    df = to_frame(conn, stmt)
    seconds = [
        (last - first).total_seconds() if first is not None and last is not None else np.nan
        for first, last in zip(df["first"], df["last"], strict=True)
    ]
    return df[["trace_id", "display_id"]].assign(duration_s=np.array(seconds, dtype=float))


def _tools(conn: Any, ids: Select[tuple[int]], loop_k: int) -> pd.DataFrame:
    calls = (
        select(
            CALL.trace_id.label("trace_id"),
            CALL.tool_name.label("tool"),
            func.count().label("calls"),
            func.count().filter(CALL.pair_state != "paired").label("pairing_problems"),
            func.count().filter(CALL.occurrence >= loop_k).label("loop_calls"),
            # A streak: the call repeats one whose result was an error, and fails again.
            func.count()
            .filter(and_(CALL.retry_after_error.is_(True), RESULT.status == "error"))
            .label("streak_calls"),
            func.coalesce(func.sum(RESULT.tokens).filter(CALL.occurrence >= 2), 0).label(
                "wasted_tokens"
            ),
        )
        .outerjoin(
            RESULT, and_(RESULT.trace_id == CALL.trace_id, RESULT.message_seq == CALL.result_seq)
        )
        .where(CALL.trace_id.in_(ids))
        .group_by(CALL.trace_id, CALL.tool_name)
    )
    results = (
        select(
            *labelled(ToolResultRow.trace_id, ToolResultRow.tool),
            func.count().label("results"),
            func.count().filter(ToolResultRow.status == "error").label("errors"),
            func.count().filter(ToolResultRow.suggestion.is_not(None)).label("suggestions"),
            func.count().filter(effective_verdict == "followed").label("followed"),
            func.count().filter(effective_verdict == "ignored").label("ignored"),
            func.coalesce(total(ToolResultRow.reread_tokens), 0).label("reread_tokens"),
            func.coalesce(total(ToolResultRow.cost_nano_usd), 0).label("cost_nano_usd"),
            func.count().filter(ToolResultRow.later_calls.is_(None)).label("uncosted"),
            func.count().filter(ToolResultRow.cost_nano_usd.is_(None)).label("unpriced"),
        )
        .where(ToolResultRow.trace_id.in_(ids))
        .group_by(ToolResultRow.trace_id, ToolResultRow.tool)
    )
    merged = to_frame(conn, calls).merge(
        to_frame(conn, results), on=["trace_id", "tool"], how="outer"
    )
    counts = merged[list(TOOL_COUNTS)].fillna(0).astype("int64")
    return pd.concat([merged[["trace_id", "tool"]], counts], axis=1)


def _error_types(conn: Any, ids: Select[tuple[int]]) -> pd.DataFrame:
    kind = func.coalesce(effective_error_type, literal("(unclassified)"))
    stmt = (
        select(
            *labelled(ToolResultRow.trace_id, ToolResultRow.tool),
            kind.label("error_type"),
            func.count().label("n"),
        )
        .where(ToolResultRow.trace_id.in_(ids), ToolResultRow.status == "error")
        .group_by(ToolResultRow.trace_id, ToolResultRow.tool, kind)
    )
    return to_frame(conn, stmt)


def _findings(conn: Any, ids: Select[tuple[int]]) -> pd.DataFrame:
    stmt = (
        select(
            *labelled(FindingRow.trace_id, FindingRow.tool, FindingRow.name),
            func.count().label("n"),
        )
        .where(FindingRow.trace_id.in_(ids))
        .group_by(FindingRow.trace_id, FindingRow.tool, FindingRow.name)
    )
    return to_frame(conn, stmt)


def _sizes(conn: Any, ids: Select[tuple[int]]) -> pd.DataFrame:
    stmt = select(
        *labelled(ToolResultRow.trace_id, ToolResultRow.tool, ToolResultRow.tokens),
    ).where(ToolResultRow.trace_id.in_(ids))
    return to_frame(conn, stmt)


def _fingerprints(conn: Any, ids: Select[tuple[int]]) -> pd.DataFrame:
    """Error fingerprints with their counts and the first occurrence (trace and pair)."""
    occurrence = func.row_number().over(
        partition_by=ToolResultRow.fingerprint,
        order_by=(ToolResultRow.trace_id, ToolResultRow.message_seq),
    )
    ranked = (
        select(
            *labelled(ToolResultRow.fingerprint, ToolResultRow.tool),
            func.coalesce(effective_error_type, literal("(unclassified)")).label("error_type"),
            ToolResultRow.trace_id.label("trace_id"),
            result_pair_key().label("pair"),
            occurrence.label("occurrence"),
            func.count().over(partition_by=ToolResultRow.fingerprint).label("n"),
        )
        .where(
            ToolResultRow.trace_id.in_(ids),
            ToolResultRow.status == "error",
            ToolResultRow.fingerprint.is_not(None),
        )
        .subquery()
    )
    traces = (
        select(
            ToolResultRow.fingerprint.label("fingerprint"),
            func.count(ToolResultRow.trace_id.distinct()).label("traces"),
        )
        .where(
            ToolResultRow.trace_id.in_(ids),
            ToolResultRow.status == "error",
            ToolResultRow.fingerprint.is_not(None),
        )
        .group_by(ToolResultRow.fingerprint)
        .subquery()
    )
    stmt = (
        select(
            ranked.c.fingerprint,
            ranked.c.tool,
            ranked.c.error_type,
            ranked.c.n,
            traces.c.traces,
            TraceRow.display_id.label("trace"),
            ranked.c.pair,
        )
        .join(traces, traces.c.fingerprint == ranked.c.fingerprint)
        .join(TraceRow, TraceRow.id == ranked.c.trace_id)
        .where(ranked.c.occurrence == 1)
        .order_by(ranked.c.n.desc(), ranked.c.fingerprint)
    )
    return to_frame(conn, stmt)


def _schema_issues(conn: Any, ids: Select[tuple[int]]) -> pd.DataFrame:
    """Schema findings of the calls (per tool and issue) with the first occurrence."""
    occurrence = func.row_number().over(
        partition_by=(ToolCallRow.tool_name, ToolCallRow.schema_issue),
        order_by=(ToolCallRow.trace_id, ToolCallRow.message_seq, ToolCallRow.call_index),
    )
    ranked = (
        select(
            ToolCallRow.tool_name.label("tool"),
            ToolCallRow.schema_issue.label("issue"),
            ToolCallRow.trace_id.label("trace_id"),
            (
                cast(ToolCallRow.message_seq, String)
                + literal(":")
                + cast(ToolCallRow.call_index, String)
            ).label("pair"),
            occurrence.label("occurrence"),
            func.count()
            .over(partition_by=(ToolCallRow.tool_name, ToolCallRow.schema_issue))
            .label("n"),
        )
        .where(ToolCallRow.trace_id.in_(ids), ToolCallRow.schema_issue.is_not(None))
        .subquery()
    )
    stmt = (
        select(
            ranked.c.tool,
            ranked.c.issue,
            ranked.c.n,
            TraceRow.display_id.label("trace"),
            ranked.c.pair,
        )
        .join(TraceRow, TraceRow.id == ranked.c.trace_id)
        .where(ranked.c.occurrence == 1)
        .order_by(ranked.c.n.desc(), ranked.c.tool, ranked.c.issue)
    )
    return to_frame(conn, stmt)


def trace_set(engine: Engine, f: Filters, loop_k: int = 3) -> TraceSet:
    """The traces ``f`` picks, aggregated per trace for :func:`db.queries.compare_stats.compare`.

    ``loop_k``: a signature occurring ``loop_k`` or more times in a trace is a loop.
    """
    ids = trace_ids(f)
    with engine.connect() as conn:
        return TraceSet(
            traces=_traces(conn, ids),
            tools=_tools(conn, ids, loop_k),
            error_types=_error_types(conn, ids),
            findings=_findings(conn, ids),
            sizes=_sizes(conn, ids),
            fingerprints=_fingerprints(conn, ids),
            schema_issues=_schema_issues(conn, ids),
        )


def compare_sets(
    engine: Engine, baseline: Filters, candidate: Filters, loop_k: int = 3
) -> Comparison:
    """Baseline vs candidate: :func:`db.queries.compare_stats.compare` over the two trace sets."""
    return compare(trace_set(engine, baseline, loop_k), trace_set(engine, candidate, loop_k))
