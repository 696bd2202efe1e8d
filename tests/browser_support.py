"""Real-browser support: start a Streamlit server on a free port, drive headless Chromium, and
know when a page has finished rendering.

Used by ``tests/test_browser.py`` and ``benchmarks/ui_bench.py``. Chromium is the Debian package
at ``/usr/bin/chromium`` (``playwright install`` cannot download browsers on these machines).

A page counts as *ready* when Streamlit says the script is not running, no element is stale or
still a loading skeleton, the expected text is in the main area, every Plotly chart and dataframe
on screen has drawn its SVG or canvas — and all of that has held for :data:`SETTLE_MS`, since a
bound widget can trigger a second run right after the first. An init script checks this on
every animation frame and records when the condition last became true, so the time a page took
is measured in the browser from navigation start, not by the polling loop.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashboard import pages

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
)  # fmt: skip
VIEWPORT = {"width": 1400, "height": 900}
#: What Streamlit draws for an exception or an error message.
ERROR_BOXES = '[data-testid="stException"], [data-testid="stAlertContentError"]'
#: How long the ready condition must hold before a page counts as rendered.
SETTLE_MS = 600
SERVER_START_TIMEOUT_S = 60.0
PAGE_TIMEOUT_MS = 60_000
#: Environment for every server: no file watcher (nothing edits the app while it is measured),
#: no usage statistics (no outside requests).
SERVER_ENV = {
    "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none",
    "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
}

READY_SCRIPT = """
(() => {
  // [selector, text]: set by the test once the document exists (kept if it came first).
  window.__readyWant = window.__readyWant || null;
  window.__readySince = null;  // performance.now() when the page last became ready
  // Charts and tables draw lazily, and tables only once scrolled into view: wait for the
  // ones on screen (content of a closed expander keeps its box but is not visible).
  const onScreen = e => {
    const r = e.getBoundingClientRect();
    return e.checkVisibility() && r.bottom > 0 && r.top < window.innerHeight;
  };
  // Why the page is not ready yet, or null when it is.
  window.__notReady = () => {
    const want = window.__readyWant;
    if (!want) return 'nothing to wait for yet';
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    if (state !== 'notRunning') return `script state ${state}`;
    const busy = document.querySelector('[data-stale="true"], [data-testid="stSkeleton"], '
      + '[data-testid="stSkeletonElement"], [data-testid="stAppSkeleton"]');
    if (busy) return `still loading: ${busy.getAttribute('data-testid') || 'stale element'}`;
    const main = document.querySelector('[data-testid="stMain"]');
    if (!main) return 'no main area';
    if (![...main.querySelectorAll(want[0])].some(e => e.textContent.includes(want[1])))
      return `no ${want[0]} containing ${JSON.stringify(want[1])}`;
    for (const c of main.querySelectorAll('[data-testid="stPlotlyChart"]'))
      if (onScreen(c) && !c.querySelector('.main-svg')) return 'a chart is not drawn';
    for (const d of main.querySelectorAll('[data-testid="stDataFrame"]'))
      if (onScreen(d) && !d.querySelector('canvas')) return 'a table is not drawn';
    return null;
  };
  const tick = () => {
    if (window.__notReady() !== null) window.__readySince = null;
    else if (window.__readySince === null) window.__readySince = performance.now();
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();
"""


def browser_unavailable() -> str | None:
    """Why a real-browser run is impossible here (``None`` when Chromium and playwright exist)."""
    if not CHROMIUM.is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    return None


def scenario_store(folder: Path, url: str) -> tuple[Any, int]:
    """The demo scenarios (``ingest.scenarios``, seed 7) generated in ``folder/traces`` and
    imported into ``url``: the engine and the number of traces imported."""
    from db.engine import make_engine
    from ingest.importing.pipeline import import_paths
    from ingest.scenarios import generate

    generate(folder / "traces", seed=7)
    files = sorted(p for p in (folder / "traces").iterdir() if p.name != "ground_truth.json")
    engine = make_engine(url)
    return engine, import_paths(engine, files, origin="demo").traces


def sqlite_scenarios(folder: Path) -> tuple[str, Any, int]:
    """:func:`scenario_store` into a SQLite file in ``folder``: its URL, the engine and the
    number of traces imported."""
    url = f"sqlite:///{folder / 'demo.db'}"
    engine, traces = scenario_store(folder, url)
    return url, engine, traces


def first_error_pair(engine: Any, *, with_verdict: bool = False) -> tuple[str, str]:
    """The first error of the store (by trace display id, then message) that answers a call:
    its trace's display id and its pair (``seq:index``); ``with_verdict``: the first whose
    advice the model then acted on (or not)."""
    import sqlalchemy as sa

    verdict = "AND r.verdict IS NOT NULL " if with_verdict else ""
    with engine.connect() as conn:
        display_id, call_seq, call_index = conn.execute(
            sa.text(
                "SELECT t.display_id, r.call_seq, r.call_index FROM tool_results r "
                f"JOIN traces t ON t.id = r.trace_id WHERE r.status = 'error' {verdict}"
                "AND r.call_seq IS NOT NULL ORDER BY t.display_id, r.message_seq LIMIT 1"
            )
        ).one()
    return str(display_id), f"{call_seq}:{call_index}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A running Streamlit server: its base URL and the log it wrote so far."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        """What the server printed (for failure messages)."""
        return self.log_path.read_text(errors="replace")


def _wait_healthy(server: Server, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited with {server.process.returncode}:\n{server.log()}")
        try:
            with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server not healthy after {timeout:.0f} s:\n{server.log()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    # ``toollens serve`` runs Streamlit as its child: the whole session (started below as its
    # own process group) must go, or the child outlives the test and keeps the port.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextlib.contextmanager
def run_server(command: Sequence[str], port: int, log_path: Path) -> Iterator[Server]:
    """Run ``command`` (a server listening on ``port``) until the block ends; waits for
    ``/_stcore/health`` first."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            list(command),
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **SERVER_ENV},
            start_new_session=True,
        )
    server = Server(f"http://127.0.0.1:{port}", process, log_path)
    try:
        _wait_healthy(server, SERVER_START_TIMEOUT_S)
        yield server
    finally:
        _stop(process)


def serve_dashboard(db_url: str, log_path: Path) -> contextlib.AbstractContextManager[Server]:
    """``toollens serve --db db_url`` on a free port (see :func:`run_server`)."""
    port = free_port()
    command = [sys.executable, "-m", "ingest.cli", "serve", "--db", db_url, "--port", str(port)]
    return run_server(command, port, log_path)


def serve_script(script: Path, log_path: Path) -> contextlib.AbstractContextManager[Server]:
    """``streamlit run script`` with the options ``toollens serve`` uses, on a free port."""
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(script), "--server.address", "127.0.0.1",
        "--server.port", str(port), "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    return run_server(command, port, log_path)


def launch(playwright: Any) -> Any:
    """Headless Chromium from the Debian package."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))


def new_context(browser: Any) -> Any:
    """A fresh browser context (no cookies, no storage) that tracks page readiness."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(READY_SCRIPT)
    return context


def close_clean(context: Any, server: Server, *, page: Any = None) -> None:
    """Close the browser context after checking that ``page`` (if given) shows no error box,
    then check that the server logged no Python traceback."""
    if page is not None:
        assert page.locator(ERROR_BOXES).count() == 0
    context.close()
    assert "Traceback" not in server.log()


def open_page(
    page: Any, url: str, *, selector: str = "h1", text: str = "", settle_ms: int = SETTLE_MS
) -> float:
    """Navigate to ``url`` and wait until it is ready (see the module docstring) with ``text``
    inside an element matching ``selector`` in the main area, for ``settle_ms``.

    Returns the milliseconds from navigation start until the page was ready; raises
    ``TimeoutError`` saying what it still waited for after :data:`PAGE_TIMEOUT_MS`.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(url, wait_until="commit")
    page.evaluate("([s, t]) => { window.__readyWant = [s, t]; }", [selector, text])
    try:
        page.wait_for_function(
            "() => window.__readySince !== null"
            f" && performance.now() - window.__readySince >= {settle_ms}",
            timeout=PAGE_TIMEOUT_MS,
            polling=50,
        )
    except PlaywrightTimeout:
        reason = page.evaluate("() => window.__notReady()")
        raise TimeoutError(f"{url} not ready after {PAGE_TIMEOUT_MS} ms: {reason}") from None
    ready_ms: float = page.evaluate("() => window.__readySince")
    return ready_ms


def section_url(base: str, page: pages.Page, label: str) -> str:
    """The address of ``page`` with its section ``label`` open (as a copied link has it)."""
    return f"{base}{page.path}?{urllib.parse.urlencode({page.section_param: label})}"


def click_section(page: Any, shown: pages.Page, label: str) -> None:
    """Click the tab of ``shown``'s section ``label``, as a person does, and wait until the URL
    names it (the first section: names none) and the page is ready. A fast run can start and end
    between two checks of readiness, so "ready" may still be the old section's: a caller waits
    for what the new section draws (its chart, its table) before reading it."""
    page.get_by_role("tab", name=label, exact=True).click()
    want = [shown.section_param, None if label == shown.sections[0] else label]
    page.wait_for_function(
        "([k, v]) => new URLSearchParams(location.search).get(k) === v",
        arg=want,
        timeout=PAGE_TIMEOUT_MS,
    )
    page.wait_for_function(
        "() => window.__readySince !== null"
        f" && performance.now() - window.__readySince >= {SETTLE_MS}",
        timeout=PAGE_TIMEOUT_MS,
        polling=50,
    )


def click_table_row(page: Any, table: Any, row: int) -> None:
    """Select ``row`` of a selectable table (a ``stDataFrame`` locator) as a person does: a
    click on its row marker, the checkbox column at the left of the canvas."""
    from dashboard.widgets import HEADER_PX, ROW_PX  # imports Streamlit: only when used

    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + HEADER_PX + ROW_PX * row + ROW_PX / 2)


@dataclass
class RequestRecorder:
    """A tiny HTTP server that answers 404 to everything and remembers each request path."""

    port: int = 0
    paths: list[str] = field(default_factory=list)


@contextlib.contextmanager
def recording_http_server() -> Iterator[RequestRecorder]:
    """Run a :class:`RequestRecorder` on a free port until the block ends."""
    recorder = RequestRecorder()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            recorder.paths.append(self.path)
            self.send_error(404)

        do_POST = do_HEAD = do_GET

        def log_message(self, format: str, *args: Any) -> None:
            return  # the recorder is the log

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recorder.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        httpd.shutdown()
        httpd.server_close()


def save_screenshot(page: Any, path: Path, *, full_page: bool = False) -> None:
    """Write a PNG of ``page`` to ``path`` (folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=full_page)


def chromium_version() -> str:
    """``Chromium 1xx…`` as the installed binary reports it (for report headers)."""
    if not CHROMIUM.is_file():
        return "absent"
    done = subprocess.run([str(CHROMIUM), "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


#: The documentation screenshots: (file name, URL path and query, viewport height). 1,440 px
#: wide; each height ends where the page's first story does. ``compare`` wants a store whose
#: imports 1 and 2 are the baseline and candidate populations of
#: ``ingest.scenarios.populations`` (the demo store has one import).
DOCS_SHOTS: tuple[tuple[str, str, int], ...] = (
    (pages.OVERVIEW.key, pages.OVERVIEW.path, 1160),
    (pages.TRACE.key, f"{pages.TRACE.path}?trace=demo-050-protocol_ignored&pair=2:0", 1180),
    # Arrived at an error group (as from the Overview): highlighted at the top.
    (pages.ERRORS.key, f"{pages.ERRORS.path}?fingerprint=Bash%3A+Error", 1150),
    (pages.LOOPS.key, f"{pages.LOOPS.path}?k=3", 1100),
    (pages.TOKENS.key, pages.TOKENS.path, 1000),
    (pages.FINDINGS.key, f"{pages.FINDINGS.path}?kind=error_without_suggestion", 1000),
    (pages.SUGGESTIONS.key, pages.SUGGESTIONS.path, 1000),
    (pages.CALLS.key, pages.CALLS.path, 900),
    (pages.SEARCH.key, f"{pages.SEARCH.path}?q=gift+card+balance", 900),
    (pages.IMPORTS.key, pages.IMPORTS.path, 900),
    (pages.REVIEW.key, pages.REVIEW.path, 900),
    (pages.COMPARE.key, f"{pages.COMPARE.path}?baseline=import%3D1&candidate=import%3D2", 1180),
)
DOCS_WIDTH = 1440


def docs_screenshots(server: Server, folder: Path, names: Sequence[str] = ()) -> list[Path]:
    """Save :data:`DOCS_SHOTS` (or only ``names``) of the dashboard at ``server`` as PNGs."""
    from playwright.sync_api import sync_playwright

    saved = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for name, path, height in DOCS_SHOTS:
                if names and name not in names:
                    continue
                context = browser.new_context(viewport={"width": DOCS_WIDTH, "height": height})
                context.add_init_script(READY_SCRIPT)
                page = context.new_page()
                open_page(page, f"{server.url}{path}")
                saved.append(folder / f"{name}.png")
                save_screenshot(page, saved[-1])
                context.close()
        finally:
            browser.close()
    return saved


def main(argv: Sequence[str] | None = None) -> None:
    """``python tests/browser_support.py --db URL [--out docs/screenshots] [NAME …]``: serve the
    store and save the documentation screenshots (the demo store of ``make demo``)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--db", required=True, help="database URL or SQLite file")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("names", nargs="*", help="only these screenshots")
    args = parser.parse_args(argv)
    log = REPO / "test-artifacts" / "docs-screenshots-server.log"
    with serve_dashboard(args.db, log) as server:
        for path in docs_screenshots(server, args.out, args.names):
            print(path)


if __name__ == "__main__":
    main()
