"""Navigation in AppTest: every active sidebar filter is a chip above the page that removes it,
on every page; the default page also runs under its own path (checked in the browser test,
since AppTest has no URL path)."""

from __future__ import annotations

import pytest
from dbfixture import OpenPage, fixture_store
from page_support import metrics

from dashboard import pages
from dashboard.render import escape_markdown


def _chips(at: object) -> list[str]:
    return [b.label for b in at.button if str(b.key).startswith("chip_")]  # type: ignore[attr-defined]


@pytest.mark.parametrize("page", pages.PAGES, ids=[p.key for p in pages.PAGES])
def test_every_page_shows_the_active_filters_as_chips(
    open_page: OpenPage, sqlite_url: str, page: pages.Page
) -> None:
    url = fixture_store(sqlite_url)
    params = {"tool": "get_weather", "agent": "support-bot", "start": "2025-01-01"}
    at = open_page(url, params=params)
    if not page.default:
        at.switch_page(page.script).run()
    assert not at.exception
    assert _chips(at) == [
        escape_markdown(t) for t in ("From: 2025-01-01", "Agent: support-bot", "Tool: get_weather")
    ]


def test_a_chip_removes_its_filter_and_the_figures_widen(
    open_page: OpenPage, sqlite_url: str
) -> None:
    url = fixture_store(sqlite_url)
    at = open_page(url)
    assert (_chips(at), metrics(at)["Traces"]) == ([], "3")
    at = open_page(url, params={"agent": "support-bot", "model": "gpt-4o"})
    assert len(_chips(at)) == 2
    narrowed = metrics(at)["Traces"]
    at.button(key="chip_model").click().run()
    assert not at.exception
    assert _chips(at) == [escape_markdown("Agent: support-bot")]
    assert "model" not in at.query_params
    assert at.session_state["model"] is None
    at.button(key="chip_agent").click().run()
    assert (_chips(at), metrics(at)["Traces"]) == ([], "3")
    assert narrowed != "3"
