"""Real-browser tests: ``toollens serve`` on a free port, every page in headless Chromium.

Skipped with the reason when Chromium or playwright is missing, unless
``TOOLLENS_REQUIRE_BROWSER=1`` (CI), where a skip would hide a failure, so they fail instead.
Screenshots of every page go to ``test-artifacts/screenshots/`` (git-ignored).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from browser_support import (
    ERROR_BOXES,
    REPO,
    RequestRecorder,
    Server,
    close_clean,
    first_error_pair,
    new_context,
    open_page,
    recording_http_server,
    save_screenshot,
    section_url,
    serve_dashboard,
    sqlite_scenarios,
)

from dashboard import pages
from db.engine import make_engine
from ingest.importing.pipeline import import_paths
from ingest.scenarios.populations import BASELINE, CANDIDATE, generate_population

pytestmark = pytest.mark.browser

SCREENSHOTS = REPO / "test-artifacts" / "screenshots"

# What the hostile-content test checks after each page: a script that ran, an element that
# would run one, a link that would, and markup from the trace left in the DOM as markup.
DOM_ATTACKS = """() => ({
  xss: typeof window.__xss,
  scripts: [...document.querySelectorAll('script')]
    .filter(s => s.textContent.includes('__xss')).length,
  onerror: document.querySelectorAll('[onerror]').length,
  jsLinks: [...document.querySelectorAll('a[href]')]
    .filter(a => a.getAttribute('href').trim().toLowerCase().startsWith('javascript:')).length,
  images: [...document.querySelectorAll('img')]
    .filter(i => (i.getAttribute('src') || '').includes('tracker') || i.getAttribute('src') === 'x')
    .length,
})"""
NO_ATTACK = {"xss": "undefined", "scripts": 0, "onerror": 0, "jsLinks": 0, "images": 0}
CHARTS = '[data-testid="stPlotlyChart"]'
#: The end of :func:`hostile_markup`, as text: a chart that shows it did not render it.
MARKUP_TAIL = "clickme</a> <b>bold</b><br>"
# Markup Plotly would make of trace text: links (<a>), and bold (<b>bold</b> becomes a
# styled tspan).
CHART_MARKUP = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const inCharts = sel => charts.reduce((n, c) => n + c.querySelectorAll(sel).length, 0);
  return {
    links: inCharts('svg a'),
    // The theme sets titles bold itself: look for the trace's own "<b>bold</b>".
    styled: charts.reduce((n, c) => n + [...c.querySelectorAll('tspan[style*="bold"]')]
      .filter(t => t.textContent === 'bold').length, 0),
  };
}"""
NO_CHART_MARKUP = {"links": 0, "styled": 0}


def record_hosts(context: Any) -> set[str]:
    """The set of hosts the pages of ``context`` request from, filled as they load."""
    hosts: set[str] = set()
    context.on("request", lambda r: hosts.add(urllib.parse.urlsplit(r.url).hostname or r.url))
    return hosts


def _headings(page: Any, tag: str) -> list[str]:
    texts: list[str] = page.locator(f'[data-testid="stMain"] {tag}').all_text_contents()
    return texts


def _assert_page_healthy(page: Any, title: str) -> None:
    assert _headings(page, "h1") == [title]
    assert page.locator(ERROR_BOXES).count() == 0


def test_every_page_renders_without_an_error_box_and_a_shared_trace_link_opens_the_trace(
    browser: Any, tmp_path: Path
) -> None:
    url, engine, traces = sqlite_scenarios(tmp_path)
    assert traces == 60
    # A trace whose error carried advice the model then acted on (or not): the shared link
    # names the pair of that error.
    display_id, pair = first_error_pair(engine, with_verdict=True)
    engine.dispose()
    with serve_dashboard(url, tmp_path / "server.log") as server:
        context = new_context(browser)
        page = context.new_page()
        for shown in pages.PAGES:
            open_page(page, f"{server.url}{shown.path}", text=shown.title)
            save_screenshot(page, SCREENSHOTS / f"{shown.key}.png")
            _assert_page_healthy(page, shown.title)
        context.close()

        # The link a colleague was sent, as the very first request of a fresh browser.
        query = urllib.parse.urlencode({"trace": display_id, "pair": pair})
        context = new_context(browser)
        page = context.new_page()
        open_page(page, f"{server.url}{pages.TRACE.path}?{query}", selector="h3", text=display_id)
        save_screenshot(page, SCREENSHOTS / "shared-trace-link.png")
        _assert_page_healthy(page, pages.TRACE.title)
        assert _headings(page, "h3")[0] == display_id
        selected = page.locator('[data-testid="stExpander"]', has_text="Selected pair")
        assert selected.locator("p", has_text=f"call {pair}").count() == 1
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert sidebar.locator("h3").all_text_contents() == ["Filters", "Analysis"]
        assert sidebar.get_by_text("Loop threshold k").count() == 1
        assert urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query) == {
            "trace": [display_id],
            "pair": [pair],
        }
        close_clean(context, server)


def hostile_markup(tracker_port: int) -> str:
    """Markup that runs script, loads a tracker or links to script if anything renders it."""
    return (
        '<script>window.__xss=1</script> <img src=x onerror="window.__xss=1"> '
        "[click](javascript:window.__xss=1) "
        f"![img](http://127.0.0.1:{tracker_port}/tracker.png) "
        '<a href="javascript:window.__xss=1">link</a> '
        f'<a href="http://127.0.0.1:{tracker_port}/clicked">clickme</a> <b>bold</b><br>'
    )


def hostile_trace(markup: str) -> dict[str, Any]:
    """An OpenAI chat trace with ``markup`` in every field the pages show (its session too).

    The first call fails with a protocol error (error type, summary and suggestion all
    markup), is repeated identically (an ignored suggestion), repeated a third time (a loop at
    k = 3) beside a call whose arguments are not JSON; one result answers no call.
    """
    tool = "lookup" + markup
    arguments = orjson.dumps({"query": markup}).decode()

    def call(n: int, args: str = arguments) -> dict[str, Any]:
        return {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": tool, "arguments": args},
        }

    protocol_error = orjson.dumps({
        "status": "error",
        "error_type": "type" + markup,
        "summary": "summary " + markup,
        "suggestion": "suggestion " + markup,
    }).decode()  # fmt: skip
    traceback = f'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: {markup}'

    def result(call_id: str, content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call_id, "content": content}

    def assistant(content: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": content,
            **({"tool_calls": list(calls)} if calls else {}),
        }

    return {
        "id": "trace" + markup,
        "model": "model" + markup,
        "agent": "agent" + markup,
        "metadata": {"session_id": "session" + markup},
        "messages": [
            {"role": "system", "content": "system " + markup},
            {"role": "user", "content": "user " + markup},
            assistant("assistant " + markup, call(1)),
            result("call_1", protocol_error),
            assistant(None, call(2)),
            result("call_2", f"Error: {markup} Retry after 6s."),
            assistant(None, call(3), call(4, "{" + markup)),
            result("call_3", traceback),
            result("call_4", "Error: " + markup),
            result("orphan" + markup, "orphan " + markup),
            assistant("Done: " + markup),
        ],
    }


@dataclass
class HostileStore:
    """The served store of one hostile trace, and the tracker its markup points at."""

    server: Server
    tracker: RequestRecorder
    markup: str
    trace_id: str
    db_url: str
    #: Fingerprint of the protocol error (the Errors page's drill-down key).
    fingerprint: str


@pytest.fixture(scope="module")
def hostile_store(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, module_db_url: str
) -> Iterator[HostileStore]:
    """:func:`hostile_trace` imported from a file named with the markup, served from each
    database."""
    folder = tmp_path_factory.mktemp("hostile")
    with recording_http_server() as tracker:
        markup = hostile_markup(tracker.port)
        trace = hostile_trace(markup)
        source = folder / "hostile.jsonl"
        source.write_bytes(orjson.dumps(trace) + b"\n")
        url = module_db_url
        engine = make_engine(url)
        summary = import_paths(
            engine, [source], display_names=[f"file{markup}.jsonl"], origin="upload"
        )
        assert (summary.traces, summary.rejected) == (1, 0)
        with engine.connect() as conn:
            fingerprint = conn.execute(
                sa.text("SELECT fingerprint FROM tool_results WHERE message_seq = 3")
            ).scalar_one()
        engine.dispose()
        with serve_dashboard(url, folder / "server.log") as server:
            yield HostileStore(server, tracker, markup, trace["id"], url, fingerprint)


def test_markup_in_every_trace_field_is_shown_as_text_and_never_runs_or_loads(
    browser: Any, hostile_store: HostileStore
) -> None:
    store = hostile_store
    fields = {"tool": "lookup" + store.markup, "model": "model" + store.markup,
              "agent": "agent" + store.markup}  # fmt: skip
    filtered = urllib.parse.urlencode(fields)
    visits = [
        (p.path, p.title, p.key) for p in pages.PAGES if p not in (pages.COMPARE, pages.SEARCH)
    ]
    # Every other section of the pages that have them (only the open one is drawn).
    sections = [
        (section_url("", p, label), p.title, f"{p.key}:{label}")
        for p in pages.PAGES
        for label in p.sections[1:]
    ]
    # Search shows trace content once it finds some: the hostile trace's words.
    visits.append((f"{pages.SEARCH.path}?q=xss", pages.SEARCH.title, "search"))
    # Compare shows trace content only once both sets are named: the store against the
    # traces of its hostile tool.
    sets = {"baseline": "import=1", "candidate": urllib.parse.urlencode({"tool": fields["tool"]})}
    visits += [
        (f"{pages.COMPARE.path}?{urllib.parse.urlencode(sets)}", pages.COMPARE.title, "compare"),
        (f"{pages.OVERVIEW.path}?{filtered}", pages.OVERVIEW.title, "overview-filtered"),
        (f"{pages.ERRORS.path}?{filtered}&"
         + urllib.parse.urlencode({"fingerprint": store.fingerprint}),
         pages.ERRORS.title, "errors-fingerprint"),
        (f"{pages.TRACE.path}?"
         + urllib.parse.urlencode({"trace": store.trace_id, "pair": "2:0"}),
         pages.TRACE.title, "trace-selected"),
        (f"{pages.TRACE.path}?"
         + urllib.parse.urlencode({"trace": store.trace_id, "pair": "r9"}),
         pages.TRACE.title, "trace-orphan"),
        # A search hit's landing: the match marked spans the markup itself.
        (f"{pages.TRACE.path}?"
         + urllib.parse.urlencode({"trace": store.trace_id, "msg": "1",
                                   "hl": "window.__xss=1</script> <img src=x"}),
         pages.TRACE.title, "trace-search-hit"),
        (f"{pages.SESSIONS.path}?" + urllib.parse.urlencode({"session": "session" + store.markup}),
         pages.SESSIONS.title, "sessions-selected"),
    ]  # fmt: skip
    visits += sections
    context = new_context(browser)
    hosts = record_hosts(context)
    page = context.new_page()
    shown_as_text: list[str] = []
    charts_with_markup_as_text: list[str] = []
    tracker_links = f'a[href*="127.0.0.1:{store.tracker.port}"]'
    for path, title, name in visits:
        open_page(page, store.server.url + path, text=title)
        save_screenshot(page, SCREENSHOTS / f"hostile-{name.replace(':', '-')}.png")
        _assert_page_healthy(page, title)
        assert page.evaluate(DOM_ATTACKS) == NO_ATTACK, name
        # No live link, in text or in a chart (Plotly renders <a href> in its labels).
        assert page.locator(tracker_links).count() == 0, name
        assert page.evaluate(CHART_MARKUP) == NO_CHART_MARKUP, name
        main_text = page.locator('[data-testid="stMain"]').text_content() or ""
        if "<script>window.__xss=1</script>" in main_text:
            shown_as_text.append(name)
        if any(MARKUP_TAIL in t for t in page.locator(CHARTS).all_text_contents()):
            charts_with_markup_as_text.append(name)
    context.close()
    assert store.tracker.paths == []
    assert hosts == {"127.0.0.1"}
    # The markup did reach every page, as text (message content, labels, chart axes), in one
    # of its sections at least; the sections left out have no row of the hostile trace to show or
    # show counts and histograms (the Overview's small charts cut labels to 17 characters).
    assert shown_as_text == [
        "overview", "calls", "trace", "sessions", "errors", "tokens", "loops", "findings",
        "imports", "review", "search", "compare", "overview-filtered", "errors-fingerprint",
        "trace-selected", "trace-orphan", "trace-search-hit", "sessions-selected",
        "overview:Scorecard",
        "errors:By tool", "errors:Over time", "tokens:Biggest", "tokens:What it costs",
        "loops:Per tool", "loops:Error streaks", "suggestions:Follow rate",
    ]  # fmt: skip
    assert {name.split(":")[0].split("-")[0] for name in shown_as_text} >= {
        p.key for p in pages.PAGES
    }
    # …and every chart that names a tool or an error type in full shows it as text.
    assert charts_with_markup_as_text == [
        "tokens", "errors:By tool", "loops:Per tool", "suggestions:Follow rate",
    ]  # fmt: skip
    assert "Traceback" not in store.server.log()


def test_a_chart_hover_shows_trace_markup_as_text(
    browser: Any, hostile_store: HostileStore
) -> None:
    context = new_context(browser)
    page = context.new_page()
    url = section_url(hostile_store.server.url, pages.ERRORS, "By tool")
    open_page(page, url, text=pages.ERRORS.title)
    chart = page.locator(CHARTS).first
    chart.locator(".point path").first.hover(force=True)
    hover = chart.locator(".hoverlayer")
    hover.locator("text").first.wait_for()
    text = hover.text_content() or ""
    assert MARKUP_TAIL in text
    assert hover.locator("a").count() == 0
    assert page.evaluate(CHART_MARKUP) == NO_CHART_MARKUP
    context.close()


def test_the_exported_html_report_of_a_hostile_trace_runs_nothing_and_loads_nothing(
    browser: Any, hostile_store: HostileStore, tmp_path: Path
) -> None:
    from dashboard.files_ui import report_bytes

    engine = make_engine(hostile_store.db_url)
    report = tmp_path / "report.html"
    report.write_bytes(report_bytes(engine, 1, "html"))
    engine.dispose()
    context = new_context(browser)
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    page = context.new_page()
    page.goto(report.as_uri(), wait_until="load")
    assert page.evaluate(DOM_ATTACKS) == NO_ATTACK
    assert page.locator("a[href]").count() == 0
    assert page.locator("img, iframe, object, embed, form").count() == 0
    # The report sets its own labels bold; the trace's "<b>bold</b>" stays text.
    bold = "() => [...document.querySelectorAll('b')].filter(b => b.textContent === 'bold').length"
    assert page.evaluate(bold) == 0
    assert MARKUP_TAIL in (page.locator("body").text_content() or "")
    context.close()
    assert requested == [report.as_uri()]
    assert hostile_store.tracker.paths == []


def test_urls_in_trace_content_never_become_links(
    browser: Any, hostile_store: HostileStore
) -> None:
    query = urllib.parse.urlencode({"trace": hostile_store.trace_id, "pair": "2:0"})
    context = new_context(browser)
    page = context.new_page()
    open_page(page, f"{hostile_store.server.url}{pages.TRACE.path}?{query}", text=pages.TRACE.title)
    tracker_links = page.locator(f'a[href*="127.0.0.1:{hostile_store.tracker.port}"]').count()
    context.close()
    assert tracker_links == 0


def test_the_page_of_a_long_trace_goes_into_the_link_and_the_link_opens_it(
    browser: Any, tmp_path: Path
) -> None:
    from test_dashboard_trace_pages import long_trace

    source = tmp_path / "long.jsonl"
    source.write_bytes(orjson.dumps(long_trace("long-a")) + b"\n")
    url = f"sqlite:///{tmp_path / 'long.db'}"
    engine = make_engine(url)
    assert import_paths(engine, [source], origin="cli").traces == 1
    engine.dispose()
    captions = '[data-testid="stCaptionContainer"]'
    with serve_dashboard(url, tmp_path / "server.log") as server:
        context = new_context(browser)
        page = context.new_page()
        open_page(
            page,
            f"{server.url}{pages.TRACE.path}?trace=long-a&pair=60:0",
            selector="h3",
            text="long",
        )
        assert page.locator(captions, has_text="Messages ").all_text_contents() == [
            "Messages 61–80 of 101 · page 4 of 6 (the selected pair's page)"
        ]
        field = page.get_by_label("Messages page")
        field.fill("6")
        field.press("Enter")
        page.wait_for_function("() => location.search.includes('mpage=6')", timeout=30_000)
        open_page(page, page.url, selector="h3", text="long")  # wait for the rerun
        link = page.url
        context.close()

        # The link opens page 6 in a fresh browser, the selected pair still first.
        context = new_context(browser)
        page = context.new_page()
        open_page(page, link, selector="h3", text="long")
        save_screenshot(page, SCREENSHOTS / "trace-page-6.png")
        _assert_page_healthy(page, pages.TRACE.title)
        assert page.locator(captions, has_text="Messages ").all_text_contents() == [
            "Messages 101–101 of 101 · page 6 of 6"
        ]
        assert urllib.parse.parse_qs(urllib.parse.urlsplit(link).query) == {
            "trace": ["long-a"], "pair": ["60:0"], "mpage": ["6"],
        }  # fmt: skip
        close_clean(context, server)


def test_the_compare_page_shows_the_known_differences_and_a_typed_filter_goes_into_the_link(
    browser: Any, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'compare.db'}"
    engine = make_engine(url)
    for population in (BASELINE, CANDIDATE):
        path = generate_population(tmp_path / population.name, population, seed=1, traces=300)
        import_paths(engine, [path], workers=0)
    engine.dispose()
    with serve_dashboard(url, tmp_path / "server.log") as server:
        context = new_context(browser)
        page = context.new_page()
        link = f"{server.url}/compare?baseline=import%3D1&candidate=import%3D2"
        open_page(page, link, selector="h3", text="Differences with evidence")
        save_screenshot(page, SCREENSHOTS / "compare.png")
        _assert_page_healthy(page, "Compare")
        metrics = page.locator('[data-testid="stMetricValue"]').all_text_contents()
        # Shorter runs re-read every tool's Tool Messages less often: the re-read tokens and the
        # cost per trace are better for every tool (tests/test_compare.py), get_weather included.
        assert metrics == ["6", "13", "2", "1", "0"]
        main = page.locator('[data-testid="stMain"]')
        assert main.get_by_text("Unchanged tools (no metric differs): none").count() == 1
        assert main.get_by_text("Tools only in the candidate: none").count() == 1

        # Comparing the baseline with itself: the typed filter goes into the link, and
        # nothing differs.
        field = page.get_by_role("textbox", name="Candidate")
        field.fill("import=1")
        field.press("Enter")
        page.wait_for_url("**candidate=import%3D1**")
        page.get_by_text("No metric differs with evidence between the two sets.").wait_for()
        _assert_page_healthy(page, "Compare")
        assert page.locator('[data-testid="stMetricValue"]').all_text_contents() == [
            "0", "0", "0", "0", "3",
        ]  # fmt: skip
        context.close()


def test_a_long_trace_steps_to_the_next_problem_highlighted_and_back_returns(
    browser: Any, tmp_path: Path
) -> None:
    from test_dashboard_trace_outline import problem_trace

    # 1,000 messages; besides the early problems, the calls at seq 615 and 815 fail.
    source = tmp_path / "long.jsonl"
    source.write_bytes(orjson.dumps(problem_trace("long-1", 492, frozenset({300, 400}))) + b"\n")
    url = f"sqlite:///{tmp_path / 'long.db'}"
    engine = make_engine(url)
    assert import_paths(engine, [source], origin="cli").messages == 1000
    engine.dispose()
    captions = '[data-testid="stCaptionContainer"]'

    def shown_page() -> list[str]:
        texts: list[str] = page.locator(captions, has_text="Messages ").all_text_contents()
        return texts

    with serve_dashboard(url, tmp_path / "server.log") as server:
        context = new_context(browser)
        page = context.new_page()
        # The documented path of the default page opens it (no "Page not found").
        open_page(page, f"{server.url}/{pages.OVERVIEW.url_path}", text=pages.OVERVIEW.title)
        _assert_page_healthy(page, pages.OVERVIEW.title)
        assert page.get_by_text("Page not found").count() == 0

        open_page(page, f"{server.url}{pages.TRACE.path}?trace=long-1&pair=13:0", text="Trace")
        assert shown_page() == ["Messages 1–20 of 1,000 · page 1 of 50 (the selected pair's page)"]
        page.get_by_role("button", name="Next problem").click()
        page.wait_for_url("**pair=615%3A0**", timeout=30_000)
        open_page(page, page.url, selector="h3", text="long-1")
        save_screenshot(page, SCREENSHOTS / "trace-next-problem.png")
        _assert_page_healthy(page, pages.TRACE.title)
        assert shown_page() == [
            "Messages 601–620 of 1,000 · page 31 of 50 (the selected pair's page)"
        ]
        # Highlighted where it stands among the messages.
        here = page.locator(".st-key-here_615_0")
        assert here.count() == 1
        assert here.get_by_text("call 615:0").count() == 1

        # Back returns to the pair (and page) before: the address as it was opened (one
        # history entry per action, so no re-encoded copy of it).
        page.go_back()
        page.wait_for_function(
            "() => new URLSearchParams(location.search).get('pair') === '13:0'", timeout=30_000
        )
        page.locator(captions, has_text="Messages 1–20 of 1,000 · page 1 of 50").wait_for(
            timeout=30_000
        )
        assert shown_page() == ["Messages 1–20 of 1,000 · page 1 of 50 (the selected pair's page)"]
        assert page.locator(".st-key-here_13_0").count() == 1

        # A page switch is a history entry too.
        page.get_by_role("link", name="Errors").click()
        page.wait_for_url("**/errors**", timeout=30_000)
        page.go_back()
        page.wait_for_url("**/trace?**", timeout=30_000)
        page.locator(captions, has_text="Messages 1–20 of 1,000 · page 1 of 50").wait_for(
            timeout=30_000
        )

        # The reviewer's name goes into the address, so a reload keeps it.
        name = page.get_by_role("textbox", name="Your name")
        name.fill("ana")
        name.press("Enter")
        page.wait_for_url("**reviewer=ana**", timeout=30_000)
        page.reload()
        page.get_by_role("textbox", name="Your name").wait_for(timeout=30_000)
        assert page.get_by_role("textbox", name="Your name").input_value() == "ana"
        close_clean(context, server)
