"""Queries of the Errors, Tokens, Loops, Suggestions and Imports pages, on SQLite and PostgreSQL.

The store is ``dbfixture.build_pages2_database``: three hand-made traces whose figures are
recomputed on paper in that module's comment, so every value asserted here is exact.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from dbfixture import PAGES2_LONG_RAW, build_pages2_database

from db.filters import Filters
from db.queries import errors, imports, loops, suggestions, tokens
from db.summary import summarize


@pytest.fixture
def store(engine: sa.Engine) -> sa.Engine:
    """The pages-2 fixture store on each database."""
    build_pages2_database(engine)
    return engine


def rows(df: object) -> list[tuple[object, ...]]:
    """A DataFrame's rows as plain tuples (numpy scalars compare equal to Python ones)."""
    return [tuple(r) for r in df.itertuples(index=False)]  # type: ignore[attr-defined]


# --- Errors -------------------------------------------------------------------------------


def test_error_totals_count_errors_among_all_results(store: sa.Engine) -> None:
    assert errors.error_totals(store) == (6, 11)
    assert errors.error_totals(store, Filters(tool="lookup")) == (0, 1)
    assert errors.error_totals(store) == (summarize(store)["status"]["error"], 11)


def test_error_types_by_tool_use_corrected_types_and_put_the_most_failing_tool_first(
    store: sa.Engine,
) -> None:
    assert rows(errors.error_types_by_tool(store)) == [
        ("get_weather", "rate_limit", 3),
        ("write_file", "conflict", 2),
        ("search", "invalid_params", 1),
    ]


def test_error_types_by_tool_keep_only_the_top_tools(store: sa.Engine) -> None:
    assert list(errors.error_types_by_tool(store, top_tools=1)["tool"]) == ["get_weather"]


def test_errors_within_two_days_are_bucketed_by_hour(store: sa.Engine) -> None:
    assert errors.error_time_unit(store) == "hour"
    assert rows(errors.errors_over_time(store, unit="hour")) == [
        ("2025-01-01 10:00", "rate_limit", 2),
        ("2025-01-02 09:00", "invalid_params", 1),
        ("2025-01-02 09:00", "rate_limit", 1),
    ]


def test_errors_over_days_leave_out_traces_without_timestamps(store: sa.Engine) -> None:
    assert rows(errors.errors_over_time(store, unit="day")) == [
        ("2025-01-01", "rate_limit", 2),
        ("2025-01-02", "invalid_params", 1),
        ("2025-01-02", "rate_limit", 1),
    ]


def test_errors_by_import_place_every_error_including_untimed_ones(store: sa.Engine) -> None:
    assert rows(errors.errors_over_time(store, unit="import")) == [
        ("import 1", "invalid_params", 1),
        ("import 1", "rate_limit", 3),
        ("import 2", "conflict", 2),
    ]


def test_untimed_errors_alone_are_placed_by_import(store: sa.Engine) -> None:
    assert errors.error_time_unit(store, Filters(agent="coder")) == "import"


def test_error_sources_split_explicit_flags_from_inferred_rules(store: sa.Engine) -> None:
    assert rows(errors.error_sources(store)) == [
        ("explicit", "is_error", 4),
        ("inferred", "http_429", 1),
        ("inferred", "not_found_text", 1),
    ]


def test_error_fingerprints_count_occurrences_and_traces_with_the_first_as_example(
    store: sa.Engine,
) -> None:
    assert errors.count_error_fingerprints(store) == 3
    assert rows(errors.error_fingerprints(store)) == [
        ("get_weather: Error: rate limited", "get_weather", "rate_limit", 3, 2,
         "Error: rate limited, retry after 6s"),
        ("write_file: conflict", "write_file", "conflict", 2, 1,
         "Error: conflict, file changed. Missing required parameter mode"),
        ("search: Error: no match for '…'. Use lookup instead.", "search", "invalid_params", 1,
         1, "Error: no match for 'x'. Use lookup instead."),
    ]  # fmt: skip


def test_error_fingerprints_page_with_limit_and_offset(store: sa.Engine) -> None:
    page = errors.error_fingerprints(store, limit=1, offset=1)
    assert list(page["fingerprint"]) == ["write_file: conflict"]


def test_fingerprint_occurrences_link_each_error_to_its_trace_and_pair(store: sa.Engine) -> None:
    assert errors.count_fingerprint_occurrences(store, "get_weather: Error: rate limited") == 3
    df = errors.fingerprint_occurrences(store, "get_weather: Error: rate limited")
    assert rows(df[["trace", "pair", "message_seq", "status_source", "rule"]]) == [
        ("run-a", "1:0", 2, "explicit", "is_error"),
        ("run-a", "3:0", 4, "explicit", "is_error"),
        ("run-b", "5:0", 6, "inferred", "http_429"),
    ]
    assert df["timestamp"].iloc[0] == datetime(2025, 1, 1, 10, 0, 2, tzinfo=UTC)


def test_fingerprint_occurrences_respect_the_shared_filters(store: sa.Engine) -> None:
    df = errors.fingerprint_occurrences(
        store, "get_weather: Error: rate limited", Filters(start=datetime(2025, 1, 2, tzinfo=UTC))
    )
    assert list(df["trace"]) == ["run-b"]


# --- Tokens -------------------------------------------------------------------------------


def test_token_quantiles_per_tool_are_nearest_rank_computed_in_sql(store: sa.Engine) -> None:
    df = tokens.token_quantiles_by_tool(store)
    assert rows(df)[:3] == [
        ("get_weather", 4, 10, 10, 10, 12, 2500, 2500, 633.0),
        ("read_file", 2, 100, 100, 100, 100, 100, 100, 100.0),
        ("write_file", 2, 40, 40, 40, 40, 40, 40, 40.0),
    ]
    assert list(df["tool"]) == [
        "get_weather", "read_file", "write_file", "(unknown)", "lookup", "search",
    ]  # fmt: skip


def test_token_quantiles_of_one_tool_use_every_result(store: sa.Engine) -> None:
    df = tokens.token_quantiles_by_tool(store, Filters(tool="get_weather"))
    assert rows(df) == [("get_weather", 4, 10, 10, 10, 12, 2500, 2500, 633.0)]


def test_token_quantiles_of_an_empty_selection_are_an_empty_frame(store: sa.Engine) -> None:
    df = tokens.token_quantiles_by_tool(store, Filters(agent="nobody"))
    assert df.empty and list(df.columns)[:3] == ["tool", "results", "min"]


def test_budget_excess_counts_results_strictly_above_the_budget(store: sa.Engine) -> None:
    assert tokens.budget_excess(store, 2000) == (1, 11)
    assert tokens.budget_excess(store, 100) == (2, 11)
    assert tokens.budget_excess(store, 2000, Filters(tool="lookup")) == (0, 1)


def test_biggest_results_come_largest_first_with_their_pair(store: sa.Engine) -> None:
    df = tokens.biggest_results(store, limit=3)
    assert rows(df[["trace", "pair", "tool", "tokens", "status"]]) == [
        ("run-a", "5:0", "get_weather", 2500, "success"),
        ("run-b", "3:0", "lookup", 500, "success"),
        ("run-c", "1:0", "read_file", 100, "success"),
    ]
    assert df["preview"].iloc[0] == ("sunny " * 500)[: tokens.PREVIEW_CHARS]


def test_unpaired_results_are_addressed_by_their_own_seq(store: sa.Engine) -> None:
    df = tokens.biggest_results(store, Filters(tool="(unknown)"))
    assert list(df["pair"]) == ["r10"]


def test_trace_share_histogram_has_every_bin_and_caps_at_the_last(store: sa.Engine) -> None:
    df = tokens.trace_share_histogram(store)
    assert list(df["traces"]) == [0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    assert (df["share_from"].iloc[2], df["share_to"].iloc[2]) == (0.2, 0.3)


def test_tool_result_share_and_encoding_of_the_latest_import(store: sa.Engine) -> None:
    assert tokens.tool_result_share(store) == {
        "traces": 3,
        "total_tokens": 7275,
        "tool_result_tokens": 3347,
    }
    assert tokens.latest_encoding(store) == "cl100k_base"


def test_latest_encoding_of_an_empty_store_is_none(engine: sa.Engine) -> None:
    assert tokens.latest_encoding(engine) is None


# --- Loops --------------------------------------------------------------------------------


def test_loop_signatures_at_k3_with_runs_errors_and_wasted_tokens(store: sa.Engine) -> None:
    assert rows(loops.loop_signatures(store, 3)) == [
        ("run-a", "1:0", "get_weather", '{"city":"Paris"}', 3, 3, 2, 2510,
         "get_weather:paris0000000000000"),
        ("run-c", "1:0", "read_file", '{"path":"a"}', 3, 1, 0, 100,
         "read_file:a000000000000000"),
    ]  # fmt: skip


def test_lowering_k_refilters_without_reimport_and_agrees_with_the_summary(
    store: sa.Engine,
) -> None:
    for k, expected in ((2, (3, 8)), (3, (2, 6)), (4, (0, 0))):
        totals = loops.loop_totals(store, k)
        assert (totals["signatures"], totals["calls"]) == expected
        assert summarize(store, loop_k=k)["loops"] == {
            "k": k,
            "signatures": expected[0],
            "calls": expected[1],
        }
    assert loops.loop_totals(store, 2) == {
        "signatures": 3,
        "calls": 8,
        "traces": 2,
        "errors": 4,
        "wasted_tokens": 2650,
    }


def test_loops_by_tool_at_k2(store: sa.Engine) -> None:
    assert rows(loops.loops_by_tool(store, 2)) == [
        ("get_weather", 1, 3, 2510),
        ("read_file", 1, 3, 100),
        ("write_file", 1, 2, 40),
    ]


def test_ping_pong_calls_and_the_traces_they_happen_in(store: sa.Engine) -> None:
    assert loops.ping_pong_calls(store) == 5
    assert rows(loops.ping_pong_traces(store)) == [("run-c", "1:0", 5, "read_file ↔ write_file")]
    assert loops.ping_pong_calls(store, Filters(agent="support")) == 0


# --- Suggestions --------------------------------------------------------------------------


def test_follow_rate_by_tool_comes_with_its_counts(store: sa.Engine) -> None:
    assert rows(suggestions.follow_rates(store, by="tool")) == [
        ("get_weather", 2, 1, 1, 0, 0, 2, 0.5),
        ("write_file", 2, 0, 1, 0, 1, 1, 0.0),
        ("search", 1, 1, 0, 0, 0, 1, 1.0),
    ]


def test_follow_rate_by_error_type_uses_corrected_types_and_verdicts(store: sa.Engine) -> None:
    assert rows(suggestions.follow_rates(store, by="error_type")) == [
        ("conflict", 2, 0, 1, 0, 1, 1, 0.0),
        ("rate_limit", 2, 1, 1, 0, 0, 2, 0.5),
        ("invalid_params", 1, 1, 0, 0, 0, 1, 1.0),
    ]


def test_follow_rate_is_none_when_nothing_was_decided(store: sa.Engine) -> None:
    df = suggestions.follow_rates(store, Filters(tool="write_file"), by="tool")
    assert df["follow_rate"].iloc[0] == 0.0
    nothing = suggestions.follow_rates(store, Filters(tool="lookup"))
    assert nothing.empty


def test_verdict_breakdown_in_verdict_order(store: sa.Engine) -> None:
    assert rows(suggestions.verdict_breakdown(store)) == [
        ("followed", "retry_after", 1),
        ("followed", "use_instead", 1),
        ("ignored", "missing_param", 1),
        ("ignored", "retry_after", 1),
        ("no_next_action", "missing_param", 1),
    ]


def test_recovery_with_and_without_a_suggestion(store: sa.Engine) -> None:
    assert rows(suggestions.recovery_rates(store)) == [
        ("with suggestion", 5, 1, 2, 2, 0.3333),
        ("without suggestion", 1, 0, 0, 1, None),
    ]


def test_verdict_examples_show_the_advice_and_the_reason(store: sa.Engine) -> None:
    assert rows(suggestions.verdict_examples(store, "ignored")) == [
        ("run-a", "1:0", "get_weather", "rate_limit", "retry after 6s", "retry_after",
         "retried after 1 s, advised 6 s"),
        ("run-c", "3:0", "write_file", "conflict", "missing required parameter mode",
         "missing_param", "next call changed other arguments"),
    ]  # fmt: skip
    assert suggestions.verdict_examples(store, "unclear").empty


# --- Imports ------------------------------------------------------------------------------


def test_import_history_lists_the_newest_import_first(store: sa.Engine) -> None:
    df = imports.import_history(store)
    assert imports.count_imports(store) == 2
    cols = ["id", "origin", "files", "traces_imported", "rejected", "messages", "state", "paths"]
    assert rows(df[cols]) == [
        (2, "upload", 2, 1, 2, 11, "done", "c.jsonl, bad.jsonl"),
        (1, "cli", 1, 2, 0, 16, "done", "ab.jsonl"),
    ]


def test_rejected_records_show_location_reason_and_a_2kb_preview(store: sa.Engine) -> None:
    df = imports.rejected_records(store)
    assert imports.count_rejected(store) == 2
    assert rows(df[["location", "reason", "raw_bytes"]]) == [
        ("bad.jsonl:3", "invalid_json", 16),
        ("bad.jsonl:7", "unknown_format", 5000),
    ]
    assert df["raw_preview"].iloc[0] == '{"role": "tool",'
    long_preview = df["raw_preview"].iloc[1]
    assert long_preview == PAGES2_LONG_RAW[:2048].decode("utf-8", errors="replace")
    assert long_preview.startswith("\ufffdx") and len(long_preview) == 2048


def test_rejected_records_of_one_import_are_paged(store: sa.Engine) -> None:
    assert imports.count_rejected(store, import_id=1) == 0
    assert rows(imports.rejected_reasons(store, import_id=2)) == [
        ("invalid_json", 1),
        ("unknown_format", 1),
    ]
    page = imports.rejected_records(store, import_id=2, limit=1, offset=1)
    assert list(page["location"]) == ["bad.jsonl:7"]


# --- Shared filters -----------------------------------------------------------------------

SUPPORT = Filters(agent="support")


def test_trace_filters_narrow_the_queries_that_also_join_traces(store: sa.Engine) -> None:
    assert rows(errors.errors_over_time(store, SUPPORT, unit="import")) == [
        ("import 1", "invalid_params", 1),
        ("import 1", "rate_limit", 3),
    ]
    assert errors.error_time_unit(store, SUPPORT) == "hour"
    assert list(tokens.biggest_results(store, Filters(import_id=2), limit=2)["trace"]) == [
        "run-c",
        "run-c",
    ]
    assert list(suggestions.verdict_examples(store, "ignored", SUPPORT)["trace"]) == ["run-a"]
    assert list(loops.loop_signatures(store, 3, Filters(model="claude"))["trace"]) == ["run-c"]
    assert list(loops.ping_pong_traces(store, Filters(model="claude"))["trace"]) == ["run-c"]
    assert loops.ping_pong_traces(store, SUPPORT).empty


def test_time_range_filters_by_trace_start(store: sa.Engine) -> None:
    day_one = Filters(start=datetime(2025, 1, 1, tzinfo=UTC), end=datetime(2025, 1, 2, tzinfo=UTC))
    assert rows(errors.error_types_by_tool(store, day_one)) == [("get_weather", "rate_limit", 2)]
    assert tokens.tool_result_share(store, day_one) == {
        "traces": 1,
        "total_tokens": 5000,
        "tool_result_tokens": 2520,
    }
    assert list(tokens.trace_share_histogram(store, day_one)["traces"]) == [0] * 5 + [1] + [0] * 4
    assert loops.loop_totals(store, 3, day_one)["signatures"] == 1


def test_a_tool_filter_narrows_follow_rates_and_recovery(store: sa.Engine) -> None:
    weather = Filters(tool="get_weather")
    assert rows(suggestions.follow_rates(store, weather)) == [
        ("get_weather", 2, 1, 1, 0, 0, 2, 0.5)
    ]
    assert rows(suggestions.recovery_rates(store, weather)) == [
        ("with suggestion", 2, 1, 1, 0, 0.5),
        ("without suggestion", 1, 0, 0, 1, None),
    ]
    assert rows(loops.loops_by_tool(store, 2, weather)) == [("get_weather", 1, 3, 2510)]
