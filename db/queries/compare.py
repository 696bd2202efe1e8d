"""Queries behind the Compare page and ``toollens compare``: one trace set, aggregated per trace.

A trace set is what a :class:`~db.queries.filters.Filters` picks (an import, a time range, an agent,
a model, a tag; ``tool``: the traces that call that tool). Every figure is aggregated in SQL per
trace (and tool), because the statistics in :mod:`db.queries.compare_stats` treat traces as the
independent units; only the Tool Message sizes come back one row per message, for the
percentiles' cluster bootstrap.
"""

from __future__ import annotations

from typing import Any
from typing import cast as cast_type

import numpy as np
import pandas as pd
from sqlalchemy import ColumnElement, Engine, Select, and_, func, literal, select

from db.queries.common import (
    call_pair_key,
    effective_error_type,
    effective_verdict,
    labelled,
    total,
)
from db.queries.compare_stats import TOOL_COUNTS, Comparison, TraceSet, compare
from db.queries.errors import result_pair_key, to_frame
from db.queries.filters import Filters, trace_conditions
from db.queries.planner import ranks_by_window
from db.schema import FindingRow, MessageRow, ToolCallRow, ToolResultRow, TraceRow, aliased

CALL = aliased(ToolCallRow, name="call")
RESULT = aliased(ToolResultRow, name="result")


def trace_ids(f: Filters) -> Select[tuple[int]]:
    """The ids of the traces ``f`` picks, as a subquery to test ``IN`` against; the tool's
    traces by an uncorrelated ``IN`` (ClickHouse has no correlated subquery)."""
    stmt = select(TraceRow.id).where(*trace_conditions(f))
    if f.tool:
        calling = select(ToolCallRow.trace_id).where(ToolCallRow.tool_name == f.tool)
        stmt = stmt.where(TraceRow.id.in_(calling))
    return cast_type(Select[tuple[int]], stmt)


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
    kind = _error_type()
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


def _fingerprinted_errors(ids: Select[tuple[int]]) -> ColumnElement[bool]:
    """The set's error results that have a fingerprint."""
    return and_(
        ToolResultRow.trace_id.in_(ids),
        ToolResultRow.status == "error",
        ToolResultRow.fingerprint.is_not(None),
    )


def _error_type() -> ColumnElement[str]:
    return func.coalesce(effective_error_type, literal("(unclassified)"))


def _fingerprints(conn: Any, ids: Select[tuple[int]]) -> pd.DataFrame:
    """Error fingerprints with their counts and the first occurrence (trace and pair)."""
    occurrence = func.row_number().over(
        partition_by=ToolResultRow.fingerprint,
        order_by=(ToolResultRow.trace_id, ToolResultRow.message_seq),
    )
    ranked = (
        select(
            *labelled(ToolResultRow.fingerprint, ToolResultRow.tool),
            _error_type().label("error_type"),
            ToolResultRow.trace_id.label("trace_id"),
            result_pair_key().label("pair"),
            occurrence.label("occurrence"),
            func.count().over(partition_by=ToolResultRow.fingerprint).label("n"),
        )
        .where(_fingerprinted_errors(ids))
        .subquery()
    )
    traces = (
        select(
            ToolResultRow.fingerprint.label("fingerprint"),
            func.count(ToolResultRow.trace_id.distinct()).label("traces"),
        )
        .where(_fingerprinted_errors(ids))
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
            call_pair_key(ToolCallRow.message_seq, ToolCallRow.call_index).label("pair"),
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


def _firsts(values: dict[str, Any], order: ColumnElement[Any]) -> list[Any]:
    """Per group, each of ``values`` taken on the group's row of the smallest ``order``, labelled
    by its name: ``argMin`` of a tuple (ClickHouse, where no window function ranks the rows; a
    tuple because ``argMin`` of a single nullable value skips the rows where it is NULL)."""
    first = func.argMin(func.tuple(*values.values()), order)
    return [func.tupleElement(first, i + 1).label(name) for i, name in enumerate(values)]


def _named(frame: pd.DataFrame, names: dict[int, str], columns: list[str]) -> pd.DataFrame:
    """``frame`` with each first occurrence's trace named by its display id (``trace``), in
    the columns the window functions' forms give."""
    if frame.empty:
        return pd.DataFrame([], columns=columns)
    return frame.assign(trace=[names[i] for i in frame["trace_id"]])[columns]


def _first_fingerprints(conn: Any, ids: Select[tuple[int]], names: dict[int, str]) -> pd.DataFrame:
    """:func:`_fingerprints` without window functions: one GROUP BY, the first occurrence in
    (trace, message) order being the smallest row id (``db.clickhouse.schema.ROW_IDS``);
    ``names``: the set's display ids by trace id."""
    r = ToolResultRow
    first = {
        "tool": r.tool,
        "error_type": _error_type(),
        "trace_id": r.trace_id,
        "pair": result_pair_key(),
    }
    stmt = (
        select(
            r.fingerprint.label("fingerprint"),
            *_firsts(first, r.id),
            func.count().label("n"),
            func.count(r.trace_id.distinct()).label("traces"),
        )
        .where(_fingerprinted_errors(ids))
        .group_by(r.fingerprint)
        .order_by(func.count().desc(), r.fingerprint)
    )
    columns = ["fingerprint", "tool", "error_type", "n", "traces", "trace", "pair"]
    return _named(to_frame(conn, stmt), names, columns)


def _first_schema_issues(conn: Any, ids: Select[tuple[int]], names: dict[int, str]) -> pd.DataFrame:
    """:func:`_schema_issues` without window functions (as :func:`_first_fingerprints`)."""
    c = ToolCallRow
    stmt = (
        select(
            c.tool_name.label("tool"),
            c.schema_issue.label("issue"),
            func.count().label("n"),
            *_firsts(
                {"trace_id": c.trace_id, "pair": call_pair_key(c.message_seq, c.call_index)}, c.id
            ),
        )
        .where(c.trace_id.in_(ids), c.schema_issue.is_not(None))
        .group_by(c.tool_name, c.schema_issue)
        .order_by(func.count().desc(), c.tool_name, c.schema_issue)
    )
    return _named(to_frame(conn, stmt), names, ["tool", "issue", "n", "trace", "pair"])


def trace_set(engine: Engine, f: Filters, loop_k: int = 3) -> TraceSet:
    """The traces ``f`` picks, aggregated per trace for :func:`db.queries.compare_stats.compare`.

    ``loop_k``: a signature occurring ``loop_k`` or more times in a trace is a loop.
    """
    ids = trace_ids(f)
    with engine.connect() as conn:
        traces = _traces(conn, ids)
        if ranks_by_window(conn):
            fingerprints, schema_issues = _fingerprints(conn, ids), _schema_issues(conn, ids)
        else:
            names = dict(zip(traces["trace_id"], traces["display_id"], strict=True))
            fingerprints = _first_fingerprints(conn, ids, names)
            schema_issues = _first_schema_issues(conn, ids, names)
        return TraceSet(
            traces=traces,
            tools=_tools(conn, ids, loop_k),
            error_types=_error_types(conn, ids),
            findings=_findings(conn, ids),
            sizes=_sizes(conn, ids),
            fingerprints=fingerprints,
            schema_issues=schema_issues,
        )


class FilterRefused(ValueError):
    """A filter this store cannot apply (the message says which and why)."""


def compare_sets(
    engine: Engine, baseline: Filters, candidate: Filters, loop_k: int = 3
) -> Comparison:
    """Baseline vs candidate: :func:`db.queries.compare_stats.compare` over the two trace sets.

    Raises :class:`FilterRefused` for a ``tag`` or ``meta`` filter on ClickHouse: the 2018
    server has no JSON functions to read a trace's tags and metadata with."""
    if engine.dialect.name == "clickhouse" and any(f.tag or f.meta for f in (baseline, candidate)):
        raise FilterRefused("tag= and meta= do not work on a ClickHouse store yet")
    return compare(trace_set(engine, baseline, loop_k), trace_set(engine, candidate, loop_k))
