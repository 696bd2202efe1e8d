"""``make bench-startup``: ``toollens summary``'s wall time against an earlier revision's,
interleaved.

    python -m benchmarks.startup_bench --db STORE [--db STORE …] [--before REV] [--runs N]

Issue 17 asks for ``toollens summary`` within a second; most of it is starting: importing
SQLAlchemy, the schema, the command line library. The command is run by the code of ``--before``
(default :data:`BEFORE`, the last commit whose tables were mapped by SQLAlchemy's ORM; a git
worktree under ``.bench/``, as ``make bench-revision`` makes) and by this checkout's, one after
the other, ``--runs`` times each after a run of each that is not timed, every run a process of
its own with Python's bytecode cache allowed (as an installed package has it). Both run in this
interpreter's environment, so the library versions are the same (the typer pin below 0.29 is
measured by running the checkout's code under each typer: docs/performance.md). Printed: each
pair of runs, then per store the medians and ``before/now``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.ingest_bench import REPO
from benchmarks.revision_bench import worktree
from db.engine import display_url, resolve_url

#: The last commit whose tables were mapped by SQLAlchemy's ORM (the schema's Core tables came
#: after it).
BEFORE = "10aa094"

#: One ``toollens summary`` by the code of the tree given first (the tree first on the path).
_RUNNER = """
import sys
sys.path.insert(0, sys.argv[1])
from ingest.cli import app
app(["summary", "--db", sys.argv[2]])
"""


def summary_seconds(tree: Path, store: str) -> float:
    """Wall seconds of one ``toollens summary`` of ``store`` by ``tree``'s code, start-up
    included; raises when the command fails."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(tree), store],
        cwd=tree, env=env, capture_output=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"toollens summary failed: {done.stderr.decode()[-500:]}")
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument(
        "--db", action="append", required=True, help="a store (file or URL); repeatable"
    )
    args = parser.parse_args(argv)
    trees = {"before": worktree(args.before), "now": REPO}
    print(f"before = {args.before} ({trees['before']})", flush=True)
    for given in args.db:
        # Each run's working directory is its tree: a file is named by its absolute path.
        store = given if "://" in given else str(Path(given).resolve())
        for tree in trees.values():
            summary_seconds(tree, store)  # bytecode written, the store's pages cached
        times: dict[str, list[float]] = {"before": [], "now": []}
        for run in range(1, args.runs + 1):
            for name, tree in trees.items():
                times[name].append(summary_seconds(tree, store))
            print(f"run {run}: before {times['before'][-1]:.2f} s, now {times['now'][-1]:.2f} s")
        before, now = statistics.median(times["before"]), statistics.median(times["now"])
        print(
            f"{display_url(resolve_url(store))}: median before {before:.2f} s, now {now:.2f} s; "
            f"before/now {before / now:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
