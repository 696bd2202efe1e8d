"""``make bench-ui``: how fast the dashboard's pages are on a large store, SQLite or PostgreSQL.

    python -m benchmarks.ui_bench [--messages 1000000] [--db PATH-OR-URL …] [--no-browser]
    python -m benchmarks.ui_bench --change days --no-browser       # a range of days, not a model
    python -m benchmarks.ui_bench --sizes 1000000,3000000,10000000 --db sqlite --db URL
    python -m benchmarks.ui_bench --pairs-only --messages 10000000 [--db …]

The stores (:mod:`benchmarks.ui_cache`) are the bench's own: ``.bench/ui-<size>.db`` without
``--db`` (or with ``--db sqlite``), the schema ``toollens_bench_<size>`` with a PostgreSQL
server URL; any other store is measured as it is and never rebuilt (``--rebuild`` replaces a
bench-built store of another size at another path). Sizes above 1M in whole millions are copies
of the 1M store made by SQL (:mod:`benchmarks.ui_scale`). Each store's bytes per message are
printed. Then, per page:

* **server**: the run time of the page script in ``streamlit.testing.v1.AppTest`` on first
  load with cold caches (every ``st.cache_data`` cleared; the engine stays, as in a running
  server), and after a filter change: the sidebar's Model set to the most frequent model, or
  with ``--change days`` its From / To dates set to the first half of the store's days (whole
  days, the range a user picks; the model filter is the issue's measure). Targets: 1 s and
  0.5 s. The same runs of a one-line page (``st.write("hi")``) show what
  ``AppTest`` itself costs.
* **browser** (one store only): in headless Chromium against ``toollens serve``, the
  milliseconds from navigation start until the page's content is visible (see
  ``tests/browser_support.py``): the first load and the median of warm loads, next to the same
  measurement for the one-line page served the same way in the same run, with the ratio
  (target 2x, the issue's).
* **summary**: the seconds of ``toollens summary`` on the store, median of three runs, each a
  process of its own (target: 1 s).
* **pairs** (``--pairs``, ``--pairs-only``): the seconds of ``toollens pairs --format csv``
  on the store, output to ``/dev/null`` (target: 15 s at 10M messages).

With several ``--db`` or ``--sizes``, every store is measured in turn and one table shows the
page times per store (the growth curve of docs/performance.md). Every SQL statement the page
scripts run is timed from its execution until its rows are fetched; the slowest are printed with
their query plans. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from benchmarks.ui_cache import Request, bytes_per_message, ensure
from benchmarks.ui_sql import StatementLog, print_statements
from benchmarks.ui_store import DEFAULT_MESSAGES, DEFAULT_SEED
from dashboard import pages
from db.engine import display_url, make_engine

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "dashboard" / "app.py"
TRIVIAL_PAGE = 'import streamlit as st\n\nst.write("hi")\n'
SERVER_COLD_TARGET_S, SERVER_FILTER_TARGET_S, BROWSER_RATIO_TARGET = 1.0, 0.5, 2.0
PAIRS_TARGET_S = 15.0
#: Seconds ``toollens summary`` may take (the issue's target).
SUMMARY_TARGET_S = 1.0
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


@dataclass(frozen=True, slots=True)
class FilterChange:
    """The sidebar change after a page's first load: a model, or a range of whole days."""

    model: str
    days: tuple[date, date] | None = None

    def describe(self) -> str:
        if self.days is None:
            return f"model = {self.model}"
        return f"From {self.days[0]} To {self.days[1]} (half the store's days)"

    def apply(self, at: Any) -> None:
        if self.days is None:
            at.selectbox(key="model").select(self.model)
        else:
            at.date_input(key="start").set_value(self.days[0])
            at.date_input(key="end").set_value(self.days[1])

    def undo(self, at: Any) -> None:
        if self.days is None:
            at.selectbox(key="model").select(None)
        else:
            at.date_input(key="start").set_value(None)
            at.date_input(key="end").set_value(None)


def half_of_the_days(url: str) -> tuple[date, date]:
    """The first half of the days on which the store's traces start (From, To inclusive)."""
    engine = make_engine(url)
    with engine.connect() as conn:
        first, last = conn.execute(
            text("SELECT min(started_at), max(started_at) FROM traces")
        ).one()
    engine.dispose()
    first, last = (_as_datetime(v).date() for v in (first, last))
    return first, first + (last - first) // 2


def _as_datetime(value: Any) -> datetime:
    # SQLite returns the stored text, PostgreSQL a datetime.
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


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
    """Every page (its first section open), each other section of a page that has sections
    (``errors: By tool``), and the Trace page opened on one trace (a shared link)."""
    cases = []
    for p in pages.PAGES:
        cases.append(PageCase(p.key, p.script, p.path, p.title))
        cases += [
            PageCase(f"{p.key}: {label}", p.script, p.path, p.title, {p.section_param: label})
            for label in p.sections[1:]
        ]
    params = {"trace": display_id, **({"pair": pair} if pair else {})}
    trace = pages.TRACE
    one_trace = PageCase(f"{trace.key} (one trace)", trace.script, trace.path, trace.title, params)
    cases.insert(cases.index(next(c for c in cases if c.label == trace.key)) + 1, one_trace)
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
    # The dashboard reads ``--db`` from its command line (``toollens serve``): the bench's own
    # arguments (``--db sqlite``) must not reach it, or it opens a store named "sqlite".
    sys.argv = [str(script)]
    return AppTest.from_file(str(script), default_timeout=600)


def _timed_run(at: Any) -> float:
    started = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - started
    if at.exception:
        raise RuntimeError(f"the page raised: {at.exception[0].value}")
    return seconds


def server_timings(
    url: str, cases: list[PageCase], change: FilterChange, log: StatementLog
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
        change.apply(at)
        log.phase = f"{case.label} filtered"
        timing.filtered_s = _timed_run(at)
        log.phase = "reset"
        change.undo(at)
        _timed_run(at)
        timings.append(timing)
        print(f"  server {case.label}: cold {timing.cold_s:.2f} s, filtered "
              f"{timing.filtered_s:.2f} s")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        trivial = _app_test(url, trivial_script(Path(folder)))
        log.phase = "trivial"
        _timed_run(trivial)
        baseline = (_timed_run(trivial), _timed_run(trivial))
    return timings, baseline


def trivial_script(folder: Path) -> Path:
    """The one-line Streamlit page (:data:`TRIVIAL_PAGE`) written as ``folder/hi.py``."""
    script = folder / "hi.py"
    script.write_text(TRIVIAL_PAGE)
    return script


def load_trivial_page(page: Any, url: str) -> float:
    """Load the one-line page served at ``url`` in the browser ``page``, until its line is
    drawn and stays so (``tests/browser_support.open_page``): the milliseconds it took."""
    sys.path.insert(0, str(REPO / "tests"))
    from browser_support import open_page

    return open_page(page, url, selector='[data-testid="stMarkdown"]', text="hi")


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

    trivial_ms: list[float] = []
    with (
        serve_dashboard(url, folder / "dashboard.log") as dashboard,
        serve_script(trivial_script(folder), folder / "trivial.log") as trivial,
        sync_playwright() as playwright,
    ):
        browser = launch(playwright)
        page = new_context(browser).new_page()

        def load_trivial() -> float:
            return load_trivial_page(page, trivial.url)

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
    print(f"{'page':<36} {'server cold s':>14} {'sql':>5} {'filtered s':>12} {'sql':>5} "
          f"{'browser first ms':>17} {'warm ms':>8} {'ratio':>10}")  # fmt: skip
    print(f"{'(target)':<36} {'<= 1.0':>14} {'':>5} {'<= 0.5':>12} {'':>5} {'':>17} {'':>8} "
          f"{f'<= {BROWSER_RATIO_TARGET:g}x':>10}")  # fmt: skip
    for t in timings:
        warm = statistics.median(t.browser_warm_ms) if t.browser_warm_ms else None
        ratio = f"{warm / trivial:.2f}x" if warm and trivial else "-"
        if warm and trivial:
            ratio += " ok" if warm / trivial <= BROWSER_RATIO_TARGET else " SLOW"
        first = f"{t.browser_first_ms:,.0f}" if t.browser_first_ms is not None else "-"
        cold_sql = sql.get(f"{t.case.label} cold", 0.0)
        filtered_sql = sql.get(f"{t.case.label} filtered", 0.0)
        print(f"{t.case.label:<36} {_seconds(t.cold_s, SERVER_COLD_TARGET_S):>14} "
              f"{cold_sql:>5.2f} {_seconds(t.filtered_s, SERVER_FILTER_TARGET_S):>12} "
              f"{filtered_sql:>5.2f} {first:>17} {f'{warm:,.0f}' if warm else '-':>8} "
              f"{ratio:>10}")  # fmt: skip
    label = 'st.write("hi")'
    line = f"{label:<36} {baseline[0]:>14.2f} {'':>5} {baseline[1]:>12.2f} {'':>5}"
    if trivial_ms:
        line += f" {trivial_ms[0]:>17,.0f} {trivial:>8,.0f} {'1.00x':>10}"
    print(line)


def _toollens_seconds(args: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds of the command ``toollens *args`` in a process of its own (start-up included),
    its output to ``/dev/null``; raises when it fails."""
    import subprocess

    toollens = Path(sys.executable).with_name("toollens")
    started = time.perf_counter()
    done = subprocess.run(
        [str(toollens), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
        env=env,
    )
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"toollens {args[0]} failed: {done.stderr.decode()[-500:]}")
    return seconds


#: The output formats of ``toollens pairs`` the bench times: JSON Lines (the default) and CSV.
PAIRS_FORMATS = ("jsonl", "csv")


def pairs_seconds(url: str, out_format: str) -> float:
    """Seconds of ``toollens pairs --format out_format`` on ``url`` (the command as a user runs
    it)."""
    return _toollens_seconds(["pairs", "--db", url, "--format", out_format])


#: Runs of ``toollens summary`` timed per store (after one that is not: see
#: :func:`summary_seconds`).
SUMMARY_RUNS = 3


def summary_seconds(url: str) -> list[float]:
    """Seconds of ``toollens summary`` on ``url``, :data:`SUMMARY_RUNS` times, each a process
    of its own as a user runs it. Python may cache the modules' bytecode (an installed package
    has it; a ``PYTHONDONTWRITEBYTECODE`` in this environment would compile every module on
    every run), and one untimed run first writes that cache."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = [_toollens_seconds(["summary", "--db", url], env) for _ in range(SUMMARY_RUNS + 1)]
    return runs[1:]


@dataclass(slots=True)
class StoreRun:
    """What was measured on one store."""

    label: str
    url: str
    messages: int = 0
    bytes_per_message: float = 0.0
    timings: list[PageTiming] = field(default_factory=list)
    baseline: tuple[float, float] = (0.0, 0.0)
    pairs_s: dict[str, float] = field(default_factory=dict)
    summary_s: float | None = None


def measure_store(label: str, url: str, args: argparse.Namespace, with_browser: bool) -> StoreRun:
    """Everything the bench measures on one store, printed as it goes."""
    run = StoreRun(label, url)
    size, run.bytes_per_message = bytes_per_message(url)
    counts, model, display_id, pair = store_facts(url)
    run.messages = counts["messages"]
    print("store: " + ", ".join(f"{n:,} {table}" for table, n in counts.items()))
    print(f"store: {size / 2**30:.2f} GiB, {run.bytes_per_message:,.0f} bytes per message")
    if not args.pairs_only:
        change = FilterChange(model, half_of_the_days(url) if args.change == "days" else None)
        print(f"filter change: {change.describe()}; shared link: trace {display_id}, pair {pair}")
        cases = page_cases(display_id, pair)
        log = StatementLog()
        with log.installed():
            run.timings, run.baseline = server_timings(url, cases, change, log)
        trivial_ms: list[float] = []
        if with_browser:
            with tempfile.TemporaryDirectory() as folder:
                trivial_ms = browser_timings(url, run.timings, Path(folder))
        print_table(run.timings, run.baseline, trivial_ms, log)
        engine = make_engine(url)
        print_statements(log, engine)
        engine.dispose()
        runs = summary_seconds(url)
        run.summary_s = statistics.median(runs)
        verdict = "ok" if run.summary_s <= SUMMARY_TARGET_S else "SLOW"
        print(f"summary: toollens summary: median {run.summary_s:.2f} s (runs "
              f"{', '.join(f'{r:.2f}' for r in runs)}; target {SUMMARY_TARGET_S:.0f} s: "
              f"{verdict})")  # fmt: skip
    if args.pairs or args.pairs_only:
        for out_format in PAIRS_FORMATS:
            seconds = run.pairs_s[out_format] = pairs_seconds(url, out_format)
            verdict = "ok" if seconds <= PAIRS_TARGET_S else "SLOW"
            print(f"pairs: toollens pairs --format {out_format} on {run.messages:,} messages: "
                  f"{seconds:.1f} s (target {PAIRS_TARGET_S:.0f} s at 10M: {verdict})")  # fmt: skip
    return run


def print_growth(runs: list[StoreRun]) -> None:
    """One table: the page times (cold / after a filter change) of every measured store."""
    print("\npage times per store, seconds: cold / after a filter change")
    print(f"{'store':<22} {'messages':>11} {'B/msg':>6} " + " ".join(
        f"{t.case.label[:15]:>15}" for t in runs[0].timings) + f" {'summary s':>9}"
        + f" {'pairs s (jsonl/csv)':>20}")  # fmt: skip
    for run in runs:
        cells = " ".join(f"{f'{t.cold_s:.2f}/{t.filtered_s:.2f}':>15}" for t in run.timings)
        pairs = "/".join(f"{run.pairs_s[f]:.1f}" for f in PAIRS_FORMATS if f in run.pairs_s)
        summary = f"{run.summary_s:.2f}" if run.summary_s is not None else "-"
        print(f"{run.label[:22]:<22} {run.messages:>11,} {run.bytes_per_message:>6,.0f} "
              f"{cells} {summary:>9} {pairs or '-':>20}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Build or reuse the stores, measure every page, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument(
        "--sizes", help="comma-separated message counts, measured in turn (the growth curve)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--db",
        action="append",
        help="store file, PostgreSQL server URL (the bench's own schema in it) or 'sqlite' "
        "(the bench's own file); repeat to measure several (default: sqlite)",
    )
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="replace a bench-built store of another size or seed at a path given by --db",
    )
    parser.add_argument(
        "--change",
        choices=("model", "days"),
        default="model",
        help="the filter change measured: the most frequent model (default) or the first half "
        "of the store's days",
    )
    parser.add_argument("--no-browser", action="store_true", help="server timings only")
    parser.add_argument("--pairs", action="store_true", help="also time `toollens pairs`")
    parser.add_argument("--pairs-only", action="store_true", help="only time `toollens pairs`")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else [args.messages]
    targets = args.db or ["sqlite"]
    runs = []
    for db in targets:
        for messages in sizes:
            url = ensure(None if db == "sqlite" else db, Request(messages, args.seed, args.rebuild))
            label = f"{'sqlite' if url.startswith('sqlite') else 'postgresql'} {messages:,}"
            print(f"\n== {label}: {display_url(url)}")
            single = len(targets) * len(sizes) == 1
            runs.append(measure_store(label, url, args, single and not args.no_browser))
    if len(runs) > 1 and not args.pairs_only:
        print_growth(runs)


if __name__ == "__main__":
    main()
