"""The time axis of the activity charts: a Tool Message's time, and buckets of it as numbers.

A Tool Message's time is its own timestamp when the format has one, else its trace's start
(:func:`result_time`). Buckets are counted by their number since the epoch (weeks since a
Monday), the same arithmetic on both databases, so the base tables and the activity rollups
(whole hours and days since the epoch) give the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, func

from db.dialect import epoch_seconds, floor_div
from db.queries.common import TRACE
from db.schema import ToolResultRow

#: The bucket sizes, smallest first.
BucketUnit = Literal["minute", "hour", "day", "week"]
BUCKET_UNITS: tuple[BucketUnit, ...] = get_args(BucketUnit)
#: Seconds per bucket.
BUCKET_SECONDS: dict[BucketUnit, int] = {
    "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400,
}  # fmt: skip
#: Weeks start on Monday: 1970-01-05, the first Monday after the epoch (a Thursday).
WEEK_ORIGIN_S = 4 * 86_400


def result_time() -> ColumnElement[Any]:
    """A Tool Message's time: its own timestamp, else its trace's start (join ``TRACE``)."""
    return func.coalesce(ToolResultRow.timestamp, TRACE.started_at)


def origin(unit: BucketUnit) -> int:
    """Seconds from the epoch to the start of bucket 0 of ``unit``."""
    return WEEK_ORIGIN_S if unit == "week" else 0


def whole(seconds: int) -> ColumnElement[int]:
    """A Tool Message's time in whole ``seconds`` since the epoch, as SQL."""
    return floor_div(epoch_seconds(result_time()), seconds)


def bucket_number(unit: BucketUnit) -> ColumnElement[int]:
    """The bucket a Tool Message falls in: whole ``unit``\\ s since the epoch (weeks since a
    Monday), as SQL."""
    return floor_div(epoch_seconds(result_time()) - origin(unit), BUCKET_SECONDS[unit])


def bucket_of(seconds: int, unit: BucketUnit) -> Callable[[int], int]:
    """The bucket of ``unit`` that the rollup time number ``n`` (whole units of ``seconds``
    since the epoch: hours, days) falls in: as :func:`bucket_number` gives it for any time
    within that hour or day (``unit`` and its origin are whole multiples of ``seconds``)."""
    start, width = origin(unit), BUCKET_SECONDS[unit]
    return lambda n: (n * seconds - start) // width


__all__ = [
    "BUCKET_SECONDS",
    "BUCKET_UNITS",
    "BucketUnit",
    "bucket_number",
    "bucket_of",
    "origin",
    "result_time",
    "whole",
]
