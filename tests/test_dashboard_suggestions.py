"""The Suggestions page in Streamlit's AppTest: rates with their counts against the summary,
examples, and the page without advice.

On ``analysis_store_url``: exact figures, cross-checked against ``summarize`` where it has them.
"""

from dbfixture import OpenPage, OpenStorePage
from page_support import assert_opened, chart_spec, metrics, open_section, select_row

from dashboard import pages
from db.engine import make_engine
from db.queries.filters import Filters
from db.queries.summary import summarize

SUGGESTIONS = pages.SUGGESTIONS.script


def test_suggestions_page_shows_rates_with_their_counts(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(SUGGESTIONS)
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
    open_section(at, "suggestions_tab", "Follow rate")
    follow = chart_spec(at, 0)["data"][0]
    assert follow["text"] == ["1/2 (50 %)", "0/1 (0 %)", "1/1 (100 %)"]
    open_section(at, "suggestions_tab", "Examples")
    assert list(at.dataframe(key="examples_followed").value["pair"]) == ["3:0", "1:0"]
    # A tab within a section has a URL parameter of its own.
    open_section(at, "verdict_examples", "Ignored")
    assert list(at.dataframe(key="examples_ignored").value["pair"]) == ["1:0", "3:0"]


def test_follow_rate_metric_agrees_with_the_summary(
    open_analysis_page: OpenStorePage, analysis_store_url: str
) -> None:
    at = open_analysis_page(SUGGESTIONS, {"agent": "support"})
    summary = summarize(make_engine(analysis_store_url), filters=Filters(agent="support"))[
        "suggestions"
    ]
    assert (summary["followed"], summary["ignored"]) == (2, 1)
    assert metrics(at)["Follow rate"] == "66.7%"


def test_selecting_an_example_opens_the_result_in_its_trace(
    open_page: OpenPage, analysis_store_url: str
) -> None:
    at = open_page(
        analysis_store_url,
        SUGGESTIONS,
        {"suggestions_tab": "Examples", "verdict_examples": "Ignored"},
    )
    select_row(at, "examples_ignored", 1)
    assert_opened(at, "run-c", "3:0")


def test_suggestions_page_explains_when_no_result_has_advice(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(SUGGESTIONS, {"tool": "lookup"})
    assert len(at.info) == 1 and at.info[0].value.startswith("No Tool Message under the current")
