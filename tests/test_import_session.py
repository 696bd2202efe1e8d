"""The door every import writes through (:mod:`db.session`): how workers connect without the
password on any command line, and the statistics refreshed after a large import."""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psutil
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from benchmarks.workload import write_workload
from db.contract.vocabulary import DEFAULT_ENCODING
from db.engine import make_engine
from db.session import ANALYZE_MIN_MESSAGES, ImportSession, WorkerConnection
from ingest.importing import batches, pipeline

#: Any password does: the test server trusts local connections, so it is accepted and ignored.
PASSWORD = "door-Pw-7f3k9q"


def test_a_worker_connection_pickles_with_its_password_and_prints_without_it() -> None:
    url = make_url(f"postgresql+psycopg://me:{PASSWORD}@db.example/traces")
    connection = WorkerConnection(url)
    copy = pickle.loads(pickle.dumps(connection))
    assert copy.url.password == PASSWORD
    assert copy == connection
    assert PASSWORD not in repr(copy)
    assert PASSWORD not in str(copy)


def _command_lines(pids: Iterable[int]) -> dict[int, str]:
    """The command lines (as ``ps`` shows them) of this process's children among ``pids``."""
    wanted = set(pids)
    return {
        child.pid: " ".join(child.cmdline())
        for child in psutil.Process().children(recursive=True)
        if child.pid in wanted
    }


def test_the_check_sees_a_password_a_child_was_given_on_its_command_line() -> None:
    url = f"postgresql+psycopg://me:{PASSWORD}@db.example/traces"
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", url],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        shown = _command_lines([child.pid])
    finally:
        child.communicate(b"")
    assert [PASSWORD in line for line in shown.values()] == [True]


def test_no_worker_of_a_postgresql_import_has_the_password_on_its_command_line(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batches, "BATCH_MESSAGES", 300)
    path = tmp_path / "w.jsonl"
    write_workload(path, 1_500, seed=4)
    engine = make_engine(make_url(pg_url).set(password=PASSWORD))
    seen: dict[int, str] = {}
    collect = batches.BatchWriter._collect

    def look_at_the_workers(writer: batches.BatchWriter, done: Any) -> None:
        # The parent collects each batch while its pool is running: every worker is alive.
        assert writer.pool is not None
        seen.update(_command_lines(writer.pool._processes))
        collect(writer, done)

    monkeypatch.setattr(batches.BatchWriter, "_collect", look_at_the_workers)
    summary = pipeline.import_paths(engine, [path], workers=2)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT count(*) FROM traces")).scalar_one()
    engine.dispose()
    # The workers wrote (they connected with the password) ...
    assert engine.url.password == PASSWORD
    assert summary.messages == 1_500 and stored == summary.traces > 0
    assert len(seen) == 2
    # ... and not one of them shows it to ps.
    assert [cmdline for cmdline in seen.values() if PASSWORD in cmdline] == []


def _analyzed(engine: sa.Engine) -> bool:
    """Whether the planner has statistics of the ``traces`` table."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            return bool(
                conn.execute(
                    sa.text("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
                ).scalar_one()
            )
        return (
            conn.execute(
                sa.text("SELECT reltuples FROM pg_class WHERE oid = to_regclass('traces')")
            ).scalar_one()
            >= 0
        )


@pytest.mark.parametrize(
    ("messages", "state", "analyzed"),
    [
        (ANALYZE_MIN_MESSAGES - 1, "done", False),
        (ANALYZE_MIN_MESSAGES, "interrupted", False),
        (ANALYZE_MIN_MESSAGES, "done", True),
    ],
)
def test_a_finished_import_of_many_messages_refreshes_the_planner_statistics(
    db_url: str, messages: int, state: str, analyzed: bool
) -> None:
    engine = make_engine(db_url)
    session = ImportSession.start(engine, origin="test", paths=[], encoding=DEFAULT_ENCODING)
    assert _analyzed(engine) is False
    session.finish([], messages=messages, state=state)
    with engine.connect() as conn:
        run = conn.execute(sa.text("SELECT state, messages FROM imports")).one()
    assert _analyzed(engine) is analyzed
    engine.dispose()
    assert tuple(run) == (state, messages)


def test_a_writing_workers_sqlite_file_is_not_memory_mapped_and_other_engines_are(
    tmp_path: Path,
) -> None:
    """A memory map keeps the pages it touched in the process's resident set, which would grow
    with the store; a writing worker reads through SQLite's bounded page cache instead."""
    engine = make_engine(str(tmp_path / "store.db"))
    worker = WorkerConnection.of(engine).session(0).engine
    try:
        mapped = []
        for each in (engine, worker):
            with each.connect() as conn:
                mapped.append(conn.exec_driver_sql("PRAGMA mmap_size").scalar())
        # (SQLite lowers SQLITE_MMAP_SIZE, 2 GiB, to its own ceiling, 64 KiB under it.)
        assert mapped == [2 * 1024**3 - 64 * 1024, 0]
    finally:
        worker.dispose()
        engine.dispose()
