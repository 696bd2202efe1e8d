"""Queries behind the Tokens page: Tool Message sizes, the biggest results, budgets, shares.

Distributions are computed in SQL (exact quantiles from per-size counts, histogram bins with
integer arithmetic) so that a store of a million messages ships a few dozen numbers, not every row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine, Float, and_, cast, func, select

from db import figures
from db.catalogue import (
    COST_MEASURES,
    HAS_TOKENS,
    IMAGE_TOKENS,
    INPUT_SHARE,
    INPUT_SHARE_RESULTS,
    RESULTS_N,
    SIZE_RESULTS,
    TOKEN_COUNT_KIND,
    TOOL,
    TOOL_RESULT_TOKENS,
    TOTAL_TOKENS,
    TRACES_N,
    WITH_IMAGES,
    over_budget,
    share_bin,
)
from db.contract.vocabulary import TOKEN_COUNTS
from db.queries.common import (
    INPUT_SHARE_BINS,
    TRACE,
    labelled,
    result_message,
    result_pair_key,
    to_frame,
)
from db.queries.filters import NO_FILTERS, Filters, restrict_results
from db.queries.histograms import tool_token_counts
from db.queries.planner import walked_result_ids
from db.queries.ranks import group_ranks, group_sums
from db.schema import (
    ImportRun,
    MessageRow,
    ToolResultRow,
)

#: Characters of a Tool Message shown beside its size.
PREVIEW_CHARS = 200
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


def token_quantiles_by_tool(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    *,
    top_tools: int = 15,
) -> pd.DataFrame:
    """Nearest-rank quantiles of Tool Message tokens for the ``top_tools`` most used tools.

    Exact: the (tool, tokens) histogram (:func:`db.queries.histograms.tool_token_counts`, from
    the size rollup where it answers the filters, else a walk of the (tool, tokens) index) ranked
    in one vectorized pass (token counts repeat a lot), so every result counts. The same ranks as
    a window over the histogram in SQL cost the page far more.

    Columns: ``tool``, ``results``, ``min``, ``p25``, ``p50``, ``p75``, ``p95``, ``max``,
    ``mean``; tools ordered by their number of results.
    """
    df = quantiles_from_counts(tool_token_counts(engine, filters))
    if df.empty:
        return pd.DataFrame(columns=["tool", "results", "min", *QUANTILE_NAMES, "max", "mean"])
    df["mean"] = df["mean"].astype(float).round(1)
    df = df.sort_values(["results", "tool"], ascending=[False, True]).head(top_tools)
    return df.reset_index(drop=True)


def quantiles_from_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """Per tool of a (tool, tokens) histogram ordered by tool and tokens
    (:func:`db.queries.histograms.tool_token_counts`): ``tool``, ``results``, ``min``, the
    nearest-rank :data:`QUANTILES`, ``max`` and ``mean`` (unrounded), in tool order."""
    tools = counts["tool"].to_numpy()
    tokens, n = counts["tokens"].to_numpy(), counts["results"].to_numpy()
    ranks = group_ranks(tools, tokens, n, [(num, den) for _, num, den in QUANTILES])
    return pd.DataFrame(
        {
            "tool": tools[ranks.starts],
            "results": ranks.totals,
            "min": tokens[ranks.starts],
            **{name: p for (name, _, _), p in zip(QUANTILES, ranks.percentiles, strict=True)},
            "max": ranks.maxima,
            "mean": group_sums(tokens * n, ranks.starts) / np.maximum(ranks.totals, 1),
        }
    )


def budget_excess(engine: Engine, budget: int, filters: Filters = NO_FILTERS) -> tuple[int, int]:
    """(results over ``budget`` tokens, all results) among the filtered Tool Messages."""
    with engine.connect() as conn:
        found = figures.counts(conn, [over_budget(budget), SIZE_RESULTS], filters=filters)
    return found["over"], found["results"]


def biggest_results(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 50
) -> pd.DataFrame:
    """The ``limit`` largest Tool Messages by tokens.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value), ``tool``, ``tokens``,
    ``chars``, ``status``, ``preview`` (first ``PREVIEW_CHARS`` characters).
    """
    # Pick the ids first: sorting narrow rows, then joining 50 of them to their content, is
    # far cheaper than letting the planner sort joined rows.
    r = ToolResultRow
    with engine.connect() as conn:
        # The biggest results (of the tool) off the tokens index, then the picked traces'
        # among them.
        found = walked_result_ids(conn, filters, limit, ((r.tokens, True), (r.id, False)))
        if found is not None:
            top = select(r.id).where(r.id.in_(found)).subquery()
        else:
            top = (
                restrict_results(select(r.id), filters)
                .order_by(r.tokens.desc(), r.id)
                .limit(limit)
                .subquery()
            )
        if conn.dialect.name == "clickhouse":
            return to_frame(conn, _nested_biggest(top, r.tokens))
        return to_frame(conn, _biggest(top))


def _nested_biggest(top: Any, sort: Any, extra: dict[str, Any] | None = None) -> Any:
    """:func:`_biggest` for ClickHouse 18.16, which joins once per SELECT: the results, then
    their traces, then their messages, each join a SELECT of its own; ordered by ``sort``
    (descending) and id, with the ``extra`` columns of the results after the preview."""
    r = ToolResultRow
    extra = extra or {}
    picked = (
        select(
            *labelled(r.id, r.trace_id, r.message_seq),
            result_pair_key().label("pair"),
            *labelled(r.tool, r.tokens, r.chars, r.status),
            sort.label("sort_key"),
            *(column.label(name) for name, column in extra.items()),
        )
        .select_from(top)
        .join(r, r.id == top.c.id)
        .subquery("picked")
    )
    named = (
        select(picked, TRACE.display_id.label("trace"))
        .select_from(picked)
        .join(TRACE, TRACE.id == picked.c.trace_id)
        .subquery("named")
    )
    n = named.c
    return (
        select(
            n.trace,
            n.pair,
            n.tool,
            n.tokens,
            n.chars,
            n.status,
            func.substr(MessageRow.content, 1, PREVIEW_CHARS).label("preview"),
            *(n[name] for name in extra),
        )
        .select_from(named)
        .join(MessageRow, and_(MessageRow.trace_id == n.trace_id, MessageRow.seq == n.message_seq))
        .order_by(n.sort_key.desc(), n.id)
    )


def _biggest(top: Any) -> Any:
    """The results of ``top`` (a subquery of their ids) with their trace and content."""
    r = ToolResultRow
    return (
        select(
            TRACE.display_id.label("trace"),
            result_pair_key().label("pair"),
            *labelled(r.tool, r.tokens, r.chars, r.status),
            func.substr(MessageRow.content, 1, PREVIEW_CHARS).label("preview"),
        )
        .select_from(top)
        .join(ToolResultRow, ToolResultRow.id == top.c.id)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id)
        .join(MessageRow, result_message())
        .order_by(ToolResultRow.tokens.desc(), ToolResultRow.id)
    )


def tool_result_share(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, int]:
    """Token totals of the filtered traces: ``traces``, ``total_tokens``, ``tool_result_tokens``."""
    with engine.connect() as conn:
        return figures.counts(conn, [TRACES_N, TOTAL_TOKENS, TOOL_RESULT_TOKENS], filters=filters)


def trace_share_histogram(
    engine: Engine, filters: Filters = NO_FILTERS, *, bins: int = 10
) -> pd.DataFrame:
    """How many traces spend which share of their tokens on tool results, in ``bins`` bins.

    Columns: ``share_from``, ``share_to`` (fractions, the last bin includes 1.0), ``traces``.
    Every bin is present (zero when empty); traces without tokens are left out.
    """
    with engine.connect() as conn:
        found = figures.rows(conn, [TRACES_N], [share_bin(bins)], [HAS_TOKENS], filters)
    counts = {int(b): int(n) for b, n in found}
    return pd.DataFrame(
        {
            "share_from": [i / bins for i in range(bins)],
            "share_to": [(i + 1) / bins for i in range(bins)],
            "traces": [counts.get(i, 0) for i in range(bins)],
        }
    )


def token_count_kinds(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, int]:
    """Filtered traces per ``token_counts`` value (``exact``, ``estimate``; zero when none)."""
    with engine.connect() as conn:
        found = figures.rows(conn, [TRACES_N], [TOKEN_COUNT_KIND], filters=filters)
    counts = {str(kind): int(n) for kind, n in found}
    return {kind: counts.get(kind, 0) for kind in TOKEN_COUNTS}


def image_totals(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, int]:
    """Tool Messages carrying images among the filtered ones, and their images' tokens:
    ``results``, ``image_tokens``."""
    with engine.connect() as conn:
        return figures.counts(conn, [WITH_IMAGES, IMAGE_TOKENS], filters=filters)


def input_share_histogram(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Tool Messages by their share of the input tokens of the model call that read them
    (``tokens / read_input_tokens``), over results whose trace reported that call's usage.

    Columns: ``share_from``, ``share_to`` (fractions; ``share_to`` is NaN for the open last
    bin), ``results``. Every bin is present (zero when empty).
    """
    with engine.connect() as conn:
        found = figures.rows(conn, [INPUT_SHARE_RESULTS], [INPUT_SHARE], filters=filters)
    counts = {int(b): int(n) for b, n in found}
    return pd.DataFrame(
        {
            "share_from": [low / 1000 for low, _ in INPUT_SHARE_BINS],
            "share_to": [None if high is None else high / 1000 for _, high in INPUT_SHARE_BINS],
            "results": [counts.get(i, 0) for i in range(len(INPUT_SHARE_BINS))],
        }
    )


def tool_costs(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """What each tool's Tool Messages add to the model calls after them (``ingest.analysis.costs``),
    most expensive first, then most re-read: ``tool``, ``results``, ``tokens_added``,
    ``later_calls``, ``reread_tokens``, ``reread_cached``, ``cost_usd`` (NULL where none of the
    tool's results has a price), ``priced``, ``measured``. Off the results rollup where the
    filters allow (``db.catalogue.COST_MEASURES``)."""
    with engine.connect() as conn:
        frame = figures.read(conn, [RESULTS_N, *COST_MEASURES], by=[TOOL], filters=filters)
    for column in ("results", *(m.name for m in COST_MEASURES)):
        frame[column] = frame[column].fillna(0).astype("int64")
    frame["cost_usd"] = [
        cost / 1e9 if priced else None
        for cost, priced in zip(frame["cost_nano_usd"], frame["priced"], strict=True)
    ]
    frame = frame.drop(columns="cost_nano_usd")
    return frame.sort_values(
        ["cost_usd", "reread_tokens", "tool"], ascending=[False, False, True], na_position="last"
    ).reset_index(drop=True)


def most_expensive_results(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 50
) -> pd.DataFrame:
    """The ``limit`` Tool Messages whose reads by the later model calls cost most (those with a
    price), off the cost index. Columns: those of :func:`biggest_results` and ``later_calls``,
    ``reread_tokens``, ``reread_cached``, ``cost_usd``, ``measured``."""
    r = ToolResultRow
    priced = r.cost_nano_usd.is_not(None)
    order = ((r.cost_nano_usd, True), (r.id, False))
    with engine.connect() as conn:
        found = walked_result_ids(conn, filters, limit, order, priced)
        if found is not None:
            top = select(r.id).where(r.id.in_(found)).subquery()
        else:
            top = (
                restrict_results(select(r.id).where(priced), filters)
                .order_by(r.cost_nano_usd.desc(), r.id)
                .limit(limit)
                .subquery()
            )
        extra = {
            "later_calls": r.later_calls,
            "reread_tokens": r.reread_tokens,
            "reread_cached": r.reread_cached,
            "cost_usd": cast(r.cost_nano_usd, Float) / 1e9,
            "measured": r.reread_measured,
        }
        if conn.dialect.name == "clickhouse":
            return to_frame(conn, _nested_biggest(top, r.cost_nano_usd, extra))
        stmt = (
            _biggest(top)
            .add_columns(*(column.label(name) for name, column in extra.items()))
            .order_by(None)
            .order_by(r.cost_nano_usd.desc(), r.id)
        )
        return to_frame(conn, stmt)
