"""SQL building blocks the page queries share: exact percentiles from a count histogram, and
grouping keys that keep SQLite's planner on a cheap plan.

Both work the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    case,
    func,
    literal,
    select,
    type_coerce,
)

from db.filters import Filters, restrict_results
from db.schema import ToolResultRow


def grouping_key(column: Any) -> ColumnElement[Any]:
    """``column`` as a GROUP BY key that no index can deliver in order (``column || ''`` for
    text, ``column + 0`` for numbers).

    SQLite's planner likes to avoid the sort of a GROUP BY by walking an index on the grouped
    column and fetching every row from the table in that index's order: random reads of the whole
    table, where a scan of the few rows that qualify and a small sort cost milliseconds. The
    expression has the column's value (NULL stays NULL) but matches no index. Select the key
    itself (not the bare column): PostgreSQL requires selected columns to be grouped.
    """
    if isinstance(column.type, Integer):
        return type_coerce(column + 0, column.type)
    return type_coerce(column.op("||")(literal("", String)), String)


def nearest_rank_at(cumulative: Any, total: Any, num: int, den: int) -> ColumnElement[bool]:
    """True where a running count reaches the nearest rank ``ceil(q * total)`` of ``q = num /
    den``: the smallest value where it holds is the nearest-rank percentile."""
    return cumulative * den >= total * num


def token_histogram_by_tool(f: Filters) -> Any:
    """Tool Messages per (tool, tokens) with running counts, as a subquery.

    Columns: ``tool``, ``tokens``, ``n`` (results with that size),
    ``cum`` (results of the tool up to that size), ``total`` (results of the tool). Token counts
    repeat a lot (tens of thousands of distinct values in a million results), so the window runs
    over a few groups instead of every row, and the grouping walks the tokens indexes.
    """
    hist = restrict_results(
        select(
            ToolResultRow.tool.label("tool"),
            ToolResultRow.tokens.label("tokens"),
            func.count().label("n"),
        ).group_by(ToolResultRow.tool, ToolResultRow.tokens),
        f,
    ).subquery("token_hist")
    return select(
        hist.c.tool,
        hist.c.tokens,
        hist.c.n,
        func.sum(hist.c.n)
        .over(partition_by=hist.c.tool, order_by=hist.c.tokens, rows=(None, 0))
        .label("cum"),
        # The same partition and order as the running count (the whole partition as its frame):
        # both windows come from one sort.
        func.sum(hist.c.n)
        .over(partition_by=hist.c.tool, order_by=hist.c.tokens, rows=(None, None))
        .label("total"),
    ).subquery("token_ranks")


def percentile_columns(ranks: Any, quantiles: tuple[tuple[str, int, int], ...]) -> list[Any]:
    """Aggregates over :func:`token_histogram_by_tool` rows: the nearest-rank percentile per
    ``(name, num, den)`` (``q = num / den``)."""
    return [
        func.min(
            case((nearest_rank_at(ranks.c.cum, ranks.c.total, num, den), ranks.c.tokens))
        ).label(name)
        for name, num, den in quantiles
    ]
