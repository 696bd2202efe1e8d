"""The Findings page in AppTest: the kind in the URL, its occurrences with lint's messages and a
link to each pair, selecting one opens it on the Trace page; the Overview links each kind here
and its scorecard counts findings per kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbfixture import OpenPage
from lint_runs import write_runs
from page_support import assert_opened, captions, open_section, select_row

from dashboard import pages
from db.engine import make_engine
from ingest.importing.pipeline import import_paths

FINDINGS = pages.FINDINGS.script


@pytest.fixture
def runs_url(sqlite_url: str, tmp_path: Path) -> str:
    engine = make_engine(sqlite_url)
    import_paths(engine, [write_runs(tmp_path / "runs.jsonl")], workers=1)
    engine.dispose()
    return sqlite_url


def test_a_kind_in_the_url_lists_its_occurrences_with_links(
    open_page: OpenPage, runs_url: str
) -> None:
    at = open_page(runs_url, FINDINGS, {"kind": "undeclared_parameter"})
    assert at.title[0].value == "Findings"
    assert at.selectbox(key="kind").value == "undeclared_parameter"
    table = at.dataframe(key="findings_table").value
    assert table[["title", "tool", "call_id", "message", "link"]].values.tolist() == [
        [
            "Weather in Paris, and flights?",
            "search",
            "call_a",
            "undeclared parameter 'page'",
            "/trace?trace=run-1&pair=1:0",
        ]
    ]
    assert "1 occurrences" in captions(at)
    kinds = at.dataframe[1].value.set_index("kind")
    assert kinds.loc["name_mismatch", "occurrences"] == 1
    assert kinds.loc["undeclared_parameter", "level"] == "warning"


def test_the_page_opens_on_the_most_frequent_kind_and_a_row_opens_its_pair(
    open_page: OpenPage, runs_url: str
) -> None:
    at = open_page(runs_url, FINDINGS)
    # Five kinds occur once each; the first in vocabulary order comes first.
    assert at.selectbox(key="kind").value == "error_without_suggestion"
    at.selectbox(key="kind").set_value("missing_result").run()
    table = at.dataframe(key="findings_table").value
    assert table[["trace", "call_id", "message"]].values.tolist() == [
        ["run-2", "c1", "no Tool Message answers the call"]
    ]
    assert_opened(select_row(at, "findings_table", 0), "run-2", "1:0")


def test_a_kind_without_occurrences_says_so(open_page: OpenPage, runs_url: str) -> None:
    at = open_page(runs_url, FINDINGS, {"kind": "oversized"})
    assert [i.value for i in at.info] == ["No oversized finding under these filters."]


def test_the_overview_links_each_kind_and_counts_findings_per_kind_per_tool(
    open_page: OpenPage, runs_url: str
) -> None:
    at = open_page(runs_url)
    findings = next(d.value for d in at.dataframe if "list" in d.value.columns)
    assert "/findings?kind=undeclared_parameter" in findings["list"].tolist()
    open_section(at, "overview_tab", "Scorecard")
    assert not at.exception
    card = next(d.value for d in at.dataframe if "kinds" in d.value.columns).set_index("tool")
    assert card.loc["get_weather", "kinds"] == (
        "error_without_suggestion 1, name_mismatch 1, arguments_schema_violation 1"
    )
    assert card.loc["search", "kinds"] == "undeclared_parameter 1"
