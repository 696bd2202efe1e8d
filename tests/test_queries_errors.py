"""Queries of the Errors page, on SQLite and PostgreSQL: totals, types by tool and over time,
sources, fingerprints and their occurrences.

On ``analysis_store``, so every value asserted here is exact.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from page_support import rows

from db.queries import errors
from db.queries.filters import Filters
from db.queries.summary import summarize


def test_error_totals_count_errors_among_all_results(analysis_store: sa.Engine) -> None:
    assert errors.error_totals(analysis_store) == (6, 11)
    assert errors.error_totals(analysis_store, Filters(tool="lookup")) == (0, 1)
    assert errors.error_totals(analysis_store) == (summarize(analysis_store)["status"]["error"], 11)


def test_error_types_by_tool_use_corrected_types_and_put_the_most_failing_tool_first(
    analysis_store: sa.Engine,
) -> None:
    assert rows(errors.error_types_by_tool(analysis_store)) == [
        ("get_weather", "rate_limit", 3),
        ("write_file", "conflict", 2),
        ("search", "invalid_params", 1),
    ]


def test_error_types_by_tool_keep_only_the_top_tools(analysis_store: sa.Engine) -> None:
    assert list(errors.error_types_by_tool(analysis_store, top_tools=1)["tool"]) == ["get_weather"]


def test_errors_within_two_days_are_bucketed_by_hour(analysis_store: sa.Engine) -> None:
    assert errors.error_time_unit(analysis_store) == "hour"
    assert rows(errors.errors_over_time(analysis_store, unit="hour")) == [
        ("2025-01-01 10:00", "rate_limit", 2),
        ("2025-01-02 09:00", "invalid_params", 1),
        ("2025-01-02 09:00", "rate_limit", 1),
    ]


def test_errors_over_days_leave_out_traces_without_timestamps(analysis_store: sa.Engine) -> None:
    assert rows(errors.errors_over_time(analysis_store, unit="day")) == [
        ("2025-01-01", "rate_limit", 2),
        ("2025-01-02", "invalid_params", 1),
        ("2025-01-02", "rate_limit", 1),
    ]


def test_errors_by_import_place_every_error_including_untimed_ones(
    analysis_store: sa.Engine,
) -> None:
    assert rows(errors.errors_over_time(analysis_store, unit="import")) == [
        ("import 1", "invalid_params", 1),
        ("import 1", "rate_limit", 3),
        ("import 2", "conflict", 2),
    ]


def test_untimed_errors_alone_are_placed_by_import(analysis_store: sa.Engine) -> None:
    assert errors.error_time_unit(analysis_store, Filters(agent="coder")) == "import"


def test_error_sources_split_explicit_flags_from_inferred_rules(analysis_store: sa.Engine) -> None:
    assert rows(errors.error_sources(analysis_store)) == [
        ("explicit", "is_error", 4),
        ("inferred", "http_429", 1),
        ("inferred", "not_found_text", 1),
    ]


def test_error_fingerprints_count_occurrences_and_traces_with_the_first_as_example(
    analysis_store: sa.Engine,
) -> None:
    assert errors.count_error_fingerprints(analysis_store) == 3
    assert rows(errors.error_fingerprints(analysis_store)) == [
        ("get_weather: Error: rate limited", "get_weather", "rate_limit", 3, 2,
         "Error: rate limited, retry after 6s"),
        ("write_file: conflict", "write_file", "conflict", 2, 1,
         "Error: conflict, file changed. Missing required parameter mode"),
        ("search: Error: no match for '…'. Use lookup instead.", "search", "invalid_params", 1,
         1, "Error: no match for 'x'. Use lookup instead."),
    ]  # fmt: skip


def test_error_fingerprints_page_with_limit_and_offset(analysis_store: sa.Engine) -> None:
    page = errors.error_fingerprints(analysis_store, limit=1, offset=1)
    assert list(page["fingerprint"]) == ["write_file: conflict"]


def test_fingerprint_occurrences_link_each_error_to_its_trace_and_pair(
    analysis_store: sa.Engine,
) -> None:
    assert (
        errors.count_fingerprint_occurrences(analysis_store, "get_weather: Error: rate limited")
        == 3
    )
    df = errors.fingerprint_occurrences(analysis_store, "get_weather: Error: rate limited")
    assert rows(df[["trace", "pair", "message_seq", "status_source", "rule"]]) == [
        ("run-a", "1:0", 2, "explicit", "is_error"),
        ("run-a", "3:0", 4, "explicit", "is_error"),
        ("run-b", "5:0", 6, "inferred", "http_429"),
    ]
    assert df["timestamp"].iloc[0] == datetime(2025, 1, 1, 10, 0, 2, tzinfo=UTC)


def test_fingerprint_occurrences_respect_the_shared_filters(analysis_store: sa.Engine) -> None:
    df = errors.fingerprint_occurrences(
        analysis_store,
        "get_weather: Error: rate limited",
        Filters(start=datetime(2025, 1, 2, tzinfo=UTC)),
    )
    assert list(df["trace"]) == ["run-b"]
