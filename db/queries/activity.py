"""Activity over time: Tool Messages, errors, error rate and tokens per time bucket, on a
continuous axis.

A Tool Message's time is its own timestamp when the format has one, else its trace's start
(:func:`result_time`); Tool Messages of traces without any timestamp are on no time axis. The
bucket size follows the range (:func:`bucket_unit`: minutes for a few hours, then hours, days,
weeks), buckets are counted in SQL by their number since the epoch (the same arithmetic on both
databases), and every bucket between the first and the last is returned, the empty ones with
zero counts, so a quiet hour shows as a gap instead of vanishing from the axis.

Counted from the rollups where the filters allow (``db.rollups.read``): hours from
``rollup_activity``, days and weeks from ``rollup_activity_days`` (a week is 7 whole days from a
Monday, so days sum into weeks exactly; while that rollup is pending, from the hours), minutes
from the base tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

import pandas as pd
from sqlalchemy import ColumnElement, Connection, Engine, case, func, literal, select

from db.dialect import epoch_seconds, floor_div
from db.queries.common import TRACE, UNCLASSIFIED, error_type_label, to_frame, total
from db.queries.filters import NO_FILTERS, Filters, restrict_results
from db.rollups.read import ACTIVITY, ACTIVITY_DAYS, scope
from db.schema import RollupActivityDayRow, RollupActivityRow, ToolResultRow

#: The bucket sizes, smallest first.
BucketUnit = Literal["minute", "hour", "day", "week"]
BUCKET_UNITS: tuple[BucketUnit, ...] = get_args(BucketUnit)
#: Seconds per bucket.
BUCKET_SECONDS: dict[BucketUnit, int] = {
    "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400,
}  # fmt: skip
#: Weeks start on Monday: 1970-01-05, the first Monday after the epoch (a Thursday).
_WEEK_ORIGIN_S = 4 * 86_400
#: The most buckets the chosen unit gives a range (a week unit may give more over years).
MAX_BUCKETS = 200

#: Columns of :func:`activity_over_time`.
ACTIVITY_COLUMNS = ("start", "end", "results", "errors", "error_rate", "tokens")


def result_time() -> ColumnElement[Any]:
    """A Tool Message's time: its own timestamp, else its trace's start (join ``TRACE``)."""
    return func.coalesce(ToolResultRow.timestamp, TRACE.started_at)


def bucket_unit(first: datetime, last: datetime) -> BucketUnit:
    """The smallest bucket size that covers ``first``–``last`` in at most :data:`MAX_BUCKETS`
    buckets (weeks beyond that).

    >>> bucket_unit(datetime(2026, 1, 1), datetime(2026, 1, 1, 2, 0))
    'minute'
    >>> bucket_unit(datetime(2026, 1, 1), datetime(2026, 1, 20))
    'day'
    """
    return _unit_of((last - first).total_seconds())


def _unit_of(span: float) -> BucketUnit:
    """:func:`bucket_unit` of a span of ``span`` seconds (non-decreasing in ``span``)."""
    for unit in BUCKET_UNITS:
        if span / BUCKET_SECONDS[unit] < MAX_BUCKETS:
            return unit
    return "week"


def _origin(unit: BucketUnit) -> int:
    return _WEEK_ORIGIN_S if unit == "week" else 0


def bucket_number(unit: BucketUnit) -> ColumnElement[int]:
    """The bucket a Tool Message falls in: whole ``unit``\\ s since the epoch (weeks since a
    Monday), as SQL."""
    return floor_div(epoch_seconds(result_time()) - _origin(unit), BUCKET_SECONDS[unit])


def _bucket_of(seconds: int, unit: BucketUnit) -> Callable[[int], int]:
    """The bucket of ``unit`` that the rollup time number ``n`` (whole units of ``seconds``
    since the epoch: hours, days) falls in: as :func:`bucket_number` gives it for any time
    within that hour or day (``unit`` and its origin are whole multiples of ``seconds``)."""
    origin, width = _origin(unit), BUCKET_SECONDS[unit]
    return lambda n: (n * seconds - origin) // width


@dataclass(frozen=True, slots=True)
class _Rollup:
    """The activity rollup rows that answer a query: the row class, its time column (whole
    hours or days since the epoch), their bucket of the query's unit, and the conditions."""

    row: Any
    time: Any
    bucket: Callable[[int], int]
    where: list[Any]


def _activity_scope(conn: Connection, filters: Filters, unit: BucketUnit) -> _Rollup | None:
    """The activity rollup's rows for ``filters``: days for days and weeks (hours while the
    daily rollup is pending), hours for hours; ``None`` for minutes (no rollup keeps them) or
    filters the rollups cannot answer."""
    if unit == "minute":
        return None
    if unit != "hour":
        days = scope(conn, ACTIVITY_DAYS, filters)
        if days is not None:
            d = RollupActivityDayRow
            return _Rollup(d, d.result_day, _bucket_of(86_400, unit), days)
    hours = scope(conn, ACTIVITY, filters)
    if hours is None:
        return None
    a = RollupActivityRow
    return _Rollup(a, a.hour, _bucket_of(3600, unit), hours)


def bucket_start(number: int, unit: BucketUnit) -> datetime:
    """The instant bucket ``number`` of ``unit`` starts (UTC).

    >>> bucket_start(1, "week")
    datetime.datetime(1970, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
    """
    seconds = number * BUCKET_SECONDS[unit] + _origin(unit)
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)


def time_span(engine: Engine, filters: Filters = NO_FILTERS) -> tuple[datetime, datetime] | None:
    """The first and last time of the filtered Tool Messages, to the hour (the start of their
    hours: what the activity rollup keeps); ``None`` when none has a time."""
    ts = result_time()
    stmt = restrict_results(
        select(func.min(ts), func.max(ts))
        .select_from(ToolResultRow)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id),
        filters,
    )
    with engine.connect() as conn:
        at = scope(conn, ACTIVITY, filters)
        if at is not None:
            a = RollupActivityRow
            first_hour, last_hour = conn.execute(
                select(func.min(a.hour), func.max(a.hour)).where(*at)
            ).one()
            if first_hour is None or last_hour is None:
                return None
            return _from_hour(int(first_hour)), _from_hour(int(last_hour))
        first, last = conn.execute(stmt).one()
    if first is None or last is None:
        return None
    return _to_hour(_utc(first)), _to_hour(_utc(last))


def span_unit(engine: Engine, filters: Filters = NO_FILTERS) -> BucketUnit | None:
    """:func:`bucket_unit` of :func:`time_span` (``None`` when it is ``None``): the bucket size
    of the activity axes.

    From the first and last day of the daily rollup where those settle it (the span in hours is
    within 23 hours of the whole days between them, and the unit changes at 200 hours, 200
    days: a store that spans weeks), else from :func:`time_span`'s hours."""
    with engine.connect() as conn:
        at = scope(conn, ACTIVITY_DAYS, filters)
        if at is not None:
            d = RollupActivityDayRow
            first, last = conn.execute(
                select(func.min(d.result_day), func.max(d.result_day)).where(*at)
            ).one()
            if first is None or last is None:
                return None
            hours = (int(last) - int(first)) * 24
            low, high = _unit_of(max(hours - 23, 0) * 3600), _unit_of((hours + 23) * 3600)
            if low == high:
                return low
    span = time_span(engine, filters)
    return None if span is None else bucket_unit(*span)


def _from_hour(hour: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(hours=hour)


def _to_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _utc(value: Any) -> datetime:
    moment = pd.Timestamp(value).to_pydatetime()
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def activity_over_time(
    engine: Engine, filters: Filters = NO_FILTERS, unit: BucketUnit | None = None
) -> pd.DataFrame:
    """Tool Messages, errors and tokens per bucket of ``unit`` (by default
    :func:`bucket_unit` of the filtered range), every bucket from the first to the last.

    Columns :data:`ACTIVITY_COLUMNS`: ``start`` and ``end`` of the bucket (UTC), ``results``
    (Tool Messages), ``errors``, ``error_rate`` (errors / results; missing for an empty bucket)
    and ``tokens`` (of those Tool Messages). Empty when no Tool Message has a time.
    """
    if unit is None:
        unit = span_unit(engine, filters)
        if unit is None:
            return pd.DataFrame(columns=list(ACTIVITY_COLUMNS))
    bucket = bucket_number(unit)
    stmt = restrict_results(
        select(
            bucket.label("bucket"),
            func.count().label("results"),
            func.sum(case((ToolResultRow.status == "error", 1), else_=0)).label("errors"),
            func.coalesce(func.sum(ToolResultRow.tokens), 0).label("tokens"),
        )
        .select_from(ToolResultRow)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id)
        .where(result_time().is_not(None))
        .group_by(bucket),
        filters,
    )
    with engine.connect() as conn:
        at = _activity_scope(conn, filters, unit)
        if at is None:
            counted = to_frame(conn, stmt)
        else:
            a = at.row
            times = to_frame(
                conn,
                select(
                    at.time.label("time"),
                    total(a.n).label("results"),
                    total(a.n, a.error.is_(True)).label("errors"),
                    total(a.tokens).label("tokens"),
                )
                .where(*at.where, at.time.is_not(None))
                .group_by(at.time),
            )
            counted = (
                times.assign(bucket=[at.bucket(int(n)) for n in times["time"]])
                .groupby("bucket", as_index=False)[["results", "errors", "tokens"]]
                .sum()
            )
    if counted.empty:
        return pd.DataFrame(columns=list(ACTIVITY_COLUMNS))
    counted = counted.astype({"bucket": int}).set_index("bucket")
    numbers = range(int(counted.index.min()), int(counted.index.max()) + 1)
    df = counted.reindex(numbers, fill_value=0).astype(int)
    width = timedelta(seconds=BUCKET_SECONDS[unit])
    starts = [bucket_start(n, unit) for n in numbers]
    df.insert(0, "start", pd.to_datetime(starts, utc=True))
    df.insert(1, "end", pd.to_datetime([s + width for s in starts], utc=True))
    rates = df["errors"] / df["results"].where(df["results"] > 0)
    df.insert(4, "error_rate", rates)
    return df.reset_index(drop=True)[list(ACTIVITY_COLUMNS)]


def error_types_over_time(
    engine: Engine, filters: Filters = NO_FILTERS, unit: BucketUnit = "day"
) -> pd.DataFrame:
    """Errors per (bucket of ``unit``, error type), only the buckets with errors.

    Columns: ``start`` (the bucket's start, UTC), ``error_type`` (effective, corrections win),
    ``errors``; sorted by start, then error type.
    """
    bucket = bucket_number(unit)
    label = error_type_label()
    stmt = restrict_results(
        select(bucket.label("bucket"), label.label("error_type"), func.count().label("errors"))
        .select_from(ToolResultRow)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id)
        .where(ToolResultRow.status == "error", result_time().is_not(None))
        .group_by(bucket, label)
        .order_by(bucket, label),
        filters,
    )
    with engine.connect() as conn:
        at = _activity_scope(conn, filters, unit)
        if at is None:
            df = to_frame(conn, stmt)
        else:
            a = at.row
            typed = func.coalesce(a.error_type, literal(UNCLASSIFIED))
            rows = to_frame(
                conn,
                select(at.time.label("time"), typed.label("error_type"), total(a.n).label("n"))
                .where(*at.where, at.time.is_not(None), a.error.is_(True))
                .group_by(at.time, typed),
            )
            df = (
                rows.assign(bucket=[at.bucket(int(n)) for n in rows["time"]])
                .groupby(["bucket", "error_type"], as_index=False)["n"]
                .sum()
                .rename(columns={"n": "errors"})
                .sort_values(["bucket", "error_type"])
            )
    if df.empty:
        return pd.DataFrame(columns=["start", "error_type", "errors"])
    starts = [bucket_start(int(n), unit) for n in df["bucket"]]
    return pd.DataFrame(
        {
            "start": pd.to_datetime(starts, utc=True),
            "error_type": df["error_type"].astype(str),
            "errors": df["errors"].astype(int),
        }
    )
