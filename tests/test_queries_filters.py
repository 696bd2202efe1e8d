"""The shared filters (trace, time range, tool) on the page queries, on SQLite and PostgreSQL.

On ``analysis_store``, so every value asserted here is exact.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from page_support import rows

from db.queries import errors, loops, suggestions, tokens
from db.queries.filters import Filters

SUPPORT = Filters(agent="support")


def test_trace_filters_narrow_the_queries_that_also_join_traces(analysis_store: sa.Engine) -> None:
    assert rows(errors.errors_over_time(analysis_store, SUPPORT, unit="import")) == [
        ("import 1", "invalid_params", 1),
        ("import 1", "rate_limit", 3),
    ]
    assert errors.error_time_unit(analysis_store, SUPPORT) == "hour"
    assert list(tokens.biggest_results(analysis_store, Filters(import_id=2), limit=2)["trace"]) == [
        "run-c",
        "run-c",
    ]
    # The biggest first, ties by id (on SQLite off the tokens index, under the filter).
    assert [
        (r[0], r[1], r[3])
        for r in rows(tokens.biggest_results(analysis_store, Filters(import_id=2), limit=3))
    ] == [("run-c", "1:0", 100), ("run-c", "5:0", 100), ("run-c", "3:0", 40)]
    assert [r[1] for r in rows(tokens.biggest_results(analysis_store, SUPPORT, limit=3))] == [
        "5:0", "3:0", "1:0",
    ]  # fmt: skip
    assert list(suggestions.verdict_examples(analysis_store, "ignored", SUPPORT)["trace"]) == [
        "run-a"
    ]
    assert list(loops.loop_signatures(analysis_store, 3, Filters(model="claude"))["trace"]) == [
        "run-c"
    ]
    assert list(loops.ping_pong_traces(analysis_store, Filters(model="claude"))["trace"]) == [
        "run-c"
    ]
    assert loops.ping_pong_traces(analysis_store, SUPPORT).empty


def test_time_range_filters_by_trace_start(analysis_store: sa.Engine) -> None:
    day_one = Filters(start=datetime(2025, 1, 1, tzinfo=UTC), end=datetime(2025, 1, 2, tzinfo=UTC))
    assert rows(errors.error_types_by_tool(analysis_store, day_one)) == [
        ("get_weather", "rate_limit", 2)
    ]
    assert tokens.tool_result_share(analysis_store, day_one) == {
        "traces": 1,
        "total_tokens": 5000,
        "tool_result_tokens": 2520,
    }
    assert (
        list(tokens.trace_share_histogram(analysis_store, day_one)["traces"])
        == [0] * 5 + [1] + [0] * 4
    )
    assert loops.loop_totals(analysis_store, 3, day_one)["signatures"] == 1


def test_a_tool_filter_narrows_follow_rates_and_recovery(analysis_store: sa.Engine) -> None:
    weather = Filters(tool="get_weather")
    assert rows(suggestions.follow_rates(analysis_store, weather)) == [
        ("get_weather", 2, 1, 1, 0, 0, 2, 0.5)
    ]
    assert rows(suggestions.recovery_rates(analysis_store, weather)) == [
        ("with suggestion", 2, 1, 1, 0, 0.5),
        ("without suggestion", 1, 0, 0, 1, None),
    ]
    assert rows(loops.loops_by_tool(analysis_store, 2, weather)) == [("get_weather", 1, 3, 2510)]
