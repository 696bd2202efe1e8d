"""Activity over time: Tool Messages, errors, error rate and tokens per time bucket, on a
continuous axis.

A Tool Message's time is its own timestamp when the format has one, else its trace's start
(:func:`result_time`); Tool Messages of traces without any timestamp are on no time axis. The
bucket size follows the range (:func:`bucket_unit`: minutes for a few hours, then hours, days,
weeks), buckets are counted in SQL by their number since the epoch (the same arithmetic on both
databases), and every bucket between the first and the last is returned, the empty ones with
zero counts, so a quiet hour shows as a gap instead of vanishing from the axis.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

import pandas as pd
from sqlalchemy import ColumnElement, Connection, Engine, case, func, literal, select

from db.dialect import epoch_seconds, floor_div
from db.filters import NO_FILTERS, Filters, restrict_results
from db.queries.common import TRACE, UNCLASSIFIED, error_type_label, to_frame
from db.rollup_read import ACTIVITY, scope, total
from db.schema import RollupActivityRow, ToolResultRow

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
    span = (last - first).total_seconds()
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


def _hour_bucket(hour: int, unit: BucketUnit) -> int:
    """The bucket of ``unit`` (an hour or longer) an hour since the epoch falls in: as
    :func:`bucket_number` gives it for any time within that hour (every such unit is whole
    hours, so is the origin)."""
    return (hour * 3600 - _origin(unit)) // BUCKET_SECONDS[unit]


def _activity_scope(conn: Connection, filters: Filters, unit: BucketUnit) -> Any:
    """The activity rollup's rows for ``filters``; ``None`` for minutes (the rollup keeps
    hours) or filters it cannot answer."""
    return None if unit == "minute" else scope(conn, ACTIVITY, filters)


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
        span = time_span(engine, filters)
        if span is None:
            return pd.DataFrame(columns=list(ACTIVITY_COLUMNS))
        unit = bucket_unit(*span)
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
    a = RollupActivityRow
    with engine.connect() as conn:
        at = _activity_scope(conn, filters, unit)
        if at is None:
            counted = to_frame(conn, stmt)
        else:
            hours = to_frame(
                conn,
                select(
                    a.hour.label("hour"),
                    total(a.n).label("results"),
                    total(a.n, a.error.is_(True)).label("errors"),
                    total(a.tokens).label("tokens"),
                )
                .where(*at, a.hour.is_not(None))
                .group_by(a.hour),
            )
            counted = (
                hours.assign(bucket=[_hour_bucket(int(h), unit) for h in hours["hour"]])
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
    a = RollupActivityRow
    with engine.connect() as conn:
        at = _activity_scope(conn, filters, unit)
        if at is None:
            df = to_frame(conn, stmt)
        else:
            typed = func.coalesce(a.error_type, literal(UNCLASSIFIED))
            rows = to_frame(
                conn,
                select(a.hour.label("hour"), typed.label("error_type"), total(a.n).label("n"))
                .where(*at, a.hour.is_not(None), a.error.is_(True))
                .group_by(a.hour, typed),
            )
            df = (
                rows.assign(bucket=[_hour_bucket(int(h), unit) for h in rows["hour"]])
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
