"""Activity over time: Tool Messages, errors, error rate and tokens per time bucket, on a
continuous axis.

A Tool Message's time is its own timestamp when the format has one, else its trace's start
(``db.queries.time_buckets``); Tool Messages of traces without any timestamp are on no time
axis. The bucket size follows the range (:func:`bucket_unit`: minutes for a few hours, then
hours, days, weeks), buckets are counted by their number since the epoch, and every bucket
between the first and the last is returned, the empty ones with zero counts, so a quiet hour
shows as a gap instead of vanishing from the axis.

The figures are the catalogue's activity measures (``db.catalogue.ACTIVITY``), read from the
rollups where the filters allow: hours from ``rollup_activity``, days and weeks from
``rollup_activity_days`` (a week is 7 whole days from a Monday, so days sum into weeks exactly;
while that rollup is pending, from the hours), minutes from the base tables.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from db import figures
from db.catalogue import (
    ACTIVITY_DAY,
    ACTIVITY_ERROR,
    ACTIVITY_ERROR_TYPE,
    ACTIVITY_ERRORS,
    ACTIVITY_HOUR,
    ACTIVITY_RESULTS,
    ACTIVITY_TOKENS,
    highest,
    lowest,
    time_bucket,
)
from db.queries.filters import NO_FILTERS, Filters
from db.queries.time_buckets import (
    BUCKET_SECONDS,
    BUCKET_UNITS,
    BucketUnit,
    origin,
)

#: The most buckets the chosen unit gives a range (a week unit may give more over years).
MAX_BUCKETS = 200

#: Columns of :func:`activity_over_time`.
ACTIVITY_COLUMNS = ("start", "end", "results", "errors", "error_rate", "tokens")


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


def bucket_start(number: int, unit: BucketUnit) -> datetime:
    """The instant bucket ``number`` of ``unit`` starts (UTC).

    >>> bucket_start(1, "week")
    datetime.datetime(1970, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
    """
    seconds = number * BUCKET_SECONDS[unit] + origin(unit)
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)


def time_span(engine: Engine, filters: Filters = NO_FILTERS) -> tuple[datetime, datetime] | None:
    """The first and last time of the filtered Tool Messages, to the hour (the start of their
    hours: what the activity rollup keeps); ``None`` when none has a time."""
    with engine.connect() as conn:
        ((first, last),) = figures.rows(
            conn, [lowest(ACTIVITY_HOUR, "first"), highest(ACTIVITY_HOUR, "last")], filters=filters
        )
    if first is None or last is None:
        return None
    return _from_hour(int(first)), _from_hour(int(last))


def span_unit(engine: Engine, filters: Filters = NO_FILTERS) -> BucketUnit | None:
    """:func:`bucket_unit` of :func:`time_span` (``None`` when it is ``None``): the bucket size
    of the activity axes.

    From the first and last day of the daily rollup where those settle it (the span in hours is
    within 23 hours of the whole days between them, and the unit changes at 200 hours, 200
    days: a store that spans weeks), else from :func:`time_span`'s hours."""
    with engine.connect() as conn:
        days = figures.from_rollups(
            conn, [lowest(ACTIVITY_DAY, "first"), highest(ACTIVITY_DAY, "last")], filters=filters
        )
    if days is not None:
        ((first, last),) = days
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
    with engine.connect() as conn:
        counted = figures.read(
            conn,
            [ACTIVITY_RESULTS, ACTIVITY_ERRORS, ACTIVITY_TOKENS],
            by=[time_bucket(unit)],
            filters=filters,
        )
    if counted.empty:
        return pd.DataFrame(columns=list(ACTIVITY_COLUMNS))
    counted = counted.astype({"bucket": int}).set_index("bucket")[["results", "errors", "tokens"]]
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
    bucket = time_bucket(unit)
    with engine.connect() as conn:
        df = figures.read(
            conn,
            [ACTIVITY_ERRORS],
            by=[bucket, ACTIVITY_ERROR_TYPE],
            where=[ACTIVITY_ERROR],
            filters=filters,
            order=[("bucket", False), ("error_type", False)],
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
