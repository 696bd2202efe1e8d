"""Tool execution times and error streaks on the pages, in Streamlit's AppTest, over a store of
``timing_traces`` (figures worked out in that module): the Overview's time metrics and per-tool
table, the Tool calls page's durations and slowest calls, the Loops page's streaks (metric,
table, slider) and the Trace page's "took" badges and streak list."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbfixture import OpenPage
from page_support import assert_opened, metrics, rows, select_row
from timing_traces import build_trace, search_trace

from dashboard import pages
from db.engine import make_engine
from ingest.importing.pipeline import import_traces


@pytest.fixture(scope="module")
def timing_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('timing')) / 'timing.db'}"
    engine = make_engine(url)
    import_traces(engine, [build_trace(), search_trace()])
    engine.dispose()
    return url


def test_the_overview_shows_tool_time_percentiles_and_counts(
    open_page: OpenPage, timing_url: str
) -> None:
    at = open_page(timing_url, params={"overview_tab": "Execution time"})
    shown = metrics(at)
    assert {
        name: shown[name] for name in ("Median tool time", "p95 tool time", "Slowest call")
    } == {
        "Median tool time": "1.00 s",
        "p95 tool time": "2.50 s",
        "Slowest call": "2.50 s",
    }
    assert shown["Timed calls"] == "5"
    table = next(
        d for d in at.dataframe if "negative" in d.value.columns and "from_spans" in d.value.columns
    )
    assert rows(table.value[["tool", "timed", "missing", "negative", "p50_ms", "p95_ms"]]) == [
        ("run", 3, 1, 1, 1.25, 2.5),
        ("read_file", 1, 0, 0, 1.0, 1.0),
        ("search", 1, 0, 0, 0.30025, 0.30025),
    ]


def test_the_tool_calls_page_shows_durations_and_the_slowest_calls(
    open_page: OpenPage, timing_url: str
) -> None:
    at = open_page(timing_url, pages.CALLS.script, {"sort": "duration_s", "desc": "true"})
    table = at.dataframe(key="pairs_table").value
    durations = table["duration_s"].astype(object).where(table["duration_s"].notna(), None)
    assert dict(zip(zip(table["trace"], table["pair"], strict=True), durations, strict=True)) == {
        ("build-1", "1:0"): 2.5,
        ("build-1", "3:0"): 1.25,
        ("build-1", "3:1"): 1.0,
        ("build-1", "6:0"): 0.75,
        ("build-1", "8:0"): -0.5,
        ("build-1", "10:0"): None,
        ("search-2", "1:0"): 0.30025,
    }
    times = next(d.value for d in at.dataframe if "from_spans" in d.value.columns)
    assert rows(times[["tool", "timed", "from_spans"]]) == [
        ("run", 3, 0),
        ("read_file", 1, 0),
        ("search", 1, 1),
    ]
    slow = at.dataframe(key="slowest_calls").value
    assert list(slow["pair"]) == ["1:0", "3:0", "3:1", "6:0", "1:0"]
    assert list(slow["duration_ms"]) == [2.5, 1.25, 1.0, 0.75, 0.30025]


def test_the_loops_page_counts_and_lists_error_streaks_at_the_slider_k(
    open_page: OpenPage, timing_url: str
) -> None:
    at = open_page(timing_url, pages.LOOPS.script, {"loops_tab": "Error streaks"})
    assert metrics(at)["Error streaks"] == "1"
    streaks = at.dataframe(key="streaks_table").value
    assert rows(streaks[["tool", "length", "wasted_tokens", "wasted_ms", "pair", "link"]]) == [
        ("run", 3, 46, 1.25 + 0.75, "1:0", "/trace?trace=build-1&pair=1:0"),
    ]
    at.slider(key="sk_slider").set_value(4).run()
    assert not at.exception
    assert at.query_params["sk"] == "4"
    assert metrics(at)["Error streaks"] == "0"
    assert not [d for d in at.dataframe if d.key == "streaks_table"]


def test_the_trace_page_shows_times_and_opens_a_streak(
    open_page: OpenPage, timing_url: str
) -> None:
    at = open_page(timing_url, pages.TRACE.script, {"trace": "build-1"})
    headers = [
        m.value.replace("\\", "") for m in at.markdown if m.value.startswith("Tool Message ·")
    ]
    took = [h.split("[took ")[1].split("]")[0] if "[took " in h else None for h in headers]
    assert took == ["2.50 s", "1.25 s", "1.00 s", "750 ms", "−500 ms", None]
    assert [e.label for e in at.expander if e.label.startswith("Error streaks")] == [
        "Error streaks (1, k = 3)"
    ]
    at.session_state["streaks_1"] = True
    at.run()
    assert not at.exception
    streaks = at.dataframe(key="streaks_table_1").value
    assert rows(streaks[["tool", "length", "pair", "last", "wasted_tokens"]]) == [
        ("run", 3, "1:0", "6:0", 46)
    ]
    at = select_row(at, "streaks_table_1", 0)
    assert_opened(at, "build-1", "1:0")
