"""The view is the URL: seeded random walks through the dashboard in headless Chromium.

Each step is something a person does — a filter chosen in the sidebar's popover, a filter's
chip removed, another page opened from the menu, a sort, the order, a page number, a status,
a search, a row opened on the Trace page, Back, Forward — and after each one the address in the
bar is opened in a new tab of a context of its own (a copied link: a new Streamlit session,
nothing in common with the walk's tab but the browser's cache) and must show the same view:
the same heading, the same filters in use, the same row count and page, the same rows, the
same trace and pair. After Back (and Forward) the address must be one the walk has shown
before, and the page must show what it showed then (no history entry the user never saw).

The walks are seeded (:data:`WALKS`): a failure names the seed and the steps so far, and
``WALK_SEED=n`` replays one walk.
"""

from __future__ import annotations

import contextlib
import os
import random
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from browser_support import (
    PAGE_TIMEOUT_MS,
    Server,
    click_table_row,
    new_context,
    open_page,
    scenario_store,
    serve_dashboard,
)
from playwright.sync_api import Error as PlaywrightError

from dashboard import pages
from db.queries.traces import filter_choices

pytestmark = pytest.mark.browser

#: (seed, steps) of the walks run on each database; ``WALK_SEED`` runs that seed alone.
WALKS = {"sqlite": ((11, 20),), "postgresql": ((29, 20),)}
TIMEOUT_MS = 30_000
#: How long a page must hold still to count as done. Shorter than ``SETTLE_MS``: the walk
#: knows when its action's run started (:data:`RUNS_SCRIPT`) and waits for that run's end.
WALK_SETTLE_MS = 300
MAIN = '[data-testid="stMain"]'
#: The chips of the filters in use, above the page (a rerun can leave a hidden copy).
CHIPS = '[class*="st-key-chip_"] button'
#: Pages the menu step opens.
MENU_PAGES = (pages.OVERVIEW, pages.CALLS, pages.SEARCH, pages.ERRORS)
SEARCH_LABEL = "Search messages, tool results and call arguments"
SEARCH_WORDS = ("not found", "weather", "error", "flight")

#: Counts the script runs the browser has seen start (the app's ``data-test-script-state``).
RUNS_SCRIPT = """
(() => {
  window.__runs = 0;
  const watch = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) { requestAnimationFrame(watch); return; }
    new MutationObserver(() => {
      if (app.getAttribute('data-test-script-state') === 'running') window.__runs += 1;
    }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  };
  watch();
})();
"""


@dataclass
class Walker:
    """The served store, the choices its filters offer, and the browser to walk it in."""

    server: Server
    browser: Any
    models: list[str]
    tools: list[str]


@pytest.fixture(scope="module")
def walker(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, module_db_url: str
) -> Iterator[Walker]:
    """The demo scenarios served by ``toollens serve``, on each database."""
    folder = tmp_path_factory.mktemp("walk")
    engine, traces = scenario_store(folder, module_db_url)
    assert traces == 60
    choices = filter_choices(engine)
    engine.dispose()
    with serve_dashboard(module_db_url, folder / "server.log") as server:
        yield Walker(server, browser, list(choices["model"]), list(choices["tool"]))
        assert "Traceback" not in server.log()


def settle(page: Any, runs_before: int) -> None:
    """Wait until the run the last action started (if it started one within a second) is
    done and the page has held still for :data:`WALK_SETTLE_MS`."""
    # No run starts when the action changed nothing (a value the widget already had).
    with contextlib.suppress(PlaywrightError):
        page.wait_for_function(
            "([n]) => window.__runs > n", arg=[runs_before], timeout=1_000, polling=20
        )
    page.wait_for_function(
        "() => window.__readySince !== null"
        f" && performance.now() - window.__readySince >= {WALK_SETTLE_MS}",
        timeout=PAGE_TIMEOUT_MS,
        polling=50,
    )


def view(page: Any) -> dict[str, Any]:
    """What the page shows that the URL must decide: heading, filters in use and their
    chips, the Tool calls and Search counts and page, the rows of the first table on screen,
    the trace, the selected pair and the open messages page."""
    main = page.locator(MAIN)
    path = urllib.parse.urlsplit(page.url).path
    shown: dict[str, Any] = {
        "path": path,
        "heading": main.locator("h1").all_text_contents(),
        "in use": page.locator('[data-testid="stSidebar"]')
        .get_by_text("in use", exact=False)
        .all_text_contents(),
        "chips": sorted(main.locator(CHIPS).filter(visible=True).all_text_contents()),
        "counts": [
            text
            for text in main.locator('[data-testid="stCaptionContainer"]').all_text_contents()
            if " · page " in text
        ],
    }
    if path == pages.CALLS.path:
        table = main.locator('[data-testid="stDataFrame"]').first
        if table.count():
            # The table's accessible rows are written a moment after its canvas is drawn.
            table.locator("tbody tr").first.wait_for(state="attached", timeout=TIMEOUT_MS)
        rows = table.locator("tbody tr") if table.count() else None
        shown["rows"] = (
            [(r.locator("td").nth(0).text_content(), r.locator("td").nth(2).text_content())
             for r in rows.all()]
            if rows is not None
            else []
        )  # fmt: skip
    if path == pages.TRACE.path:
        shown["trace"] = main.locator("h3").first.text_content()
        here = main.locator('[class*="st-key-here_"]')
        shown["here"] = sorted(
            c for e in here.all() for c in (e.get_attribute("class") or "").split()
            if c.startswith("st-key-here_")
        )  # fmt: skip
        pager = main.get_by_label("Messages page")
        shown["messages page"] = pager.input_value() if pager.count() else None
    return shown


@dataclass
class Walk:
    """One seeded walk: the page it drives, its random choices and what it has seen."""

    walker: Walker
    seed: int
    page: Any
    #: A context of its own, whose new tabs open the walk's addresses as copied links.
    checker: Any
    rng: random.Random
    steps: list[str] = field(default_factory=list)
    #: Every address the walk has shown, and the view it showed there.
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: History entries behind the current one that the walk made (page changes less the
    #: Backs that changed the page): Back never leaves the walk's first page.
    depth: int = 0
    #: Entries ahead of the current one (Backs not yet undone by Forward; another step
    #: drops them).
    ahead: int = 0

    def where(self) -> str:
        return urllib.parse.urlsplit(self.page.url).path

    def fail(self, why: str) -> None:
        steps = "\n".join(f"  {n}. {s}" for n, s in enumerate(self.steps, 1))
        pytest.fail(f"walk seed {self.seed} (WALK_SEED={self.seed} replays it): {why}\n{steps}")

    # The steps. Each returns what it did, or None when it does not apply where the walk is.

    def sidebar_filter(self) -> str | None:
        name = self.rng.choice(("Model", "Tool"))
        options = self.walker.models if name == "Model" else self.walker.tools
        choice = self.rng.choice(options)
        self.page.locator('[data-testid="stSidebar"]').get_by_role(
            "button", name="Choose filters"
        ).click()
        box = self.page.get_by_role("combobox", name=name)
        box.click()
        self.page.get_by_role("option", name=choice, exact=True).click()
        self.page.keyboard.press("Escape")
        return f"sidebar popover: {name} = {choice}"

    def remove_chip(self) -> str | None:
        chips = self.page.locator(MAIN).locator(CHIPS).filter(visible=True)
        if chips.count() == 0:
            return None
        chip = chips.nth(self.rng.randrange(chips.count()))
        text = chip.text_content()
        chip.click()
        return f"remove the chip {text}"

    def menu(self) -> str | None:
        target = self.rng.choice([p for p in MENU_PAGES if p.path != self.where()])
        self.page.get_by_role("link", name=target.title, exact=True).click()
        return f"menu: {target.title}"

    def _choose(self, label: str) -> str:
        """Open the selectbox ``label`` of the page and pick one of the options it lists."""
        self.page.locator(MAIN).get_by_role("combobox", name=label).click()
        options = self.page.get_by_role("option")
        options.first.wait_for(timeout=TIMEOUT_MS)
        option = self.rng.choice(options.all_text_contents())
        self.page.get_by_role("option", name=option, exact=True).click()
        return option

    def sort(self) -> str | None:
        if self.where() != pages.CALLS.path:
            return None
        return f"sort by {self._choose('Sort by')}"

    def descending(self) -> str | None:
        if self.where() != pages.CALLS.path:
            return None
        self.page.locator(MAIN).get_by_text("Descending", exact=True).click()
        return "toggle Descending"

    def status(self) -> str | None:
        if self.where() != pages.CALLS.path:
            return None
        return f"status {self._choose('Status')}"

    def page_number(self) -> str | None:
        label = {pages.CALLS.path: "Page", pages.SEARCH.path: "Page"}.get(self.where())
        field = self.page.locator(MAIN).get_by_label(label) if label else None
        if field is None or field.count() == 0:
            return None
        number = str(self.rng.choice((1, 2)))
        field.fill(number)
        field.press("Enter")
        return f"page {number}"

    def search(self) -> str | None:
        if self.where() != pages.SEARCH.path:
            return None
        words = self.rng.choice(SEARCH_WORDS)
        box = self.page.get_by_role("textbox", name=SEARCH_LABEL)
        box.fill(words)
        box.press("Enter")
        return f"search {words!r}"

    def open_trace(self) -> str | None:
        table = self.page.locator(MAIN).locator('[data-testid="stDataFrame"]').first
        if self.where() != pages.CALLS.path or table.count() == 0:
            return None
        rows = table.locator("tbody tr").count()
        if rows == 0:
            return None
        row = self.rng.randrange(min(rows, 8))
        click_table_row(self.page, table, row)
        self.page.wait_for_url("**/trace?**", timeout=TIMEOUT_MS)
        return f"open row {row + 1} on the Trace page"

    def back(self) -> str | None:
        if self.depth == 0:
            return None
        self.page.go_back()
        self.ahead += 1
        return "Back"

    def forward(self) -> str | None:
        if self.ahead == 0:
            return None
        self.page.go_forward()
        self.ahead -= 1
        return "Forward"


HISTORY_STEPS = ("Back", "Forward")
#: Steps and their weights (the walk picks one that applies where it is).
STEPS: tuple[tuple[Callable[[Walk], str | None], int], ...] = (
    (Walk.sidebar_filter, 3),
    (Walk.remove_chip, 2),
    (Walk.menu, 3),
    (Walk.sort, 2),
    (Walk.descending, 1),
    (Walk.status, 2),
    (Walk.page_number, 2),
    (Walk.search, 2),
    (Walk.open_trace, 2),
    (Walk.back, 2),
    (Walk.forward, 1),
)


def run_walk(walker: Walker, seed: int, length: int) -> None:
    """Walk ``length`` steps from the Tool calls page with the choices of ``seed``."""
    context = new_context(walker.browser)
    context.add_init_script(RUNS_SCRIPT)
    page = context.new_page()
    checker = new_context(walker.browser)
    walk = Walk(walker, seed, page, checker, random.Random(seed))
    open_page(page, f"{walker.server.url}{pages.CALLS.path}", text=pages.CALLS.title)
    # From here on any page counts as ready once it has its heading.
    page.evaluate("() => { window.__readyWant = ['h1', '']; }")
    walk.seen[page.url] = view(page)
    try:
        while len(walk.steps) < length:
            steps, weights = zip(*STEPS, strict=True)
            step = walk.rng.choices(steps, weights=weights)[0]
            runs = page.evaluate("() => window.__runs")
            before = walk.where()
            try:
                done = step(walk)
                if done is None:
                    continue
                walk.steps.append(f"{done} → {{url}}")
                settle(page, runs)
                walk.steps[-1] = walk.steps[-1].format(url=page.url)
                shown = view(page)
                if done not in HISTORY_STEPS:
                    walk.ahead = 0
                if walk.where() != before:
                    walk.depth += -1 if done == "Back" else 1
            except PlaywrightError as exc:
                walk.fail(f"step {step.__name__}: {exc}")
            if done in HISTORY_STEPS:
                if page.url not in walk.seen:
                    walk.fail(f"{done} went to {page.url}, an address never shown")
                if shown != walk.seen[page.url]:
                    walk.fail(f"{done} shows {shown}\nwhere the walk saw {walk.seen[page.url]}")
            walk.seen[page.url] = shown
            check_in_fresh_context(walk, shown)
    finally:
        context.close()
        checker.close()
    # A walk that never went Back checked no history: pick another seed for it.
    assert any(step.startswith("Back") for step in walk.steps), walk.steps
    print(f"walk seed {seed}:", *walk.steps, sep="\n  ")


def check_in_fresh_context(walk: Walk, shown: dict[str, Any]) -> None:
    """Open the current address in a new tab of the checker's context (a copied link: a new
    Streamlit session, nothing in common with the walk's tab but the browser's cache) and
    compare views."""
    fresh = walk.checker.new_page()
    try:
        heading = shown["heading"][0] if shown["heading"] else ""
        open_page(fresh, walk.page.url, text=heading, settle_ms=WALK_SETTLE_MS)
        copied = view(fresh)
        if fresh.url != walk.page.url:
            walk.fail(f"the link {walk.page.url} became {fresh.url} when opened")
        if copied != shown:
            walk.fail(f"the link {walk.page.url} shows\n{copied}\nwhere the walk shows\n{shown}")
    finally:
        fresh.close()


def walks_for(db: str) -> tuple[tuple[int, int], ...]:
    seed = os.environ.get("WALK_SEED")
    return ((int(seed), 20),) if seed else WALKS[db]


def test_every_step_of_a_random_walk_is_in_the_url_and_back_restores_it(
    walker: Walker, module_db_url: str
) -> None:
    db = "postgresql" if module_db_url.startswith("postgresql") else "sqlite"
    for seed, length in walks_for(db):
        run_walk(walker, seed, length)
