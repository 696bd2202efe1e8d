"""The shared filters every view applies (time range, import, agent, model, tool).

A :class:`Filters` value is plain data (it round-trips through URL query parameters in the
dashboard); the ``*_conditions`` helpers turn it into SQL conditions for one table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, exists, select

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


def narrows_traces(f: Filters) -> bool:
    """True when the filters pick traces (time range, import, agent, model)."""
    return any(v not in (None, "") for v in (f.start, f.end, f.import_id, f.agent, f.model))


def _trace_ids(f: Filters) -> Select[int]:
    # An uncorrelated IN (SELECT id …) is evaluated once; a correlated EXISTS ran per row and
    # cost seconds on a million rows even when the filter matched nothing.
    return select(TraceRow.id).where(*trace_conditions(f))


def restrict_rows(stmt: SelectT, f: Filters, *, tool: Any, trace_id: Any) -> SelectT:
    """Apply the filters to a statement over a table of per-trace rows with a tool.

    ``tool`` and ``trace_id`` are that table's columns, or expressions with their values
    (``db.planner`` passes ones that keep an index out of the plan).
    """
    if f.tool:
        stmt = stmt.where(tool == f.tool)
    if narrows_traces(f):
        stmt = stmt.where(trace_id.in_(_trace_ids(f)))
    return stmt


def restrict_results(stmt: SelectT, f: Filters) -> SelectT:
    """Apply the filters to a statement over ``tool_results`` (over a small indexed subset of
    them: ``db.planner.restrict_results_in_index``)."""
    return restrict_rows(stmt, f, tool=ToolResultRow.tool, trace_id=ToolResultRow.trace_id)


def restrict_calls(stmt: SelectT, f: Filters) -> SelectT:
    """Apply the filters to a statement over ``tool_calls`` (over a small indexed subset of
    them: ``db.planner.restrict_calls_in_index``)."""
    return restrict_rows(stmt, f, tool=ToolCallRow.tool_name, trace_id=ToolCallRow.trace_id)


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
    return restrict_rows(stmt, f, tool=FindingRow.tool, trace_id=FindingRow.trace_id)
