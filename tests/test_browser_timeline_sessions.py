"""The trace timeline, the Sessions page and a folded JSON result in a real browser (headless
Chromium, ``toollens serve``), on SQLite and PostgreSQL, with screenshots of each.

The store holds a real Claude Code session with two side chains (``9034225e…``), the real
Langfuse exports (one session of three traces, ``session_abc``) and the JSON trace of
``tests/test_json_folded.py``. Every step waits for a specific element, never a fixed time.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    ERROR_BOXES,
    REPO,
    new_context,
    open_page,
    save_screenshot,
    serve_dashboard,
)
from test_json_folded import MARKUP, json_trace_file

from dashboard import pages
from dashboard.widgets import HEADER_PX, ROW_PX
from db.engine import make_engine
from db.queries.timeline import trace_timeline
from db.queries.traces import find_trace
from ingest.importing.pipeline import import_paths

pytestmark = pytest.mark.browser

SESSION = "9034225e-c367-4ab6-b1eb-1f478a7ae27a"
CAPTIONS = '[data-testid="stCaptionContainer"]'
TIMEOUT_MS = 30_000
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"


@dataclass(frozen=True, slots=True)
class Served:
    url: str
    db_url: str
    name: str


@pytest.fixture(scope="module")
def served(
    browser: Any,
    realdata: Path,
    tmp_path_factory: pytest.TempPathFactory,
    module_db_url: str,
) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("features")
    files = [
        realdata / "claude-code" / f"{SESSION}.jsonl",
        *sorted((realdata / "langfuse-export").glob("*.json")),
        json_trace_file(folder),
    ]
    engine = make_engine(module_db_url)
    summary = import_paths(engine, files, origin="cli")
    engine.dispose()
    assert (summary.traces, summary.rejected) == (17, 0)
    name = "sqlite" if module_db_url.startswith("sqlite") else "postgresql"
    with serve_dashboard(module_db_url, folder / "server.log") as server:
        yield Served(server.url, module_db_url, name)


@contextlib.contextmanager
def _wide_page(browser: Any, url: str, **ready: str) -> Iterator[Any]:
    """A 1440×900 page in a fresh context, opened on ``url`` and ready (``open_page`` with
    ``ready``), with no error shown; the context is closed afterwards."""
    context = new_context(browser)
    try:
        page = context.new_page()
        page.set_viewport_size({"width": 1440, "height": 900})
        open_page(page, url, **ready)
        assert page.locator(ERROR_BOXES).count() == 0
        yield page
    finally:
        context.close()


def _query(page: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)


def test_a_timeline_bar_opens_its_pair(browser: Any, served: Served) -> None:
    engine = make_engine(served.db_url)
    trace = find_trace(engine, SESSION)
    assert trace is not None
    bars = trace_timeline(engine, int(trace["id"])).bars
    engine.dispose()
    # The tool calls answered successfully: the chart's second series, in the frame's order.
    tools = bars[(bars["kind"] == "tool") & (bars["status"] == "success")]
    target = 40
    expected = str(tools["pair"].iloc[target])
    with _wide_page(
        browser, f"{served.url}{pages.TRACE.path}?trace={SESSION}", selector="h3"
    ) as page:
        page.locator(CAPTIONS, has_text="Time in UTC; 448 bars.").wait_for(timeout=TIMEOUT_MS)
        chart = page.locator('[data-testid="stPlotlyChart"]').nth(1)
        chart.scroll_into_view_if_needed()
        series = chart.locator("g.trace.bars").nth(1).locator("g.point path")
        series.first.wait_for(timeout=TIMEOUT_MS)
        assert series.count() == len(tools)
        save_screenshot(page, SCREENSHOTS / f"timeline-{served.name}.png")
        # Plotly's drag layer lies over the bars: click where the bar is, as a person does.
        box = series.nth(target).bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_url(f"**pair={urllib.parse.quote(expected, safe='')}**", timeout=TIMEOUT_MS)
        assert _query(page)["pair"] == [expected]
        open_page(page, page.url, selector="h3")
        here = page.locator(f".st-key-here_{expected.replace(':', '_')}")
        here.first.wait_for(timeout=TIMEOUT_MS)


def test_the_sessions_page_lists_sessions_and_opens_one(browser: Any, served: Served) -> None:
    with _wide_page(
        browser, f"{served.url}{pages.SESSIONS.path}", text=pages.SESSIONS.title
    ) as page:
        page.locator(CAPTIONS, has_text="5 sessions").wait_for(timeout=TIMEOUT_MS)
        save_screenshot(page, SCREENSHOTS / f"sessions-{served.name}.png")
        page.get_by_text("Two traces or more").click()
        page.wait_for_url("**shared=true**", timeout=TIMEOUT_MS)
        page.locator(CAPTIONS, has_text="1 session").wait_for(timeout=TIMEOUT_MS)
        table = page.locator('[data-testid="stDataFrame"]').first
        table.wait_for(timeout=TIMEOUT_MS)
        box = table.bounding_box()
        page.mouse.click(box["x"] + 18, box["y"] + HEADER_PX + ROW_PX / 2)
        page.wait_for_url("**session=session_abc**", timeout=TIMEOUT_MS)
        page.locator(CAPTIONS, has_text="3 traces in order of start").wait_for(timeout=TIMEOUT_MS)
        save_screenshot(page, SCREENSHOTS / f"session-{served.name}.png")


def test_a_large_json_result_is_folded_and_its_markup_stays_text(
    browser: Any, served: Served
) -> None:
    with _wide_page(
        browser, f"{served.url}{pages.TRACE.path}?trace=json-1&pair=1:0", selector="h3"
    ) as page:
        summary = "JSON object of 2 keys, 21,583 chars"
        page.locator(CAPTIONS, has_text=summary).first.wait_for(timeout=TIMEOUT_MS)
        tree = page.locator('[data-testid="stJson"]').first
        tree.scroll_into_view_if_needed()
        # Folded: the first level's keys, not the items' fields.
        assert "items" in tree.inner_text()
        assert "onerror" not in tree.inner_text()
        save_screenshot(page, SCREENSHOTS / f"json-folded-{served.name}.png")
        # Folded by hundreds (react-json-view's groups of a long array): the first hundred
        # opened, then its first item: its markup shown as text.
        tree.get_by_text("0 - 99").first.click()
        tree.locator(".node-ellipsis").first.click()
        tree.get_by_text("onerror", exact=False).first.wait_for(timeout=TIMEOUT_MS)
        assert MARKUP.split(" ")[0] in tree.inner_text()
        assert page.locator('[data-testid="stMain"] img[src="x"]').count() == 0
        assert page.locator('[data-testid="stMain"] a[href="http://evil.example"]').count() == 0
        save_screenshot(page, SCREENSHOTS / f"json-opened-{served.name}.png")
