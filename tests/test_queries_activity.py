"""Activity over time, on SQLite and PostgreSQL: a continuous axis (empty buckets zero-filled),
a bucket size that follows the range, rates beside counts, and the brushed ``since``/``until``
range of the filters.

The store is ``analysis_store`` (``dbfixture.build_pages2_database``): run-a's three Tool
Messages at 2025-01-01 10:00:02, :10 and :12 (errors, errors, ok; 10 + 10 + 2,500 tokens),
run-b's at 2025-01-02 09:00:02, :04 and :06 (error, ok, error; 30 + 500 + 12 tokens), run-c's
five without any timestamp.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from db.queries import activity
from db.queries.errors import error_totals
from db.queries.filters import Filters, format_query, parse_query
from db.rollups.read import base_tables

JAN1_10 = datetime(2025, 1, 1, 10, tzinfo=UTC)
JAN2_09 = datetime(2025, 1, 2, 9, tzinfo=UTC)


def test_the_bucket_size_follows_the_range() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert activity.bucket_unit(start, datetime(2026, 1, 1, 3, 19, tzinfo=UTC)) == "minute"
    assert activity.bucket_unit(start, datetime(2026, 1, 1, 3, 20, tzinfo=UTC)) == "hour"
    assert activity.bucket_unit(start, datetime(2026, 1, 9, 7, tzinfo=UTC)) == "hour"
    assert activity.bucket_unit(start, datetime(2026, 1, 9, 8, tzinfo=UTC)) == "day"
    assert activity.bucket_unit(start, datetime(2026, 7, 19, tzinfo=UTC)) == "day"
    assert activity.bucket_unit(start, datetime(2026, 7, 20, tzinfo=UTC)) == "week"


def test_week_buckets_start_on_monday() -> None:
    # 2025-01-01 is a Wednesday: its week started on Monday 2024-12-30.
    epoch = int(datetime(2025, 1, 1, 12, tzinfo=UTC).timestamp())
    number = (epoch - 4 * 86_400) // (7 * 86_400)
    assert activity.bucket_start(number, "week") == datetime(2024, 12, 30, tzinfo=UTC)


def test_the_time_span_is_that_of_the_timed_tool_messages(analysis_store: sa.Engine) -> None:
    # To the hour (the start of the first and of the last hour), as the activity rollup keeps
    # it: the timed Tool Messages run from 10:00:02 on the first day to 09:00:06 on the next.
    assert activity.time_span(analysis_store) == (
        datetime(2025, 1, 1, 10, 0, tzinfo=UTC),
        datetime(2025, 1, 2, 9, 0, tzinfo=UTC),
    )
    with base_tables():
        assert activity.time_span(analysis_store) == (
            datetime(2025, 1, 1, 10, 0, tzinfo=UTC),
            datetime(2025, 1, 2, 9, 0, tzinfo=UTC),
        )
    assert activity.time_span(analysis_store, Filters(agent="coder")) is None


def test_activity_is_hourly_over_a_day_with_every_empty_hour_zero_filled(
    analysis_store: sa.Engine,
) -> None:
    df = activity.activity_over_time(analysis_store)
    assert list(df.columns) == list(activity.ACTIVITY_COLUMNS)
    assert len(df) == 24  # 10:00 on Jan 1 to 09:00 on Jan 2, both included
    assert df["start"].iloc[0] == JAN1_10
    assert df["start"].iloc[-1] == JAN2_09
    assert df["end"].iloc[0] == datetime(2025, 1, 1, 11, tzinfo=UTC)
    first, last = df.iloc[0], df.iloc[-1]
    assert (first["results"], first["errors"], first["tokens"]) == (3, 2, 2520)
    assert (last["results"], last["errors"], last["tokens"]) == (3, 2, 542)
    assert first["error_rate"] == pytest.approx(2 / 3)
    quiet = df.iloc[1:-1]
    assert quiet[["results", "errors", "tokens"]].to_numpy().sum() == 0
    assert quiet["error_rate"].isna().all()  # no Tool Message, no rate
    # Only the untimed run-c (5 results, 2 errors) is off the axis.
    assert int(df["results"].sum()) == 6
    assert error_totals(analysis_store) == (6, 11)


def test_activity_in_minutes_and_days(analysis_store: sa.Engine) -> None:
    minutes = activity.activity_over_time(analysis_store, Filters(model="gpt-4o"), "minute")
    assert len(minutes) == 23 * 60 + 1
    days = activity.activity_over_time(analysis_store, unit="day")
    shown = days[["results", "errors", "tokens"]].to_numpy().tolist()
    assert [[s.date().isoformat(), *row] for s, row in zip(days["start"], shown, strict=True)] == [
        ["2025-01-01", 3, 2, 2520],
        ["2025-01-02", 3, 2, 542],
    ]


def test_a_store_without_timestamps_has_no_activity(analysis_store: sa.Engine) -> None:
    df = activity.activity_over_time(analysis_store, Filters(agent="coder"))
    assert df.empty
    assert list(df.columns) == list(activity.ACTIVITY_COLUMNS)


def test_error_types_over_time_are_bucketed_with_corrected_types(
    analysis_store: sa.Engine,
) -> None:
    df = activity.error_types_over_time(analysis_store, unit="hour")
    assert [(s.isoformat(), t, n) for s, t, n in df.itertuples(index=False)] == [
        ("2025-01-01T10:00:00+00:00", "rate_limit", 2),
        ("2025-01-02T09:00:00+00:00", "invalid_params", 1),
        ("2025-01-02T09:00:00+00:00", "rate_limit", 1),
    ]


def test_a_brushed_range_keeps_the_traces_that_started_in_it(analysis_store: sa.Engine) -> None:
    brushed = parse_query("since=2025-01-02T08:30&until=2025-01-02T09:30")
    assert brushed == Filters(
        since=datetime(2025, 1, 2, 8, 30, tzinfo=UTC), until=datetime(2025, 1, 2, 9, 30, tzinfo=UTC)
    )
    assert format_query(brushed) == "since=2025-01-02T08%3A30&until=2025-01-02T09%3A30"
    assert error_totals(analysis_store, brushed) == (2, 3)  # run-b alone
    df = activity.activity_over_time(analysis_store, brushed)
    assert len(df) == 1  # one minute of activity: 09:00:02 to 09:00:06
    assert (df["start"].iloc[0], df["results"].iloc[0]) == (JAN2_09, 3)
    # ``until`` is exclusive: a range ending at run-b's start leaves it out.
    assert error_totals(analysis_store, Filters(until=JAN2_09)) == (2, 3)  # run-a alone
