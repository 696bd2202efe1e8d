"""Write transactions: how a connection says it will write, and how SQLite begins one."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

#: Execution option that marks a connection as a writer (see :func:`writing`).
WRITE_OPTION = "toollens_write"


def on_sqlite_begin(conn: Any) -> None:
    # Writers start with BEGIN IMMEDIATE, taking the write lock up front: a deferred transaction
    # that later tries to write can fail with SQLITE_BUSY at once, an immediate one waits
    # busy_timeout. Readers keep a deferred BEGIN so they never queue behind an import.
    if conn.get_execution_options().get(WRITE_OPTION):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


def writing(engine: Engine) -> Any:
    """A write transaction: ``with writing(engine) as conn: ...`` (BEGIN IMMEDIATE on SQLite)."""
    return engine.execution_options(**{WRITE_OPTION: True}).begin()
