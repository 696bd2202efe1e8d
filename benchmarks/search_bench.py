"""``make bench-search``: how fast the content search answers on a large store.

    python -m benchmarks.search_bench [--messages 1000000] [--db PATH]

The store is the import benchmark's generated workload (:mod:`benchmarks.workload`, cached in
``.bench/``) imported by the real pipeline into a SQLite file (``.bench/search-<size>.db``,
reused while it exists; ``--db`` names another store, measured as it is), so the search index
is exactly what an import keeps. Then each query of :data:`QUERIES` runs as the Search page
runs it (:func:`db.queries.search.search_content`: the first page of 50 hits with snippets and
the capped total), five times on a warm connection pool; the median and the slowest are
printed with the number of hits. Target: under a second.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.workload import DEFAULT_SEED, ensure_workload
from db.engine import make_engine
from db.queries.search import search_content
from ingest.importing.pipeline import import_paths

REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO / ".bench"
DEFAULT_MESSAGES = 1_000_000
RUNS = 5
#: What people look for: an error phrase, an identifier, a common word, a rare word, a phrase
#: that matches nothing.
QUERIES: tuple[str, ...] = (
    "permission denied",
    "rate limit",
    "SELECT",
    "timeout",
    "quota exceeded for this month",
    "zebra unicorn xylophone",
)
TARGET_SECONDS = 1.0


def ensure_store(path: Path, messages: int) -> str:
    """The SQLite URL of a store of the workload at ``path``, imported unless it exists."""
    url = f"sqlite:///{path}"
    if path.exists():
        print(f"store: reusing {path}")
        return url
    workload, stats = ensure_workload(BENCH_DIR, messages, DEFAULT_SEED)
    print(f"store: importing {workload.name} ({stats.messages:,} messages) into {path}")
    started = time.perf_counter()
    engine = make_engine(url)
    try:
        summary = import_paths(engine, [workload])
    finally:
        engine.dispose()
    print(f"store: {summary.line()} ({time.perf_counter() - started:.0f} s)")
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--db", type=Path, help="store file (default .bench/search-<size>.db)")
    args = parser.parse_args()
    path = args.db or BENCH_DIR / f"search-{args.messages}.db"
    engine = make_engine(ensure_store(path, args.messages))
    slowest_median = 0.0
    try:
        print(f"{'query':<32} {'hits':>7} {'median s':>9} {'max s':>7}")
        for query in QUERIES:
            seconds = []
            for _ in range(RUNS):
                started = time.perf_counter()
                page = search_content(engine, query)
                seconds.append(time.perf_counter() - started)
            total = f"{page.total:,}{'+' if page.capped else ''}"
            median = statistics.median(seconds)
            slowest_median = max(slowest_median, median)
            print(f"{query:<32} {total:>7} {median:9.3f} {max(seconds):7.3f}")
    finally:
        engine.dispose()
    verdict = "met" if slowest_median < TARGET_SECONDS else "missed"
    print(f"search slowest median={slowest_median:.3f} s (target < {TARGET_SECONDS} s: {verdict})")


if __name__ == "__main__":
    main()
