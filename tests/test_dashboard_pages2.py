"""The Errors, Tokens, Loops, Suggestions and Imports pages, run in Streamlit's AppTest.

They read ``dbfixture.build_pages2_database`` (figures worked out in that module), so every
metric is asserted exactly, and cross-checked against ``db.summary.summarize`` where it has the
same figure. Selecting a table row must open the Trace page on that trace and pair.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from dbfixture import PAGES2_LONG_RAW, build_pages2_database, open_app

from dashboard import widgets
from dashboard.render import EMPTY_STORE_TEXT, escape_markdown
from db.engine import make_engine
from db.filters import Filters
from db.summary import summarize

ERRORS, TOKENS, LOOPS = "views/errors.py", "views/tokens.py", "views/loops.py"
SUGGESTIONS, IMPORTS = "views/suggestions.py", "views/imports.py"
RATE_LIMITED = "get_weather: Error: rate limited"


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite file holding the pages-2 store, shared by the module (the pages only read)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('pages2') / 'toollens.db'}"
    engine = make_engine(url)
    build_pages2_database(engine)
    engine.dispose()
    return url


def metrics(at: Any) -> dict[str, str]:
    """Metric label -> shown value."""
    return {m.label: m.value for m in at.metric}


def captions(at: Any) -> list[str]:
    return [c.value for c in at.caption]


def select_row(at: Any, table_key: str, row: int) -> Any:
    """Select one row of a selectable table, the way a click does, and rerun."""
    at.session_state[table_key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    return at.run()


def chart_spec(at: Any, index: int) -> dict[str, Any]:
    """The Plotly figure JSON of the ``index``-th chart on the page."""
    spec: dict[str, Any] = orjson.loads(at.get("plotly_chart")[index].proto.spec)
    return spec


def assert_opened(at: Any, trace: str, pair: str) -> None:
    assert not at.exception
    assert [t.value for t in at.title] == ["Trace"]
    assert at.query_params["trace"] == trace
    assert at.query_params["pair"] == pair


@pytest.mark.parametrize("page", [ERRORS, TOKENS, LOOPS, SUGGESTIONS, IMPORTS])
def test_every_page_explains_how_to_import_when_the_store_is_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, page: str
) -> None:
    at = open_app(monkeypatch, f"sqlite:///{tmp_path / 'empty.db'}", page=page)
    assert not at.exception
    assert [i.value for i in at.info] == [EMPTY_STORE_TEXT]


# --- Errors -------------------------------------------------------------------------------


def test_errors_page_metrics_match_the_summary(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=ERRORS)
    assert not at.exception
    summary = summarize(make_engine(store_url))
    assert metrics(at) == {
        "Errors": f"{summary['status']['error']}",
        "Error rate": "54.5%",
        "Explicit": "4",
        "Inferred": "2",
        "Distinct errors": "3",
    }
    assert summary["status"]["error"] == 6
    by_tool = chart_spec(at, 0)["data"]
    assert [(t["name"], t["y"], t["x"]) for t in by_tool] == [
        ("rate_limit", ["get_weather"], [3]),
        ("invalid_params", ["search"], [1]),
        ("conflict", ["write_file"], [2]),
    ]


def test_errors_over_time_default_to_hours_and_say_what_is_left_out(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=ERRORS)
    assert at.segmented_control(key="errors_axis").value == "hour"
    assert chart_spec(at, 2)["layout"]["xaxis"]["categoryarray"] == [
        "2025-01-01 10:00",
        "2025-01-02 09:00",
    ]
    note = (
        "2 errors come from traces without timestamps and are not on this axis; the import "
        "axis shows every error."
    )
    assert note in captions(at)
    at.segmented_control(key="errors_axis").set_value("import").run()
    assert not at.exception
    assert chart_spec(at, 2)["layout"]["xaxis"]["categoryarray"] == ["import 1", "import 2"]
    assert note not in captions(at)


def test_a_fingerprint_in_the_url_lists_its_occurrences(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=ERRORS, params={"fingerprint": RATE_LIMITED})
    assert not at.exception
    assert at.code[0].value == RATE_LIMITED
    occurrences = at.dataframe(key="occurrences_table").value
    assert list(zip(occurrences["trace"], occurrences["pair"], strict=True)) == [
        ("run-a", "1:0"),
        ("run-a", "3:0"),
        ("run-b", "5:0"),
    ]


def test_selecting_an_error_group_puts_it_in_the_url_and_drills_down(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=ERRORS)
    groups = at.dataframe(key="fingerprints_0_0").value
    assert list(groups["traces"]) == [2, 1, 1]
    select_row(at, "fingerprints_0_0", 1)
    assert not at.exception
    assert at.query_params["fingerprint"] == "write_file: conflict"
    assert list(at.dataframe(key="occurrences_table").value["pair"]) == ["3:0", "7:0"]


def test_closing_the_drill_down_clears_the_url_and_the_selection(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=ERRORS)
    select_row(at, "fingerprints_0_0", 0)
    assert at.query_params["fingerprint"] == RATE_LIMITED
    at.button(key="close_fingerprint").click().run()
    assert not at.exception
    assert "fingerprint" not in at.query_params
    assert [t.key for t in at.dataframe] == [None, "fingerprints_0_1"]
    at.run()
    assert "fingerprint" not in at.query_params


def test_selecting_an_occurrence_opens_it_on_the_trace_page(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=ERRORS, params={"fingerprint": RATE_LIMITED})
    select_row(at, "occurrences_table", 2)
    assert_opened(at, "run-b", "5:0")


def test_errors_page_says_so_when_nothing_failed(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=ERRORS, params={"tool": "lookup"})
    assert not at.exception
    assert [s.value for s in at.success] == ["No Tool Message has status error among 1 results."]


# --- Tokens -------------------------------------------------------------------------------


def test_tokens_page_counts_results_over_the_default_budget(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=TOKENS)
    assert not at.exception
    assert metrics(at) == {
        "Over budget": "1",
        "Share over budget": "9.1%",
        "Tool Message tokens": "3,347",
        "Of all tokens": "46.0%",
    }
    assert captions(at)[0] == (
        "Token counts: cl100k_base (the encoding of the latest import), exact BPE counts."
    )
    box = chart_spec(at, 0)
    assert box["data"][0]["y"][:3] == ["get_weather", "read_file", "write_file"]
    assert box["data"][0]["upperfence"][0] == 2500
    assert box["layout"]["shapes"][0]["x0"] == 2000
    # Logarithmic by default (the toggle is on and the URL says nothing).
    assert at.toggle(key="tokens_log").value is True
    assert box["layout"]["xaxis"]["type"] == "log"
    assert chart_spec(at, 1)["data"][0]["y"] == [0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    biggest = at.dataframe(key="biggest_table").value
    assert list(biggest["tokens"][:2]) == [2500, 500]


def test_the_budget_comes_from_the_url_even_outside_the_slider_range(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=TOKENS, params={"budget": "50"})
    assert not at.exception
    assert metrics(at)["Over budget"] == "4"
    assert metrics(at)["Share over budget"] == "36.4%"
    assert at.slider(key="budget_slider").value == 100
    assert chart_spec(at, 0)["layout"]["shapes"][0]["x0"] == 50


def test_the_token_axis_turns_linear_from_the_url(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=TOKENS, params={"tokens_log": "false"})
    assert not at.exception
    assert at.toggle(key="tokens_log").value is False
    assert chart_spec(at, 0)["layout"]["xaxis"]["type"] == "linear"


def test_moving_the_budget_slider_updates_the_url_and_the_count(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=TOKENS)
    at.slider(key="budget_slider").set_value(400).run()
    assert not at.exception
    assert at.query_params["budget"] == "400"
    assert at.number_input(key="budget").value == 400
    assert metrics(at)["Over budget"] == "2"


def test_selecting_a_big_result_opens_it(monkeypatch: pytest.MonkeyPatch, store_url: str) -> None:
    at = open_app(monkeypatch, store_url, page=TOKENS)
    select_row(at, "biggest_table", 1)
    assert_opened(at, "run-b", "3:0")


# --- Loops --------------------------------------------------------------------------------


def test_loops_page_at_the_default_k_matches_the_summary(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=LOOPS)
    assert not at.exception
    loops = summarize(make_engine(store_url), loop_k=3)["loops"]
    assert metrics(at) == {
        "Loops": f"{loops['signatures']}",
        "Calls in loops": f"{loops['calls']}",
        "Errors in loops": "2",
        "Wasted tokens": "2,610",
        "Ping-pong calls": "5",
    }
    assert (loops["signatures"], loops["calls"]) == (2, 6)
    loops_table = at.dataframe(key="loops_table").value
    assert list(loops_table["trace"]) == ["run-a", "run-c"]
    # A link per loop to its first call on the Trace page.
    assert list(loops_table["link"]) == [
        "/trace?trace=run-a&pair=1:0",
        "/trace?trace=run-c&pair=1:0",
    ]
    assert chart_spec(at, 0)["data"][0]["y"] == ["get_weather", "read_file"]
    assert list(at.dataframe(key="ping_pong_table").value["tools"]) == ["read_file ↔ write_file"]


def test_moving_the_k_slider_refilters_and_updates_the_url(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=LOOPS)
    at.slider(key="k_slider").set_value(2).run()
    assert not at.exception
    assert at.query_params["k"] == "2"
    assert metrics(at)["Loops"] == "3"
    assert metrics(at)["Wasted tokens"] == "2,650"
    assert len(at.dataframe(key="loops_table").value) == 3


def test_a_k_above_every_repeat_explains_how_to_see_loops(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=LOOPS, params={"k": "4"})
    assert not at.exception
    assert metrics(at)["Loops"] == "0"
    assert [i.value for i in at.info] == [
        "No call signature repeats 4 or more times in a trace. Lower k to see more."
    ]


def test_selecting_a_loop_opens_its_first_call(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=LOOPS)
    select_row(at, "loops_table", 0)
    assert_opened(at, "run-a", "1:0")


# --- Suggestions --------------------------------------------------------------------------


def test_suggestions_page_shows_rates_with_their_counts(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=SUGGESTIONS)
    assert not at.exception
    assert metrics(at) == {
        "Results with a suggestion": "5",
        "Follow rate": "50.0%",
        "Recovery with suggestion": "33.3%",
        "Recovery without suggestion": "–",
    }
    # Every rate with its counts under it.
    assert {m.label: m.delta for m in at.metric if m.delta} == {
        "Follow rate": "2 of 4 decided",
        "Recovery with suggestion": "1 of 3 retried",
        "Recovery without suggestion": "0 of 0 retried",
    }
    follow = chart_spec(at, 2)["data"][0]
    assert follow["text"] == ["1/2 (50 %)", "0/1 (0 %)", "1/1 (100 %)"]
    assert list(at.dataframe(key="examples_followed").value["pair"]) == ["3:0", "1:0"]


def test_follow_rate_metric_agrees_with_the_summary(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=SUGGESTIONS, params={"agent": "support"})
    summary = summarize(make_engine(store_url), filters=Filters(agent="support"))["suggestions"]
    assert (summary["followed"], summary["ignored"]) == (2, 1)
    assert metrics(at)["Follow rate"] == "66.7%"


def test_selecting_an_example_opens_the_result_in_its_trace(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=SUGGESTIONS)
    select_row(at, "examples_ignored", 1)
    assert_opened(at, "run-c", "3:0")


def test_suggestions_page_explains_when_no_result_has_advice(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=SUGGESTIONS, params={"tool": "lookup"})
    assert not at.exception
    assert len(at.info) == 1 and at.info[0].value.startswith("No Tool Message under the current")


# --- Imports ------------------------------------------------------------------------------


def test_imports_page_lists_history_and_rejected_records_as_plain_text(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=IMPORTS)
    assert not at.exception
    history = at.dataframe[0].value
    assert list(history["id"]) == [2, 1]
    assert list(history["paths"]) == ["c.jsonl, bad.jsonl", "ab.jsonl"]
    assert [e.label for e in at.expander] == [
        escape_markdown("bad.jsonl:3 · invalid_json (import 2)"),
        escape_markdown("bad.jsonl:7 · unknown_format (import 2)"),
    ]
    assert [t.value for t in at.text] == [
        "bad.jsonl:3: not valid JSON",
        "bad.jsonl:7: no format recognizes this",
    ]
    preview = at.code[1].value
    assert preview == PAGES2_LONG_RAW[:2048].decode("utf-8", errors="replace")
    assert "Raw input: first 2,048 of 5,000 bytes" in captions(at)


def test_the_import_filter_narrows_the_rejected_records(
    monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    at = open_app(monkeypatch, store_url, page=IMPORTS, params={"import": "1"})
    assert not at.exception
    assert [s.value for s in at.main.subheader] == [
        "Import history",
        "Files of import 1",
        "Traces updated by import 1",
        "Rejected records (import 1)",
    ]
    assert "This import replaced no stored trace." in captions(at)
    assert "No record was rejected." in captions(at)
    assert len(at.expander) == 0


def test_pair_links_encode_untrusted_ids_and_only_open_the_trace_page() -> None:
    assert widgets.pair_link("run a&pair=9", "2:0") == "/trace?trace=run+a%26pair%3D9&pair=2:0"
    assert widgets.pair_link("javascript:alert(1)") == "/trace?trace=javascript:alert%281%29"
    assert widgets.table_height(3) == 38 + 3 * 35 + 2
    assert widgets.table_height(50, max_rows=12) == widgets.table_height(12)


def test_pair_links_follow_the_servers_base_path() -> None:
    from streamlit import config

    before = config.get_option("server.baseUrlPath")
    try:
        config.set_option("server.baseUrlPath", "/tools/lens/")
        assert widgets.pair_link("demo-1", "2:0") == "/tools/lens/trace?trace=demo-1&pair=2:0"
        assert widgets.app_path("/trace") == "/tools/lens/trace"
    finally:
        config.set_option("server.baseUrlPath", before)
    assert widgets.pair_link("demo-1") == "/trace?trace=demo-1"
