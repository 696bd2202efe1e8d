"""``toollens serve --otlp``: the dashboard and the OTLP receiver start as one command, and
stopping it, or losing either server, stops both."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

STARTUP_SECONDS = 90


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait(check, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """``serve --otlp`` running with both servers up; its process, dashboard and OTLP ports."""
    dashboard, receiver = _free_port(), _free_port()
    from db.engine import make_engine

    make_engine(str(tmp_path / "t.db")).dispose()  # serve opens a store, never makes one
    command = [
        sys.executable, "-m", "ingest.cli", "serve", "--otlp",
        "--db", str(tmp_path / "t.db"), "--port", str(dashboard), "--otlp-port", str(receiver),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        up = _wait(
            lambda: (
                _answers(f"http://127.0.0.1:{dashboard}/_stcore/health") and _listening(receiver)
            ),
            STARTUP_SECONDS,
        )
        assert up, "dashboard and receiver did not both answer"
        yield process, dashboard, receiver
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _children(process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    return psutil.Process(process.pid).children()


def _gone(processes: list[psutil.Process]) -> bool:
    return not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_serve_otlp_stops_the_dashboard_and_the_receiver(
    served: tuple[subprocess.Popen[bytes], int, int], stop: signal.Signals
) -> None:
    process, dashboard, receiver = served
    children = _children(process)
    assert len(children) == 2
    process.send_signal(stop)
    assert process.wait(30) == 128 + stop
    assert _wait(lambda: _gone(children), 15)
    assert not _answers(f"http://127.0.0.1:{dashboard}/_stcore/health")
    assert not _listening(receiver)


def test_when_the_receiver_dies_the_dashboard_is_stopped_too(
    served: tuple[subprocess.Popen[bytes], int, int],
) -> None:
    process, dashboard, _ = served
    children = _children(process)
    receiver = next(c for c in children if "receive" in c.cmdline())
    receiver.kill()
    assert process.wait(30) != 0
    assert _wait(lambda: _gone(children), 15)
    assert not _answers(f"http://127.0.0.1:{dashboard}/_stcore/health")


def test_a_killed_serve_takes_its_children_with_it(
    served: tuple[subprocess.Popen[bytes], int, int],
) -> None:
    process, _, _ = served
    children = _children(process)
    process.kill()  # no chance to forward anything: the children's death signal does it
    process.wait()
    assert _wait(lambda: _gone(children), 15)
