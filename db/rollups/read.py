"""Reading the rollups: which grain answers a set of filters, and the conditions that pick it.

A query function asks :func:`scope` for its rollup table and the filters. It gets the conditions
that select exactly the rollup rows of the filtered data — the grain that holds the filtered
dimensions, their values, the tool — or ``None`` when the rollups cannot answer, and then reads
the base tables as before:

* a tag or metadata filter (no rollup is kept by them);
* a time range that does not fall on whole days (a range brushed to the minute): the rollups
  count traces by the day they started;
* several trace dimensions at once on a rollup without the full grain (the size and duration
  histograms, the activity);
* rollups not complete (a store migrated from before them, until they are rebuilt), or a caller
  that asked for the base tables (:func:`base_tables`: the exactness tests and benchmarks).

Every figure read this way equals the one the base tables give (``tests/test_rollups.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, time
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    and_,
    false,
    or_,
)

from db import schema
from db.queries.filters import Filters
from db.rollups import upkeep as rollups
from db.rollups.upkeep import Dim


def _table(model: Any) -> Table:
    table: Table = model.__table__
    return table


#: The rollup tables, for :func:`scope`.
RESULTS = _table(schema.RollupResultRow)
SIZES = _table(schema.RollupSizeRow)
DURATIONS = _table(schema.RollupDurationRow)
SIZE_BUCKETS = _table(schema.RollupSizeBucketRow)
DURATION_BUCKETS = _table(schema.RollupDurationBucketRow)
CALLS = _table(schema.RollupCallRow)
SIGNATURES = _table(schema.RollupSignatureRow)
TRACES = _table(schema.RollupTraceRow)
FINDINGS = _table(schema.RollupFindingRow)
FINGERPRINTS = _table(schema.RollupFingerprintRow)
ACTIVITY = _table(schema.RollupActivityRow)
ACTIVITY_DAYS = _table(schema.RollupActivityDayRow)
INPUT_SHARES = _table(schema.RollupInputShareRow)

_BASE_ONLY: ContextVar[bool] = ContextVar("toollens_base_tables_only", default=False)


@contextmanager
def base_tables() -> Iterator[None]:
    """Within the block, every query reads the base tables (to compare, or to measure them)."""
    token = _BASE_ONLY.set(True)
    try:
        yield
    finally:
        _BASE_ONLY.reset(token)


def _whole_day(moment: datetime | None) -> bool:
    return moment is None or moment.astimezone(UTC).time() == time(0)


def used_dims(f: Filters) -> Dim | None:
    """The trace dimensions ``f`` filters on, or ``None`` when no grain can answer it."""
    if f.tag or f.meta:
        return None
    if not all(_whole_day(m) for m in (f.start, f.end, f.since, f.until)):
        return None
    dims = Dim(0)
    if any(m is not None for m in (f.start, f.end, f.since, f.until)):
        dims |= Dim.DAY
    if f.import_id is not None:
        dims |= Dim.IMPORT
    if f.agent:
        dims |= Dim.AGENT
    if f.model:
        dims |= Dim.MODEL
    return dims


def grain_for(dims: Dim, grains: tuple[int, ...]) -> int | None:
    """The grain of ``grains`` with the fewest dimensions that holds every one of ``dims``.

    >>> grain_for(Dim.MODEL, rollups.GRAINS) == Dim.MODEL
    True
    >>> grain_for(Dim.MODEL | Dim.DAY, rollups.GRAINS) == rollups.FULL
    True
    >>> grain_for(Dim.MODEL | Dim.DAY, rollups.SINGLE_GRAINS) is None
    True
    >>> grain_for(Dim(0), rollups.FILTER_GRAINS) == Dim.AGENT
    True
    """
    if not dims and 0 not in grains and Dim.AGENT in grains:
        # Each trace has one agent (NULL included), so the agent grain's rows sum to the whole
        # store, and agents are few: a rollup without the grain of no dimension is read so.
        return int(Dim.AGENT)
    fitting = [g for g in grains if g & dims == dims]
    return min(fitting, key=lambda g: bin(g).count("1")) if fitting else None


def spans_days(table: Table, f: Filters) -> bool:
    """Whether :func:`scope` reads ``table`` at a grain with the day, where the rows of a range
    of days repeat each key once per day: summed in SQL, few rows come back; otherwise each key
    comes once per value of the grain's dimension, and reading the rows as they are is cheaper."""
    dims = used_dims(f)
    grain = None if dims is None else grain_for(dims, rollups.ROLLUPS[table.name].grains)
    return grain is not None and bool(grain & Dim.DAY)


def _bounds(f: Filters) -> tuple[int | None, int | None]:
    lows = [rollups.day_number(m) for m in (f.start, f.since) if m is not None]
    highs = [rollups.day_number(m) for m in (f.end, f.until) if m is not None]
    low = max((d for d in lows if d is not None), default=None)
    high = min((d for d in highs if d is not None), default=None)
    return low, high


def scope(
    conn: Connection, table: Table, f: Filters, *, tool: str = "tool"
) -> list[ColumnElement[bool]] | None:
    """The conditions on rollup ``table`` that select the rows of the data ``f`` picks, or
    ``None`` when the base tables must answer.

    ``tool="all"`` (traces): without a tool filter, the rows counting every trace (``tool``
    NULL); with one, the rows of the traces that call it.
    """
    if _BASE_ONLY.get():
        return None
    dims = used_dims(f)
    if dims is None:
        return None
    rollup = rollups.ROLLUPS[table.name]
    grain = grain_for(dims, rollup.grains)
    if grain is None or not rollups.counted(conn, table.name):
        return None
    col = table.c
    g = int(grain)
    lengths = [days for _, days in rollups.blocks_of(rollup)]
    if g == Dim.DAY and dims & Dim.DAY and lengths:
        # Whole blocks of days, and single days at the range's edges: a range of keys each.
        low, high = _bounds(f)
        ranges = [
            and_(col.key >= a, col.key < b)
            for a, b in (_day_keys(*found) for found in rollups.day_ranges(low, high, lengths))
        ]
        tools = [col.tool == f.tool] if f.tool else []
        return [or_(*ranges) if ranges else false(), *tools]
    # The whole grain; without a filtered dimension of its own (``grain_for``), the whole store.
    first, end = rollups.grain_range(g)
    if g & Dim.DAY:
        # The grain's keys start with (grain, day): a range of days is one range of keys.
        if dims & Dim.DAY:
            low, high = _bounds(f)
            # Past the rows of traces without a start (day NULL sorts first).
            first = rollups.key_prefix(g, low if low is not None else rollups.FIRST_DAY)
            if high is not None:
                end = rollups.key_prefix(g, high)
    elif g & dims or not g:
        # A grain of one dimension (or none) starts its keys with that dimension's value, then
        # the tool: the rows of the filtered value (and tool) are one range of keys.
        named = f.tool if f.tool else (None if tool == "all" else rollups.ANY_TOOL)
        first, end = rollups.value_range(g, (None, f.import_id, f.agent, f.model), named)
    conds: list[ColumnElement[bool]] = [col.key >= first, col.key < end, col.grain == g]
    if f.import_id is not None:
        conds.append(col.import_id == f.import_id)
    if f.agent:
        conds.append(col.agent == f.agent)
    if f.model:
        conds.append(col.model == f.model)
    if f.tool:
        conds.append(col.tool == f.tool)
    elif tool == "all":
        conds.append(col.tool.is_(None))
    return conds


def _day_keys(grain: int, first: int | None, end: int | None) -> tuple[bytes, bytes]:
    """The keys of ``grain``'s rows whose day lies in ``first <= day < end`` (``None``:
    unbounded, but past the rows of traces without a start)."""
    low = rollups.key_prefix(grain, first if first is not None else rollups.FIRST_DAY)
    high = rollups.key_prefix(grain, end) if end is not None else rollups.grain_range(grain)[1]
    return low, high
