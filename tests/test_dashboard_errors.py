"""The Errors page in Streamlit's AppTest: metrics, charts over time, error groups and their
drill-down, and opening an occurrence on the Trace page.

On ``analysis_store_url``: exact figures, cross-checked against ``summarize`` where it has them.
"""

from dbfixture import OpenStorePage
from page_support import assert_opened, captions, chart_spec, metrics, select_points, select_row

from dashboard import pages
from db.engine import make_engine
from db.queries.summary import summarize

ERRORS = pages.ERRORS.script
RATE_LIMITED = "get_weather: Error: rate limited"


def test_errors_page_metrics_match_the_summary(
    open_analysis_page: OpenStorePage, analysis_store_url: str
) -> None:
    at = open_analysis_page(ERRORS, {"errors_tab": "By tool"})
    summary = summarize(make_engine(analysis_store_url))
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


def test_errors_over_time_are_on_a_continuous_hourly_axis_and_say_what_is_left_out(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(ERRORS, {"errors_tab": "Over time"})
    assert at.segmented_control(key="errors_axis").value == "time"
    spec = chart_spec(at, 0)
    assert spec["layout"]["xaxis"]["type"] == "date"
    assert spec["layout"]["dragmode"] == "select"
    # One trace per error type; each bar stands over the middle of its hour.
    assert [(t["name"], t["x"], t["y"]) for t in spec["data"]] == [
        ("rate_limit", ["2025-01-01T10:30:00", "2025-01-02T09:30:00"], [2, 1]),
        ("invalid_params", ["2025-01-02T09:30:00"], [1]),
    ]
    assert spec["data"][0]["width"] == [3_600_000 * 0.9] * 2
    note = (
        "2 errors come from traces without timestamps and are not on this axis; the import "
        "axis shows every error."
    )
    assert note in captions(at)
    at.segmented_control(key="errors_axis").set_value("import").run()
    assert not at.exception
    assert chart_spec(at, 0)["layout"]["xaxis"]["categoryarray"] == ["import 1", "import 2"]
    assert note not in captions(at)


def test_a_bar_of_errors_over_time_filters_to_its_hour(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(ERRORS, {"errors_tab": "Over time"})
    # invalid_params (trace 1), its only bar: 2025-01-02 09:00.
    select_points(at, "errors_over_time", [{"curve_number": 1, "point_index": 0}])
    assert not at.exception
    assert (at.session_state["since"], at.session_state["until"]) == (
        "2025-01-02T09:00",
        "2025-01-02T10:00",
    )
    assert at.metric[0].value == "2"  # run-b's two errors


def test_a_bar_of_error_types_by_tool_lists_those_errors(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(ERRORS, {"errors_tab": "By tool"})
    # rate_limit is trace 0 (taxonomy order), get_weather its first tool.
    select_points(at, "errors_by_tool", [{"curve_number": 0, "point_index": 0}])
    assert [t.value for t in at.title] == ["Tool calls"]
    assert at.session_state["tool"] == "get_weather"
    assert (at.session_state["status"], at.session_state["error_type"]) == ("error", "rate_limit")
    assert any(c.startswith("3 rows") for c in captions(at))


def test_a_row_of_how_errors_were_recognized_lists_those_errors(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(ERRORS, {"errors_tab": "How recognized"})
    select_row(at, "sources_table", 1)  # inferred, http_429
    assert [t.value for t in at.title] == ["Tool calls"]
    assert (at.session_state["status"], at.session_state["source"]) == ("error", "inferred")
    assert any(c.startswith("2 rows") for c in captions(at))


def test_a_fingerprint_in_the_url_lists_its_occurrences(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(ERRORS, {"fingerprint": RATE_LIMITED})
    assert at.code[0].value == RATE_LIMITED
    # At the top of the page, highlighted: the first table of the page.
    assert at.dataframe[0].key == "occurrences_table"
    assert "my_location: Selected error group" in at.markdown[0].value
    occurrences = at.dataframe(key="occurrences_table").value
    assert list(zip(occurrences["trace"], occurrences["pair"], strict=True)) == [
        ("run-a", "1:0"),
        ("run-a", "3:0"),
        ("run-b", "5:0"),
    ]


def test_selecting_an_error_group_puts_it_in_the_url_and_drills_down(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(ERRORS)
    groups = at.dataframe(key="fingerprints_0_0").value
    assert list(groups["traces"]) == [2, 1, 1]
    select_row(at, "fingerprints_0_0", 1)
    assert not at.exception
    assert at.query_params["fingerprint"] == "write_file: conflict"
    assert list(at.dataframe(key="occurrences_table").value["pair"]) == ["3:0", "7:0"]


def test_closing_the_drill_down_clears_the_url_and_the_selection(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(ERRORS)
    select_row(at, "fingerprints_0_0", 0)
    assert at.query_params["fingerprint"] == RATE_LIMITED
    at.button(key="close_fingerprint").click().run()
    assert not at.exception
    assert "fingerprint" not in at.query_params
    assert [t.key for t in at.dataframe] == ["fingerprints_0_1"]
    at.run()
    assert "fingerprint" not in at.query_params


def test_selecting_an_occurrence_opens_it_on_the_trace_page(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(ERRORS, {"fingerprint": RATE_LIMITED})
    select_row(at, "occurrences_table", 2)
    assert_opened(at, "run-b", "5:0")


def test_errors_page_says_so_when_nothing_failed(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(ERRORS, {"tool": "lookup"})
    assert [s.value for s in at.success] == ["No Tool Message has status error among 1 result."]
