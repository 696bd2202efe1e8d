"""An import killed with SIGKILL: its worker processes end within a second, and the import it
left ``running`` is found gone and shown ``interrupted`` by the next import (and the Imports
page), on SQLite and PostgreSQL. A real ``toollens import`` in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import sqlalchemy as sa
from dbfixture import OpenPage

from benchmarks.workload import write_workload
from db.engine import make_engine
from db.schema import ImportRun
from db.writes import processes
from db.writes.traces import GONE_ERROR, finish_import, mark_gone_imports, start_import
from ingest.importing import pipeline


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _imports(engine: sa.Engine) -> list[tuple[int, str, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(ImportRun.id, ImportRun.state, ImportRun.error).order_by(ImportRun.id)
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


def test_a_killed_imports_workers_exit_within_a_second_and_the_import_shows_interrupted(
    tmp_path: Path, db_url: str
) -> None:
    path = tmp_path / "big.jsonl"
    write_workload(path, 60_000, seed=3)
    engine = make_engine(db_url)
    command = [sys.executable, "-m", "ingest.cli", "import", str(path), "--db", db_url]
    importer = subprocess.Popen(
        [*command, "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    parent = psutil.Process(importer.pid)
    deadline = time.monotonic() + 60
    while len(parent.children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = [child.pid for child in parent.children()]
    assert len(workers) == 2
    assert [state for _, state, _ in _imports(engine)] == ["running"]

    os.kill(importer.pid, signal.SIGKILL)
    importer.wait()
    killed = time.monotonic()
    while not all(_gone(pid) for pid in workers) and time.monotonic() - killed < 5:
        time.sleep(0.02)
    assert all(_gone(pid) for pid in workers)
    assert time.monotonic() - killed < 1.0

    # Still "running" until someone looks: the next import does.
    [(first, state, _)] = _imports(engine)
    assert state == "running"
    small = tmp_path / "small.jsonl"
    write_workload(small, 50, seed=4)
    pipeline.import_paths(engine, [small], workers=0)
    assert _imports(engine) == [(first, "interrupted", GONE_ERROR), (first + 1, "done", None)]
    engine.dispose()


def test_an_import_whose_process_runs_stays_running(db_url: str) -> None:
    engine = make_engine(db_url)
    mine = start_import(engine, origin="cli", paths=["a.jsonl"], encoding="o200k_base")
    assert mark_gone_imports(engine) == []
    assert _imports(engine) == [(mine, "running", None)]
    finish_import(engine, mine, state="done")
    engine.dispose()


def test_an_import_recorded_by_a_process_that_ended_is_marked_interrupted(db_url: str) -> None:
    engine = make_engine(db_url)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    this = processes.current()
    other_start = None if this.start is None else this.start.rsplit(":", 1)[0] + ":1"
    imports = [
        start_import(engine, origin="cli", paths=[name], encoding="o200k_base")
        for name in ("freed-pid.jsonl", "reused-pid.jsonl", "other-host.jsonl")
    ]
    with engine.begin() as conn:
        for import_id, (host, pid, start) in zip(
            imports,
            [
                (this.host, child.pid, None),  # its pid is free now
                (this.host, this.pid, other_start),  # its pid now belongs to another process
                ("another-host", child.pid, None),  # cannot be checked from here
            ],
            strict=True,
        ):
            conn.execute(
                sa.update(ImportRun)
                .where(ImportRun.id == import_id)
                .values(host=host, pid=pid, process_start=start)
            )
    expected_gone = imports[:2] if this.start is not None else imports[:1]
    assert mark_gone_imports(engine) == expected_gone
    states = {import_id: state for import_id, state, _ in _imports(engine)}
    assert [states[i] for i in imports] == (
        ["interrupted", "interrupted", "running"]
        if this.start is not None
        else ["interrupted", "running", "running"]
    )
    engine.dispose()


def test_the_imports_page_shows_an_import_whose_process_is_gone_as_interrupted(
    open_page: OpenPage, tmp_path: Path, db_url: str
) -> None:

    from dashboard import pages

    small = tmp_path / "small.jsonl"
    write_workload(small, 50, seed=4)
    engine = make_engine(db_url)
    pipeline.import_paths(engine, [small], workers=0)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with engine.begin() as conn:  # as a killed import leaves it
        conn.execute(
            sa.update(ImportRun).values(
                state="running", finished_at=None, pid=child.pid, process_start=None
            )
        )
    at = open_page(db_url, pages.IMPORTS.script)
    states = [list(frame.value["state"]) for frame in at.dataframe if "state" in frame.value]
    assert states == [["interrupted"]]
    assert [state for _, state, _ in _imports(engine)] == ["interrupted"]
    engine.dispose()
