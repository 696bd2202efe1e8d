"""Compiling the catalogue's histograms (``db.catalogue.Histogram``): rows counted per (tool,
exact value), and the nearest-rank quantiles and maxima of the values.

Like ``db.figures`` for counts, the forms are chosen here, never by a query module:

* the by-value rollup where ``db.rollups.read.scope`` finds it answers the filters — under a
  range of days through its day-grain value buckets (``db.rollups.wide_histograms``: exact at
  every figure asked for), else its rows summed per (tool, value);
* else the base rows, grouped per (tool, value), or ranked by a window for the quantiles (on a
  database without window functions, ClickHouse 18.16, counted per (tool, value) and ranked
  here as the rollup's counts are);
* with the dialect's steering: on SQLite, without a trace filter and up to
  ``db.queries.planner.INDEX_WALK_LIMIT`` rows, each nearest rank is one look-up at its rank in
  the value index (no row is sorted).

Percentiles are **nearest-rank**: the p-th percentile of n sorted values is the one at rank
``ceil(p / 100 × n)``, a value that occurred, never an interpolation; every form gives the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, case, func, select

from db.bulk.streaming import read_columns
from db.catalogue import Histogram
from db.queries.common import nearest_rank_at, total
from db.queries.filters import Filters
from db.queries.planner import ranks_by_window, walks_ranks
from db.queries.ranks import group_ranks, summed_counts
from db.rollups import wide_histograms
from db.rollups.read import scope, spans_days

#: ``(num, den)``: a nearest rank ``num / den`` asked for.
Fraction = tuple[int, int]
#: Per group: each nearest rank asked for, then the maximum.
Stats = tuple[float, ...]


def _merged(values: Sequence[Any], counts: Sequence[int]) -> list[list[Any]]:
    """``(values, counts)`` summed over the tools, ordered by value."""
    by_value: dict[Any, int] = {}
    for value, n in zip(values, counts, strict=True):
        by_value[value] = by_value.get(value, 0) + int(n)
    ordered = sorted(by_value.items())
    return [[v for v, _ in ordered], [n for _, n in ordered]]


def _from_rollup(
    conn: Connection,
    h: Histogram,
    filters: Filters,
    needs: wide_histograms.Needs,
    by_tool: bool,
) -> list[Any] | None:
    """The histogram's columns from its rollup, ``None`` where it cannot answer."""
    exact = h.source.rollup
    at = scope(conn, exact, filters)
    if at is None:
        return None
    days = spans_days(exact, filters)
    if days:
        buckets = scope(conn, h.buckets, filters)
        if buckets is not None:
            tools, values, counts = wide_histograms.read(conn, exact, h.buckets, buckets, needs)
            return [tools, values, counts] if by_tool else _merged(values, counts)
    tool, value, n = h.tool.rollup, h.value.rollup, exact.c.n
    if by_tool and h.integral and not days:
        # About one row per (tool, value) comes back: sorted and summed here, in one
        # vectorized pass, cheaper than the database's temporary B-tree for the same sum.
        return list(summed_counts(*read_columns(conn, select(tool, value, n).where(*at))))
    parts = (tool,) if by_tool else ()
    return list(
        read_columns(
            conn,
            select(*parts, value, total(n))
            .where(*at)
            .group_by(*parts, value)
            .order_by(*parts, value),
        )
    )


def histogram(
    conn: Connection,
    h: Histogram,
    filters: Filters,
    *,
    fractions: Sequence[Fraction] = (),
    edges: Sequence[float] = (),
    by_tool: bool = True,
) -> list[Any]:
    """The filtered rows counted per (tool, value): columns ``[tools, values, counts]`` ordered
    by tool (code points, NULL last) and value; per value alone (``[values, counts]``) unless
    ``by_tool``.

    Under a range of days the rollup is read through its value buckets: the rows are then exact
    where a figure is decided — the nearest ranks ``fractions`` (per tool and overall), each
    tool's minimum and maximum, the values at ``edges`` — and every other bucket stands on one
    or two rows inside it that keep its count (and its total where the buckets keep it)."""
    needs = wide_histograms.Needs(tuple(fractions), tuple(edges), sums=h.sums)
    found = _from_rollup(conn, h, filters, needs, by_tool)
    if found is not None:
        return found
    return _base_counts(conn, h, filters, by_tool)


def _base_counts(conn: Connection, h: Histogram, filters: Filters, by_tool: bool) -> list[Any]:
    """:func:`histogram`'s columns counted over the filtered base rows."""
    parts = (h.tool.base,) if by_tool else ()
    value = h.value.base
    stmt = h.source.restrict(
        select(*parts, value, func.count())
        .where(*h.source.where)
        .group_by(*parts, value)
        .order_by(*parts, value),
        filters,
    )
    # Column by column, off the driver's cursor: no row object per (tool, value).
    return list(read_columns(conn, stmt))


def _rank(count: int, num: int, den: int) -> int:
    """The nearest rank ``ceil(num / den × count)`` (1-based)."""
    return max(1, -(-count * num // den))


def _at_rank(conn: Connection, h: Histogram, rank: int, n: int, tool: Any) -> float:
    """The ``rank``-th smallest of the ``n`` values (of ``tool``'s rows, or of all), read off
    the value indexes from whichever end is nearer: the entries before it are skipped (a walk,
    not a sort), so the maximum is one look-up and a p95 walks a twentieth."""
    value = h.value.base
    stmt = select(value).where(*h.source.where)
    if tool is not None:
        stmt = stmt.where(h.tool.base == tool)
    if rank * 2 > n:
        # The rank-th smallest of n is the (n - rank + 1)-th largest: ties hold the same value.
        stmt = stmt.order_by(value.desc()).offset(n - rank)
    else:
        stmt = stmt.order_by(value).offset(rank - 1)
    return float(conn.execute(stmt.limit(1)).scalar_one() or 0.0)


def _walked(
    conn: Connection, h: Histogram, fractions: Sequence[Fraction], n: int, tool: Any
) -> Stats:
    ranks = (_at_rank(conn, h, _rank(n, num, den), n, tool) for num, den in fractions)
    return (*ranks, _at_rank(conn, h, n, n, tool))


def _ranked(
    groups: Sequence[Any], values: Any, counts: Any, fractions: Sequence[Fraction]
) -> dict[Any, Stats]:
    """Nearest ranks and the maximum per group of ``(group, value, count)`` rows ordered by
    group and value: a running count over the values reaches a rank at the very value the
    ranked rows hold there (one vectorized pass, ``db.queries.ranks``)."""
    if not len(counts):
        return {}
    ranks = group_ranks(groups, values, counts, list(fractions))
    keys = [groups[i] for i in ranks.starts]
    columns = [p.tolist() for p in ranks.percentiles] + [ranks.maxima.tolist()]
    return {key: tuple(float(column[i]) for column in columns) for i, key in enumerate(keys)}


def _base_ranked(
    conn: Connection,
    h: Histogram,
    fractions: Sequence[Fraction],
    filters: Filters,
    by_tool: bool,
) -> dict[Any, Stats]:
    """Nearest ranks and the maximum per tool (``by_tool``; else one entry, key ``None``) by a
    running row number over the filtered base rows."""
    value, base = h.value.base, h.source.base
    parts = [h.tool.base.label("tool")] if by_tool else []
    partition = {"partition_by": h.tool.base} if by_tool else {}
    ranked = h.source.restrict(
        select(
            *parts,
            value.label("value"),
            func.row_number().over(**partition, order_by=(value, base.id)).label("rank"),
            func.count().over(**partition).label("total"),
        ).where(*h.source.where),
        filters,
    ).subquery("ranks")
    q = ranked.c
    stats = [
        func.min(case((nearest_rank_at(q.rank, q.total, num, den), q.value)))
        for num, den in fractions
    ]
    keys = [q.tool] if by_tool else []
    found: dict[Any, Stats] = {}
    for row in conn.execute(select(*keys, *stats, func.max(q.value)).group_by(*keys)):
        key, figures = (row[0], row[1:]) if by_tool else (None, row)
        if figures[-1] is not None:
            found[key] = tuple(float(v) for v in figures)
    return found


def quantiles(
    conn: Connection,
    h: Histogram,
    fractions: Sequence[Fraction],
    filters: Filters,
    counts: Mapping[Any, int],
    *,
    by_tool: bool = True,
    overall: bool = False,
) -> dict[Any, Stats]:
    """The nearest ranks ``fractions`` and the maximum of the filtered values: per tool with
    values (``by_tool``) and, ``overall``, over every tool at once (key ``None``).

    ``counts``: how many values each tool has in scope (the walk's ranks), as the caller read
    them. Where the rollup is read, it is read once for both."""
    n = sum(counts.values())
    found: dict[Any, Stats] = {}
    if h.indexed and walks_ranks(conn, filters, n):
        if by_tool:
            for tool, count in counts.items():
                if count:
                    found[tool] = _walked(conn, h, fractions, count, tool)
        if overall and n:
            found[None] = _walked(conn, h, fractions, n, filters.tool or None)
        return found
    needs = wide_histograms.Needs(tuple(fractions), sums=h.sums)
    columns = _from_rollup(conn, h, filters, needs, by_tool)
    if columns is None and not ranks_by_window(conn):
        # No window function (ClickHouse 18.16): the base rows counted per (tool, value),
        # ranked here as the rollup's counts are — the same nearest ranks.
        columns = _base_counts(conn, h, filters, by_tool)
    if columns is not None:
        if by_tool:
            tools, values, per = columns
            found = _ranked(tools, values, per, fractions)
            if overall:
                merged_values, merged_counts = _merged(values, per)
                nones = [None] * len(merged_counts)
                found.update(_ranked(nones, merged_values, merged_counts, fractions))
        else:
            values, per = columns
            found = _ranked([None] * len(per), values, per, fractions)
        return found
    if by_tool:
        found = _base_ranked(conn, h, fractions, filters, by_tool=True)
    if overall:
        found.update(_base_ranked(conn, h, fractions, filters, by_tool=False))
    return found


__all__ = ["Fraction", "Stats", "histogram", "quantiles"]
