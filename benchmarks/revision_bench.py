"""``make bench-revision``: the import's speed against an earlier revision's, side by side.

    python -m benchmarks.revision_bench [--before REV] [--messages N] [--rounds N]
        [--db sqlite] [--db postgresql+psycopg://…] [--workers N]

Issue 17 bounds what the rollups' upkeep may cost: the import stays at 0.8 or more of its speed
before them. This measures exactly that: the bench workload (:mod:`benchmarks.workload`) is
imported by the code of ``--before`` (default :data:`BEFORE`, the last commit without rollups)
and by this checkout's, alternating, each import in a fresh interpreter into a fresh SQLite file
or PostgreSQL schema, ``--rounds`` times. The earlier code runs from a git worktree under
``.bench/`` (made once, with ``git worktree add``); its interpreter puts that tree first on the
module path; several ``--before`` revisions take turns with the checkout in the same rounds.
Printed: each import's seconds, messages/s and CPU seconds per message (user +
system of the interpreter and its writing workers, from ``getrusage``; PostgreSQL's server is
not counted), then per database the medians of each and ``speed now/before`` (before's median
seconds over now's) beside ``cpu now/before`` (now's median CPU per message over before's).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.ingest_bench import BENCH_DIR, REPO, pg_problem, pg_schema
from benchmarks.workload import ensure_workload

#: The last commit before the rollups (963c218 added them): the import as it was when issue 17
#: set its bound.
BEFORE = "963c218~1"
DEFAULT_MESSAGES = 100_000
DEFAULT_SEED = 7

#: One import in a fresh interpreter: ``argv`` = code tree, database URL, workload, workers.
_RUNNER = """
import importlib, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from db.engine import make_engine
# Where the pipeline lives in that tree (ingest.pipeline before ingest/ had packages); chosen by
# file, since the installed package's finder would otherwise serve a newer tree's module.
nested = os.path.exists(os.path.join(sys.argv[1], "ingest", "importing", "pipeline.py"))
module = "ingest.importing.pipeline" if nested else "ingest.pipeline"
import_paths = importlib.import_module(module).import_paths
engine = make_engine(sys.argv[2])
started = time.perf_counter()
summary = import_paths(engine, [sys.argv[3]], workers=int(sys.argv[4]))
seconds = time.perf_counter() - started
engine.dispose()
print(json.dumps({"seconds": seconds, "messages": summary.messages}))
"""


def worktree(rev: str) -> Path:
    """A git worktree of ``rev`` under ``.bench/`` (made when missing), where its code runs."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    tree = BENCH_DIR / f"revision-{sha[:12]}"
    if not (tree / "ingest").is_dir():
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--force", "--detach", str(tree), sha],
            check=True, capture_output=True,
        )  # fmt: skip
    return tree


def one_import(tree: Path, database: str, workload: Path, workers: int) -> tuple[float, float, int]:
    """Seconds and CPU seconds ``tree``'s code takes to import ``workload`` into a fresh
    ``database``, and the messages it imported."""
    if database == "sqlite":
        db_file = BENCH_DIR / "revision.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_file}{suffix}").unlink(missing_ok=True)
        try:
            return _run(tree, str(db_file), workload, workers)
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db_file}{suffix}").unlink(missing_ok=True)
    with pg_schema(database) as (_conninfo, _schema, url):
        return _run(tree, url, workload, workers)


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(tree: Path, url: str, workload: Path, workers: int) -> tuple[float, float, int]:
    """The import's wall seconds (measured inside the interpreter, without its start-up), the
    CPU seconds of the whole interpreter (start-up included: it is the same for both trees but
    for their imports) and the messages imported."""
    cpu = _children_cpu()
    out = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(tree), url, str(workload), str(workers)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    cpu = _children_cpu() - cpu
    found = json.loads(out.strip().splitlines()[-1])
    return float(found["seconds"]), cpu, int(found["messages"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--before", action="append", help=f"a revision (default {BEFORE}); repeatable"
    )
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--db", action="append", help="sqlite (default) or a PostgreSQL URL; repeatable"
    )
    args = parser.parse_args(argv)
    databases = args.db or ["sqlite"]
    workload, stats = ensure_workload(BENCH_DIR, args.messages, DEFAULT_SEED)
    trees = {rev: worktree(rev) for rev in args.before or [BEFORE]}
    print(f"workload {workload.name}; before: {', '.join(trees)}", flush=True)
    trees["now"] = REPO
    for database in databases:
        shown = "sqlite" if database == "sqlite" else "postgresql"
        problem = None if database == "sqlite" else pg_problem(database)
        if problem is not None:
            print(f"{shown}: n/a ({problem})", flush=True)
            continue
        times: dict[str, list[float]] = {name: [] for name in trees}
        cpus: dict[str, list[float]] = {name: [] for name in trees}
        for round_ in range(1, args.rounds + 1):
            for name, tree in trees.items():
                seconds, cpu, messages = one_import(tree, database, workload, args.workers)
                if messages != stats.messages:
                    raise RuntimeError(f"{name} imported {messages} of {stats.messages} messages")
                times[name].append(seconds)
                cpus[name].append(cpu / messages)
                print(
                    f"{shown} round {round_} {name}: {seconds:.2f} s, "
                    f"{messages / seconds:,.0f} msg/s, {cpu / messages * 1e6:.0f} µs CPU/msg",
                    flush=True,
                )
        now, cpu_now = statistics.median(times["now"]), statistics.median(cpus["now"])
        print(
            f"{shown}: median now {now:.2f} s ({stats.messages / now:,.0f} msg/s, "
            f"{cpu_now * 1e6:.0f} µs CPU/msg)",
            flush=True,
        )
        for name in list(trees)[:-1]:
            before, cpu_before = statistics.median(times[name]), statistics.median(cpus[name])
            print(
                f"{shown}: median {name} {before:.2f} s ({stats.messages / before:,.0f} msg/s, "
                f"{cpu_before * 1e6:.0f} µs CPU/msg); speed now/{name} {before / now:.2f}, "
                f"cpu now/{name} {cpu_now / cpu_before:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
