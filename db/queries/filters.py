"""The shared filters every view applies (time range, import, agent, model, tool, tag).

Two time ranges, both by the trace's start: ``start``/``end`` are whole days (the sidebar's date
pickers), ``since``/``until`` are minutes (a range brushed on a time chart); a trace must lie in
both.

A :class:`Filters` value is plain data. It round-trips through a URL query string
(:func:`parse_query` / :func:`format_query`): the dashboard's URL-bound sidebar and the
``toollens compare --baseline import=3`` filters are written the same way. The
``*_conditions`` helpers turn it into SQL conditions for one table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

from sqlalchemy import ColumnElement, Select, exists, select

from db.dialect import json_key_equals, json_list_contains
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
    #: Traces whose ``tags`` list holds this tag.
    tag: str | None = None
    #: Traces whose metadata has this ``key:value`` (a top-level key; the value as text).
    meta: str | None = None
    #: Traces that started at or after this instant (a brushed range; minutes, UTC).
    since: datetime | None = None
    #: Traces that started before this instant (a brushed range; minutes, UTC).
    until: datetime | None = None

    def is_empty(self) -> bool:
        """True when nothing is filtered."""
        return all(getattr(self, f) in (None, "") for f in self.__slots__)


NO_FILTERS = Filters()

#: Query parameters of a filter, in the order :func:`format_query` writes them.
QUERY_PARAMS = (
    "import", "start", "end", "agent", "model", "tool", "tag", "meta", "since", "until",
)  # fmt: skip
#: How ``since`` and ``until`` are written: ISO 8601 to the minute, UTC (``2026-11-30T09:05``).
INSTANT_FORMAT = "%Y-%m-%dT%H:%M"


class FilterQueryError(ValueError):
    """A filter query string that cannot be read; the message names the parameter."""


def _day(name: str, value: str | date) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise FilterQueryError(f"{name}={value!r}: not a date (YYYY-MM-DD)") from None


def _instant(name: str, value: str | date) -> datetime:
    """An ISO 8601 instant (``2026-11-30T09:05``; a day is its midnight), in UTC when no
    offset is given."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = _midnight(value)
    else:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise FilterQueryError(
                f"{name}={value!r}: not a time (YYYY-MM-DDTHH:MM, UTC)"
            ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def instant_text(moment: datetime) -> str:
    """How ``since``/``until`` write an instant: ``2026-11-30T09:05`` (UTC, to the minute).

    >>> instant_text(datetime(2026, 11, 30, 9, 5, 59, tzinfo=UTC))
    '2026-11-30T09:05'
    """
    return moment.astimezone(UTC).strftime(INSTANT_FORMAT)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def parse_query(query: str | Mapping[str, str | date | None]) -> Filters:
    """The filters a URL query string (or its parsed parameters) describes.

    ``start`` and ``end`` are days (UTC); the end day is inclusive, so the filter ends at the
    next midnight. ``since`` (inclusive) and ``until`` (exclusive) are instants
    (``2026-11-30T09:05``, UTC unless an offset is given). Empty values mean "all"; unknown
    parameters are an error, so that a typo never silently compares everything.

    >>> parse_query("import=3&end=2026-01-31")
    Filters(start=None, end=datetime.datetime(2026, 2, 1, 0, 0, tzinfo=datetime.timezone.utc), \
import_id=3, agent=None, model=None, tool=None, tag=None, meta=None, since=None, until=None)
    """
    params: Mapping[str, str | date | None]
    if isinstance(query, str):
        pairs = parse_qsl(query.strip().lstrip("?"), keep_blank_values=True)
        repeated = sorted({k for k, _ in pairs if sum(1 for n, _ in pairs if n == k) > 1})
        if repeated:
            raise FilterQueryError(f"{repeated[0]}: given more than once")
        params = dict(pairs)
    else:
        params = query
    unknown = sorted(set(params) - set(QUERY_PARAMS))
    if unknown:
        raise FilterQueryError(f"{unknown[0]}: unknown filter (use {', '.join(QUERY_PARAMS)})")
    given = {k: v for k, v in params.items() if v not in (None, "")}
    import_text = given.get("import")
    import_id: int | None = None
    if import_text is not None:
        try:
            import_id = int(str(import_text))
        except ValueError:
            raise FilterQueryError(f"import={import_text!r}: not an import id") from None
    start, end = given.get("start"), given.get("end")

    def text(name: str) -> str | None:
        value = given.get(name)
        return None if value is None else str(value)

    def instant(name: str) -> datetime | None:
        value = given.get(name)
        return None if value is None else _instant(name, value)

    return Filters(
        start=None if start is None else _midnight(_day("start", start)),
        end=None if end is None else _midnight(_day("end", end)) + timedelta(days=1),
        import_id=import_id,
        agent=text("agent"),
        model=text("model"),
        tool=text("tool"),
        tag=text("tag"),
        meta=_meta(text("meta")),
        since=instant("since"),
        until=instant("until"),
    )


def _meta(value: str | None) -> str | None:
    """``key:value`` as given; an error without the colon or with an empty key."""
    if value is None:
        return None
    key, colon, _ = value.partition(":")
    if not colon or not key:
        raise FilterQueryError(f"meta={value!r}: write it as key:value (a metadata key)")
    return value


def format_query(f: Filters) -> str:
    """The query string :func:`parse_query` reads back as ``f`` (days for the time range).

    >>> format_query(Filters(import_id=3, model="gpt-4o"))
    'import=3&model=gpt-4o'
    """
    values: dict[str, Any] = {
        "import": f.import_id,
        "start": None if f.start is None else f.start.astimezone(UTC).date().isoformat(),
        "end": None if f.end is None else (f.end - timedelta(days=1)).astimezone(UTC).date(),
        "agent": f.agent,
        "model": f.model,
        "tool": f.tool,
        "tag": f.tag,
        "meta": f.meta,
        "since": None if f.since is None else instant_text(f.since),
        "until": None if f.until is None else instant_text(f.until),
    }
    return urlencode([(k, str(values[k])) for k in QUERY_PARAMS if values[k] not in (None, "")])


def describe(f: Filters) -> str:
    """A one-line label of the filters (``import=3, model=gpt-4o``; ``all traces``)."""
    return ", ".join(f"{k}={v}" for k, v in parse_qsl(format_query(f))) or "all traces"


def trace_conditions(f: Filters) -> list[ColumnElement[bool]]:
    """Conditions on ``traces`` (time ranges by the trace's start, import, agent, model)."""
    conds: list[ColumnElement[bool]] = []
    if f.start is not None:
        conds.append(TraceRow.started_at >= f.start)
    if f.end is not None:
        conds.append(TraceRow.started_at < f.end)
    if f.since is not None:
        conds.append(TraceRow.started_at >= f.since)
    if f.until is not None:
        conds.append(TraceRow.started_at < f.until)
    if f.import_id is not None:
        conds.append(TraceRow.import_id == f.import_id)
    if f.agent:
        conds.append(TraceRow.agent == f.agent)
    if f.model:
        conds.append(TraceRow.model == f.model)
    if f.tag:
        conds.append(json_list_contains(TraceRow.tags, f.tag))
    if f.meta:
        key, _, value = f.meta.partition(":")
        conds.append(json_key_equals(TraceRow.meta, key, value))
    return conds


def narrows_traces(f: Filters) -> bool:
    """True when the filters pick traces (time range, import, agent, model, tag): every field
    but the tool."""
    return any(
        getattr(f, field.name) not in (None, "") for field in fields(f) if field.name != "tool"
    )


def _trace_ids(f: Filters) -> Select[int]:
    # An uncorrelated IN (SELECT id …) is evaluated once; a correlated EXISTS ran per row and
    # cost seconds on a million rows even when the filter matched nothing.
    return select(TraceRow.id).where(*trace_conditions(f))


def restrict_rows(stmt: SelectT, f: Filters, *, tool: Any, trace_id: Any) -> SelectT:
    """Apply the filters to a statement over a table of per-trace rows with a tool.

    ``tool`` and ``trace_id`` are that table's columns, or expressions with their values
    (``db.queries.planner`` passes ones that keep an index out of the plan).
    """
    if f.tool:
        stmt = stmt.where(tool == f.tool)
    if narrows_traces(f):
        stmt = stmt.where(trace_id.in_(_trace_ids(f)))
    return stmt


def restrict_results(stmt: SelectT, f: Filters) -> SelectT:
    """Apply the filters to a statement over ``tool_results`` (over a small indexed subset of
    them: ``db.queries.planner.restrict_results_in_index``)."""
    return restrict_rows(stmt, f, tool=ToolResultRow.tool, trace_id=ToolResultRow.trace_id)


def restrict_calls(stmt: SelectT, f: Filters) -> SelectT:
    """Apply the filters to a statement over ``tool_calls`` (over a small indexed subset of
    them: ``db.queries.planner.restrict_calls_in_index``)."""
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
