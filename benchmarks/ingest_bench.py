"""``make bench``: import speed on SQLite and PostgreSQL next to a ceiling measured in the same run.

    python -m benchmarks.ingest_bench [--messages N] [--pg-url URL] [--sqlite-only] [--profile]

The workload (:mod:`benchmarks.workload`, cached in ``.bench/``) is imported twice per database:

* the **ceiling** (:mod:`benchmarks.ceiling`): one process streams the file, ``orjson.loads``
  each line, counts the tokens of every message and writes one row per message with raw DBAPI
  ``executemany`` (SQLite, WAL) or ``COPY`` (PostgreSQL), in batches of the pipeline's size;
* the **pipeline**: ``ingest.pipeline.import_paths`` into a fresh, migrated database.

Each run happens in a fresh interpreter, so ``getrusage`` peaks belong to that run alone; a
thread also samples the RSS of the process and its children every 50 ms. The last line is
``ingest ratio sqlite=X.XX postgresql=Y.YY`` (pipeline messages/s over ceiling messages/s).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import resource
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
import psutil

from benchmarks.ceiling import ceiling_postgresql, ceiling_sqlite
from benchmarks.workload import DEFAULT_MESSAGES, DEFAULT_SEED, WorkloadStats, ensure_workload

REPO = Path(__file__).resolve().parents[1]
#: Workloads and scratch databases (``make clean`` removes it).
BENCH_DIR = REPO / ".bench"
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
#: Messages of the workload the profiler runs on (large enough that per-batch costs show).
PROFILE_MESSAGES = 50_000
SAMPLE_SECONDS = 0.05
DATABASES = ("sqlite", "postgresql")


@dataclass(slots=True)
class RunResult:
    """One measured run: the import itself, without interpreter start-up or schema creation."""

    database: str
    kind: str
    messages: int
    seconds: float
    #: CPU seconds (user + system) of this process and its finished children over the run;
    #: unlike wall time, barely affected by other load on the machine. PostgreSQL's server
    #: processes are not included.
    cpu_seconds: float
    file_bytes: int
    #: Highest sampled RSS of the process plus all its children at one instant (bytes).
    peak_rss: int
    #: ``getrusage`` peaks (bytes): this process, and the largest of its finished children.
    maxrss_self: int
    maxrss_children: int

    @property
    def messages_per_s(self) -> float:
        """Messages imported per wall-clock second."""
        return self.messages / self.seconds

    @property
    def mb_per_s(self) -> float:
        """Input megabytes (10^6 bytes of JSONL) per wall-clock second."""
        return self.file_bytes / 1e6 / self.seconds


class PeakMemory:
    """Samples RSS of this process and its children every 50 ms, keeping the highest sum."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._me = psutil.Process()

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self._sample()

    def _sample(self) -> None:
        total = self._me.memory_info().rss
        for child in self._me.children(recursive=True):
            # A worker that exited between listing and reading holds no memory any more.
            with suppress(psutil.Error):
                total += child.memory_info().rss
        self.peak = max(self.peak, total)


def _cpu_split() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _cpu_seconds() -> float:
    return sum(_cpu_split())


def _maxrss() -> tuple[int, int]:
    # Linux reports ru_maxrss in KiB.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return own, children


# ---- one measured run (in its own interpreter) ------------------------------------------------


@contextmanager
def pg_schema(admin_url: str) -> Iterator[tuple[str, str, str]]:
    """A fresh schema, dropped afterwards: ``(conninfo, schema, SQLAlchemy URL using it)``."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(admin_url)
    conninfo = url.set(drivername="postgresql", query={}).render_as_string(hide_password=False)
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    scoped = url.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield conninfo, schema, scoped.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def pg_problem(admin_url: str) -> str | None:
    """Why PostgreSQL at ``admin_url`` cannot be used, or ``None`` when it answers."""
    import psycopg
    from sqlalchemy.engine import make_url

    conninfo = make_url(admin_url).set(drivername="postgresql", query={})
    try:
        with psycopg.connect(conninfo.render_as_string(hide_password=False), connect_timeout=3):
            return None
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"{exc.__class__.__name__}: {first}"


def _remove_sqlite(db_file: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_file}{suffix}").unlink(missing_ok=True)


def run_once(
    kind: str, database: str, workload: Path, expected: int, pg_url: str, workers: int | None
) -> RunResult:
    """Measure one import of ``workload``: ``kind`` is ``ceiling`` or ``pipeline``."""
    from db.engine import make_engine
    from ingest.pipeline import BATCH_MESSAGES, import_paths

    def pipeline(url: str) -> int:
        engine = make_engine(url)  # migrations run here, outside the measured time
        try:
            with measured:
                summary = import_paths(engine, [workload], workers=workers)
        finally:
            engine.dispose()
        if summary.rejected or summary.messages != expected:
            raise RuntimeError(f"pipeline imported {summary.messages} of {expected} messages")
        return summary.messages

    measured = _Stopwatch()
    with ExitStack() as stack:
        if database == "sqlite":
            db_file = BENCH_DIR / f"{kind}.db"
            _remove_sqlite(db_file)
            stack.callback(_remove_sqlite, db_file)
            if kind == "ceiling":
                with measured:
                    n = ceiling_sqlite(workload, db_file, BATCH_MESSAGES)
            else:
                n = pipeline(str(db_file))
        else:
            conninfo, schema, url = stack.enter_context(pg_schema(pg_url))
            if kind == "ceiling":
                with measured:
                    n = ceiling_postgresql(workload, conninfo, schema, BATCH_MESSAGES)
            else:
                n = pipeline(url)
    own, children = _maxrss()
    return RunResult(
        database=database,
        kind=kind,
        messages=n,
        seconds=measured.seconds,
        cpu_seconds=measured.cpu_seconds,
        file_bytes=workload.stat().st_size,
        peak_rss=measured.peak_rss,
        maxrss_self=own,
        maxrss_children=children,
    )


class _Stopwatch:
    """Wall time and sampled peak RSS of the block it wraps (with the GC paused, as the
    pipeline does, so the ceiling gets the same advantage)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.peak_rss = 0
        self._memory = PeakMemory()
        self._started = 0.0
        self._cpu = 0.0

    def __enter__(self) -> _Stopwatch:
        gc.collect()
        gc.disable()
        self._memory.__enter__()
        self._cpu = _cpu_seconds()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._started
        self.cpu_seconds = _cpu_seconds() - self._cpu
        self._memory.__exit__(*exc)
        self.peak_rss = self._memory.peak
        gc.enable()


class RunFailed(RuntimeError):
    """A measured run exited with an error (its stderr has been shown)."""


def _spawn(kind: str, database: str, workload: Path, stats: WorkloadStats, args: Any) -> RunResult:
    # A fresh interpreter per run: getrusage peaks then describe this run only, and no run
    # inherits another's caches or heap.
    command = [
        sys.executable, "-m", "benchmarks.ingest_bench", "--run", kind, "--database", database,
        "--workload", str(workload), "--expect", str(stats.messages), "--pg-url", args.pg_url,
    ]  # fmt: skip
    if args.workers is not None:
        command += ["--workers", str(args.workers)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output"
        raise RunFailed(f"{kind} failed: {last[:300]}")
    return RunResult(**orjson.loads(done.stdout.splitlines()[-1]))


# ---- report ---------------------------------------------------------------------------------

_HEADER = (
    f"{'database':<11}{'run':<9}{'messages':>9}{'seconds':>9}{'cpu s':>8}{'msgs/s':>9}{'MB/s':>7}"
    f"{'peak RSS':>10}{'maxrss':>9}{'child max':>10}"
)


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f}M"


def format_row(r: RunResult) -> str:
    """One table row; memory in MiB (sampled sum of all processes; getrusage peaks)."""
    return (
        f"{r.database:<11}{r.kind:<9}{r.messages:>9,}{r.seconds:>9.2f}{r.cpu_seconds:>8.1f}"
        f"{r.messages_per_s:>9,.0f}"
        f"{r.mb_per_s:>7.1f}{_mib(r.peak_rss):>10}{_mib(r.maxrss_self):>9}"
        f"{_mib(r.maxrss_children):>10}"
    )


def ratio_line(ratios: dict[str, str]) -> str:
    """``ingest ratio sqlite=0.81 postgresql=n/a (reason)``."""
    return "ingest ratio " + " ".join(f"{db}={ratios[db]}" for db in DATABASES)


def bench(args: Any) -> None:
    """Run the ceiling and the pipeline on each database and print the table and the ratios."""
    workload, stats = ensure_workload(BENCH_DIR, args.messages, args.seed)
    print(
        f"workload {workload.relative_to(REPO)}: {stats.messages:,} messages in {stats.traces:,} "
        f"traces, {stats.bytes / 1e6:.1f} MB; tool results {stats.tool_messages:,} "
        f"({stats.tool_char_share:.0%} of characters, {stats.error_results:,} errors); "
        f"{os.cpu_count()} cores",
        flush=True,
    )
    print(_HEADER, flush=True)
    ratios: dict[str, str] = {}
    for database in DATABASES:
        if database == "postgresql":
            problem = "skipped: --sqlite-only" if args.sqlite_only else pg_problem(args.pg_url)
            if problem is not None:
                ratios[database] = f"n/a ({problem})"
                continue
        try:
            ceiling = _spawn("ceiling", database, workload, stats, args)
            print(format_row(ceiling), flush=True)
            pipeline = _spawn("pipeline", database, workload, stats, args)
            print(format_row(pipeline), flush=True)
        except RunFailed as exc:
            print(f"{database:<11}{exc}", flush=True)
            ratios[database] = f"n/a ({exc})"
            continue
        ratios[database] = f"{pipeline.messages_per_s / ceiling.messages_per_s:.2f}"
    print(ratio_line(ratios), flush=True)


# ---- profile --------------------------------------------------------------------------------


def _area(filename: str, name: str) -> str:
    """Where a profiled function lives: a repo file, a third-party package or a builtin."""
    if filename == "~":
        return name
    path = Path(filename)
    if "site-packages" in path.parts:
        return path.parts[path.parts.index("site-packages") + 1]
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return f"stdlib {path.name}"


def print_profile(profile: cProfile.Profile, seconds: float, top: int) -> None:
    """Own time grouped by file/package, then the top functions by own time."""
    stats = pstats.Stats(profile)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    areas: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        key = _area(filename, name)
        areas[key] = areas.get(key, 0.0) + tottime
    print(f"  own time by file / package (share of {seconds:.2f} s wall):")
    for key, own in sorted(areas.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {own:7.2f} s {own / seconds:6.1%}  {key}")
    print("  top functions by own time:")
    ranked = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in ranked:
        where = _area(filename, name) if filename == "~" else f"{_area(filename, name)}:{line}"
        print(f"    {tottime:7.2f} s {cumtime:7.2f} s cum {ncalls:>9,} calls  {name}  {where}")


def profile(args: Any) -> None:
    """Profile ``import_paths`` (parent process) with workers=0 and workers=2 on SQLite."""
    from db.engine import make_engine
    from ingest.pipeline import import_paths

    workload, _ = ensure_workload(BENCH_DIR, args.profile_messages, args.seed)
    for workers in (0, 2):
        db_file = BENCH_DIR / f"profile-{workers}.db"
        _remove_sqlite(db_file)
        engine = make_engine(str(db_file))
        prof = cProfile.Profile()
        own, children = _cpu_split()
        started = time.perf_counter()
        prof.enable()
        summary = import_paths(engine, [workload], workers=workers)
        prof.disable()
        seconds = time.perf_counter() - started
        own_after, children_after = _cpu_split()
        engine.dispose()
        _remove_sqlite(db_file)
        # The profile covers the parent only; the workers' share shows in their CPU time.
        print(
            f"profile workers={workers}: {summary.messages:,} messages in {seconds:.2f} s "
            f"({summary.messages / seconds:,.0f} msgs/s under cProfile); CPU: parent "
            f"{own_after - own:.1f} s, workers {children_after - children:.1f} s"
        )
        print_profile(prof, seconds, args.top)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.ingest_bench``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ingest_bench", description=__doc__)
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--pg-url", default=os.environ.get("TOOLLENS_BENCH_PG_URL", DEFAULT_PG_URL))
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: one per core)"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the pipeline instead")
    parser.add_argument("--profile-messages", type=int, default=PROFILE_MESSAGES)
    parser.add_argument("--top", type=int, default=25, help="rows per profile table")
    # One measured run in this process (used by the benchmark itself, one interpreter per run).
    parser.add_argument("--run", choices=("ceiling", "pipeline"), help=argparse.SUPPRESS)
    parser.add_argument("--database", choices=DATABASES, help=argparse.SUPPRESS)
    parser.add_argument("--workload", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        result = run_once(
            args.run, args.database, args.workload, args.expect, args.pg_url, args.workers
        )
        print(orjson.dumps(asdict(result)).decode())
    elif args.profile:
        profile(args)
    else:
        bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
