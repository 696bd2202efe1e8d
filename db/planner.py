"""Steering SQLite's query planner: the same rows by another plan.

Every helper here returns SQL with exactly the values and rows of the plain form; it only takes
an index out of the planner's reach or picks a statement shape, so that SQLite (which plans from
simple heuristics, and which the dashboard reads a million-row store from) takes the cheap plan.
PostgreSQL plans by costs: it runs the same SQL with the same results, and the helpers were
written for and measured on SQLite (``benchmarks/ui_bench.py``). Where the plain form is meant,
use the plain form: these are for the statements named below.

When to use which:

* :func:`restrict_results_in_index` / :func:`restrict_calls_in_index` instead of
  ``db.filters.restrict_results`` / ``restrict_calls``: the statement reads a **small indexed
  subset** (error results, results with a verdict, advice or a correction, calls at
  ``occurrence >= k``, ping-pong calls), each with a partial or covering index that holds the
  tool and the trace id. The filters are then tested on that index's entries, through
  :func:`trace_filter_in_index` and :func:`tool_filter_in_index`. With the plain filters SQLite
  walks the ``trace_id`` (or ``tool``) index instead and fetches every row of the picked traces
  (or tool) from the table, seconds on a big store, to keep the few that are in the subset.
  Statements over all results or calls use the plain filters: there the trace index is the
  cheap way in.
* :func:`grouping_key` for a GROUP BY over such a subset: SQLite otherwise avoids the sort by
  walking an index on the grouped column and reading the whole table in that order.
* :func:`one_pass_counts` picks between two shapes of a per-value count: one pass of
  ``count(*) FILTER (WHERE …)`` without GROUP BY under a trace filter (the picked traces'
  entries come in trace order, so a GROUP BY would sort them), a GROUP BY along an ordered
  index otherwise (no sort, cheaper than testing every row for every value).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Integer, String, literal, type_coerce

from db.filters import Filters, SelectT, narrows_traces, restrict_rows
from db.schema import ToolCallRow, ToolResultRow


def trace_filter_in_index(trace_id: Any) -> ColumnElement[Any]:
    """``trace_id + 0``: the trace id for the trace filter's ``IN``, with no index on it.

    SQLite then keeps the small covering index the statement's other conditions pick and tests
    each of its entries against the filtered traces, instead of fetching every row of those
    traces from the table through the ``trace_id`` index.
    """
    return trace_id + 0


def tool_filter_in_index(tool: Any) -> ColumnElement[Any]:
    """``tool || ''``: the tool name for the tool filter, with no index on it.

    The partial indexes hold the tool, so the tool filter is tested there instead of reading
    every result (or call) of the tool from the table through the tool index.
    """
    return tool.op("||")(literal("", String))


def restrict_results_in_index(stmt: SelectT, f: Filters) -> SelectT:
    """``db.filters.restrict_results`` (the same rows) for a statement over a small indexed
    subset of ``tool_results``: the filters are tested where that subset lies."""
    return restrict_rows(
        stmt,
        f,
        tool=tool_filter_in_index(ToolResultRow.tool),
        trace_id=trace_filter_in_index(ToolResultRow.trace_id),
    )


def restrict_calls_in_index(stmt: SelectT, f: Filters) -> SelectT:
    """``db.filters.restrict_calls`` (the same rows) for a statement over a small indexed
    subset of ``tool_calls`` (the calls at ``occurrence >= k``, ping-pong calls)."""
    return restrict_rows(
        stmt,
        f,
        tool=tool_filter_in_index(ToolCallRow.tool_name),
        trace_id=trace_filter_in_index(ToolCallRow.trace_id),
    )


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


def one_pass_counts(f: Filters) -> bool:
    """True when per-value counts should be one pass of filtered counts without GROUP BY.

    Under a trace filter (``db.filters.narrows_traces``) a statement reads the picked traces'
    entries of a trace index, in trace order: a GROUP BY must sort them, where counts without
    GROUP BY sort nothing. Unfiltered, an index on the grouped column gives the groups in order,
    which is cheaper still.
    """
    return narrows_traces(f)
