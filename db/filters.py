"""The shared filters every view applies (time range, import, agent, model, tool).

A :class:`Filters` value is plain data (it round-trips through URL query parameters in the
dashboard); the ``*_conditions`` helpers turn it into SQL conditions for one table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, String, exists, literal, select

from db.schema import FindingRow, ToolCallRow, ToolResultRow, TraceRow

#: Any SELECT, whatever its columns; the restrict_* helpers keep the statement's type.
SelectT = TypeVar("SelectT", bound="Select[*tuple[Any, ...]]")


@dataclass(frozen=True, slots=True)
class Filters:
    """What the user narrowed the view to; empty fields mean "all"."""

    start: datetime | None = None
    end: datetime | None = None
    import_id: int | None = None
    agent: str | None = None
    model: str | None = None
    tool: str | None = None

    def is_empty(self) -> bool:
        """True when nothing is filtered."""
        return all(getattr(self, f) in (None, "") for f in self.__slots__)


NO_FILTERS = Filters()


def trace_conditions(f: Filters) -> list[ColumnElement[bool]]:
    """Conditions on ``traces`` (time range by the trace's start, import, agent, model)."""
    conds: list[ColumnElement[bool]] = []
    if f.start is not None:
        conds.append(TraceRow.started_at >= f.start)
    if f.end is not None:
        conds.append(TraceRow.started_at < f.end)
    if f.import_id is not None:
        conds.append(TraceRow.import_id == f.import_id)
    if f.agent:
        conds.append(TraceRow.agent == f.agent)
    if f.model:
        conds.append(TraceRow.model == f.model)
    return conds


def _needs_trace_join(f: Filters) -> bool:
    return any(v not in (None, "") for v in (f.start, f.end, f.import_id, f.agent, f.model))


def narrows_traces(f: Filters) -> bool:
    """True when the filters pick traces (time range, import, agent, model).

    A statement then reads the picked traces' entries of a trace index, in trace order: a
    GROUP BY there must sort them, where counts without GROUP BY need no sort. Unfiltered, an
    index on the grouped column gives the groups in order, which is cheaper still.
    """
    return _needs_trace_join(f)


def _trace_ids(f: Filters) -> Select[int]:
    # An uncorrelated IN (SELECT id …) is evaluated once; a correlated EXISTS ran per row and
    # cost seconds on a million rows even when the filter matched nothing.
    return select(TraceRow.id).where(*trace_conditions(f))


def _trace_key(column: Any, subset: bool) -> Any:
    # ``trace_id + 0`` has the same value but no index: SQLite then keeps the small covering
    # index the statement's other conditions pick (errors, verdicts, loops …) and tests each of
    # its entries against the filtered traces, instead of fetching every row of those traces
    # from the table through the trace_id index.
    return column + 0 if subset else column


def _tool_key(column: Any, subset: bool) -> Any:
    # ``tool || ''``, likewise: the partial indexes hold the tool, so the tool filter is tested
    # there instead of reading every result of the tool from the table through the tool index.
    return column.op("||")(literal("", String)) if subset else column


def restrict_results(stmt: SelectT, f: Filters, *, subset: bool = False) -> SelectT:
    """Apply the filters to a statement over ``tool_results``.

    ``subset``: the statement reads a small indexed subset of the results (errors, verdicts,
    advice, corrections) that should be filtered where it lies (same rows, another plan).
    """
    if f.tool:
        stmt = stmt.where(_tool_key(ToolResultRow.tool, subset) == f.tool)
    if _needs_trace_join(f):
        stmt = stmt.where(_trace_key(ToolResultRow.trace_id, subset).in_(_trace_ids(f)))
    return stmt


def restrict_calls(stmt: SelectT, f: Filters, *, subset: bool = False) -> SelectT:
    """Apply the filters to a statement over ``tool_calls`` (``subset``: see
    :func:`restrict_results`; for the calls at ``occurrence >= k``)."""
    if f.tool:
        stmt = stmt.where(_tool_key(ToolCallRow.tool_name, subset) == f.tool)
    if _needs_trace_join(f):
        stmt = stmt.where(_trace_key(ToolCallRow.trace_id, subset).in_(_trace_ids(f)))
    return stmt


def restrict_traces(stmt: SelectT, f: Filters) -> SelectT:
    """Apply the filters to a statement over ``traces`` (tool: traces that call that tool)."""
    stmt = stmt.where(*trace_conditions(f))
    if f.tool:
        stmt = stmt.where(
            exists(
                select(ToolCallRow.id).where(
                    ToolCallRow.trace_id == TraceRow.id, ToolCallRow.tool_name == f.tool
                )
            )
        )
    return stmt


def restrict_findings(stmt: SelectT, f: Filters) -> SelectT:
    """Apply the filters to a statement over ``findings``."""
    if f.tool:
        stmt = stmt.where(FindingRow.tool == f.tool)
    if _needs_trace_join(f):
        stmt = stmt.where(FindingRow.trace_id.in_(_trace_ids(f)))
    return stmt
