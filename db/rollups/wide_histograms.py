"""Exact per-value histograms over a range of days, read from their value buckets.

The size and duration rollups count Tool Messages per day, tool and *exact* value, so every
nearest-rank percentile is a value that occurred. Summing those rows over a range of days costs
a row per day, tool and value (1.2M rows for half the days of a 10M-message store,
sorted by the database's GROUP BY). This module reads them in two steps instead:

1. the day-grain **bucket** rollup (``rollup_size_buckets``, ``rollup_duration_buckets``: a row
   per day, tool and bucket of two significant digits, ``db.rollups.value_buckets``, and one per
   block of 8 and of 64 days, so a range reads its whole blocks and the days at its edges) gives
   each tool's counts per bucket, and so the bucket that holds each figure: each nearest rank of
   :attr:`Needs.fractions` (per tool, and over every tool together), each tool's lowest and
   highest value, and the value at each of :attr:`Needs.edges` (a budget);
2. only the exact rows of those buckets are read, as ranges of keys (the exact rollups' keys put
   the bucket after the day and tool: ``db.rollups.bucket_range``).

The histogram returned is exact in those buckets. Every other bucket stands as its count on at
most two rows inside the bucket, whose values keep the bucket's total when :attr:`Needs.sums`
(``⌊total / n⌋`` and one more), else on its lowest bound. So what the pages derive from it —
ranks, minimum, maximum, counts and totals above an edge, a bin's count between round edges,
sums and means — equals what the full histogram gives (``tests/test_rollups.py`` compares every
such figure with the base tables); the rows themselves are not the full histogram.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, and_, case, func, literal, or_, select

from db.dialect import name_of
from db.queries.common import total
from db.rollups import upkeep as rollups
from db.rollups.value_buckets import bucket_bounds, bucket_of

#: Key ranges per statement (two parameters each: within SQLite's 32,766).
RANGES_PER_STATEMENT = 4_000
#: Key ranges per statement on ClickHouse, whose statements are text: within its 256 KiB.
CLICKHOUSE_RANGES = 1_000


@dataclass(frozen=True, slots=True)
class Needs:
    """What must stay exact: nearest ranks ``num / den`` per tool and overall, the values at
    ``edges`` (counts above or below them), and the totals (``sums``: the bucket rollup keeps
    them, and its stand-in rows keep them too)."""

    fractions: tuple[tuple[int, int], ...]
    edges: tuple[float, ...] = ()
    sums: bool = False


#: ``(tools, values, counts)`` ordered by tool (code points, NULL last) and value.
Histogram = tuple[list[Any], list[Any], list[int]]


def read(
    conn: Connection,
    exact: Table,
    buckets: Table,
    at: Sequence[Any],
    needs: Needs,
) -> Histogram:
    """The (tool, value, count) histogram of ``exact`` (a ``by_value`` rollup) through
    ``buckets`` (its derived day-grain rollup), whose rows ``at`` selects (the conditions
    ``db.rollups.read.scope`` gives for the filters: a range of days; ``db.distributions``
    reads it where both rollups answer)."""
    b = buckets.c
    summed = total(b.tokens) if needs.sums else literal(0)
    # Summed over the days here (a few thousand rows come back, not one per day), with the
    # first and last day each bucket has rows on: its exact rows lie on those days or between.
    # A block's row (``rollups.BLOCK_GRAINS``: whole blocks of days read as one row each) has
    # its first day and covers the block's length.
    last = b.day + case(
        *((b.grain == grain, days - 1) for days, grain in rollups.BLOCK_GRAINS.items()), else_=0
    )
    stmt = (
        select(b.tool, b.bucket, total(b.n), summed, func.min(b.day), func.max(last))
        .where(*at)
        .group_by(b.tool, b.bucket)
    )
    per_tool: dict[Any, dict[int, list[int]]] = {}
    days: dict[tuple[Any, int], range] = {}
    for tool, bucket, n, tokens, first, last in conn.execute(stmt):
        if n:
            per_tool.setdefault(tool, {})[bucket] = [int(n), int(tokens)]
            days[(tool, bucket)] = range(first, last + 1)
    wanted = _needed(per_tool, needs)
    rows = _exact_rows(conn, exact, wanted, days)
    return _assembled(per_tool, wanted, rows, needs.sums)


def _rank_buckets(
    counts: Sequence[tuple[int, int]], fractions: Iterable[tuple[int, int]]
) -> set[int]:
    """The buckets holding each nearest rank ``num / den`` of ``(bucket, count)`` pairs in
    bucket order: the first whose running count reaches ``n × num / den``."""
    n = sum(count for _, count in counts)
    found: set[int] = set()
    for num, den in fractions:
        running = 0
        for bucket, count in counts:
            running += count
            if running * den >= n * num:
                found.add(bucket)
                break
    return found


def _needed(per_tool: dict[Any, dict[int, list[int]]], needs: Needs) -> set[tuple[Any, int]]:
    """The (tool, bucket) pairs whose exact rows decide a figure."""
    wanted: set[tuple[Any, int]] = set()
    overall: dict[int, int] = {}
    for tool, buckets in per_tool.items():
        ordered = sorted((bucket, counts[0]) for bucket, counts in buckets.items())
        for bucket, count in ordered:
            overall[bucket] = overall.get(bucket, 0) + count
        chosen = _rank_buckets(ordered, needs.fractions)
        chosen |= {ordered[0][0], ordered[-1][0]}
        wanted |= {(tool, bucket) for bucket in chosen}
    edges = {bucket_of(edge) for edge in needs.edges if bucket_bounds(bucket_of(edge))[0] != edge}
    across = _rank_buckets(sorted(overall.items()), needs.fractions) | edges
    for tool, buckets in per_tool.items():
        wanted |= {(tool, bucket) for bucket in across if bucket in buckets}
    return wanted


def _exact_rows(
    conn: Connection,
    exact: Table,
    wanted: set[tuple[Any, int]],
    days: dict[tuple[Any, int], range],
) -> dict[tuple[Any, int], dict[Any, int]]:
    """Per wanted (tool, bucket), its exact ``{value: count}`` over its days: one range of keys
    per day (``rollups.bucket_range``), looked up through a list of ranges."""
    ranges = sorted(
        rollups.bucket_range(day, tool, bucket)
        for tool, bucket in wanted
        for day in days[(tool, bucket)]
    )
    value = exact.c[rollups.ROLLUPS[exact.name].keys[0]].name
    clickhouse = conn.dialect.name == "clickhouse"
    mark = "" if clickhouse else "?" if name_of(conn) == "sqlite" else "%s"
    out: dict[tuple[Any, int], dict[Any, int]] = {}
    step = CLICKHOUSE_RANGES if clickhouse else RANGES_PER_STATEMENT
    for i in range(0, len(ranges), step):
        part = ranges[i : i + step]
        if clickhouse:
            # No VALUES list to join on (18.16): the ranges as one condition, which ClickHouse
            # reads as ranges of the primary key.
            found = conn.execute(
                select(exact.c.tool, exact.c[value], exact.c.n).where(
                    or_(*(and_(exact.c.key >= low, exact.c.key < high) for low, high in part))
                )
            )
            _add_rows(out, wanted, found)
            continue
        listed = ", ".join([f"({mark}, {mark})"] * len(part))
        # Each range one look-up in the primary key: the planner loops over the listed ranges.
        sql = (
            f"WITH wanted (low, high) AS (VALUES {listed}) "
            f"SELECT r.tool, r.{value}, r.n FROM wanted "
            f"JOIN {exact.name} r ON r.key >= wanted.low AND r.key < wanted.high"
        )
        bound = tuple(edge for pair in part for edge in pair)
        _add_rows(out, wanted, conn.exec_driver_sql(sql, bound))
    return out


def _add_rows(
    out: dict[tuple[Any, int], dict[Any, int]], wanted: set[tuple[Any, int]], rows: Any
) -> None:
    """Count rows ``(tool, value, n)`` into ``out``, per wanted (tool, bucket)."""
    for tool, val, n in rows:
        key = (tool, bucket_of(val))
        if key not in wanted:  # a tool sharing the hash
            continue
        values = out.setdefault(key, {})
        values[val] = values.get(val, 0) + int(n)


def _stand_ins(bucket: int, n: int, summed: int, sums: bool) -> list[tuple[Any, int]]:
    """At most two rows inside ``bucket`` with its count ``n`` (and, ``sums``, its total)."""
    if not sums:
        low, _ = bucket_bounds(bucket)
        return [(float(low if low is not None else 0), n)]
    mean, extra = divmod(summed, n)
    rows = [(mean, n - extra)]
    if extra:
        rows.append((mean + 1, extra))
    return rows


def _assembled(
    per_tool: dict[Any, dict[int, list[int]]],
    wanted: set[tuple[Any, int]],
    exact: dict[tuple[Any, int], dict[Any, int]],
    sums: bool,
) -> Histogram:
    rows: list[tuple[Any, Any, int]] = []
    for tool, buckets in per_tool.items():
        for bucket, (n, summed) in buckets.items():
            if (tool, bucket) in wanted:
                rows.extend(
                    (tool, val, count) for val, count in exact.get((tool, bucket), {}).items()
                )
            else:
                stand_ins = _stand_ins(bucket, n, summed, sums)
                rows.extend((tool, val, count) for val, count in stand_ins)
    rows.sort(key=lambda row: (row[0] is None, row[0] or "", row[1]))
    return [row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows]


__all__ = ["RANGES_PER_STATEMENT", "Histogram", "Needs", "read"]
