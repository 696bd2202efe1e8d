"""The Overview queries on the fixture store, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from dbfixture import build_fixture

from db.queries import histograms
from db.queries import overview as q
from db.queries.filters import Filters
from db.queries.summary import summarize, summary_counts


@pytest.fixture
def store(engine: sa.Engine) -> sa.Engine:
    build_fixture(engine)
    return engine


def test_error_type_counts_use_the_corrected_type(store: sa.Engine) -> None:
    df = q.error_type_counts(store)
    assert df.to_dict("records") == [
        {"error_type": "not_found", "errors": 2},
        {"error_type": "invalid_params", "errors": 1},
        {"error_type": "rate_limit", "errors": 1},
    ]


def test_error_type_counts_match_the_summary(store: sa.Engine) -> None:
    df = q.error_type_counts(store)
    assert dict(zip(df["error_type"], df["errors"], strict=True)) == summarize(store)["error_types"]


def test_verdict_counts_list_every_verdict_in_order(store: sa.Engine) -> None:
    df = q.verdict_counts(store)
    assert df["verdict"].tolist() == ["followed", "ignored", "unclear", "no_next_action"]
    assert df["results"].tolist() == [1, 1, 1, 0]


def test_token_edges_include_the_budget() -> None:
    assert q.token_edges(1500) == [0, 100, 250, 500, 1000, 1500, 2000, 5000, 10000, 20000]
    assert q.token_edges(2000) == [0, 100, 250, 500, 1000, 2000, 5000, 10000, 20000]


def test_token_histogram_puts_results_over_budget_in_their_own_bins(store: sa.Engine) -> None:
    df = q.token_histogram(store, 2000)
    assert df["bin"].tolist() == [
        "0–99", "100–249", "250–499", "500–999", "1000–2000", "2001–4999", "5000–9999",
        "10000–19999", "20000+",
    ]  # fmt: skip
    assert df["results"].tolist() == [8, 0, 0, 0, 0, 1, 0, 0, 0]
    assert df["over_budget"].tolist() == [False] * 5 + [True] * 4


def test_token_histogram_with_a_small_budget_splits_at_the_budget(store: sa.Engine) -> None:
    df = q.token_histogram(store, 10)
    assert df["bin"].tolist()[:3] == ["0–10", "11–99", "100–249"]
    # Tokens 1, 2, 6, 8, 9 are within the budget of 10; 12, 14, 15 and 3000 are over it.
    assert df["results"].tolist()[:2] == [5, 3]
    assert int(df.loc[df["over_budget"], "results"].sum()) == 4


def test_occurrence_histogram_counts_calls_per_repeat(store: sa.Engine) -> None:
    df = q.occurrence_histogram(store)
    assert df.to_dict("records") == [
        {"occurrence": 1, "label": "1", "calls": 5},
        {"occurrence": 2, "label": "2", "calls": 2},
        {"occurrence": 3, "label": "3", "calls": 1},
    ]


def test_top_error_fingerprints_group_the_same_error(store: sa.Engine) -> None:
    df = q.top_error_fingerprints(store, limit=2)
    assert df.to_dict("records") == [
        {
            "fingerprint": "lookup_order: Error: order # not found.",
            "tool": "lookup_order",
            "error_type": "not_found",
            "errors": 2,
            "traces": 1,
        },
        {
            "fingerprint": "get_weather: Error: # Too Many Requests. Retry after #.",
            "tool": "get_weather",
            "error_type": "rate_limit",
            "errors": 1,
            "traces": 1,
        },
    ]


def test_top_oversized_tools_compare_tokens_with_the_chosen_budget(store: sa.Engine) -> None:
    assert q.top_oversized_tools(store, 2000).to_dict("records") == [
        {
            "tool": "get_weather",
            "results": 3,
            "over_budget": 1,
            "max_tokens": 3000,
            "tokens_over": 1000,
        }
    ]
    at_ten = q.top_oversized_tools(store, 10)
    assert at_ten["tool"].tolist() == ["get_weather", "lookup_order"]
    assert at_ten["over_budget"].tolist() == [3, 1]
    assert q.top_oversized_tools(store, 5000).empty


def test_top_loops_name_the_trace_and_its_first_call(store: sa.Engine) -> None:
    assert q.top_loops(store, 3).to_dict("records") == [
        {
            "trace": "weather-1",
            "tool": "get_weather",
            "calls": 3,
            "first_seq": 2,
            "first_call_index": 0,
        }
    ]
    assert q.top_loops(store, 2)["calls"].tolist() == [3, 2]
    assert q.top_loops(store, 4).empty


def test_top_loops_under_a_filter_keep_their_order_and_limit(store: sa.Engine) -> None:
    support = Filters(agent="support-bot")
    assert q.top_loops(store, 2, support, limit=1).to_dict("records") == [
        {
            "trace": "weather-1",
            "tool": "get_weather",
            "calls": 3,
            "first_seq": 2,
            "first_call_index": 0,
        }
    ]
    shop = Filters(model="claude-sonnet")
    assert q.top_loops(store, 2, shop, limit=1)[["trace", "tool", "calls"]].values.tolist() == [
        ["orders-7", "lookup_order", 2]
    ]
    assert q.top_loops(store, 2, Filters(import_id=2)).empty


def test_scorecard_has_one_row_per_tool_with_exact_figures(store: sa.Engine) -> None:
    card = q.tool_scorecard(store, 3, 2000)
    assert list(card.columns) == list(q.SCORECARD_COLUMNS)
    rows = {r["tool"]: r for r in card.to_dict("records")}
    assert card["tool"].tolist() == [
        "get_weather", "lookup_order", "search_docs", "send_email", "send_sms",
    ]  # fmt: skip
    weather = rows["get_weather"]
    assert (weather["calls"], weather["results"], weather["errors"]) == (3, 3, 1)
    assert weather["error_rate"] == pytest.approx(1 / 3)
    assert weather["top_error_type"] == "rate_limit"
    assert (weather["p50_tokens"], weather["p95_tokens"]) == (15, 3000)
    assert (weather["over_budget"], weather["loop_calls"], weather["findings"]) == (1, 3, 1)
    assert (weather["suggestion_rate"], weather["follow_rate"]) == (1.0, 1.0)
    orders = rows["lookup_order"]
    assert (orders["calls"], orders["results"], orders["errors"]) == (2, 3, 2)
    assert (orders["p50_tokens"], orders["p95_tokens"]) == (8, 14)
    assert (orders["errors_with_suggestion"], orders["suggestion_rate"]) == (1, 0.5)
    assert (orders["followed"], orders["ignored"], orders["follow_rate"]) == (0, 1, 0.0)
    assert (orders["loop_calls"], orders["findings"]) == (0, 3)
    docs = rows["search_docs"]
    assert docs["top_error_type"] == "invalid_params"
    assert docs["follow_rate"] is None
    email = rows["send_email"]
    assert (email["calls"], email["results"], email["error_rate"]) == (1, 0, None)
    assert email["p50_tokens"] is None
    sms = rows["send_sms"]
    assert (sms["calls"], sms["results"], sms["p50_tokens"], sms["findings"]) == (0, 1, 2, 1)


def test_scorecard_loop_calls_follow_k(store: sa.Engine) -> None:
    card = q.tool_scorecard(store, 2, 2000).set_index("tool")
    assert card.loc["get_weather", "loop_calls"] == 3
    assert card.loc["lookup_order", "loop_calls"] == 2


def test_scorecard_respects_the_shared_filters(store: sa.Engine) -> None:
    card = q.tool_scorecard(store, 3, 2000, Filters(import_id=2))
    assert card["tool"].tolist() == ["search_docs"]
    by_time = q.tool_scorecard(
        store,
        3,
        2000,
        Filters(start=datetime(2026, 11, 2, tzinfo=UTC), end=datetime(2026, 11, 3, tzinfo=UTC)),
    )
    assert sorted(by_time["tool"]) == ["lookup_order", "send_email", "send_sms"]


def test_empty_store_gives_empty_frames(engine: sa.Engine) -> None:
    assert q.tool_scorecard(engine, 3, 2000).empty
    assert q.error_type_counts(engine).empty
    assert q.occurrence_histogram(engine).empty
    assert q.token_histogram(engine, 2000)["results"].sum() == 0


def test_size_figures_derive_from_one_histogram(store: sa.Engine) -> None:
    counts = histograms.tool_token_counts(store)
    assert counts[counts["tool"] == "get_weather"].to_dict("records") == [
        {"tool": "get_weather", "tokens": 12, "results": 1},
        {"tool": "get_weather", "tokens": 15, "results": 1},
        {"tool": "get_weather", "tokens": 3000, "results": 1},
    ]
    assert histograms.size_bins(counts, 10).equals(q.token_histogram(store, 10))
    assert histograms.oversized_tools(counts, 10).equals(q.top_oversized_tools(store, 10))
    card = q.scorecard(q.scorecard_counts(store, 3), counts, 10)
    assert card.equals(q.tool_scorecard(store, 3, 10))
    summary = summarize(store)
    figures = histograms.token_figures(zip(counts["tokens"], counts["results"], strict=True))
    assert figures == {
        "tool_results": summary["tool_results"],
        "token_total": summary["tokens"]["tool_result_total"],
        "token_max": summary["tokens"]["max"],
        "p50": summary["tokens"]["p50"],
        "p95": summary["tokens"]["p95"],
    }
    assert figures == {
        "tool_results": 9,
        "token_total": 3067,
        "token_max": 3000,
        "p50": 9,
        "p95": 3000,
    }
    # All tools together: the sizes of the nine results (each size once here).
    by_size = histograms.token_counts(store)
    assert by_size == [(1, 1), (2, 1), (6, 1), (8, 1), (9, 1), (12, 1), (14, 1), (15, 1), (3000, 1)]
    assert histograms.token_figures(by_size) == figures
    assert summary_counts(store) == {**summary, "tokens": {"encoding": "o200k_base"}}


def test_size_figures_of_no_results_are_empty_or_zero(engine: sa.Engine) -> None:
    counts = histograms.tool_token_counts(engine)
    assert counts.empty
    assert histograms.token_counts(engine) == []
    assert histograms.token_figures(histograms.token_counts(engine)) == dict.fromkeys(
        ("tool_results", "token_total", "token_max", "p50", "p95"), 0
    )
    assert histograms.tool_sizes(counts, 10).empty
    assert histograms.oversized_tools(counts, 10).empty
