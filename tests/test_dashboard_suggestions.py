"""The Suggestions page in Streamlit's AppTest: rates with their counts against the summary,
examples, and the page without advice.

They read ``analysis_store_url`` (``dbfixture.build_pages2_database``, figures worked out in
that module), so every metric is asserted exactly, and cross-checked against
``db.queries.summary.summarize`` where it has the same figure.
"""

import pytest
from dbfixture import open_app
from page_support import assert_opened, chart_spec, metrics, open_section, select_row

from dashboard import pages
from db.engine import make_engine
from db.queries.filters import Filters
from db.queries.summary import summarize

SUGGESTIONS = pages.SUGGESTIONS.script


def test_suggestions_page_shows_rates_with_their_counts(
    monkeypatch: pytest.MonkeyPatch, analysis_store_url: str
) -> None:
    at = open_app(monkeypatch, analysis_store_url, page=SUGGESTIONS)
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
    open_section(at, "suggestions_tab", "Follow rate")
    follow = chart_spec(at, 0)["data"][0]
    assert follow["text"] == ["1/2 (50 %)", "0/1 (0 %)", "1/1 (100 %)"]
    open_section(at, "suggestions_tab", "Examples")
    assert list(at.dataframe(key="examples_followed").value["pair"]) == ["3:0", "1:0"]
    # A tab within a section has a URL parameter of its own.
    open_section(at, "verdict_examples", "Ignored")
    assert list(at.dataframe(key="examples_ignored").value["pair"]) == ["1:0", "3:0"]


def test_follow_rate_metric_agrees_with_the_summary(
    monkeypatch: pytest.MonkeyPatch, analysis_store_url: str
) -> None:
    at = open_app(monkeypatch, analysis_store_url, page=SUGGESTIONS, params={"agent": "support"})
    summary = summarize(make_engine(analysis_store_url), filters=Filters(agent="support"))[
        "suggestions"
    ]
    assert (summary["followed"], summary["ignored"]) == (2, 1)
    assert metrics(at)["Follow rate"] == "66.7%"


def test_selecting_an_example_opens_the_result_in_its_trace(
    monkeypatch: pytest.MonkeyPatch, analysis_store_url: str
) -> None:
    at = open_app(
        monkeypatch,
        analysis_store_url,
        page=SUGGESTIONS,
        params={"suggestions_tab": "Examples", "verdict_examples": "Ignored"},
    )
    select_row(at, "examples_ignored", 1)
    assert_opened(at, "run-c", "3:0")


def test_suggestions_page_explains_when_no_result_has_advice(
    monkeypatch: pytest.MonkeyPatch, analysis_store_url: str
) -> None:
    at = open_app(monkeypatch, analysis_store_url, page=SUGGESTIONS, params={"tool": "lookup"})
    assert not at.exception
    assert len(at.info) == 1 and at.info[0].value.startswith("No Tool Message under the current")
