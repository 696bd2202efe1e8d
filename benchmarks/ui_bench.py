"""``make bench-ui``: how fast the dashboard's pages are on a 1,000,000-message store.

    python -m benchmarks.ui_bench [--messages 1000000] [--db PATH] [--no-browser]

The store (:mod:`benchmarks.ui_store`) is cached in ``.bench/ui-1m.db`` and reused while its
size, seed and generator version match; ``--db`` names another file, which is measured as it is
when it exists (whatever it holds, a bench store of another size too) and replaced only with
``--rebuild``. Then, per page:

* **server**: the run time of the page script in ``streamlit.testing.v1.AppTest`` on first
  load with cold caches (every ``st.cache_data`` cleared; the engine stays, as in a running
  server), and after a filter change (the sidebar's Model set to the most frequent model).
  Targets: 1 s and 0.5 s. The same runs of a one-line page (``st.write("hi")``) show what
  ``AppTest`` itself costs.
* **browser**: in headless Chromium against ``toollens serve``, the milliseconds from
  navigation start until the page's content is visible (see ``tests/browser_support.py``):
  the first load (this page's queries not yet cached) and the median of warm loads, next to
  the same measurement for the one-line page served the same way in the same run, with the
  ratio (target 1.5x).

Every SQL statement the page scripts run is timed from its execution until its rows are
fetched (SQLite does most of the work while rows are fetched); the slowest are printed with
their SQLite query plans. The tables are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from benchmarks.ui_sql import StatementLog, print_statements
from benchmarks.ui_store import DEFAULT_MESSAGES, DEFAULT_SEED, build_store, marker, store_marker
from dashboard import pages
from db.engine import make_engine

REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO / ".bench"
APP = REPO / "dashboard" / "app.py"
TRIVIAL_PAGE = 'import streamlit as st\n\nst.write("hi")\n'
SERVER_COLD_TARGET_S, SERVER_FILTER_TARGET_S, BROWSER_RATIO_TARGET = 1.0, 0.5, 1.5
WARM_LOADS = 3


@dataclass(frozen=True, slots=True)
class PageCase:
    """One page as a user opens it: its file, URL path, heading and URL parameters."""

    label: str
    file: str
    path: str
    title: str
    params: dict[str, str] = field(default_factory=dict)

    def url_query(self) -> str:
        """``?a=b`` for the browser (empty without parameters)."""
        from urllib.parse import urlencode

        return "?" + urlencode(self.params) if self.params else ""


@dataclass(slots=True)
class PageTiming:
    """What was measured for one page (seconds; ``None`` when not measured)."""

    case: PageCase
    cold_s: float | None = None
    filtered_s: float | None = None
    browser_first_ms: float | None = None
    browser_warm_ms: list[float] = field(default_factory=list)


def default_db(messages: int) -> Path:
    """``.bench/ui-1m.db`` for a million messages, ``ui-50k.db`` for 50,000 …"""
    size = f"{messages // 1_000_000}m" if messages % 1_000_000 == 0 else f"{messages // 1000}k"
    return BENCH_DIR / f"ui-{size}.db"


def ensure_store(path: Path, messages: int, seed: int, rebuild: bool = False) -> str:
    """The SQLite URL of a store at ``path``: reused when it is the requested synthetic store;
    any other existing store is measured as it is (a bench store of another size too: a store
    is only ever replaced when ``rebuild`` says so); a missing one is built."""
    url = f"sqlite:///{path}"
    if path.exists():
        engine = make_engine(url)
        found = store_marker(engine)
        engine.dispose()
        if found == marker(messages, seed):
            print(f"store: reusing {path} ({found})")
            return url
        if found is None:
            print(f"store: {path} is not a ui-bench store; measuring it as it is")
            return url
        if not rebuild:
            print(f"store: {path} holds {found}; measuring it as it is (--rebuild replaces it)")
            return url
        print(f"store: {path} holds {found}; rebuilding (--rebuild)")
        for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
    print(f"store: building {messages:,} messages (seed {seed}) into {path}")
    started = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    build_store(path, messages, seed)
    print(f"store: built in {time.perf_counter() - started:.1f} s")
    return url


def store_facts(url: str) -> tuple[dict[str, int], str, str, str]:
    """Row counts, the most frequent model, and the trace (with a pair) a shared link opens:
    the one with the most problems."""
    engine = make_engine(url)
    with engine.connect() as conn:
        counts = {
            table: int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
            for table in ("traces", "messages", "tool_calls", "tool_results", "findings")
        }
        model = conn.execute(
            text("SELECT model FROM traces WHERE model IS NOT NULL GROUP BY model "
                 "ORDER BY count(*) DESC, model LIMIT 1")
        ).scalar_one()  # fmt: skip
        trace_id, display_id = conn.execute(
            text("SELECT id, display_id FROM traces ORDER BY problem_count DESC, id LIMIT 1")
        ).one()
        pair = conn.execute(
            text("SELECT call_seq || ':' || call_index FROM tool_results WHERE trace_id = :t "
                 "AND status = 'error' AND call_seq IS NOT NULL ORDER BY message_seq LIMIT 1"),
            {"t": trace_id},
        ).scalar()  # fmt: skip
    engine.dispose()
    return counts, str(model), str(display_id), str(pair or "")


def page_cases(display_id: str, pair: str) -> list[PageCase]:
    """Every page, plus the Trace page opened on one trace (a shared link)."""
    cases = [PageCase(p.key, p.script, p.path, p.title) for p in pages.PAGES]
    params = {"trace": display_id, **({"pair": pair} if pair else {})}
    trace = pages.TRACE
    one_trace = PageCase(f"{trace.key} (one trace)", trace.script, trace.path, trace.title, params)
    cases.insert(pages.PAGES.index(trace) + 1, one_trace)
    return cases


def _app_test(url: str, script: Path) -> Any:
    """An ``AppTest`` of ``script`` on ``url``, with the page-manager fix of
    ``tests/dbfixture.py::open_app`` (``AppTest`` forgets that ``st.navigation`` replaced the
    ``pages/`` convention)."""
    import os

    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    class NavigationPagesManager(PagesManager):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    app_test_module.PagesManager = NavigationPagesManager  # type: ignore[misc]
    os.environ["TOOLLENS_DB"] = url
    return AppTest.from_file(str(script), default_timeout=600)


def _timed_run(at: Any) -> float:
    started = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - started
    if at.exception:
        raise RuntimeError(f"the page raised: {at.exception[0].value}")
    return seconds


def server_timings(
    url: str, cases: list[PageCase], model: str, log: StatementLog
) -> tuple[list[PageTiming], tuple[float, float]]:
    """Cold and filtered run times of every page in ``AppTest``, and of the one-line page."""
    import streamlit as st

    at = _app_test(url, APP)
    log.phase = "warm-up"
    _timed_run(at)  # imports, engine and migration check: what a running server has done
    timings = []
    for case in cases:
        st.cache_data.clear()
        at.query_params.clear()
        at.query_params.update(case.params)
        at.switch_page(case.file)
        log.phase = f"{case.label} cold"
        timing = PageTiming(case, cold_s=_timed_run(at))
        at.selectbox(key="model").select(model)
        log.phase = f"{case.label} filtered"
        timing.filtered_s = _timed_run(at)
        log.phase = "reset"
        at.selectbox(key="model").select(None)
        _timed_run(at)
        timings.append(timing)
        print(f"  server {case.label}: cold {timing.cold_s:.2f} s, filtered "
              f"{timing.filtered_s:.2f} s")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "hi.py"
        script.write_text(TRIVIAL_PAGE)
        trivial = _app_test(url, script)
        log.phase = "trivial"
        _timed_run(trivial)
        baseline = (_timed_run(trivial), _timed_run(trivial))
    return timings, baseline


def browser_timings(url: str, timings: list[PageTiming], folder: Path) -> list[float]:
    """Fill in the browser columns; returns the one-line page's warm load times (ms)."""
    sys.path.insert(0, str(REPO / "tests"))
    from browser_support import (
        launch,
        new_context,
        open_page,
        serve_dashboard,
        serve_script,
    )
    from playwright.sync_api import sync_playwright

    script = folder / "hi.py"
    script.write_text(TRIVIAL_PAGE)
    trivial_ms: list[float] = []
    with (
        serve_dashboard(url, folder / "dashboard.log") as dashboard,
        serve_script(script, folder / "trivial.log") as trivial,
        sync_playwright() as playwright,
    ):
        browser = launch(playwright)
        page = new_context(browser).new_page()

        def load_trivial() -> float:
            return open_page(page, trivial.url, selector='[data-testid="stMarkdown"]', text="hi")

        load_trivial()  # the browser's first Streamlit page: its scripts are not cached yet
        trivial_ms.extend(load_trivial() for _ in range(WARM_LOADS))
        for timing in timings:
            case = timing.case
            address = f"{dashboard.url}{case.path}{case.url_query()}"
            timing.browser_first_ms = open_page(page, address, text=case.title)
            timing.browser_warm_ms = [
                open_page(page, address, text=case.title) for _ in range(WARM_LOADS)
            ]
            # One more one-line page per dashboard page: the machine's load drifts.
            trivial_ms.append(load_trivial())
            print(f"  browser {case.label}: first {timing.browser_first_ms:,.0f} ms, warm "
                  f"{statistics.median(timing.browser_warm_ms):,.0f} ms")  # fmt: skip
        browser.close()
    return trivial_ms


def _seconds(value: float | None, target: float) -> str:
    if value is None:
        return "-"
    return f"{value:6.2f} {'ok' if value <= target else 'SLOW'}"


def print_table(
    timings: list[PageTiming],
    baseline: tuple[float, float],
    trivial_ms: list[float],
    log: StatementLog,
) -> None:
    """The per-page table; ``sql`` is the part of a server run spent in SQL statements."""
    trivial = statistics.median(trivial_ms) if trivial_ms else None
    sql: dict[str, float] = {}
    for statement in log.statements:
        sql[statement.phase] = sql.get(statement.phase, 0.0) + statement.seconds
    print()
    print(f"{'page':<18} {'server cold s':>14} {'sql':>5} {'filtered s':>12} {'sql':>5} "
          f"{'browser first ms':>17} {'warm ms':>8} {'ratio':>10}")  # fmt: skip
    print(f"{'(target)':<18} {'<= 1.0':>14} {'':>5} {'<= 0.5':>12} {'':>5} {'':>17} {'':>8} "
          f"{'<= 1.5x':>10}")  # fmt: skip
    for t in timings:
        warm = statistics.median(t.browser_warm_ms) if t.browser_warm_ms else None
        ratio = f"{warm / trivial:.2f}x" if warm and trivial else "-"
        if warm and trivial:
            ratio += " ok" if warm / trivial <= BROWSER_RATIO_TARGET else " SLOW"
        first = f"{t.browser_first_ms:,.0f}" if t.browser_first_ms is not None else "-"
        cold_sql = sql.get(f"{t.case.label} cold", 0.0)
        filtered_sql = sql.get(f"{t.case.label} filtered", 0.0)
        print(f"{t.case.label:<18} {_seconds(t.cold_s, SERVER_COLD_TARGET_S):>14} "
              f"{cold_sql:>5.2f} {_seconds(t.filtered_s, SERVER_FILTER_TARGET_S):>12} "
              f"{filtered_sql:>5.2f} {first:>17} {f'{warm:,.0f}' if warm else '-':>8} "
              f"{ratio:>10}")  # fmt: skip
    label = 'st.write("hi")'
    line = f"{label:<18} {baseline[0]:>14.2f} {'':>5} {baseline[1]:>12.2f} {'':>5}"
    if trivial_ms:
        line += f" {trivial_ms[0]:>17,.0f} {trivial:>8,.0f} {'1.00x':>10}"
    print(line)


def main(argv: list[str] | None = None) -> None:
    """Build or reuse the store, measure every page, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--db", type=Path, help="store file (default .bench/ui-<size>.db)")
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="replace a bench store of another size or seed (never done otherwise)",
    )
    parser.add_argument("--no-browser", action="store_true", help="server timings only")
    args = parser.parse_args(argv)
    path = (args.db or default_db(args.messages)).resolve()
    # The default file is this benchmark's own cache for that size: a stale one is rebuilt.
    url = ensure_store(path, args.messages, args.seed, args.rebuild or args.db is None)
    counts, model, display_id, pair = store_facts(url)
    print("store: " + ", ".join(f"{n:,} {table}" for table, n in counts.items()))
    print(f"filter change: model = {model}; shared link: trace {display_id}, pair {pair}")
    cases = page_cases(display_id, pair)
    log = StatementLog()
    with log.installed():
        timings, baseline = server_timings(url, cases, model, log)
    trivial_ms: list[float] = []
    if not args.no_browser:
        with tempfile.TemporaryDirectory() as folder:
            trivial_ms = browser_timings(url, timings, Path(folder))
    print_table(timings, baseline, trivial_ms, log)
    engine = make_engine(url)
    print_statements(log, engine)
    engine.dispose()


if __name__ == "__main__":
    main()
