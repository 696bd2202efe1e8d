"""Steering SQLite's query planner: the same rows by another plan, on SQLite only.

Every helper here returns SQL with exactly the values and rows of the plain form; it only takes
an index out of the planner's reach or picks a statement shape, so that SQLite (which plans from
simple heuristics, and which the dashboard reads a million-row store from) takes the cheap plan.
The expressions are compiled per dialect (:class:`SqliteSteered`): SQLite gets the steered
form (``trace_id + 0``, ``tool || ''``), PostgreSQL the plain column. PostgreSQL plans by costs
and statistics, and on it the steered forms only hide the indexes it would have used: measured on
a 1M-message store (``make bench-ui --db postgresql+psycopg://…``), ``trace_id + 0`` turned the
trace filter's index probes into a scan of the whole ``tool_results`` table. Where the plain
form is meant, use the plain form: these are for the statements named below.

When to use which:

* :func:`restrict_results_in_index` / :func:`restrict_calls_in_index` instead of
  ``db.queries.filters.restrict_results`` / ``restrict_calls``: the statement reads a **small
  indexed subset** (error results, results with a verdict, advice or a correction, calls at
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
* :func:`bounded_walks` for a list of the first rows in an order under a filter: the filtered
  rows among the first entries of the order's index first, the plain statement only when those
  do not fill the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    String,
    func,
    literal,
    select,
    type_coerce,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.visitors import InternalTraversal

from db.queries.filters import Filters, SelectT, narrows_traces, restrict_rows
from db.schema import ToolCallRow, ToolResultRow


class SqliteSteered(ColumnElement[Any]):
    """An expression that SQLite reads as ``steered`` and every other database as ``plain``.

    Both have the same value on every row; ``steered`` only keeps SQLite's heuristic planner
    away from an index (see the module docstring). The choice is made when the statement is
    compiled for a dialect, so statements are still composed without a connection and each
    dialect's compiled form is cached on its own.
    """

    inherit_cache = True
    _traverse_internals = [  # noqa: RUF012 (SQLAlchemy reads it from the class)
        ("plain", InternalTraversal.dp_clauseelement),
        ("steered", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, plain: Any, steered: Any) -> None:
        self.plain = plain
        self.steered = steered
        self.type = plain.type

    @property
    def _from_objects(self) -> list[Any]:
        return list(self.plain._from_objects)


@compiles(SqliteSteered)
def _compile_plain(element: SqliteSteered, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.plain, **kw))


@compiles(SqliteSteered, "sqlite")
def _compile_steered(element: SqliteSteered, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.steered, **kw))


def trace_filter_in_index(trace_id: Any) -> ColumnElement[Any]:
    """``trace_id + 0`` on SQLite: the trace id for the trace filter's ``IN``, with no index
    on it (the plain ``trace_id`` elsewhere).

    SQLite then keeps the small covering index the statement's other conditions pick and tests
    each of its entries against the filtered traces, instead of fetching every row of those
    traces from the table through the ``trace_id`` index.
    """
    return SqliteSteered(trace_id, trace_id + 0)


def tool_filter_in_index(tool: Any) -> ColumnElement[Any]:
    """``tool || ''`` on SQLite: the tool name for the tool filter, with no index on it (the
    plain column elsewhere).

    The partial indexes hold the tool, so the tool filter is tested there instead of reading
    every result (or call) of the tool from the table through the tool index.
    """
    return SqliteSteered(tool, tool.op("||")(literal("", String)))


def restrict_results_in_index(stmt: SelectT, f: Filters) -> SelectT:
    """``db.queries.filters.restrict_results`` (the same rows) for a statement over a small indexed
    subset of ``tool_results``: the filters are tested where that subset lies."""
    return restrict_rows(
        stmt,
        f,
        tool=tool_filter_in_index(ToolResultRow.tool),
        trace_id=trace_filter_in_index(ToolResultRow.trace_id),
    )


def restrict_calls_in_index(stmt: SelectT, f: Filters) -> SelectT:
    """``db.queries.filters.restrict_calls`` (the same rows) for a statement over a small indexed
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
    expression has the column's value (NULL stays NULL) but matches no index. Other databases
    get the plain column (PostgreSQL sorts or hashes by costs). Select the key itself (not the
    bare column), so that the selected and the grouped expression are the same on every dialect.
    """
    steered: ColumnElement[Any]
    if isinstance(column.type, Integer):
        steered = type_coerce(column + 0, column.type)
    else:
        steered = type_coerce(column.op("||")(literal("", String)), String)
    return SqliteSteered(column, steered)


def one_pass_counts(f: Filters) -> bool:
    """True when per-value counts should be one pass of filtered counts without GROUP BY.

    Under a trace filter (``db.queries.filters.narrows_traces``) a statement reads the picked
    traces' entries of a trace index, in trace order: a GROUP BY must sort them, where counts
    without GROUP BY sort nothing. Unfiltered, an index on the grouped column gives the groups in
    order, which is cheaper still.
    """
    return narrows_traces(f)


#: Up to this many rows a nearest rank is a look-up at its rank in a (tool, value) index (a
#: walk over up to half of them); beyond, a by-value rollup's counts are read instead, whose
#: number does not grow with the rows. On SQLite the two cost about the same at 4.6M timed
#: results; at a tenth of that the look-ups are 4–10× faster.
INDEX_WALK_LIMIT = 5_000_000


def walks_ranks(conn: Connection, f: Filters, rows: int) -> bool:
    """Whether the nearest ranks among ``rows`` rows are looked up in their value index rather
    than counted: on SQLite, without a trace filter (the index holds the rows in scope, by
    tool), up to :data:`INDEX_WALK_LIMIT`. PostgreSQL steps through every entry an ``OFFSET``
    skips, checking each row's visibility, so there the counts are faster at any size."""
    return conn.dialect.name == "sqlite" and not narrows_traces(f) and rows <= INDEX_WALK_LIMIT


def ranks_by_window(conn: Connection) -> bool:
    """Whether the database ranks rows by a window function (``row_number() OVER``): not
    ClickHouse, whose 2018 server 18.16 has none; there rows are counted per value and the
    counts ranked in Python."""
    return conn.dialect.name != "clickhouse"


#: Bounded walks read at most this many entries per row they must find: first a short walk,
#: enough where the filter keeps one entry in a few, then a long one, enough where it keeps one
#: in 200 …
WALK_PER_ROW = (10, 200)
#: … and never more than this many.
MAX_WALK = 100_000
#: The databases that walk first (the tests add PostgreSQL, to run the walks there too).
WALK_DIALECTS: tuple[str, ...] = ("sqlite",)


def bounded_walks(conn: Connection, needed: int, *, when: bool = True) -> tuple[int, ...]:
    """How many entries a "first rows" list should walk in its order, one walk after the other,
    before it falls back to its plain statement (none: run the plain statement; PostgreSQL, or
    ``when`` is false).

    A list of the first ``needed`` rows in an order (the slowest calls, the biggest results, a
    finding kind's occurrences) under a filter: SQLite reads every filtered row and sorts them,
    where walking the order's index (or the table in id order) and testing the filter on each
    entry stops after a few. Unbounded, that walk reads everything when the filter keeps few
    entries. So the list first takes the filtered rows among the first ``walk`` entries of its
    order: if there are ``needed`` of them they are exactly the first ``needed`` filtered rows
    (every later entry comes after them in the order); else the next, longer walk, and after
    the last the plain statement runs. PostgreSQL plans the plain statement by costs and
    statistics, so it gets it directly.
    """
    if conn.dialect.name not in WALK_DIALECTS or not when:
        return ()
    return tuple(sorted({min(max(needed, 1) * n, MAX_WALK) for n in WALK_PER_ROW}))


def walked_result_ids(
    conn: Connection,
    f: Filters,
    limit: int,
    keys: Sequence[tuple[Any, bool]],
    *where: ColumnElement[bool],
) -> list[int] | None:
    """The ids of the first ``limit`` Tool Messages (those ``where`` holds for) that ``f`` picks,
    in the order of ``keys`` (``(column of tool_results, descending)``, the last one unique),
    off :func:`bounded_walks`: the first entries of that order (of ``f``'s tool), then the picked
    traces' among them, or all of them when a walk reached the end of that order. ``None`` when
    no walk applies or none fills the page: the caller then runs its plain statement."""
    r = ToolResultRow
    for walk in bounded_walks(conn, limit, when=narrows_traces(f)):
        labelled = [column.label(f"k{i}") for i, (column, _) in enumerate(keys)]
        first = (
            restrict_rows(
                select(r.id.label("id"), r.trace_id.label("trace_id"), *labelled).where(*where),
                Filters(tool=f.tool),
                tool=r.tool,
                trace_id=r.trace_id,
            )
            .order_by(*(c.desc() if down else c for (c, down) in keys))
            .limit(walk)
            .subquery("walked")
        )
        order = [
            first.c[f"k{i}"].desc() if down else first.c[f"k{i}"]
            for i, (_, down) in enumerate(keys)
        ]
        ids = restrict_rows(
            select(first.c.id), replace(f, tool=None), tool=None, trace_id=first.c.trace_id
        ).order_by(*order)
        found = list(conn.execute(ids.limit(limit)).scalars())
        if len(found) == limit:
            return found
        # A walk that read fewer entries than it could has read every one (a column few rows
        # fill, e.g. the costs of a store without prices): what it found is all there is, and
        # the plain statement would read every picked trace's rows to find no more.
        if conn.execute(select(func.count()).select_from(first)).scalar_one() < walk:
            return found
    return None
