"""``make bench``: import speed on SQLite and PostgreSQL next to a ceiling measured in the same run.

    python -m benchmarks.ingest_bench [--messages N] [--pg-url URL] [--sqlite-only] [--profile]

The workload (:mod:`benchmarks.workload`, cached in ``.bench/``) is imported three times per
database:

* the **ceiling** (:mod:`benchmarks.ceiling`): one process streams the file, ``orjson.loads``
  each line, counts the tokens of every message and writes the same rows the pipeline writes
  (traces, messages, tool calls, tool results, findings) with raw DBAPI ``executemany``
  (SQLite, WAL) or ``COPY`` (PostgreSQL), in batches of the pipeline's size; the time spent
  deriving the row values (the pipeline's analysis) is left out;
* the **messages-only ceiling** (``msgs``): the same, writing one row per message only;
* the **pipeline**: ``ingest.importing.pipeline.import_paths`` into a fresh, migrated database, with
  secret redaction on (the default);
* ``plain``: the same pipeline with redaction off, for the cost of redaction side by side.

Each run happens in a fresh interpreter, so ``getrusage`` peaks belong to that run alone; a
thread also samples the RSS of the process and its children every 50 ms. The last line is
``ingest ratio sqlite=X.XX postgresql=Y.YY`` (pipeline messages/s over ceiling messages/s); the
line before it gives the same ratio against the messages-only ceiling, and the one before that
``redaction cost`` (how much longer the pipeline takes with redaction on than off).
"""

from __future__ import annotations

import argparse
import gc
import os
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
#: The runs that go through ``import_paths``.
PIPELINE_KINDS = ("pipeline", "plain")
DATABASES = ("sqlite", "postgresql")
#: The measured runs per database: the ceiling, the messages-only ceiling, the pipeline (with
#: redaction on) and the pipeline with redaction off.
RUN_KINDS = ("ceiling", "msgs", "pipeline", "plain")


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
    """Measure one import of ``workload``: ``kind`` is one of ``RUN_KINDS``."""
    from db.engine import make_engine
    from ingest.importing.pipeline import BATCH_MESSAGES, import_paths
    from ingest.redaction.traces import RedactionSettings

    redaction = RedactionSettings("off" if kind == "plain" else "default")

    def pipeline(url: str) -> int:
        engine = make_engine(url)  # migrations run here, outside the measured time
        try:
            with measured:
                summary = import_paths(engine, [workload], workers=workers, redaction=redaction)
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
            if kind not in PIPELINE_KINDS:
                with measured:
                    n = ceiling_sqlite(
                        workload, db_file, BATCH_MESSAGES, measured.exclude, kind == "msgs"
                    )
            else:
                n = pipeline(str(db_file))
        else:
            conninfo, schema, url = stack.enter_context(pg_schema(pg_url))
            if kind not in PIPELINE_KINDS:
                with measured:
                    n = ceiling_postgresql(
                        workload, conninfo, schema, BATCH_MESSAGES, measured.exclude, kind == "msgs"
                    )
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
    """Wall time, CPU time and sampled peak RSS of the block it wraps (with the GC paused, as the
    pipeline does, so the ceiling gets the same advantage), minus the blocks run under
    :meth:`exclude`."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.peak_rss = 0
        self._memory = PeakMemory()
        self._started = 0.0
        self._cpu = 0.0
        self._excluded = 0.0
        self._excluded_cpu = 0.0

    @contextmanager
    def exclude(self) -> Iterator[None]:
        """Leave the wall and CPU time of this block out of the measurement."""
        started, cpu = time.perf_counter(), _cpu_seconds()
        try:
            yield
        finally:
            self._excluded += time.perf_counter() - started
            self._excluded_cpu += _cpu_seconds() - cpu

    def __enter__(self) -> _Stopwatch:
        gc.collect()
        gc.disable()
        self._memory.__enter__()
        self._cpu = _cpu_seconds()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._started - self._excluded
        self.cpu_seconds = _cpu_seconds() - self._cpu - self._excluded_cpu
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


def redaction_cost(on: RunResult, off: RunResult) -> str:
    """``+7% wall, +9% cpu``: how much longer the import takes with redaction on."""
    wall = on.seconds / off.seconds - 1
    cpu = on.cpu_seconds / off.cpu_seconds - 1
    return f"{wall:+.0%} wall, {cpu:+.0%} cpu"


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
    narrow: dict[str, str] = {}
    redaction: dict[str, str] = {}
    for database in DATABASES:
        if database == "postgresql":
            problem = "skipped: --sqlite-only" if args.sqlite_only else pg_problem(args.pg_url)
            if problem is not None:
                ratios[database] = narrow[database] = redaction[database] = f"n/a ({problem})"
                continue
        try:
            runs = {kind: _spawn(kind, database, workload, stats, args) for kind in RUN_KINDS}
        except RunFailed as exc:
            print(f"{database:<11}{exc}", flush=True)
            ratios[database] = narrow[database] = redaction[database] = f"n/a ({exc})"
            continue
        for run in runs.values():
            print(format_row(run), flush=True)
        speed = runs["pipeline"].messages_per_s
        ratios[database] = f"{speed / runs['ceiling'].messages_per_s:.2f}"
        narrow[database] = f"{speed / runs['msgs'].messages_per_s:.2f}"
        redaction[database] = redaction_cost(runs["pipeline"], runs["plain"])
    print(
        "redaction cost (pipeline on vs plain off): "
        + " ".join(f"{db}={redaction[db]}" for db in DATABASES),
        flush=True,
    )
    print("against the messages-only ceiling: " + ratio_line(narrow), flush=True)
    print(ratio_line(ratios), flush=True)


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
    parser.add_argument("--run", choices=RUN_KINDS, help=argparse.SUPPRESS)
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
        from benchmarks.ingest_profile import profile

        profile(args)
    else:
        bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
