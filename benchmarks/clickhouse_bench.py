"""``make bench-clickhouse``: the ClickHouse store at scale, next to SQLite and PostgreSQL.

    python -m benchmarks.clickhouse_bench [--workload N] [--messages 10000000,30000000]
        [--clickhouse URL] [--pg-url URL] [--pairs-timeout S] [--keep]

1. **Import**: the same generated workload (:mod:`benchmarks.workload`, OpenAI Chat JSONL,
   ``--workload`` messages) is imported with ``toollens import`` into a fresh SQLite file, a
   fresh PostgreSQL schema and a fresh database on the ClickHouse cluster, one after the other
   in the same run: wall seconds, messages per second and CPU seconds per message of the
   importing process, and for ClickHouse also the CPU the servers spent meanwhile (read from
   their processes when they run on this machine: it includes whatever else they served in
   that time). Bytes per message on disk of each store.
2. **Growth**: the imported ClickHouse store grows by copies in SQL (:func:`grow`) to each size
   of ``--messages``; copies are whole traces with shifted ids, inserted through the
   Distributed tables, so they are sharded exactly as imported traces are.
3. **Per size**, first with plain aggregates over the base tables (the copies were written
   past the rollups, so the rollups are marked incomplete and every figure reads the base
   tables), then with the rollups (``toollens rebuild-rollups``, timed, recounts them):
   ``toollens summary`` seconds cold (the first run; the OS file cache is not dropped on this
   shared machine) and warm (the next run), and with ``--pages`` every page's time in
   ``AppTest`` (``benchmarks.ui_bench.server_timings``: cold, then after choosing the most
   frequent model). Then ``toollens pairs --format csv`` seconds (given up after
   ``--pairs-timeout``, and said so), bytes per message on disk (``system.parts``, active parts
   of every server) and parts per partition.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.ingest_bench import BENCH_DIR, DEFAULT_PG_URL, pg_problem, pg_schema
from benchmarks.ui_bench import FilterChange, _toollens_seconds, page_cases, server_timings
from benchmarks.ui_sql import StatementLog
from benchmarks.workload import ensure_workload
from db.clickhouse.client import Client, NativeClient, connect
from db.clickhouse.rollups import write_state
from db.clickhouse.schema import TRACE_TABLES, Layout, stored_columns
from db.clickhouse.url import parse

DEFAULT_WORKLOAD = 100_000
DEFAULT_SIZES = (10_000_000, 30_000_000)
DEFAULT_CLICKHOUSE = (
    "clickhouse://default@127.0.0.1:19001,127.0.0.1:19002/toollens_bench?cluster=toollens"
)
PAIRS_TIMEOUT_S = 900.0
#: Trace identity columns a copy suffixes with ``.c<copy>`` (as ``benchmarks.ui_scale`` does),
#: so a later import into the bench store does not take a copy for the trace it was copied from.
_SUFFIXED = ("dedupe_key", "external_id", "display_id")
#: Children first, ``traces`` last: a reader sees a copied trace whole or not at all.
GROWN_TABLES: tuple[str, ...] = (*[t for t in TRACE_TABLES if t != "traces"], "traces")

Log = Callable[[str], None]


# ---- growing a store by copies in SQL ---------------------------------------------------------


def _copy_expressions(table: str, shift: int, block: int) -> list[tuple[str, str]]:
    """``(column, expression)`` of a copy of ``table``'s rows with trace ids ``shift`` higher."""
    trace = "id" if table == "traces" else "trace_id"
    out = []
    for name, _kind in stored_columns(table):
        expr = f"`{name}`"
        if name == trace:
            expr = f"`{name}` + {shift}"
        elif table == "traces" and name in _SUFFIXED:
            # A copy of a copy: its own suffix (``.c`` and its copy number) replaced.
            suffix = f"2 + length(toString(intDiv(`id` - 1, {block})))"
            cut = f"substring(`{name}`, 1, length(`{name}`) - ({suffix}))"
            own = f"if(`id` > {block}, {cut}, `{name}`)"
            copy = f"toString(intDiv(`id` + {shift} - 1, {block}))"
            expr = f"concat({own}, '.c', {copy})"
        out.append((name, expr))
    return out


def copy_statements(layout: Layout, *, copies: int, held: int, block: int) -> list[str]:
    """The inserts adding ``copies`` copies of the base to a store holding ``held`` of them.

    The base's traces have ids ``1 … block``; copy ``j`` holds ids ``j·block + 1 …
    (j+1)·block``. The rows of copies ``0 … copies-1`` (every version, as stored) are inserted
    again with their trace ids ``held·block`` higher: copies ``held … held+copies-1``. Through
    the Distributed tables (``Layout.every_row``), so each copied trace lands on the shard its
    new id hashes to, with all its rows."""
    if not 0 < copies <= held:
        raise ValueError(f"cannot add {copies} copies to a store holding {held}")
    shift = held * block
    out = []
    for table in GROWN_TABLES:
        trace = "id" if table == "traces" else "trace_id"
        pairs = _copy_expressions(table, shift, block)
        columns = ", ".join(f"`{c}`" for c, _ in pairs)
        exprs = ", ".join(e for _, e in pairs)
        source = layout.every_row(table)
        out.append(
            f"INSERT INTO {source} ({columns}) SELECT {exprs} FROM {source} "
            f"WHERE `{trace}` <= {copies * block}"
        )
    return out


def base_block(client: Client, layout: Layout) -> int:
    """The base's largest trace id: the id block of one copy (:func:`copy_statements`)."""
    _, rows = client.query(f"SELECT max(id) FROM {layout.every_row('traces')}")
    return int(rows[0][0] or 0)


def grow(client: Client, layout: Layout, *, block: int, held: int, factor: int, log: Log) -> int:
    """Grow a store holding ``held`` copies of its base to ``factor`` copies: doubling while it
    fits, then the rest in one step (a few large inserts, which keep parts few). Returns the
    copies held (``factor``). The copies are written past the rollups: they are marked
    incomplete (the base tables answer until ``rebuild-rollups``)."""
    if held < factor:
        write_state(client, layout, complete=False)
    while held < factor:
        copies = min(held, factor - held)
        started = time.perf_counter()
        for sql in copy_statements(layout, copies=copies, held=held, block=block):
            client.command(sql)
        held += copies
        log(f"  {held} copies of the base ({time.perf_counter() - started:.1f} s)")
    return held


# ---- what a store holds and takes on disk ------------------------------------------------------


def message_count(client: Client, layout: Layout) -> int:
    """Messages of the latest versions (what every read counts)."""
    _, rows = client.query(f"SELECT count() FROM {layout.view('messages')}")
    return int(rows[0][0])


@dataclass(frozen=True, slots=True)
class DiskFacts:
    """Active parts of a store's database on every server."""

    bytes_on_disk: int
    #: Per server: the most active parts of any one table's partition, and that table.
    most_parts: list[tuple[int, str]]
    parts: int


def disk_facts(client: Client, database: str) -> DiskFacts:
    """Bytes and parts of ``database``'s active parts, summed over the servers."""
    total, parts, most = 0, 0, []
    for index in range(client.servers):
        rows = _on_server(
            client,
            index,
            "SELECT table, partition, count(), sum(bytes_on_disk) FROM system.parts "
            f"WHERE database = '{database}' AND active GROUP BY table, partition",
        )
        total += sum(int(r[3]) for r in rows)
        parts += sum(int(r[2]) for r in rows)
        top = max(rows, key=lambda r: int(r[2]), default=("-", "-", 0, 0))
        most.append((int(top[2]), f"{top[0]} {top[1]}"))
    return DiskFacts(total, most, parts)


def _on_server(client: Client, index: int, sql: str) -> list[tuple[Any, ...]]:
    if isinstance(client, NativeClient):
        return client.server_query(index, sql)
    return client.query(sql)[1]


def _server_pids(client: Client) -> list[int]:
    """The processes of the ClickHouse servers, when they listen on this machine."""
    import psutil

    ports = {port for host, port in client.target.hosts if host in ("127.0.0.1", "localhost")}
    pids = []
    with suppress(psutil.Error):
        for conn in psutil.net_connections("tcp"):
            if conn.status == "LISTEN" and conn.laddr and conn.laddr.port in ports and conn.pid:
                pids.append(conn.pid)
    return sorted(set(pids))


def _cpu_of(pids: Sequence[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        with suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
    return total


# ---- the import, side by side -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImportRun:
    store: str
    messages: int
    seconds: float
    #: CPU seconds of the ``toollens import`` process (user + system, its workers included).
    cpu_seconds: float
    #: CPU seconds the ClickHouse servers spent during the import (None: not measured).
    server_cpu_seconds: float | None
    bytes_on_disk: int


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_import(store: str, url: str, workload: Path, server_pids: Sequence[int]) -> ImportRun:
    """``toollens import workload --db url`` in a process of its own; the store is empty."""
    toollens = Path(sys.executable).with_name("toollens")
    cpu, server_cpu = _children_cpu(), _cpu_of(server_pids)
    started = time.perf_counter()
    done = subprocess.run(
        [str(toollens), "import", "--db", url, str(workload)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"import into {store} failed: {done.stderr.decode()[-800:]}")
    return ImportRun(
        store,
        0,
        seconds,
        _children_cpu() - cpu,
        _cpu_of(server_pids) - server_cpu if server_pids else None,
        0,
    )


def _with_counts(run: ImportRun, messages: int, size: int) -> ImportRun:
    return ImportRun(
        run.store, messages, run.seconds, run.cpu_seconds, run.server_cpu_seconds, size
    )


def _sqlite_facts(path: Path) -> tuple[int, int]:
    import sqlite3

    with sqlite3.connect(path) as conn:
        (messages,) = conn.execute("SELECT count(*) FROM messages").fetchone()
    size = sum(
        Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists()
    )
    return int(messages), size


def _pg_facts(conninfo: str, schema: str) -> tuple[int, int]:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        messages = conn.execute(f'SELECT count(*) FROM "{schema}".messages').fetchone()
        size = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
            (schema,),
        ).fetchone()
    assert messages is not None and size is not None
    return int(messages[0]), int(size[0])


def print_imports(runs: Sequence[ImportRun]) -> None:
    print(
        f"{'store':<12}{'messages':>10}{'seconds':>9}{'msg/s':>9}{'cpu s':>8}"
        f"{'cpu µs/msg':>11}{'server cpu s':>13}{'B/msg':>8}"
    )
    for r in runs:
        server = "-" if r.server_cpu_seconds is None else f"{r.server_cpu_seconds:.1f}"
        per = (r.cpu_seconds + (r.server_cpu_seconds or 0)) / max(r.messages, 1) * 1e6
        print(
            f"{r.store:<12}{r.messages:>10,}{r.seconds:>9.1f}{r.messages / r.seconds:>9,.0f}"
            f"{r.cpu_seconds:>8.1f}{per:>11,.0f}{server:>13}"
            f"{r.bytes_on_disk / max(r.messages, 1):>8,.0f}"
        )
    print("cpu µs/msg: the importing process's CPU plus the servers' (ClickHouse), per message")


# ---- one size -----------------------------------------------------------------------------------


def _summary_and_pages(url: str, client: Client, layout: Layout, pages: bool, label: str) -> None:
    cold = _toollens_seconds(["summary", "--db", url])
    warm = _toollens_seconds(["summary", "--db", url])
    print(f"{label}: summary cold / warm {cold:.2f} s / {warm:.2f} s")
    sys.stdout.flush()
    if not pages:
        return
    (model,) = client.query(
        f"SELECT model FROM {layout.view('traces')} WHERE model IS NOT NULL "
        "GROUP BY model ORDER BY count() DESC, model LIMIT 1"
    )[1][0]
    (display_id,) = client.query(
        f"SELECT display_id FROM {layout.view('traces')} ORDER BY problem_count DESC, id LIMIT 1"
    )[1][0]
    timings, _ = server_timings(
        url, page_cases(display_id, ""), FilterChange(model), StatementLog()
    )
    colds = sorted(t.cold_s or 0.0 for t in timings)
    filtered = sorted(t.filtered_s or 0.0 for t in timings)
    print(
        f"{label}: {len(timings)} pages, cold median {colds[len(colds) // 2]:.2f} s, "
        f"slowest {colds[-1]:.2f} s; after a filter median {filtered[len(filtered) // 2]:.2f} s, "
        f"slowest {filtered[-1]:.2f} s"
    )
    sys.stdout.flush()


def measure_size(
    url: str, client: Client, layout: Layout, pairs_timeout: float, pages: bool = False
) -> None:
    messages = message_count(client, layout)
    disk = disk_facts(client, layout.database)
    print(f"messages            {messages:,}  (load average {os.getloadavg()[0]:.1f})")
    # Grown past the rollups (:func:`grow`): the base tables answer until they are recounted.
    _summary_and_pages(url, client, layout, pages, "plain aggregates")
    rebuilt = _toollens_seconds(["rebuild-rollups", "--db", url])
    print(f"rebuild-rollups     {rebuilt:.1f} s")
    _summary_and_pages(url, client, layout, pages, "rollups")
    pairs = _pairs_seconds(url, pairs_timeout)
    most = ", ".join(
        f"shard {i + 1}: {n} ({where})" for i, (n, where) in enumerate(disk.most_parts)
    )
    print(f"pairs --format csv  {pairs}")
    print(
        f"on disk             {disk.bytes_on_disk / 2**30:.2f} GiB, "
        f"{disk.bytes_on_disk / messages:,.0f} bytes per message, {disk.parts} active parts"
    )
    print(f"parts per partition most: {most}")
    sys.stdout.flush()


def _pairs_seconds(url: str, timeout: float) -> str:
    toollens = Path(sys.executable).with_name("toollens")
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [str(toollens), "pairs", "--db", url, "--format", "csv"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"not finished in {timeout:.0f} s (given up)"
    if done.returncode:
        return f"failed: {done.stderr.decode().strip()[-300:]}"
    return f"{time.perf_counter() - started:.1f} s"


def _print_room(run: ImportRun, sizes: Sequence[int]) -> None:
    """Whether each size fits the disk this machine's ``.bench`` is on, at the imported store's
    bytes per message (merges need room for a part twice while they run: not counted)."""
    per = run.bytes_on_disk / max(run.messages, 1)
    free = shutil.disk_usage(BENCH_DIR).free
    for size in sorted(set(sizes)):
        need = per * size
        verdict = "fits" if need < free else "does NOT fit"
        print(
            f"{size:>13,} messages need {need / 1e9:6.1f} GB at {per:,.0f} B/msg: {verdict} "
            f"({free / 1e9:.0f} GB free)"
        )


# ---- the run ------------------------------------------------------------------------------------


def _drop(client: Client, database: str) -> None:
    client.on_every_server(f"DROP DATABASE IF EXISTS {database}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=int, default=DEFAULT_WORKLOAD)
    parser.add_argument(
        "--messages",
        default=",".join(str(n) for n in DEFAULT_SIZES),
        help="store sizes to grow to and measure, comma-separated",
    )
    parser.add_argument("--clickhouse", default=DEFAULT_CLICKHOUSE)
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="'' to leave PostgreSQL out")
    parser.add_argument("--pairs-timeout", type=float, default=PAIRS_TIMEOUT_S)
    parser.add_argument("--keep", action="store_true", help="keep the ClickHouse store")
    parser.add_argument("--pages", action="store_true", help="also time every page")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.messages.split(",") if s.strip())

    workload, stats = ensure_workload(BENCH_DIR, args.workload)
    target = parse(args.clickhouse)
    client = connect(target)
    layout = Layout(target.database, target.cluster)
    pids = _server_pids(client)
    print(f"workload {workload.name}: {stats.messages:,} messages, {stats.traces:,} traces")
    print(f"ClickHouse {target.display()}, {client.servers} servers")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    runs: list[ImportRun] = []
    with ExitStack() as stack:
        db_file = BENCH_DIR / "clickhouse-bench-sqlite.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_file}{suffix}").unlink(missing_ok=True)
        run = timed_import("sqlite", str(db_file), workload, [])
        runs.append(_with_counts(run, *_sqlite_facts(db_file)))
        problem = pg_problem(args.pg_url) if args.pg_url else "left out (--pg-url '')"
        if problem is None:
            conninfo, schema, pg_url = stack.enter_context(pg_schema(args.pg_url))
            run = timed_import("postgresql", pg_url, workload, [])
            runs.append(_with_counts(run, *_pg_facts(conninfo, schema)))
        _drop(client, layout.database)
        if not args.keep:
            stack.callback(_drop, client, layout.database)
        run = timed_import("clickhouse", args.clickhouse, workload, pids)
        disk = disk_facts(client, layout.database)
        runs.append(_with_counts(run, message_count(client, layout), disk.bytes_on_disk))
        print_imports(runs)
        if problem is not None:
            print(f"postgresql: not measured ({problem})")
        sys.stdout.flush()

        base = runs[-1].messages
        _print_room(runs[-1], [*sizes, 100_000_000])
        block = base_block(client, layout)
        held = 1
        for size in sizes:
            factor = max(1, round(size / base))
            print(f"\n== {factor} copies of the {base:,}-message store (asked: {size:,}) ==")
            started = time.perf_counter()
            held = grow(client, layout, block=block, held=held, factor=factor, log=print)
            print(f"grown in {time.perf_counter() - started:.0f} s")
            measure_size(args.clickhouse, client, layout, args.pairs_timeout, args.pages)


if __name__ == "__main__":
    main()
