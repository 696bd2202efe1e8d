"""Queries behind the Tokens page: Tool Message sizes, the biggest results, budgets, shares.

Distributions are computed in SQL (quantiles with window functions, histogram bins with integer
arithmetic) so that a store of a million messages ships a few dozen numbers, not every row.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import ColumnElement, Engine, and_, case, func, select

from db.filters import NO_FILTERS, Filters, restrict_results, restrict_traces
from db.queries.errors import TRACE, result_pair_key, to_frame
from db.schema import ImportRun, MessageRow, ToolResultRow, TraceRow

#: Characters of a Tool Message shown beside its size.
PREVIEW_CHARS = 200
#: Results per tool the token quantiles are computed from (a systematic sample beyond that).
PER_TOOL_SAMPLE = 2000
#: Quantiles reported per tool, as (name, numerator, denominator) of q.
QUANTILES: tuple[tuple[str, int, int], ...] = (
    ("p25", 1, 4),
    ("p50", 1, 2),
    ("p75", 3, 4),
    ("p95", 19, 20),
)
QUANTILE_NAMES = tuple(name for name, _, _ in QUANTILES)


def latest_encoding(engine: Engine) -> str | None:
    """The tokenizer encoding of the most recent import (``o200k_base`` …), ``None`` if empty."""
    with engine.connect() as conn:
        value = conn.execute(
            select(ImportRun.encoding).order_by(ImportRun.id.desc()).limit(1)
        ).scalar()
    return str(value) if value is not None else None


def _nearest_rank(n: ColumnElement[Any], num: int, den: int) -> ColumnElement[Any]:
    # ceil(q * n) in integer arithmetic, identical on SQLite and PostgreSQL (no CEIL needed).
    return (n * num + (den - 1)) // den


def token_quantiles_by_tool(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    *,
    top_tools: int = 15,
    per_tool_sample: int = PER_TOOL_SAMPLE,
) -> pd.DataFrame:
    """Nearest-rank quantiles of Tool Message tokens for the ``top_tools`` most used tools.

    Sorting every result by tool and size costs seconds on a large store, so the quantiles are
    computed in SQL over a systematic sample of at most about ``per_tool_sample`` results per
    tool (every n-th result by id); a tool with fewer results is exact.

    Columns: ``tool``, ``results`` (exact count), ``sampled`` (results the quantiles come
    from), ``min``, ``p25``, ``p50``, ``p75``, ``p95``, ``max``, ``mean``; tools ordered by
    their number of results.
    """
    top = restrict_results(
        select(ToolResultRow.tool, func.count())
        .group_by(ToolResultRow.tool)
        .order_by(func.count().desc(), ToolResultRow.tool)
        .limit(top_tools),
        filters,
    )
    with engine.connect() as conn:
        counts = {str(tool): int(n) for tool, n in conn.execute(top)}
        if not counts:
            return pd.DataFrame(columns=["tool", "results", "sampled", "min", *QUANTILE_NAMES,
                                         "max", "mean"])  # fmt: skip
        # Every n-th id of a tool, n chosen per tool: rare tools keep all their results.
        step = case(
            {tool: max(1, -(-n // per_tool_sample)) for tool, n in counts.items()},
            value=ToolResultRow.tool,
            else_=0,
        )
        ranked = restrict_results(
            select(
                ToolResultRow.tool.label("tool"),
                ToolResultRow.tokens.label("tokens"),
                func.row_number()
                .over(partition_by=ToolResultRow.tool, order_by=ToolResultRow.tokens)
                .label("rn"),
                func.count().over(partition_by=ToolResultRow.tool).label("n"),
            ).where(ToolResultRow.tool.in_(list(counts)), ToolResultRow.id % step == 0),
            filters,
        ).subquery()
        quantiles = [
            func.max(
                case((ranked.c.rn == _nearest_rank(ranked.c.n, num, den), ranked.c.tokens))
            ).label(name)
            for name, num, den in QUANTILES
        ]
        stmt = select(
            ranked.c.tool,
            func.max(ranked.c.n).label("sampled"),
            func.min(ranked.c.tokens).label("min"),
            *quantiles,
            func.max(ranked.c.tokens).label("max"),
            func.avg(ranked.c.tokens).label("mean"),
        ).group_by(ranked.c.tool)
        df = to_frame(conn, stmt)
    df.insert(1, "results", df["tool"].map(counts))
    df["mean"] = df["mean"].astype(float).round(1)
    df = df.sort_values(["results", "tool"], ascending=[False, True])
    return df.reset_index(drop=True)


def budget_excess(engine: Engine, budget: int, filters: Filters = NO_FILTERS) -> tuple[int, int]:
    """(results over ``budget`` tokens, all results) among the filtered Tool Messages."""
    stmt = restrict_results(
        select(
            func.coalesce(func.sum(case((ToolResultRow.tokens > budget, 1), else_=0)), 0),
            func.count(),
        ),
        filters,
    )
    with engine.connect() as conn:
        over, total = conn.execute(stmt).one()
    return int(over), int(total)


def biggest_results(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 50
) -> pd.DataFrame:
    """The ``limit`` largest Tool Messages by tokens.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value), ``tool``, ``tokens``,
    ``chars``, ``status``, ``preview`` (first ``PREVIEW_CHARS`` characters).
    """
    # Pick the ids first: sorting narrow rows, then joining 50 of them to their content, is
    # far cheaper than letting the planner sort joined rows.
    top = (
        restrict_results(select(ToolResultRow.id), filters)
        .order_by(ToolResultRow.tokens.desc(), ToolResultRow.id)
        .limit(limit)
        .subquery()
    )
    stmt = (
        select(
            TRACE.display_id.label("trace"),
            result_pair_key().label("pair"),
            ToolResultRow.tool.label("tool"),
            ToolResultRow.tokens.label("tokens"),
            ToolResultRow.chars.label("chars"),
            ToolResultRow.status.label("status"),
            func.substr(MessageRow.content, 1, PREVIEW_CHARS).label("preview"),
        )
        .select_from(top)
        .join(ToolResultRow, ToolResultRow.id == top.c.id)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id)
        .join(
            MessageRow,
            and_(
                MessageRow.trace_id == ToolResultRow.trace_id,
                MessageRow.seq == ToolResultRow.message_seq,
            ),
        )
        .order_by(ToolResultRow.tokens.desc(), ToolResultRow.id)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def tool_result_share(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, int]:
    """Token totals of the filtered traces: ``traces``, ``total_tokens``, ``tool_result_tokens``."""
    stmt = restrict_traces(
        select(
            func.count(),
            func.coalesce(func.sum(TraceRow.total_tokens), 0),
            func.coalesce(func.sum(TraceRow.tool_result_tokens), 0),
        ),
        filters,
    )
    with engine.connect() as conn:
        traces, total, tool = conn.execute(stmt).one()
    return {"traces": int(traces), "total_tokens": int(total), "tool_result_tokens": int(tool)}


def trace_share_histogram(
    engine: Engine, filters: Filters = NO_FILTERS, *, bins: int = 10
) -> pd.DataFrame:
    """How many traces spend which share of their tokens on tool results, in ``bins`` bins.

    Columns: ``share_from``, ``share_to`` (fractions, the last bin includes 1.0), ``traces``.
    Every bin is present (zero when empty); traces without tokens are left out.
    """
    raw_bin = (TraceRow.tool_result_tokens * bins) // TraceRow.total_tokens
    # A share of exactly 1.0 (or an inconsistent count above it) belongs to the last bin.
    bin_no = case((raw_bin >= bins, bins - 1), else_=raw_bin)
    stmt = restrict_traces(
        select(bin_no.label("bin"), func.count().label("traces"))
        .where(TraceRow.total_tokens > 0)
        .group_by(bin_no),
        filters,
    )
    with engine.connect() as conn:
        counts = {int(b): int(n) for b, n in conn.execute(stmt)}
    return pd.DataFrame(
        {
            "share_from": [i / bins for i in range(bins)],
            "share_to": [(i + 1) / bins for i in range(bins)],
            "traces": [counts.get(i, 0) for i in range(bins)],
        }
    )
