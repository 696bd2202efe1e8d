"""``make bench-otlp``: live OTLP/HTTP ingest, ToolLens's receiver against Arize Phoenix.

    python -m benchmarks.otlp_bench [--steps 3000] [--batch-spans 1000] [--skip-phoenix]

The workload is the shared OTLP/Phoenix benchmark's (``../shared/bench/otlp-phoenix/
workload.py``, imported by path): agent runs of OpenInference spans (an AGENT root, per step an
LLM span asking for a tool and a TOOL span with its result, ~10 % failing), sent in batches of
whole traces with the stock ``OTLPSpanExporter`` called directly, as that benchmark's
``bench.py`` does (same batch size, export timeout and application-level retries). The same
batches go, one server after the other, to:

* **ToolLens**: ``toollens receive`` as a subprocess on a fresh SQLite store. A span counts as
  *persisted* once the trace it belongs to is stored: the sum of the stored traces'
  ``span_count`` (the spans each stored trace was assembled from), polled from the store;
* **Phoenix** 20.26.1, installed by this script into ``.bench/phoenix-venv`` (``python -m venv``
  + ``pip install arize-phoenix==20.26.1``, as the shared ``setup.sh`` does), started with
  ``phoenix serve`` on a fresh working directory and polled on its ``spans`` table.

What each figure of a server's JSON line means (the ratio uses only the first):

* ``spans_per_s``: spans **persisted** (stored and queryable) per second of wall time, from the
  first send to the moment every span is persisted (or to the last change of the count, if it
  stalled for ``--stall-s``). ToolLens: spans of stored traces (above); Phoenix: rows of its
  ``spans`` table. The client's own work (the exporter encoding each batch) is in that time for
  both, as it is in ``bench.py``;
* ``tool_results_per_s``: tool results stored end to end per second of the same wall time
  (ToolLens: stored tool-result rows; Phoenix: the workload's tool results scaled by the
  persisted fraction, as ``bench.py`` computes it);
* ``acknowledged_spans_per_s``: spans answered ``200`` per second of the send phase (first send
  to the last answer). For ToolLens that is spans **durable in the spool** (fsync'd, replayed
  after a crash), not yet queryable; for Phoenix spans accepted into its in-memory queue (not
  durable). Not the ratio's figure;
* ``lost_spans``: sent minus persisted; ``failed_batches``: spans the exporter gave up on;
* ``server_cpu_s`` / ``server_cpu_ms_per_span``: user + system CPU of the server process and its
  children (ToolLens: the receiver and its store workers) over the same interval, per persisted
  span: the cost of a span whatever else the machine is doing; ``client_cpu_s``: this
  process's CPU while sending (mostly the exporter's protobuf encoding);
* ``peak_rss_mb``: the servers' peak resident memory (``VmHWM``), summed over the processes: for
  ToolLens's forked store workers that counts pages shared with the receiver more than once;
  ``receiver_peak_rss_mb``: the peak of the server's main process alone (ToolLens: the
  receiver, which holds spool references, not spans, and forgets stored traces).

Before the ratio, ``otlp exporter alone`` gives the rate at which this process encodes the
batches with the exporter's own encoder, no server at all: the ceiling any server can reach on
this benchmark (the exporter sends a batch only after the previous one was answered, and
encoding is in the measured time), and that ceiling as a multiple of Phoenix's rate.

The machine may be shared: the two servers run one after the other in one invocation, so load
that changes between them moves the ratio; the CPU figures are less sensitive to it. The last
line is ``otlp ratio toollens/phoenix=X lost toollens=N phoenix=M`` (X: ToolLens's persisted
spans/s over Phoenix's persisted spans/s); the line before it compares CPU per persisted span.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

ROOT = Path(__file__).resolve().parent.parent
#: ``shared`` beside the checkout, or beside its folder (a worktree in ``wt/``); ``--workload``
#: names another place.
WORKLOAD = next(
    (
        path
        for folder in (ROOT.parent, ROOT.parent.parent)
        if (path := folder / "shared" / "bench" / "otlp-phoenix" / "workload.py").exists()
    ),
    ROOT.parent / "shared" / "bench" / "otlp-phoenix" / "workload.py",
)
BENCH = ROOT / ".bench" / "otlp"
PHOENIX_VENV = ROOT / ".bench" / "phoenix-venv"
PHOENIX_VERSION = "20.26.1"


@dataclass
class Result:
    """One server's run."""

    server: str
    sent_spans: int
    persisted_spans: int
    lost_spans: int
    tool_results_stored: float
    wall_s: float
    send_s: float
    spans_per_s: float
    tool_results_per_s: float
    acknowledged_spans_per_s: float
    server_cpu_s: float
    server_cpu_ms_per_span: float
    client_cpu_s: float
    peak_rss_mb: float
    receiver_peak_rss_mb: float
    failed_batches: int


def load_workload(path: Path) -> ModuleType:
    """The shared benchmark's ``workload.py``, imported from where it lives."""
    spec = importlib.util.spec_from_file_location("otlp_phoenix_workload", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while defined
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def peak_rss_mb(pid: int, children: bool = True) -> float:
    """``VmHWM`` of a process and (``children``) its children."""
    total = 0
    procs = [psutil.Process(pid)]
    if children:
        procs += psutil.Process(pid).children(recursive=True)
    for proc in procs:
        with open(f"/proc/{proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return round(total / 1024, 1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its live children so far (the ToolLens
    receiver and its store worker; Phoenix's server)."""
    total = 0.0
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        times = proc.cpu_times()
        total += times.user + times.system
    return round(total, 2)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT (both servers store or flush what they hold), then harder."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Sent:
    """What :func:`send` measured: wall and CPU seconds of this (client) process, and the spans
    the exporter gave up on."""

    seconds: float
    cpu_s: float
    failed: int


def exporter_alone(batches: list[Any]) -> float:
    """Spans per second the stock exporter's encoder gives in this process, with no server:
    what the exporter spends before any byte is sent (the best of three passes)."""
    spans = sum(len(batch) for batch in batches)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for batch in batches:
            encode_spans(batch).SerializePartialToString()
        best = min(best, time.perf_counter() - start)
    return spans / best


def send(batches: list[Any], endpoint: str, args: argparse.Namespace) -> Sent:
    """Export every batch as ``bench.py`` does."""
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=args.export_timeout)
    failed = 0
    cpu = time.process_time()
    start = time.perf_counter()
    for batch in batches:
        for attempt in range(args.app_retries + 1):
            if exporter.export(batch) is SpanExportResult.SUCCESS:
                break
            if attempt == args.app_retries:
                failed += len(batch)
            else:
                time.sleep(0.5)
    seconds = time.perf_counter() - start
    exporter.shutdown()
    return Sent(seconds, time.process_time() - cpu, failed)


def wait_persisted(
    count: Callable[[], int], expected: int, start: float, stall_s: float, poll_s: float
) -> tuple[int, float]:
    """Poll until ``expected`` are persisted or the count stops moving; (count, seconds)."""
    last, changed = -1, time.perf_counter()
    while True:
        now = time.perf_counter()
        try:
            found = count()
        except sqlite3.OperationalError:  # the server is between writes or migrating
            found = max(last, 0)
        if found >= expected:
            return found, now - start
        if found != last:
            last, changed = found, now
        elif now - changed > stall_s:
            return found, changed - start
        time.sleep(poll_s)


def run_toollens(batches: list[Any], stats: Any, args: argparse.Namespace) -> Result:
    """``toollens receive`` on a fresh SQLite store, fed the batches."""
    folder = BENCH / "toollens"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = folder / "toollens.db"
    port = free_port()
    command = [
        sys.executable, "-m", "ingest.cli", "receive", "--db", str(db),
        "--port", str(port), "--spool", str(folder / "spool"),
    ]  # fmt: skip
    log = (folder / "receiver.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        _wait_listening(port, process)
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)

        def spans() -> int:
            row = conn.execute(
                "SELECT coalesce(sum(json_extract(metadata, '$.span_count')), 0) FROM traces"
            ).fetchone()
            return int(row[0])

        cpu = cpu_seconds(process.pid)
        start = time.perf_counter()
        sent = send(batches, f"http://127.0.0.1:{port}/v1/traces", args)
        persisted, wall = wait_persisted(spans, stats.spans, start, args.stall_s, args.poll_s)
        cpu = cpu_seconds(process.pid) - cpu
        results = conn.execute("SELECT count(*) FROM tool_results").fetchone()[0]
        conn.close()
        peak = peak_rss_mb(process.pid), peak_rss_mb(process.pid, children=False)
    finally:
        stop(process)
    return _result("toollens", stats, persisted, results, wall, sent, cpu, peak)


def ensure_phoenix() -> Path:
    """``phoenix`` of ``.bench/phoenix-venv``, installed there on first use."""
    phoenix = PHOENIX_VENV / "bin" / "phoenix"
    if not phoenix.exists():
        print(f"installing arize-phoenix=={PHOENIX_VERSION} into {PHOENIX_VENV}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PHOENIX_VENV)], check=True)
        pip = [str(PHOENIX_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, f"arize-phoenix=={PHOENIX_VERSION}"], check=True)
    return phoenix


def run_phoenix(batches: list[Any], stats: Any, args: argparse.Namespace) -> Result:
    """``phoenix serve`` (default SQLite) on a fresh working directory, fed the batches."""
    phoenix = ensure_phoenix()
    work = BENCH / "phoenix-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = (BENCH / "phoenix.log").open("w")
    process = subprocess.Popen(
        [str(phoenix), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=BENCH
    )
    try:
        deadline = time.monotonic() + 180
        while not _healthy(f"http://127.0.0.1:{port}/healthz"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"phoenix did not start; see {BENCH / 'phoenix.log'}")
            time.sleep(0.25)
        time.sleep(args.settle_s)  # let post-startup work finish, as bench.py does
        conn = sqlite3.connect(f"file:{work / 'phoenix.db'}?mode=ro", uri=True, timeout=30)

        def spans() -> int:
            return int(conn.execute("SELECT count(*) FROM spans").fetchone()[0])

        cpu = cpu_seconds(process.pid)
        start = time.perf_counter()
        sent = send(batches, f"http://127.0.0.1:{port}/v1/traces", args)
        persisted, wall = wait_persisted(spans, stats.spans, start, args.stall_s, args.poll_s)
        cpu = cpu_seconds(process.pid) - cpu
        conn.close()
        peak = peak_rss_mb(process.pid), peak_rss_mb(process.pid, children=False)
    finally:
        stop(process)
    results = stats.tool_results * persisted / stats.spans
    return _result("phoenix", stats, persisted, results, wall, sent, cpu, peak)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("toollens receive exited early; see .bench/otlp/toollens/")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit("toollens receive did not listen within 60 s")


def _result(
    server: str,
    stats: Any,
    persisted: int,
    results: float,
    wall: float,
    sent: Sent,
    cpu: float,
    peak: tuple[float, float],
) -> Result:
    wall = max(wall, 1e-6)
    acknowledged = stats.spans - sent.failed
    return Result(
        server=server,
        sent_spans=stats.spans,
        persisted_spans=persisted,
        lost_spans=stats.spans - persisted,
        tool_results_stored=round(results, 1),
        wall_s=round(wall, 3),
        send_s=round(sent.seconds, 3),
        spans_per_s=round(persisted / wall, 1),
        tool_results_per_s=round(results / wall, 1),
        acknowledged_spans_per_s=round(acknowledged / max(sent.seconds, 1e-6), 1),
        server_cpu_s=round(cpu, 2),
        server_cpu_ms_per_span=round(1000 * cpu / max(persisted, 1), 3),
        client_cpu_s=round(sent.cpu_s, 2),
        peak_rss_mb=peak[0],
        receiver_peak_rss_mb=peak[1],
        failed_batches=sent.failed,
    )


def main() -> None:
    """Build the workload, run ToolLens then Phoenix, print both and the ratio line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="tool calls (= LLM = TOOL spans)")
    parser.add_argument("--batch-spans", type=int, default=1000)
    parser.add_argument("--history", default="last", choices=["last", "full"])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--export-timeout", type=float, default=120.0)
    parser.add_argument("--app-retries", type=int, default=20)
    parser.add_argument("--stall-s", type=float, default=60.0)
    parser.add_argument("--poll-s", type=float, default=0.1)
    parser.add_argument("--settle-s", type=float, default=5.0)
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--skip-phoenix", action="store_true")
    args = parser.parse_args()

    workload = load_workload(args.workload)
    traces, stats = workload.build_workload(args.steps, seed=args.seed, history=args.history)
    batches = workload.batch_traces(traces, args.batch_spans)
    print(f"workload: {json.dumps(stats.summary())}, {len(batches)} batches", flush=True)
    BENCH.mkdir(parents=True, exist_ok=True)
    toollens = run_toollens(batches, stats, args)
    print(json.dumps(asdict(toollens)), flush=True)
    if args.skip_phoenix:
        return
    phoenix = run_phoenix(batches, stats, args)
    print(json.dumps(asdict(phoenix)), flush=True)
    (BENCH / "results.json").write_text(
        json.dumps(
            {
                "args": vars(args) | {"workload": str(args.workload)},
                "runs": [asdict(toollens), asdict(phoenix)],
            },
            indent=1,
        )
    )
    ratio = toollens.spans_per_s / phoenix.spans_per_s if phoenix.spans_per_s else float("inf")
    cpu_ratio = (
        phoenix.server_cpu_ms_per_span / toollens.server_cpu_ms_per_span
        if toollens.server_cpu_ms_per_span
        else float("inf")
    )
    ceiling = exporter_alone(batches)
    print(
        f"otlp exporter alone (encoding, no server): {ceiling:.0f} spans/s = "
        f"{ceiling / phoenix.spans_per_s:.1f}x phoenix: the ceiling of the ratio"
        if phoenix.spans_per_s
        else f"otlp exporter alone (encoding, no server): {ceiling:.0f} spans/s"
    )
    print(
        f"otlp server CPU per persisted span: toollens={toollens.server_cpu_ms_per_span} ms "
        f"phoenix={phoenix.server_cpu_ms_per_span} ms (phoenix/toollens={cpu_ratio:.1f})"
    )
    print(
        f"otlp ratio toollens/phoenix={ratio:.1f} "
        f"lost toollens={toollens.lost_spans} phoenix={phoenix.lost_spans}"
    )


if __name__ == "__main__":
    main()
