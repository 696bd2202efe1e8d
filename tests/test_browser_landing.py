"""Landing on the target in a real browser (headless Chromium at 1,440 × 900, ``toollens
serve``), on SQLite and PostgreSQL: the lists show tool, error type, arguments and result
without scrolling sideways, a search hit deep in a long trace opens the page holding it
scrolled to the message with the match marked, and a selected pair is scrolled into view.

The store holds the demo scenarios (seed 7) and a real Claude Code session of 612 messages
(``9034225e…``). Every step waits for a specific element or URL, never a fixed time.
"""

from __future__ import annotations

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
    scenario_store,
)
from browser_support import serve_dashboard as serve

from dashboard import pages
from dashboard.trace_blocks import FOUND_KEY, SELECTED_KEY
from dashboard.widgets import HEADER_PX, ROW_PX
from db.queries.errors import error_fingerprints
from db.queries.search import search_content
from ingest.importing.pipeline import import_paths

pytestmark = pytest.mark.browser

SESSION = "9034225e-c367-4ab6-b1eb-1f478a7ae27a"
WIDTH, HEIGHT = 1440, 900
TIMEOUT_MS = 30_000
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
#: A word only one message of the store holds: the assistant's message #575 of the long trace
#: (page 29 of 31, at 20 messages a page).
DEEP_WORD, DEEP_SEQ = "interesting", 575
#: A call of the long trace on its page 24, far below the top of the page.
DEEP_PAIR = "469:0"

#: Each table of a page: the headers drawn (glide-data-grid draws on a canvas and keeps an
#: accessibility table of the columns it draws, in order) and how far its scroller can move
#: sideways (0: every column fits).
GRID_HEADERS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')]
  .map(d => {
    const scroller = d.querySelector('.dvn-scroller');
    const box = d.getBoundingClientRect();
    return {
      headers: [...d.querySelectorAll('table[role="grid"] th')].map(t => t.textContent),
      overflow: scroller ? scroller.scrollWidth - scroller.clientWidth : null,
      scrolled: scroller ? scroller.scrollLeft : null,
      right: box.right,
    };
  })"""  # noqa: E501


@dataclass(frozen=True, slots=True)
class Served:
    url: str
    db_url: str
    name: str
    fingerprint: str


@pytest.fixture(scope="module")
def served(
    browser: Any, realdata: Path, tmp_path_factory: pytest.TempPathFactory, module_db_url: str
) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("landing")
    engine, traces = scenario_store(folder, module_db_url)
    assert traces == 60
    summary = import_paths(engine, [realdata / "claude-code" / f"{SESSION}.jsonl"], origin="cli")
    assert (summary.traces, summary.messages) == (1, 612)
    fingerprint = str(error_fingerprints(engine, limit=1)["fingerprint"].iloc[0])
    engine.dispose()
    name = "sqlite" if module_db_url.startswith("sqlite") else "postgresql"
    with serve(module_db_url, folder / "server.log") as server:
        yield Served(server.url, module_db_url, name, fingerprint)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = new_context(browser)
    try:
        tab = context.new_page()
        tab.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        yield tab
    finally:
        context.close()


def _grid(page: Any, index: int) -> dict[str, Any]:
    """:data:`GRID_HEADERS` of the page's table ``index`` once it has drawn its headers (a
    grid fills its accessibility table after its first frame)."""
    page.wait_for_function(
        f"() => {{ const t = ({GRID_HEADERS})()[{index}]; return t && t.headers.length > 0; }}",
        timeout=TIMEOUT_MS,
        polling=100,
    )
    table: dict[str, Any] = page.evaluate(GRID_HEADERS)[index]
    return table


def _fully_drawn(table: dict[str, Any], header: str) -> bool:
    """True when ``header``'s column is drawn whole: another column is drawn after it (the
    grid draws columns left to right up to its edge), or nothing lies beyond the edge."""
    drawn: list[str] = table["headers"]
    if header not in drawn:
        return False
    return drawn.index(header) < len(drawn) - 1 or table["overflow"] <= 0


#: (page address, the table's number on the page, the headers it must show whole).
LISTS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    (pages.CALLS.path, 0, ("Tool", "Error type", "Arguments", "Result")),
    (f"{pages.ERRORS.path}?fingerprint={{fingerprint}}", 0, ("Tool", "Error type", "Tool Message")),
    (f"{pages.ERRORS.path}?fingerprint={{fingerprint}}", 1, ("Tool", "Error type", "Fingerprint")),
    (f"{pages.LOOPS.path}?k=3", 0, ("Tool", "Arguments", "Calls", "Errors")),
    (f"{pages.SEARCH.path}?q=error", 0, ("In", "Tool", "Match", "Trace")),
    (pages.SESSIONS.path, 0, ("Session", "Traces", "Errors", "Problems")),
    (pages.TRACE.path, 0, ("Trace", "Title", "Messages", "Errors", "Problems")),
)  # fmt: skip


def test_lists_show_tool_error_type_arguments_and_result_without_scrolling(
    served: Served, page: Any
) -> None:
    fingerprint = urllib.parse.quote(served.fingerprint)
    misses = []
    for path, index, wanted in LISTS:
        url = served.url + path.format(fingerprint=fingerprint)
        open_page(page, url)
        assert page.locator(ERROR_BOXES).count() == 0, path
        table = _grid(page, index)
        assert table["scrolled"] == 0 and table["right"] <= WIDTH, (path, table)
        misses += [(path, index, h, table["headers"]) for h in wanted if not _fully_drawn(table, h)]
    assert misses == []
    # The Tool calls list, as its columns stand: what a call did first.
    open_page(page, served.url + pages.CALLS.path)
    headers = _grid(page, 0)["headers"]
    assert headers[:5] == ["Tool", "Error type", "Arguments", "Result", "Status"]
    save_screenshot(page, SCREENSHOTS / f"landing-calls-{served.name}.png")


def _in_view(page: Any, selector: str) -> dict[str, float]:
    box: dict[str, float] = page.evaluate(
        "s => document.querySelector(s).getBoundingClientRect().toJSON()", selector
    )
    return box


def _wait_in_view(page: Any, selector: str) -> dict[str, float]:
    """Wait until the element ``selector`` has its top in the window below the app's header
    (the page scrolled to it) and stayed there."""
    page.wait_for_function(
        """s => { const e = document.querySelector(s); if (!e) return false;
                  const r = e.getBoundingClientRect();
                  return r.top >= 0 && r.top < 200 && r.bottom > r.top; }""",
        arg=selector,
        timeout=TIMEOUT_MS,
        polling=100,
    )
    return _in_view(page, selector)


def test_a_search_hit_deep_in_a_long_trace_opens_its_page_scrolled_to_it_and_marked(
    served: Served, page: Any
) -> None:
    from db.engine import make_engine

    engine = make_engine(served.db_url)
    hits = search_content(engine, DEEP_WORD).hits
    engine.dispose()
    assert hits[["trace", "kind", "seq"]].values.tolist() == [[SESSION, "message", DEEP_SEQ]]
    open_page(page, f"{served.url}{pages.SEARCH.path}?q={DEEP_WORD}")
    table = page.locator('[data-testid="stDataFrame"]').first
    box = table.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + HEADER_PX + ROW_PX / 2)
    page.wait_for_url(f"**{pages.TRACE.path}?**msg={DEEP_SEQ}**", timeout=TIMEOUT_MS)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)
    assert query == {"trace": [SESSION], "msg": [str(DEEP_SEQ)], "hl": [DEEP_WORD]}
    found = f".st-key-{FOUND_KEY}{DEEP_SEQ}"
    box = _wait_in_view(page, found)
    assert box["bottom"] > box["top"] and box["top"] < HEIGHT
    # The page holding it: messages 561–580 of 612.
    caption = "Messages 561–580 of 612 · page 29 of 31 (the search match's page)"
    assert page.get_by_text(caption).count() == 1
    # The box is drawn before its message (a page still drawing): wait for the message.
    number = page.locator(found).get_by_text(f"#{DEEP_SEQ}", exact=True)
    number.first.wait_for(timeout=TIMEOUT_MS)
    assert number.count() == 1
    # The match marked: the word alone (as the message writes it) on a coloured background.
    mark = page.locator(f"{found} .stMarkdownColoredBackground")
    assert mark.all_text_contents() == [DEEP_WORD.capitalize()]
    background = mark.first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent")
    save_screenshot(page, SCREENSHOTS / f"landing-search-hit-{served.name}.png")


def test_a_selected_pair_is_scrolled_into_view_on_landing(served: Served, page: Any) -> None:
    query = urllib.parse.urlencode({"trace": SESSION, "pair": DEEP_PAIR})
    open_page(page, f"{served.url}{pages.TRACE.path}?{query}", selector="h3", text=SESSION)
    box = _wait_in_view(page, f".st-key-{SELECTED_KEY}")
    assert box["top"] < HEIGHT and box["bottom"] > box["top"]
    # The card holds the pair: its call's message number and tool.
    card = page.locator(f".st-key-{SELECTED_KEY}")
    assert "Selected pair" in card.inner_text()
    # Scrolled: at the top of the page the card is below the fold.
    top = page.evaluate(
        f"""() => document.querySelector('.st-key-{SELECTED_KEY}').getBoundingClientRect().top
              + document.querySelector('[data-testid="stMain"]').scrollTop"""
    )
    assert top > HEIGHT
    save_screenshot(page, SCREENSHOTS / f"landing-pair-{served.name}.png")
