"""Which import door a store has: :func:`start_session` opens the run on any engine.

SQLite and PostgreSQL share :class:`db.session.ImportSession`; a ClickHouse store has its own
(:class:`db.clickhouse.session.ClickHouseImportSession`, the same interface). The importer calls
this and never asks which engine it writes to.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine

from db.clickhouse.session import ClickHouseImportSession
from db.session import ImportSession


def start_session(
    engine: Engine, *, origin: str, paths: Sequence[str], encoding: str
) -> ImportSession:
    """Record a new import run into ``engine``'s store and open its door
    (:meth:`ImportSession.start`)."""
    kind = ClickHouseImportSession if engine.dialect.name == "clickhouse" else ImportSession
    return kind.start(engine, origin=origin, paths=paths, encoding=encoding)


__all__ = ["start_session"]
