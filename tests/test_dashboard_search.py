"""The Search page: the query in the URL, hits with titles and plain-text snippets, a hit opens
its pair on the Trace page, and the sidebar filters narrow the hits."""

from __future__ import annotations

import pytest
from dbfixture import OpenPage
from test_queries_search import _store

from dashboard import pages
from db.engine import make_engine


@pytest.fixture
def search_url(sqlite_url: str) -> str:
    engine = make_engine(sqlite_url)
    _store(engine)
    engine.dispose()
    return sqlite_url


def test_a_search_in_the_url_lists_its_hits_with_snippets(
    open_page: OpenPage, search_url: str
) -> None:
    at = open_page(search_url, pages.SEARCH.script, {"q": "permission"})
    assert at.title[0].value == "Search"
    table = at.dataframe[0].value
    assert table["trace"].tolist() == ["t-1", "t-3"]
    assert table["snippet"].tolist() == [
        "Error: «permission» denied for customer_4711",
        "Denied «permission»: ask an admin",
    ]
    assert table["title"].tolist() == [
        "Why was customer_4711 charged twice?",
        "Why was customer_9 charged twice?",
    ]
    assert "2 matches" in at.caption[0].value


def test_the_sidebar_filters_narrow_the_search(open_page: OpenPage, search_url: str) -> None:
    at = open_page(search_url, pages.SEARCH.script, {"q": "4711", "agent": "billing"})
    assert at.dataframe[0].value["trace"].tolist() == ["t-2", "t-2"]


def test_no_hit_says_what_to_try(open_page: OpenPage, search_url: str) -> None:
    at = open_page(search_url, pages.SEARCH.script, {"q": "zebra"})
    assert at.info[0].value.startswith("Nothing holds these words")
    assert not at.dataframe
