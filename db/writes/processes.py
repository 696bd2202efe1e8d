"""Which process runs an import, and whether it still runs.

An import records its process (:func:`current`): the host name, the pid and the process's
start (on Linux the boot id and the start time in clock ticks from ``/proc``, so a pid reused
after the importing process died, or after a reboot, is not taken for it). :func:`is_gone`
answers for a process of this host only; another host's process cannot be checked from here.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """A process as an import records it."""

    host: str
    pid: int
    #: ``boot_id:start_ticks`` on Linux, ``None`` where the system does not say.
    start: str | None


def _start_of(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    # The command name (2nd field) is in parentheses and may hold spaces: count after it.
    fields = stat[stat.rindex(")") + 2 :].split()
    return f"{boot}:{fields[19]}"


def current() -> ProcessIdentity:
    """This process."""
    pid = os.getpid()
    return ProcessIdentity(socket.gethostname(), pid, _start_of(pid))


def is_gone(process: ProcessIdentity) -> bool:
    """True when ``process`` ran on this host and runs no more (its pid is free, or now
    belongs to a process that started at another time); False while it runs, and for a
    process of another host (which cannot be checked from here)."""
    if process.host != socket.gethostname():
        return False
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a process of another user holds the pid: compare start times below
    if process.start is None:
        return False
    now = _start_of(process.pid)
    return now is not None and now != process.start
