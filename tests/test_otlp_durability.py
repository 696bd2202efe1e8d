"""Acknowledged spans survive ``kill -9``: the receiver runs as a real ``toollens receive``
process, is killed after answering, and stores everything once restarted (SQLite, PostgreSQL)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_agent import OPENINFERENCE_PAIRS, openinference_run, provider, stored_pairs

from db.engine import make_engine

BATCHES = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def receive(
    db_url: str, spool: Path, port: int, quiet: float, start_seconds: float = 30
) -> Iterator[subprocess.Popen[bytes]]:
    """``toollens receive`` as a child process, up and listening (within ``start_seconds``: it
    listens once it has stored again what its spool holds)."""
    command = [sys.executable, "-m", "ingest.cli", "receive", "--db", db_url, "--port", str(port)]
    command += ["--spool", str(spool), "--quiet-seconds", str(quiet)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else b""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the receiver did not start"
                time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)


def batches() -> list[bytes]:
    """One protobuf export per agent run, each run its own trace."""
    bodies = []
    for n in range(BATCHES):
        exporter = InMemorySpanExporter()
        openinference_run(provider(exporter, trace_base=0x100 + n))
        bodies.append(encode_spans(exporter.get_finished_spans()).SerializeToString())
    return bodies


def test_every_acknowledged_span_is_stored_after_kill_9_and_a_restart(
    db_url: str, tmp_path: Path
) -> None:
    spool, port = tmp_path / "spool", free_port()
    url = f"http://127.0.0.1:{port}/v1/traces"
    # Quiet for an hour: only a trace whose root span came is stored at once (the store
    # workers may or may not have written it before the kill); the spool holds every span.
    with receive(db_url, spool, port, quiet=3600) as process:
        for body in batches():
            request = urllib.request.Request(
                url, data=body, headers={"Content-Type": "application/x-protobuf"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 200
        workers = psutil.Process(process.pid).children()
        # The store workers: one for SQLite, one per core for PostgreSQL.
        sqlite = db_url.startswith("sqlite")
        assert len(workers) == (1 if sqlite else (os.cpu_count() or 1))
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        # ... which die with it rather than living on as orphans.
        assert psutil.wait_procs(workers, timeout=10)[1] == []
    engine = make_engine(db_url)
    expected = {f"{0x101 + n:032x}": OPENINFERENCE_PAIRS for n in range(BATCHES)}
    try:
        before = stored_pairs(engine)  # what was stored before the kill is whole
        assert before == {trace: expected[trace] for trace in before}
        with receive(db_url, spool, port, quiet=0.1):
            deadline = time.monotonic() + 30
            while len(stored_pairs(engine)) < BATCHES and time.monotonic() < deadline:
                time.sleep(0.1)
        assert stored_pairs(engine) == expected
    finally:
        engine.dispose()
