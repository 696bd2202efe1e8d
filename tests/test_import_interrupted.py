"""An import stopped by Ctrl-C (SIGINT) or ``kill`` (SIGTERM) stops its workers at once, is
stored as ``interrupted`` with its counts so far, and the same command run again completes it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa

from benchmarks.workload import ensure_workload
from db.engine import make_engine
from db.schema import ImportRun, TraceRow

TOOLLENS = str(Path(sys.executable).with_name("toollens"))
#: A workload two workers take several seconds over, a dozen batches: long enough to interrupt
#: midway on a fast, idle machine too (at 30,000 messages the last batch was once written first).
MESSAGES = 60_000


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    path, stats = ensure_workload(tmp_path_factory.mktemp("workload"), messages=MESSAGES)
    return path, stats.traces


def _traces(url: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            count = conn.execute(sa.select(sa.func.count()).select_from(TraceRow)).scalar_one()
    except sa.exc.OperationalError:
        count = 0  # the table is being created, or the file locked a moment
    finally:
        engine.dispose()
    return int(count)


def _stored(url: str) -> tuple[int, list[tuple[str, int, int]]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            traces = conn.execute(sa.select(sa.func.count()).select_from(TraceRow)).scalar_one()
            runs = conn.execute(
                sa.select(ImportRun.state, ImportRun.traces_imported, ImportRun.unchanged).order_by(
                    ImportRun.id
                )
            ).all()
    finally:
        engine.dispose()
    return int(traces), [(str(r[0]), int(r[1]), int(r[2])) for r in runs]


def _as_in_a_terminal() -> None:
    """Ctrl-C's SIGINT stops a command run in a terminal, but a shell starts a background job
    with SIGINT ignored and its children inherit that (tests run as one, e.g. under ``nohup …
    &``, saw the import run to its end): the import starts as a terminal's foreground job does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_import_stops_its_workers_and_completes_when_run_again(
    db_url: str, workload: tuple[Path, int], signum: int
) -> None:
    path, total = workload
    command = [TOOLLENS, "import", "--db", db_url, "--workers", "2", str(path)]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_as_in_a_terminal
    )
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 30
    while len(parent.children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = parent.children()
    assert len(workers) >= 2
    # Until the first batches are written: a loaded machine (the suite's other workers, a
    # PostgreSQL server busy with their schemas) once took longer than the 30 s above.
    deadline = time.monotonic() + 120
    while _traces(db_url) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _traces(db_url) > 0, "no trace written within 120 s"
    proc.send_signal(signum)
    stopped_at = time.monotonic()
    _, stderr = proc.communicate(timeout=30)
    _gone, alive = psutil.wait_procs(workers, timeout=max(0.0, stopped_at + 2 - time.monotonic()))
    assert alive == []
    # The end of the import's own output says why, should it end otherwise.
    assert proc.returncode == 128 + signum, stderr.decode()[-3000:]
    assert stderr.decode().strip().splitlines()[-1] == (
        "toollens: import interrupted; what was written is kept, "
        "run the same command again to complete it"
    )
    written, runs = _stored(db_url)
    assert runs == [("interrupted", runs[0][1], 0)]
    assert 0 < written < total
    assert runs[0][1] <= written  # a batch written as the signal came may not be counted

    again = subprocess.run(command, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr
    stored, runs = _stored(db_url)
    assert stored == total
    assert runs[1] == ("done", total - written, written)
