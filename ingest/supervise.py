"""Run several server processes as one: started together, stopped together.

``toollens serve --otlp`` runs the dashboard and the OTLP receiver side by side. Stopping the
command must stop both, and neither may outlive it:

* SIGTERM, SIGINT and SIGHUP sent to the supervisor are forwarded to every child;
* when one child exits, the others are asked to stop (SIGTERM, then SIGKILL after a grace
  period): half a service is not left running;
* on Linux each child also gets ``PR_SET_PDEATHSIG`` = SIGTERM, so even a supervisor killed
  with SIGKILL takes its children with it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from types import FrameType

#: How long children get to stop after SIGTERM before they are killed.
GRACE_SECONDS = 10.0
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def run_together(
    commands: Sequence[Sequence[str]], env: Mapping[str, str], poll_seconds: float = 0.2
) -> int:
    """Run ``commands`` as child processes until one exits or a stop signal arrives; stop the
    rest and return the first exit code (128 + signal number when a signal stopped us)."""
    preexec = _die_with_parent if sys.platform.startswith("linux") else None
    children: list[subprocess.Popen[bytes]] = []
    stopped_by: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        stopped_by.append(signum)
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in _FORWARDED}
    try:
        for command in commands:
            children.append(subprocess.Popen(list(command), env=dict(env), preexec_fn=preexec))
        code: int | None = None
        while code is None and not stopped_by:
            code = next((c.poll() for c in children if c.poll() is not None), None)
            time.sleep(poll_seconds)
        _stop(children)
        if stopped_by:
            return 128 + stopped_by[0]
        return code if code is not None else 0
    finally:
        _stop(children)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to the children still running, SIGKILL to those that outlast the grace."""
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + GRACE_SECONDS
    for child in children:
        try:
            child.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
