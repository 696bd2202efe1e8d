"""The Tool calls and Trace pages: their queries (on SQLite and PostgreSQL) and the pages
themselves in AppTest."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from dbfixture import BIG_RESULT, UNTRUSTED, OpenPage, build_fixture

from dashboard import pages
from db.queries import traces as tq
from db.queries.filters import Filters
from db.queries.pairs import PairQuery, count_pairs, list_pairs, pair_choices
from db.queries.traces import (
    PairRef,
    count_traces,
    filter_choices,
    find_trace,
    import_choices,
    page_of_seq,
    pair_detail,
    parse_pair,
    search_traces,
    trace_findings,
    trace_window,
)


@pytest.fixture
def store(engine: sa.Engine) -> sa.Engine:
    build_fixture(engine)
    return engine


def _trace_id(engine: sa.Engine, display_id: str) -> int:
    trace = find_trace(engine, display_id)
    assert trace is not None
    return int(trace["id"])


# --- pairs table --------------------------------------------------------------------------


def test_pairs_table_lists_calls_and_lone_results_in_trace_order(store: sa.Engine) -> None:
    df = list_pairs(store)
    assert list(zip(df["trace"], df["pair"], strict=True)) == [
        ("weather-1", "2:0"), ("weather-1", "4:0"), ("weather-1", "6:0"),
        ("orders-7", "1:0"), ("orders-7", "1:1"), ("orders-7", "r3"), ("orders-7", "4:0"),
        ("orders-7", "r6"), ("docs-3", "1:0"), ("docs-3", "4:0"),
    ]  # fmt: skip
    assert count_pairs(store) == 10
    missing = df[df["pair_state"] == "missing_result"].iloc[0]
    assert missing["tool"] == "send_email"
    assert pd.isna(missing["status"]) and missing["tokens"] is pd.NA


def test_pairs_filters_narrow_by_result_and_pair_facts(store: sa.Engine) -> None:
    assert count_pairs(store, query=PairQuery(status="error")) == 4
    assert count_pairs(store, query=PairQuery(pair_state="missing_result")) == 1
    assert count_pairs(store, query=PairQuery(pair_state="duplicate_result")) == 1
    corrected = list_pairs(store, query=PairQuery(error_type="invalid_params"))
    assert corrected[["trace", "pair"]].values.tolist() == [["docs-3", "4:0"]]
    ignored = list_pairs(store, query=PairQuery(verdict="ignored"))
    assert ignored[["trace", "pair"]].values.tolist() == [["orders-7", "1:0"]]


def test_pairs_trace_search_is_a_case_insensitive_part_of_the_id(store: sa.Engine) -> None:
    assert count_pairs(store, query=PairQuery(trace="ORDERS")) == 5
    assert count_pairs(store, query=PairQuery(trace="%")) == 0


def test_pairs_follow_the_shared_filters(store: sa.Engine) -> None:
    by_tool = list_pairs(store, Filters(tool="lookup_order"))
    assert by_tool["pair"].tolist() == ["1:0", "4:0", "r6"]
    assert count_pairs(store, Filters(import_id=2)) == 2
    assert count_pairs(store, Filters(agent="shop-bot"), PairQuery(status="error")) == 2


def test_pairs_sort_puts_empty_values_last_both_ways(store: sa.Engine) -> None:
    down = list_pairs(store, query=PairQuery(sort="tokens", descending=True))
    assert down["tokens"].tolist()[:3] == [3000, 15, 14]
    assert down["pair"].iloc[-1] == "1:1"
    up = list_pairs(store, query=PairQuery(sort="tokens"))
    assert up["tokens"].tolist()[:3] == [1, 2, 6]
    assert up["pair"].iloc[-1] == "1:1"


def test_pairs_are_paged(store: sa.Engine) -> None:
    page = list_pairs(store, limit=3, offset=3)
    assert page["pair"].tolist() == ["1:0", "1:1", "r3"]
    newest_first = list_pairs(store, query=PairQuery(descending=True), limit=2)
    assert newest_first[["trace", "pair"]].values.tolist() == [["docs-3", "4:0"], ["docs-3", "1:0"]]


def test_pairs_reject_an_unknown_sort_key(store: sa.Engine) -> None:
    with pytest.raises(ValueError, match="unknown sort key 'price'"):
        list_pairs(store, query=PairQuery(sort="price"))


def test_pair_choices_offer_the_error_types_present(store: sa.Engine) -> None:
    choices = pair_choices(store)
    assert choices["error_type"] == ["invalid_params", "not_found", "rate_limit"]
    assert pair_choices(store, Filters(import_id=2))["error_type"] == ["invalid_params"]
    assert choices["verdict"] == ["followed", "ignored", "unclear", "no_next_action"]


# --- traces -------------------------------------------------------------------------------


def test_trace_search_lists_the_traces_with_most_problems_first(store: sa.Engine) -> None:
    assert search_traces(store)["trace"].tolist() == ["orders-7", "weather-1", "docs-3"]
    assert search_traces(store, text="DOC")["trace"].tolist() == ["docs-3"]
    # The title (the first user message) is searched too, and listed.
    assert search_traces(store, text="paris")[["trace", "title"]].values.tolist() == [
        ["weather-1", "Weather in Paris?"]
    ]
    assert search_traces(store, tool="send_email")["trace"].tolist() == ["orders-7"]
    assert search_traces(store, error_type="invalid_params")["trace"].tolist() == ["docs-3"]
    assert search_traces(store, error_type="invalid_arguments_json").empty
    assert search_traces(store, Filters(agent="support-bot"), limit=1)["trace"].tolist() == [
        "weather-1"
    ]


def test_find_trace_adds_the_biggest_message_and_id_collisions(store: sa.Engine) -> None:
    trace = find_trace(store, "orders-7")
    assert trace is not None
    assert (trace["max_message_tokens"], trace["same_display_id"]) == (30, 1)
    assert (trace["agent"], trace["message_count"]) == ("shop-bot", 8)
    assert find_trace(store, "nope") is None


def test_parse_pair_reads_calls_and_lone_results() -> None:
    assert parse_pair("12:0") == PairRef(seq=12, call_index=0)
    assert parse_pair("r7") == PairRef(seq=7)
    assert parse_pair(" 3:1 ") == PairRef(seq=3, call_index=1)
    for bad in (None, "", "x", "1:2:3", "r", "-1:0"):
        assert parse_pair(bad) is None


def test_trace_window_brings_the_answers_of_its_calls_from_outside(store: sa.Engine) -> None:
    weather = _trace_id(store, "weather-1")
    first = trace_window(store, weather, page=0, size=3)
    assert (first.page, first.pages) == (0, 3)
    assert first.messages["seq"].tolist() == [0, 1, 2]
    assert first.calls[["message_seq", "call_index"]].values.tolist() == [[2, 0]]
    # The answer to the call at seq 2 lies at seq 3, on the next page.
    assert first.results["message_seq"].tolist() == [3]
    middle = trace_window(store, weather, page=1, size=3)
    assert middle.messages["seq"].tolist() == [3, 4, 5]
    assert middle.results["message_seq"].tolist() == [3, 5]
    last = trace_window(store, weather, page=99, size=3)
    assert last.page == 2
    assert last.messages["seq"].tolist() == [6, 7, 8]


def test_trace_window_shows_effective_and_derived_error_types(store: sa.Engine) -> None:
    docs = trace_window(store, _trace_id(store, "docs-3"))
    row = docs.results.set_index("message_seq").loc[5]
    assert (row["error_type"], row["derived_error_type"]) == (
        "invalid_params",
        "invalid_arguments_json",
    )
    assert row["content"] == "Error: arguments are not valid JSON"


def test_trace_window_cuts_giant_content_but_keeps_its_length(
    store: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tq, "CONTENT_CHARS", 10)
    window = trace_window(store, _trace_id(store, "weather-1"))
    big = window.messages.set_index("seq").loc[7]
    assert big["content"] == BIG_RESULT[:10]
    assert big["chars"] == len(BIG_RESULT)


def test_page_of_seq_finds_the_window_of_a_message(store: sa.Engine) -> None:
    weather = _trace_id(store, "weather-1")
    assert page_of_seq(store, weather, 7, size=3) == 2
    assert page_of_seq(store, weather, 0, size=3) == 0


def test_pair_detail_gathers_a_call_and_every_answer(store: sa.Engine) -> None:
    orders = _trace_id(store, "orders-7")
    detail = pair_detail(store, orders, PairRef(seq=4, call_index=0))
    assert detail.calls["tool_name"].tolist() == ["lookup_order"]
    assert detail.results["message_seq"].tolist() == [5, 6]
    assert detail.results["pair_state"].tolist() == ["paired", "duplicate_result"]
    duplicate = pair_detail(store, orders, PairRef(seq=6))
    assert duplicate.calls[["message_seq", "call_index"]].values.tolist() == [[4, 0]]
    assert duplicate.results["message_seq"].tolist() == [6]
    orphan = pair_detail(store, orders, PairRef(seq=3))
    assert orphan.calls.empty
    assert orphan.results["pair_state"].tolist() == ["orphan_result"]
    missing = pair_detail(store, orders, PairRef(seq=1, call_index=1))
    assert missing.calls["pair_state"].tolist() == ["missing_result"]
    assert missing.results.empty


def test_trace_findings_are_in_message_order(store: sa.Engine) -> None:
    findings = trace_findings(store, _trace_id(store, "orders-7"))
    assert findings["name"].tolist() == [
        "missing_result", "orphan_result", "error_without_suggestion", "bare_status",
        "duplicate_result",
    ]  # fmt: skip


def test_filter_choices_are_the_distinct_values(store: sa.Engine) -> None:
    assert filter_choices(store) == {
        "agent": ["shop-bot", "support-bot"],
        "model": ["claude-sonnet", "gpt-4o"],
        "tool": ["get_weather", "lookup_order", "search_docs", "send_email"],
    }
    imports = import_choices(store)
    assert imports["origin"].tolist() == ["upload", "cli"]
    assert imports["encoding"].tolist() == ["o200k_base", "o200k_base"]


# --- pages --------------------------------------------------------------------------------


def _texts(at: Any, *kinds: str) -> list[str]:
    return [str(e.value) for kind in kinds for e in getattr(at, kind)]


MARKDOWN_KINDS = ("markdown", "caption", "info", "warning", "error", "subheader", "title")


def test_calls_page_shows_one_page_of_pairs(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.CALLS.script)
    table = at.dataframe[0].value
    assert table["pair"].tolist() == list_pairs(sa.create_engine(store_url))["pair"].tolist()
    assert "10 rows · page 1 of 1 · select a row to open it" in _texts(at, "caption")


def test_calls_page_filters_come_from_the_url(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.CALLS.script, {"pair_state": "missing_result"})
    assert at.selectbox(key="pair_state").value == "missing_result"
    assert at.dataframe[0].value[["trace", "tool"]].values.tolist() == [["orders-7", "send_email"]]


def test_selecting_a_pair_opens_it_on_the_trace_page(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.CALLS.script)
    at.session_state["pairs_table"] = {"selection": {"rows": [4], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert (at.query_params.get("trace"), at.query_params.get("pair")) == ("orders-7", "1:1")
    assert [t.value for t in at.title] == ["Trace"]
    selected = next(e for e in at.expander if e.label == "Selected pair")
    assert [w.value for w in selected.warning] == ["No result ever came back for this call."]


def test_trace_page_puts_the_selected_pair_first(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.TRACE.script, {"trace": "orders-7", "pair": "4:0"})
    selected = next(e for e in at.expander if e.label == "Selected pair")
    # Tool output in monospace code blocks: JSON highlighted, plain text as it is.
    assert [(c.value, c.language) for c in selected.code] == [
        ('{\n  "id": 7\n}', "json"),
        ("Error: order 7 not found.", "plaintext"),
        ("ok", "plaintext"),
    ]
    assert not selected.text
    # First the pair's problems in words, then name, place, id and badges in one line of
    # escaped markdown.
    assert selected.markdown[0].value == (
        r"**2 problems:** error \(the Tool Message has status error\)\; error without "
        r"suggestion \(an error Tool Message gives the model no advice\)"
    )
    assert selected.markdown[1].value == (
        r"**lookup\_order** · call 4:0 · id t3" + "\n\n"
        r":green-badge[paired] :orange-badge[2nd time] :orange-badge[retry after error]"
    )


def test_trace_page_shows_pairing_problems_where_they_happen(
    open_page: OpenPage, store_url: str
) -> None:
    at = open_page(store_url, pages.TRACE.script, {"trace": "orders-7"})
    assert _texts(at, "warning") == [
        "No result ever came back for this call.",
        "Orphan result: no call in this trace has its id.",
        "Duplicate result: a second answer to the call at 4:0.",
    ]
    # A Tool Message shown beside its call is one line where it came.
    assert "#2 tool · 14 tokens · Result of the call 1:0, shown beside it above." in _texts(
        at, "caption"
    )
    # The verdict's reason (escaped), under the advice in a few words.
    assert r"repeated the identical failing call" in _texts(at, "caption")
    assert r":blue-badge[advice\: use search\_orders instead] :red-badge[verdict\: ignored]" in (
        _texts(at, "markdown")
    )
    assert {m.label: m.value for m in at.metric}["Problems"] == "5"


def test_trace_page_marks_late_results_and_corrected_types(
    open_page: OpenPage, store_url: str
) -> None:
    at = open_page(store_url, pages.TRACE.script, {"trace": "docs-3"})
    captions = _texts(at, "caption")
    assert (
        "#3 tool · 6 tokens · Result of the call 1:0, shown beside it above. It arrived late: "
        "the model spoke again before it came back." in captions
    )
    assert any(r":blue-badge[invalid\_params \(corrected\)]" in m for m in _texts(at, "markdown"))
    assert "Arguments are not valid JSON: unterminated string at column 7" in _texts(at, "text")


def test_trace_page_collapses_oversized_results_with_their_size(
    open_page: OpenPage, store_url: str
) -> None:
    at = open_page(store_url, pages.TRACE.script, {"trace": "weather-1"})
    labels = [e.label for e in at.expander]
    # A JSON result: folded, its text a click away.
    assert f"Show as text ({len(BIG_RESULT):,} chars, 3,000 tokens)" in labels
    assert any(r":red-badge[3\,000 tokens]" in m for m in _texts(at, "markdown"))
    assert any(r":red-badge[3rd time]" in m for m in _texts(at, "markdown"))


def test_trace_content_is_never_rendered_as_markdown(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.TRACE.script, {"trace": "orders-7"})
    assert UNTRUSTED in _texts(at, "code", "text")
    for text in _texts(at, *MARKDOWN_KINDS):
        assert "evil.example" not in text.replace("\\", ""), text


def test_an_unknown_trace_id_is_reported_escaped(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.TRACE.script, {"trace": "[x](y)"})
    assert _texts(at, "warning") == [r"No trace has the id \[x\]\(y\)."]


def test_the_trace_picker_pages_through_every_match(store: sa.Engine) -> None:
    assert count_traces(store) == 3
    assert count_traces(store, text="o") == 2
    assert search_traces(store, limit=2, offset=2)["trace"].tolist() == ["docs-3"]
    assert search_traces(store, limit=2, offset=3).empty


def test_trace_picker_opens_the_selected_trace(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.TRACE.script)
    assert _texts(at, "info") == ["Pick a trace above, or open one from the Tool calls page."]
    picker = at.dataframe[0].value
    assert picker["trace"].tolist() == ["orders-7", "weather-1", "docs-3"]
    at.session_state["trace_picker"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert at.query_params.get("trace") == "weather-1"
    assert [s.value for s in at.main.subheader] == [r"weather\-1"]
