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

#: Why a ClickHouse store refuses the dashboard's own writes (review notes, corrections,
#: reviewed marks): its writer takes imports and deletions only.
REVIEW_REFUSED = (
    "This store is a ClickHouse store: it takes imports and deletions, but not review notes, "
    "corrections or reviewed marks yet (docs/clickhouse.md). Review traces in a SQLite or "
    "PostgreSQL store."
)


def review_refused(engine: Engine) -> str | None:
    """Why ``engine``'s store cannot keep review notes, corrections and reviewed marks
    (``None`` when it can)."""
    return REVIEW_REFUSED if engine.dialect.name == "clickhouse" else None


#: The least time between two writes of the OTLP receiver on a ClickHouse store: every insert
#: makes a part per partition per shard, and parts made faster than about one a second per
#: table are what the server's merges fall behind on.
CLICKHOUSE_ROUND_SECONDS = 1.0


def round_seconds(engine: Engine) -> float:
    """The least time between two writes of a trickle of traces (the OTLP receiver's rounds)
    into ``engine``'s store: :data:`CLICKHOUSE_ROUND_SECONDS` on ClickHouse, none elsewhere (a
    SQLite or PostgreSQL write costs a transaction, not a part to merge)."""
    return CLICKHOUSE_ROUND_SECONDS if engine.dialect.name == "clickhouse" else 0.0


def start_session(
    engine: Engine, *, origin: str, paths: Sequence[str], encoding: str
) -> ImportSession:
    """Record a new import run into ``engine``'s store and open its door
    (:meth:`ImportSession.start`)."""
    kind = ClickHouseImportSession if engine.dialect.name == "clickhouse" else ImportSession
    return kind.start(engine, origin=origin, paths=paths, encoding=encoding)


__all__ = [
    "CLICKHOUSE_ROUND_SECONDS",
    "REVIEW_REFUSED",
    "review_refused",
    "round_seconds",
    "start_session",
]
