"""The Loops page in Streamlit's AppTest: loops at k (slider and URL) against the summary, and
opening a loop's first call.

On ``analysis_store_url``: exact figures, cross-checked against ``summarize`` where it has them.
"""

from dbfixture import OpenStorePage
from page_support import assert_opened, chart_spec, metrics, open_section, select_row

from dashboard import pages
from db.engine import make_engine
from db.queries.summary import summarize

LOOPS = pages.LOOPS.script


def test_loops_page_at_the_default_k_matches_the_summary(
    open_analysis_page: OpenStorePage, analysis_store_url: str
) -> None:
    at = open_analysis_page(LOOPS)
    loops = summarize(make_engine(analysis_store_url), loop_k=3)["loops"]
    assert metrics(at) == {
        "Loops": f"{loops['signatures']}",
        "Calls in loops": f"{loops['calls']}",
        "Errors in loops": "2",
        "Wasted tokens": "2,610",
        "Ping-pong calls": "5",
        "Error streaks": "0",
    }
    assert (loops["signatures"], loops["calls"]) == (2, 6)
    loops_table = at.dataframe(key="loops_table").value
    assert list(loops_table["trace"]) == ["run-a", "run-c"]
    # A link per loop to its first call on the Trace page.
    assert list(loops_table["link"]) == [
        "/trace?trace=run-a&pair=1:0",
        "/trace?trace=run-c&pair=1:0",
    ]
    open_section(at, "loops_tab", "Per tool")
    assert chart_spec(at, 0)["data"][0]["y"] == ["get_weather", "read_file"]
    open_section(at, "loops_tab", "Ping-pong")
    assert list(at.dataframe(key="ping_pong_table").value["tools"]) == ["read_file ↔ write_file"]


def test_moving_the_k_slider_refilters_and_updates_the_url(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(LOOPS)
    at.slider(key="k_slider").set_value(2).run()
    assert not at.exception
    assert at.query_params["k"] == "2"
    assert metrics(at)["Loops"] == "3"
    assert metrics(at)["Wasted tokens"] == "2,650"
    assert len(at.dataframe(key="loops_table").value) == 3


def test_a_k_above_every_repeat_explains_how_to_see_loops(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(LOOPS, {"k": "4"})
    assert metrics(at)["Loops"] == "0"
    assert [i.value for i in at.info] == [
        "No call signature repeats 4 or more times in a trace. Lower k to see more."
    ]


def test_selecting_a_loop_opens_its_first_call(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(LOOPS)
    select_row(at, "loops_table", 0)
    assert_opened(at, "run-a", "1:0")
