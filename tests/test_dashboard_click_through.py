"""Everything clicks through: a selected bar, bucket or table row filters the page or opens the
page that lists what it counts (AppTest on ``analysis_store_url``, the hand-made store of
``dbfixture.build_pages2_database``: run-a on 2025-01-01 10:00, run-b on 2025-01-02 09:00,
run-c without timestamps; 11 Tool Messages, 6 errors).

A selection is given the way the browser sends it: the chart's (or table's) widget state.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from dbfixture import OpenStorePage
from page_support import captions, metrics, select_points, select_row

from dashboard import pages
from dashboard.render import escape_markdown
from dashboard.selection import brushed_range, picked_point
from db.contract.vocabulary import VERDICTS
from db.queries.filters import parse_query
from db.rollups.read import used_dims
from db.rollups.upkeep import Dim


def _title(at: Any) -> list[str]:
    return [t.value for t in at.title]


def _rows_caption(at: Any) -> str:
    return next(c for c in captions(at) if re.search(r" rows? · page |\d rows?$", c))


def test_a_brushed_box_is_the_minutes_that_contain_it() -> None:
    box = {"box": [{"xref": "x", "yref": "y", "x": ["2025-01-02 09:59:59.5", "2025-01-02 08:00"]}]}
    assert brushed_range(box) == ("2025-01-02T08:00", "2025-01-02T10:00")
    assert brushed_range({"box": [{"x": ["not a time", "2025-01-02"]}]}) is None
    assert brushed_range({"points": [], "box": []}) is None
    assert picked_point({"points": [{"curve_number": 0}]}) is None


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("minute", ("2025-01-02T08:00", "2025-01-02T10:00")),
        ("hour", ("2025-01-02T08:00", "2025-01-02T10:00")),
        ("day", ("2025-01-02T00:00", "2025-01-03T00:00")),
        ("week", ("2025-01-02T00:00", "2025-01-03T00:00")),
    ],
)
def test_a_box_brushed_on_a_chart_of_days_or_weeks_is_the_whole_days_it_touches(
    unit: str, expected: tuple[str, str]
) -> None:
    box = {"box": [{"x": ["2025-01-02 09:59:59.5", "2025-01-02 08:00"]}]}
    assert brushed_range(box, unit=unit) == expected
    # Across midnight, and with an edge exactly at midnight (kept, not widened).
    wide = {"box": [{"x": ["2025-01-05 00:00", "2025-01-02 23:10"]}]}
    assert brushed_range(wide, unit=unit) == (
        ("2025-01-02T23:10", "2025-01-05T00:00")
        if unit in ("minute", "hour")
        else ("2025-01-02T00:00", "2025-01-05T00:00")
    )
    # Whole days are what the daily rollups answer; minutes send the pages to the base tables.
    since, until = brushed_range(wide, unit=unit) or ("", "")
    answered = used_dims(parse_query({"since": since, "until": until}))
    assert answered == (None if unit in ("minute", "hour") else Dim.DAY)


def test_clicking_a_bucket_of_the_overview_time_series_filters_to_that_hour(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(params={"overview_tab": "Activity"})
    assert metrics(at)["Traces"] == "3"
    assert any(c.startswith("Per hour: Tool Messages") for c in captions(at))
    # 24 hourly buckets, 22 of them empty: the errors curve (1) of the first bucket.
    select_points(at, "activity", [{"curve_number": 1, "point_index": 0, "point_number": 0}])
    assert not at.exception
    assert (at.query_params["since"], at.query_params["until"]) == (
        "2025-01-01T10:00",
        "2025-01-01T11:00",
    )
    assert metrics(at)["Traces"] == "1"  # run-a alone
    assert metrics(at)["Errors"] == "2"
    chips = [b.label for b in at.button if b.key and b.key.startswith("chip_")]
    assert chips == [
        escape_markdown("Since: 2025-01-01T10:00"),
        escape_markdown("Until: 2025-01-01T11:00"),
    ]
    # The filter stays after the next run (the selection was taken once), and its chip
    # removes it.
    at.run()
    assert metrics(at)["Traces"] == "1"
    next(b for b in at.button if b.key == "chip_since").click().run()
    next(b for b in at.button if b.key == "chip_until").click().run()
    assert metrics(at)["Traces"] == "3"
    assert "since" not in at.query_params


def test_brushing_the_time_series_filters_to_the_brushed_minutes(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(params={"overview_tab": "Activity"})
    box = {"xref": "x", "yref": "y", "x": ["2025-01-02 08:30:10", "2025-01-02 09:45:50"]}
    select_points(at, "activity", [], box=[box])
    assert not at.exception
    assert (at.query_params["since"], at.query_params["until"]) == (
        "2025-01-02T08:30",
        "2025-01-02T09:46",
    )
    assert metrics(at)["Traces"] == "1"  # run-b alone
    assert any(c.startswith("Per minute: Tool Messages") for c in captions(at))


def _click_distribution_bar(open_page: OpenStorePage, chart: str, point: int) -> Any:
    """The Overview's Distributions tab with bar ``point`` of the first series of ``chart``
    clicked."""
    at = open_page(params={"overview_tab": "Distributions"})
    select_points(at, chart, [{"curve_number": 0, "point_index": point}])
    return at


def test_a_bar_of_errors_by_type_lists_those_errors_on_the_tool_calls_page(
    open_analysis_page: OpenStorePage,
) -> None:
    # Errors by type, biggest on top: rate_limit 3, conflict 2, invalid_params 1; bars are
    # drawn bottom-up, so point 2 is rate_limit.
    at = _click_distribution_bar(open_analysis_page, "errors_by_type", 2)
    assert not at.exception
    assert _title(at) == ["Tool calls"]
    assert (at.session_state["status"], at.session_state["error_type"]) == ("error", "rate_limit")
    assert _rows_caption(at).startswith("3 rows")


def test_a_verdict_bar_lists_the_results_with_that_verdict(
    open_analysis_page: OpenStorePage,
) -> None:
    # Verdicts top-down in VERDICTS order, drawn bottom-up: the last point is the first.
    at = _click_distribution_bar(open_analysis_page, "verdicts", len(VERDICTS) - 1)
    assert _title(at) == ["Tool calls"]
    assert at.session_state["verdict"] == VERDICTS[0] == "followed"
    assert _rows_caption(at).startswith("2 rows")  # run-a's second error, run-b's search


def test_a_token_size_bar_lists_the_tool_messages_of_that_size_biggest_first(
    open_analysis_page: OpenStorePage,
) -> None:
    at = _click_distribution_bar(open_analysis_page, "token_sizes", 0)
    assert _title(at) == ["Tool calls"]
    assert (at.session_state["tmin"], at.session_state["tmax"]) == (0, 100)
    assert (at.session_state["sort"], at.session_state["desc"]) == ("tokens", True)
    # Under 100 tokens: 10, 10, 30, 12, 40, 40, 5 (the orphan) = 7 Tool Messages.
    assert _rows_caption(at).startswith("7 rows")


def test_an_occurrence_bar_opens_the_loops_at_that_threshold(
    open_analysis_page: OpenStorePage,
) -> None:
    at = _click_distribution_bar(open_analysis_page, "occurrences", 2)
    assert _title(at) == ["Loops"]
    assert at.session_state["k"] == 3
    assert metrics(at)["Loops"] == "2"  # run-a's get_weather and run-c's read_file


def test_a_tool_of_the_scorecard_lists_its_calls(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(params={"overview_tab": "Scorecard"})
    card = next(df.value for df in at.dataframe if "top_error_type" in df.value.columns)
    row = card["tool"].tolist().index("get_weather")
    select_row(at, "scorecard", row)
    assert not at.exception
    assert _title(at) == ["Tool calls"]
    assert at.session_state["tool"] == "get_weather"
    assert _rows_caption(at).startswith("4 rows")  # run-a's three calls, run-b's one


def test_a_finding_row_lists_the_pairs_with_that_finding(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page()
    findings = next(df.value for df in at.dataframe if "label" in df.value.columns)
    select_row(at, "top_findings", findings["finding"].tolist().index("oversized"))
    assert _title(at) == ["Tool calls"]
    assert at.session_state["finding"] == "oversized"
    assert _rows_caption(at).startswith("1 row ")


def test_an_oversized_tool_lists_its_tool_messages_over_budget(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page()
    select_row(at, "top_oversized", 0)
    assert _title(at) == ["Tool calls"]
    assert at.session_state["tool"] == "get_weather"
    assert at.session_state["tmin"] == 2001
    assert _rows_caption(at).startswith("1 row ")


def test_a_tool_of_the_loops_chart_becomes_the_tool_filter(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(pages.LOOPS.script, {"k": "2", "loops_tab": "Per tool"})
    assert metrics(at)["Loops"] == "3"
    # Tools by loops: get_weather, read_file, write_file (one loop each; ties by name).
    select_points(at, "loops_by_tool", [{"curve_number": 0, "point_index": 1}])
    assert not at.exception
    assert at.session_state["tool"] == "read_file"
    assert metrics(at)["Loops"] == "1"


def test_a_tool_of_the_token_quantiles_lists_its_biggest_tool_messages(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(pages.TOKENS.script)
    quantiles = at.dataframe(key="quantiles_table").value
    select_row(at, "quantiles_table", quantiles["tool"].tolist().index("write_file"))
    assert [t.value for t in at.title] == ["Tool calls"]
    assert at.session_state["tool"] == "write_file"
    assert (at.session_state["sort"], at.session_state["desc"]) == ("tokens", True)
    assert _rows_caption(at).startswith("2 rows")


def test_a_verdict_bar_of_the_suggestions_page_lists_those_results(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(pages.SUGGESTIONS.script)
    # Curves by suggestion kind (sorted): missing_param (ignored, no next action),
    # retry_after (followed, ignored), use_instead (followed).
    select_points(at, "verdicts", [{"curve_number": 0, "point_index": 1}])
    assert [t.value for t in at.title] == ["Tool calls"]
    assert at.session_state["verdict"] == "no_next_action"
    assert _rows_caption(at).startswith("1 row ")


def test_traces_without_timestamps_say_so_instead_of_a_time_series(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(params={"agent": "coder", "overview_tab": "Activity"})
    assert metrics(at)["Traces"] == "1"  # run-c
    assert "No Tool Message has a time (the formats imported carry no timestamps)." in captions(at)
    assert not any(c.startswith("Per ") for c in captions(at))
