"""The debugging path in a real browser (headless Chromium, ``toollens serve``): from the
Overview's chart to the list of what a bar counts, to a pair, to the next problem in its trace,
to a content search, and Back to where the user was.

Every step waits for a specific element (a heading, a caption, a URL), never for a fixed time.
The expected figures come from the same store through ``db`` queries, so they are exact.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    ERROR_BOXES,
    REPO,
    click_section,
    click_table_row,
    close_clean,
    new_context,
    open_page,
    save_screenshot,
    section_url,
    serve_dashboard,
    sqlite_scenarios,
)

from dashboard import pages
from dashboard.trace_outline import neighbours
from db.queries.compare import trace_set
from db.queries.filters import Filters
from db.queries.overview import error_type_counts
from db.queries.pairs import PairQuery, count_pairs, list_pairs
from db.queries.traces import filter_choices, trace_markers

pytestmark = pytest.mark.browser

CAPTIONS = '[data-testid="stCaptionContainer"]'
TIMEOUT_MS = 30_000
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"


def _query(page: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)


def _heading(page: Any) -> list[str]:
    texts: list[str] = page.locator('[data-testid="stMain"] h1').all_text_contents()
    return texts


def test_overview_bar_to_the_list_to_a_pair_to_the_next_problem_to_search_and_back(
    browser: Any, tmp_path: Path
) -> None:
    url, engine, traces = sqlite_scenarios(tmp_path)
    assert traces == 60
    # The bar on top of "Errors by type" is the most frequent error type.
    top = error_type_counts(engine).iloc[0]
    error_type, errors = str(top["error_type"]), int(top["errors"])
    listed = PairQuery(status="error", error_type=error_type)
    assert count_pairs(engine, query=listed) == errors
    # The first listed error with a problem after it in its trace: the pair to open.
    rows = list_pairs(engine, query=listed, limit=12)
    row, start, following = next(
        (i, str(r["pair"]), after)
        for i, r in rows.iterrows()
        if (
            after := neighbours(
                trace_markers(engine, int(r["trace_id"])),
                (int(r["seq"]), -1 if r["call_index"] is None else int(r["call_index"])),
            )[1]
        )
        is not None
    )
    trace = str(rows.iloc[row]["trace"])
    engine.dispose()

    with serve_dashboard(url, tmp_path / "server.log") as server:
        context = new_context(browser)
        page = context.new_page()
        open_page(page, f"{server.url}{pages.OVERVIEW.path}", text=pages.OVERVIEW.title)
        assert page.locator(ERROR_BOXES).count() == 0

        # 1. The Distributions tab, then a bar of "Errors by type" (the top one: the last point
        # of the trace).
        click_section(page, pages.OVERVIEW, "Distributions")
        chart = page.locator('[data-testid="stPlotlyChart"]').first
        chart.scroll_into_view_if_needed()
        bars = chart.locator("g.trace.bars g.point path")
        bars.first.wait_for(timeout=TIMEOUT_MS)
        # Plotly's drag layer lies over the bars: click where the bar is, as a person does.
        bar = bars.nth(bars.count() - 1).bounding_box()
        page.mouse.click(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
        page.wait_for_url("**/calls?**", timeout=TIMEOUT_MS)
        page.locator(CAPTIONS, has_text=f"{errors:,} rows · page 1").wait_for(timeout=TIMEOUT_MS)
        assert _heading(page) == [pages.CALLS.title]
        save_screenshot(page, SCREENSHOTS / "path-1-calls-from-a-bar.png")
        assert _query(page)["status"] == ["error"]
        assert _query(page)["error_type"] == [error_type]

        # 2. A pair of the list opens on the Trace page.
        table = page.locator('[data-testid="stDataFrame"]').first
        click_table_row(page, table, row)
        page.wait_for_url("**/trace?**", timeout=TIMEOUT_MS)
        open_page(page, page.url, selector="h3", text=trace)
        assert _query(page)["trace"] == [trace]
        assert _query(page)["pair"] == [start]
        assert page.locator(f".st-key-here_{start.replace(':', '_')}").count() == 1

        # 3. The next problem in the trace: selected and highlighted where it stands.
        page.get_by_role("button", name="Next problem").click()
        page.wait_for_url(f"**pair={urllib.parse.quote(following, safe='')}**", timeout=TIMEOUT_MS)
        open_page(page, page.url, selector="h3", text=trace)
        here = page.locator(f".st-key-here_{following.replace(':', '_')}")
        here.first.wait_for(timeout=TIMEOUT_MS)
        save_screenshot(page, SCREENSHOTS / "path-2-next-problem.png")
        problem_url = page.url

        # 4. A content search from the menu.
        page.get_by_role("link", name=pages.SEARCH.title).click()
        page.wait_for_url("**/search**", timeout=TIMEOUT_MS)
        field = page.get_by_role("textbox", name="Search messages, tool results and call arguments")
        field.fill("not found")
        field.press("Enter")
        page.wait_for_url("**q=not**", timeout=TIMEOUT_MS)
        page.locator(CAPTIONS, has_text=" matches · page 1").wait_for(timeout=TIMEOUT_MS)
        save_screenshot(page, SCREENSHOTS / "path-3-search.png")
        assert page.locator(ERROR_BOXES).count() == 0

        # 5. Back returns to the pair the user was on (page, trace and pair).
        page.go_back()
        page.wait_for_url("**/trace?**", timeout=TIMEOUT_MS)
        page.locator("h3", has_text=trace).first.wait_for(timeout=TIMEOUT_MS)
        assert _query(page)["pair"] == [following]
        assert page.url == problem_url
        here.first.wait_for(timeout=TIMEOUT_MS)
        assert _heading(page) == [pages.TRACE.title]
        close_clean(context, server)


def test_a_range_brushed_on_the_overview_time_series_becomes_the_since_until_filter(
    browser: Any, tmp_path: Path
) -> None:
    url, engine, traces = sqlite_scenarios(tmp_path)
    assert traces == 60
    engine.dispose()
    with serve_dashboard(url, tmp_path / "server.log") as server:
        context = new_context(browser)
        page = context.new_page()
        open_page(page, section_url(server.url, pages.OVERVIEW, "Activity"), text="Overview")
        traces_before = page.locator('[data-testid="stMetricValue"]').first.text_content()
        assert traces_before == "60"
        # Drag across the left half of the Tool Messages plot (the drag layer of its x axis).
        chart = page.locator('[data-testid="stPlotlyChart"]').first
        chart.scroll_into_view_if_needed()
        area = chart.locator("rect.nsewdrag").first.bounding_box()
        y = area["y"] + area["height"] / 2
        page.mouse.move(area["x"] + 2, y)
        page.mouse.down()
        page.mouse.move(area["x"] + area["width"] * 0.5, y, steps=8)
        page.mouse.up()
        # The two widgets write their parameters one after the other.
        page.wait_for_function(
            "() => location.search.includes('since=') && location.search.includes('until=')",
            timeout=TIMEOUT_MS,
        )
        query = _query(page)
        assert set(query) >= {"since", "until"}
        assert query["since"][0] < query["until"][0]
        # The sidebar says a filter is in use; its popover shows the brushed value.
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_text("In use: Since, Until").wait_for(timeout=TIMEOUT_MS)
        sidebar.get_by_role("button", name="Choose filters").click()
        since = page.get_by_role("textbox", name="Since (UTC)")
        since.wait_for(timeout=TIMEOUT_MS)
        assert since.input_value() == query["since"][0]
        page.keyboard.press("Escape")
        since.wait_for(state="hidden", timeout=TIMEOUT_MS)
        # The chips say the figures are narrowed; fewer traces started in the range.
        page.get_by_role("button", name=f"Since: {query['since'][0]}").wait_for(timeout=TIMEOUT_MS)
        page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stMetricValue\"]').textContent !== '60'",
            timeout=TIMEOUT_MS,
        )
        save_screenshot(page, SCREENSHOTS / "overview-brushed.png")
        close_clean(context, server, page=page)


def test_a_tool_chosen_in_the_filters_popover_narrows_the_page_and_is_in_the_url(
    browser: Any, tmp_path: Path
) -> None:
    url, engine, traces = sqlite_scenarios(tmp_path)
    tool = str(filter_choices(engine)["tool"][0])
    picked = trace_set(engine, Filters(tool=tool)).traces
    assert 0 < len(picked) < traces
    engine.dispose()
    with serve_dashboard(url, tmp_path / "server.log") as server:
        context = new_context(browser)
        page = context.new_page()
        open_page(page, f"{server.url}{pages.OVERVIEW.path}", text=pages.OVERVIEW.title)
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert sidebar.get_by_text("None in use: every trace counts").count() == 1
        # The widgets are drawn only once the popover opens.
        assert page.get_by_role("combobox", name="Tool").count() == 0
        sidebar.get_by_role("button", name="Choose filters").click()
        page.get_by_role("combobox", name="Tool").click()
        page.get_by_role("option", name=tool, exact=True).click()
        page.wait_for_function(
            f"() => location.search.includes('tool={urllib.parse.quote(tool)}')",
            timeout=TIMEOUT_MS,
        )
        page.keyboard.press("Escape")
        sidebar.get_by_text("In use: Tool").wait_for(timeout=TIMEOUT_MS)
        page.get_by_role("button", name=f"Tool: {tool}").wait_for(timeout=TIMEOUT_MS)
        traces_shown = page.locator('[data-testid="stMetricValue"]').first
        page.wait_for_function(
            "([n]) => document.querySelector('[data-testid=\"stMetricValue\"]').textContent === n",
            arg=[str(len(picked))],
            timeout=TIMEOUT_MS,
        )
        assert traces_shown.text_content() == str(len(picked))
        assert _query(page)["tool"] == [tool]
        close_clean(context, server, page=page)


def test_a_section_opened_by_its_tab_goes_into_the_link_and_the_link_opens_it(
    browser: Any, tmp_path: Path
) -> None:
    url, engine, _ = sqlite_scenarios(tmp_path)
    engine.dispose()
    charts, tables = '[data-testid="stPlotlyChart"]', '[data-testid="stDataFrame"]'
    with serve_dashboard(url, tmp_path / "server.log") as server:
        page = new_context(browser).new_page()
        open_page(page, f"{server.url}{pages.ERRORS.path}", text=pages.ERRORS.title)
        # The first section is open: its table is drawn, nothing of the others.
        assert page.locator(charts).count() == 0
        assert page.locator(tables).count() == 1
        click_section(page, pages.ERRORS, "By tool")
        assert _query(page)[pages.ERRORS.section_param] == ["By tool"]
        page.locator(charts).first.locator(".main-svg").first.wait_for(timeout=TIMEOUT_MS)
        page.locator(tables).first.wait_for(state="detached", timeout=TIMEOUT_MS)
        assert (page.locator(charts).count(), page.locator(tables).count()) == (1, 0)
        # The address, copied into another browser, opens the same section.
        other = new_context(browser).new_page()
        open_page(other, page.url, text=pages.ERRORS.title)
        tab = other.get_by_role("tab", name="By tool", exact=True)
        assert tab.get_attribute("aria-selected") == "true"
        assert other.locator(charts).count() == 1
        # A display choice inside a section outlives a visit to another section: the URL
        # drops it while the section is hidden, the browser keeps it and puts it back.
        open_page(other, f"{server.url}{pages.TOKENS.path}?tokens_log=false", text="Tokens")
        toggle = other.get_by_label("Logarithmic axis")
        assert not toggle.is_checked()
        click_section(other, pages.TOKENS, "Biggest")
        # The tab names itself in the URL at once; the rerun that drops the hidden section's
        # choice may come after the page last looked ready (a CI run read the URL between).
        other.wait_for_function(
            "() => !new URLSearchParams(location.search).has('tokens_log')", timeout=TIMEOUT_MS
        )
        assert "tokens_log" not in _query(other)
        click_section(other, pages.TOKENS, "By tool")
        toggle.wait_for(timeout=TIMEOUT_MS)
        assert not toggle.is_checked()
        other.wait_for_function(
            "() => new URLSearchParams(location.search).get('tokens_log') === 'false'",
            timeout=TIMEOUT_MS,
        )
        assert _query(other)["tokens_log"] == ["false"]
        assert server.log().count("Traceback") == 0
