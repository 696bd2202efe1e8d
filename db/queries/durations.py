"""Tool execution times: per-tool and overall p50 / p95 / max, and the slowest calls.

A Tool Message's ``duration_ms`` is stored at import (``ingest.analysis.durations``: the tool span's
own end − start, else the result's timestamp − its call's). Every statistic here is over the
**timed** results, those with a known duration ≥ 0; the others are counted, never averaged in:
``missing`` (no duration: a message without a time, or a result that answers no call) and
``negative`` (the result is stamped before its call).

Percentiles are **nearest-rank**: the p-th percentile of n sorted durations is the one at rank
``ceil(p / 100 × n)`` (a value that occurred, never an interpolation), read exactly one of three
ways: on SQLite, without a trace filter and up to :data:`INDEX_WALK_LIMIT` timed results, a
look-up at the rank in the duration indexes (no row is sorted); under a filter the rollups answer,
beyond that limit, or on PostgreSQL (where an ``OFFSET`` walk is slower than the rollup), a running
count over ``rollup_durations``' counts per distinct duration (unfiltered: its agent grain,
``db.rollups.read.grain_for``); else a running row number per tool over the picked traces' timed
results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Connection, Engine, Float, and_, case, cast, func, select

from db.bulk.streaming import read_columns
from db.dialect import name_of
from db.queries.common import TRACE, nearest_rank_at, result_pair_key, to_frame, total
from db.queries.filters import NO_FILTERS, Filters, narrows_traces, restrict_results
from db.queries.planner import walked_result_ids
from db.queries.ranks import group_ranks
from db.rollups import wide_histograms
from db.rollups.read import DURATION_BUCKETS, DURATIONS, RESULTS, scope, spans_days
from db.schema import RollupDurationRow, RollupResultRow, ToolResultRow

#: Up to this many timed results an unfiltered percentile is a look-up at its rank in the
#: duration indexes (a walk over up to half of them); beyond, the duration rollup's counts per
#: distinct duration are read instead, whose number does not grow with the results. On SQLite
#: the two cost about the same at 4.6M timed results; at a tenth of that the look-ups are 4–10×
#: faster.
INDEX_WALK_LIMIT = 5_000_000
#: (column, numerator, denominator): the percentiles reported, ``q = num / den``.
QUANTILES = (("p50_ms", 1, 2), ("p95_ms", 19, 20))

#: Columns of :func:`durations_by_tool`.
BY_TOOL_COLUMNS = (
    "tool", "timed", "missing", "negative", "p50_ms", "p95_ms", "max_ms", "from_spans",
)  # fmt: skip

_R = ToolResultRow
_TIMED = _R.duration_ms >= 0


def _ranked(filters: Filters) -> Any:
    """Timed results with their rank among their tool's (1 = fastest) and the tool's count."""
    return restrict_results(
        select(
            _R.tool.label("tool"),
            _R.duration_ms.label("ms"),
            func.row_number()
            .over(partition_by=_R.tool, order_by=(_R.duration_ms, _R.id))
            .label("rank"),
            func.count().over(partition_by=_R.tool).label("total"),
        ).where(_TIMED),
        filters,
    ).subquery("duration_ranks")


def _percentiles(ranked: Any) -> list[Any]:
    return [
        func.min(
            case((nearest_rank_at(ranked.c.rank, ranked.c.total, num, den), ranked.c.ms))
        ).label(name)
        for name, num, den in QUANTILES
    ]


def _counts(filters: Filters) -> Any:
    """Per tool: Tool Messages, timed ones, missing and negative durations, timed by span."""
    return restrict_results(
        select(
            _R.tool.label("tool"),
            func.count().label("results"),
            func.count().filter(_TIMED).label("timed"),
            func.count().filter(_R.duration_ms.is_(None)).label("missing"),
            func.count().filter(_R.duration_ms < 0).label("negative"),
            func.count().filter(and_(_TIMED, _R.duration_source == "span")).label("from_spans"),
        ).group_by(_R.tool),
        filters,
    ).subquery("duration_counts")


def _rank(count: int, num: int, den: int) -> int:
    """The nearest rank ``ceil(num / den × count)`` (1-based)."""
    return max(1, -(-count * num // den))


def _at_rank(conn: Connection, rank: int, n: int, tool: str | None = None) -> float:
    """The ``rank``-th shortest of the ``n`` timed durations (of ``tool``'s results, or of all),
    read off the duration indexes from whichever end is nearer: the entries before it are
    skipped (a walk, not a sort), so the maximum is one look-up and a p95 walks a twentieth."""
    stmt = select(_R.duration_ms).where(_TIMED)
    if tool is not None:
        stmt = stmt.where(_R.tool == tool)
    if rank * 2 > n:
        # The rank-th shortest of n is the (n - rank + 1)-th longest: ties hold the same value.
        stmt = stmt.order_by(_R.duration_ms.desc()).offset(n - rank)
    else:
        stmt = stmt.order_by(_R.duration_ms).offset(rank - 1)
    value = conn.execute(stmt.limit(1)).scalar_one()
    return float(value or 0.0)


def _timing_counts(conn: Connection, filters: Filters) -> pd.DataFrame | None:
    """Per tool: ``results``, ``timed``, ``missing``, ``negative``, ``from_spans`` from the
    result rollup; ``None`` when the rollups cannot answer ``filters``."""
    at = scope(conn, RESULTS, filters)
    if at is None:
        return None
    rr = RollupResultRow
    return to_frame(
        conn,
        select(
            rr.tool.label("tool"),
            total(rr.n).label("results"),
            total(rr.n, rr.timing.in_(("span", "timed"))).label("timed"),
            total(rr.n, rr.timing == "missing").label("missing"),
            total(rr.n, rr.timing == "negative").label("negative"),
            total(rr.n, rr.timing == "span").label("from_spans"),
        )
        .where(*at)
        .group_by(rr.tool),
    )


#: (p50, p95, max) of one tool's (or every tool's) timed results.
Stats = tuple[float, float, float]


def _rollup_histogram(
    conn: Connection, filters: Filters, *, by_tool: bool = True
) -> list[tuple[Any, ...]] | None:
    """The timed results in scope counted per (tool, exact duration) — per exact duration alone
    unless ``by_tool`` — in that order, from the duration rollup (the database sums a key's rows
    over the grain's imports, agents …); ``None`` when it cannot answer. Under a range of days
    through its buckets (``db.rollups.wide_histograms``): exact at every p50 / p95 and maximum, per
    tool and overall, the other buckets' counts on one row each."""
    at = scope(conn, DURATIONS, filters)
    if at is None:
        return None
    if spans_days(DURATIONS, filters):
        needs = wide_histograms.Needs(tuple((num, den) for _, num, den in QUANTILES))
        wide = wide_histograms.read(conn, DURATIONS, DURATION_BUCKETS, filters, needs)
        if wide is not None:
            tools, values, counts = wide
            if by_tool:
                return [tuple(tools), tuple(values), tuple(counts)]
            return [tuple(column) for column in _merged(values, counts)]
    d = RollupDurationRow
    parts = (d.tool,) if by_tool else ()
    return read_columns(
        conn,
        select(*parts, d.duration_ms, total(d.n))
        .where(*at)
        .group_by(*parts, d.duration_ms)
        .order_by(*parts, d.duration_ms),
    )


def _ranked_counts(groups: Sequence[Any], values: Any, counts: Any) -> dict[Any, Stats]:
    """Nearest-rank p50, p95 and max per group of ``(group, value, count)`` rows ordered by
    group and value. The rollup counts the timed results per exact duration, so a running count
    over the durations in order reaches a rank at the very value the ranked results hold there:
    the figures equal the base tables' exactly (one vectorized pass, :mod:`db.queries.ranks`)."""
    if not len(counts):
        return {}
    ranks = group_ranks(groups, values, counts, [(num, den) for _, num, den in QUANTILES])
    keys = [groups[i] for i in ranks.starts]
    p50, p95 = (p.tolist() for p in ranks.percentiles)
    return {
        key: (float(a), float(b), float(top))
        for key, a, b, top in zip(keys, p50, p95, ranks.maxima.tolist(), strict=True)
    }


def _merged(values: Sequence[float], counts: Sequence[int]) -> tuple[Any, Any]:
    """Counts per duration of every tool at once: ``values`` summed over the tools, in order."""
    import numpy as np

    merged, where = np.unique(np.asarray(values, dtype=np.float64), return_inverse=True)
    summed = np.bincount(where, weights=np.asarray(counts, dtype=np.float64))
    return merged, summed.astype(np.int64)


def _rollup_stats(conn: Connection, filters: Filters, *, by_tool: bool) -> dict[Any, Stats] | None:
    """Nearest-rank p50, p95 and max per tool (``by_tool``; else one entry, key ``None``, over
    every timed result in scope) from the duration rollup; ``None`` when it cannot answer."""
    columns = _rollup_histogram(conn, filters, by_tool=by_tool)
    if columns is None:
        return None
    if by_tool:
        return _ranked_counts(*columns)
    values, counts = columns
    return _ranked_counts([None] * len(counts), values, counts)


def _from_rollup(conn: Connection, filters: Filters, timed: int) -> bool:
    """Whether the percentiles of ``timed`` results are read from the duration rollup (under a
    trace filter, beyond :data:`INDEX_WALK_LIMIT`, or on PostgreSQL), not looked up in the
    indexes. PostgreSQL steps through every entry an ``OFFSET`` skips, checking each row's
    visibility, so there the rollup is faster at any size; SQLite's look-ups are several times
    faster than the rollup below :data:`INDEX_WALK_LIMIT`, so it keeps them."""
    return narrows_traces(filters) or timed > INDEX_WALK_LIMIT or name_of(conn) == "postgresql"


def _index_stats(conn: Connection, n: int, tool: str | None) -> Stats:
    """(p50, p95, max) of ``n`` timed results (``tool``'s, or all), each one look-up at its rank
    in the (tool, duration) or (duration) index."""
    p50, p95 = (_at_rank(conn, _rank(n, num, den), n, tool) for _, num, den in QUANTILES)
    return (p50, p95, _at_rank(conn, n, n, tool))


def _index_totals(conn: Connection, filters: Filters, n: int) -> tuple[float | None, ...]:
    """(p50, p95, max) over all ``n`` timed results by look-ups in the duration index (each
    ``None`` when there is none)."""
    return _index_stats(conn, n, filters.tool or None) if n else (None, None, None)


def _ranked_stats(conn: Connection, counts: pd.DataFrame) -> dict[Any, Stats]:
    """Per tool, each percentile as one look-up at its rank in the (tool, duration) index."""
    return {
        tool: _index_stats(conn, int(timed), tool)
        for tool, timed in zip(counts["tool"], counts["timed"], strict=True)
        if int(timed)
    }


def _clickhouse_figures(
    engine: Engine, filters: Filters
) -> tuple[pd.DataFrame, tuple[float | None, ...]]:
    """Per tool and overall figures on ClickHouse, which 18.16 ranks with no window function:
    the base tables' timed results counted per (tool, exact duration), ranked in one pass as
    the duration rollup's counts are (:func:`_ranked_counts`) — the same nearest ranks."""
    with engine.connect() as conn:
        counts_df = to_frame(conn, select(_counts(filters)))
        histogram = restrict_results(
            select(_R.tool, _R.duration_ms, func.count())
            .where(_TIMED)
            .group_by(_R.tool, _R.duration_ms)
            .order_by(_R.tool, _R.duration_ms),
            filters,
        )
        tools, values, counts = read_columns(conn, histogram) or ((), (), ())
    overall = _ranked_counts([None] * len(counts), *_merged(values, counts))
    by_tool = _by_tool_frame(counts_df, _ranked_counts(tools, values, counts))
    return by_tool, overall.get(None, (None, None, None))


def durations_by_tool(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Execution time per tool, the slowest p95 first (tools without a timed call last).

    Columns: ``tool``, ``timed`` (results with a known duration ≥ 0), ``missing``,
    ``negative``, ``p50_ms``, ``p95_ms``, ``max_ms`` (NULL without a timed result),
    ``from_spans`` (timed results measured by a tool span).

    Where the rollups answer the filters, the counts come from the result rollup and the
    percentiles from the duration rollup's counts per exact duration; unfiltered (or by tool)
    each percentile is one look-up at its rank in the (tool, duration) index; otherwise (a tag, a
    range brushed to the minute, several trace dimensions at once) every timed result of the
    picked traces is ranked.
    """
    if engine.dialect.name == "clickhouse":
        return _clickhouse_figures(engine, filters)[0]
    with engine.connect() as conn:
        counts_df = _timing_counts(conn, filters)
        if counts_df is not None:
            stats = (
                _rollup_stats(conn, filters, by_tool=True)
                if _from_rollup(conn, filters, int(counts_df["timed"].sum()))
                else _ranked_stats(conn, counts_df)
            )
            if stats is not None:
                return _by_tool_frame(counts_df, stats)
    ranked = _ranked(filters)
    stats_q = (
        select(ranked.c.tool, *_percentiles(ranked), func.max(ranked.c.ms).label("max_ms"))
        .group_by(ranked.c.tool)
        .subquery("duration_stats")
    )
    counts = _counts(filters)
    stmt = (
        select(
            counts.c.tool,
            counts.c.timed,
            counts.c.missing,
            counts.c.negative,
            stats_q.c.p50_ms,
            stats_q.c.p95_ms,
            stats_q.c.max_ms,
            counts.c.from_spans,
        )
        .select_from(counts)
        .outerjoin(stats_q, stats_q.c.tool == counts.c.tool)
        .order_by(
            stats_q.c.p95_ms.is_(None),
            stats_q.c.p95_ms.desc(),
            stats_q.c.max_ms.desc(),
            counts.c.tool,
        )
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def _by_tool_frame(counts: pd.DataFrame, stats: dict[Any, Stats]) -> pd.DataFrame:
    rows = []
    for tool, timed, missing, negative, from_spans in zip(
        counts["tool"], counts["timed"], counts["missing"], counts["negative"],
        counts["from_spans"], strict=True,
    ):  # fmt: skip
        p50, p95, top = stats.get(tool, (None, None, None))
        rows.append((tool, int(timed), int(missing), int(negative), p50, p95, top, int(from_spans)))
    df = pd.DataFrame(rows, columns=list(BY_TOOL_COLUMNS))
    df["_none"] = df["p95_ms"].isna()
    df = df.sort_values(["_none", "p95_ms", "max_ms", "tool"], ascending=[True, False, False, True])
    return df.drop(columns="_none").reset_index(drop=True)


def duration_totals(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, Any]:
    """Execution time over every tool: ``timed``, ``missing``, ``negative`` (counts) and
    ``p50_ms``, ``p95_ms``, ``max_ms`` (nearest rank over all timed results; ``None`` when
    there is none). Read like :func:`durations_by_tool`: from the rollups where they answer
    the filters, unfiltered by rank look-ups in the duration index, else from the base tables."""
    if engine.dialect.name == "clickhouse":
        by_tool, overall = _clickhouse_figures(engine, filters)
        return _totals(by_tool, overall)
    with engine.connect() as conn:
        counts_df = _timing_counts(conn, filters)
        if counts_df is not None:
            n = int(counts_df["timed"].sum())
            figures: tuple[float | None, ...] | None = (None, None, None)
            if _from_rollup(conn, filters, n):
                stats = _rollup_stats(conn, filters, by_tool=False)
                figures = None if stats is None else stats.get(None, figures)
            else:
                figures = _index_totals(conn, filters, n)
            if figures is not None:
                return _totals(counts_df, figures)
    return _base_totals(engine, filters)


def _totals(counts: pd.DataFrame, figures: Sequence[float | None]) -> dict[str, Any]:
    """:func:`duration_totals` from the per-tool counts and the overall (p50, p95, max)."""
    return {
        "timed": int(counts["timed"].sum()),
        "missing": int(counts["missing"].sum()),
        "negative": int(counts["negative"].sum()),
        "p50_ms": figures[0],
        "p95_ms": figures[1],
        "max_ms": figures[2],
    }


def duration_figures(
    engine: Engine, filters: Filters = NO_FILTERS
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """:func:`durations_by_tool` and :func:`duration_totals` at once (the Overview shows both).
    Where both would read the duration rollup, it is read once: the per-tool counts per exact
    duration give each tool's figures, and summed over the tools the overall ones (a range of
    days sums many rollup rows; reading them twice cost a third of the Overview's queries
    under such a range)."""
    if engine.dialect.name == "clickhouse":
        by_tool, every = _clickhouse_figures(engine, filters)
        return by_tool, _totals(by_tool, every)
    with engine.connect() as conn:
        counts_df = _timing_counts(conn, filters)
        timed = 0 if counts_df is None else int(counts_df["timed"].sum())
        if counts_df is not None and not _from_rollup(conn, filters, timed):
            # Each percentile one look-up in the duration indexes, the counts read once.
            return (
                _by_tool_frame(counts_df, _ranked_stats(conn, counts_df)),
                _totals(counts_df, _index_totals(conn, filters, timed)),
            )
        if counts_df is not None:
            columns = _rollup_histogram(conn, filters)
            if columns is not None:
                tools, values, counts = columns
                overall = _ranked_counts([None] * len(counts), *_merged(values, counts))
                return (
                    _by_tool_frame(counts_df, _ranked_counts(tools, values, counts)),
                    _totals(counts_df, overall.get(None, (None, None, None))),
                )
    return durations_by_tool(engine, filters), duration_totals(engine, filters)


def _base_totals(engine: Engine, filters: Filters) -> dict[str, Any]:
    """:func:`duration_totals` from the base tables."""
    timed = restrict_results(
        select(
            _R.duration_ms.label("ms"),
            func.row_number().over(order_by=(_R.duration_ms, _R.id)).label("rank"),
            func.count().over().label("total"),
        ).where(_TIMED),
        filters,
    ).subquery("all_ranks")
    ranked = select(*_percentiles(timed), func.max(timed.c.ms).label("max_ms"))
    counts = restrict_results(
        select(
            func.count().filter(_TIMED),
            func.count().filter(_R.duration_ms.is_(None)),
            func.count().filter(_R.duration_ms < 0),
        ),
        filters,
    )
    with engine.connect() as conn:
        p50, p95, top = tuple(conn.execute(ranked).one())
        n_timed, missing, negative = conn.execute(counts).one()
    return {
        "timed": int(n_timed),
        "missing": int(missing),
        "negative": int(negative),
        "p50_ms": _number(p50),
        "p95_ms": _number(p95),
        "max_ms": _number(top),
    }


def slowest_calls(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 20
) -> pd.DataFrame:
    """The ``limit`` slowest timed calls, the slowest first.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value), ``tool``, ``duration_ms``,
    ``duration_source``, ``status``.
    """
    order = (_R.duration_ms.desc(), _R.trace_id, _R.message_seq)
    columns = (
        TRACE.display_id.label("trace"),
        result_pair_key().label("pair"),
        _R.tool,
        cast(_R.duration_ms, Float).label("duration_ms"),
        _R.duration_source,
        _R.status,
    )
    with engine.connect() as conn:
        # The slowest timed results (of the tool) off the duration index, then the picked
        # traces' among them.
        keys = ((_R.duration_ms, True), (_R.trace_id, False), (_R.message_seq, False))
        found = walked_result_ids(conn, filters, limit, keys, _TIMED)
        if found is not None:
            stmt = (
                select(*columns)
                .join(TRACE, TRACE.id == _R.trace_id)
                .where(_R.id.in_(found))
                .order_by(*order)
            )
            return to_frame(conn, stmt)
        stmt = (
            restrict_results(
                select(*columns).join(TRACE, TRACE.id == _R.trace_id).where(_TIMED), filters
            )
            .order_by(*order)
            .limit(limit)
        )
        return to_frame(conn, stmt)


def _number(value: Any) -> float | None:
    return None if value is None else float(value)
