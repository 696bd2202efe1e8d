"""Fresh test databases at the head schema without running the migration chain each time.

Most tests start from an empty database, and bringing one through the migrations costs
0.25 s on SQLite and 0.5-0.7 s on PostgreSQL (Alembic loads and runs every migration), which
added up to a fifth of the suite's time. The first empty database of each dialect in a test
process is migrated for real while the statements the driver receives are recorded; every
later empty database of that dialect gets the same statements replayed in one transaction, so
it holds exactly what the migrations would have written. Then the real
:func:`db.migrate.upgrade` runs, finds the head and checks the rollups as it always does.

Only an *empty* database is replayed: a store at an older revision (the migration tests) and
every database opened by a served dashboard or CLI subprocess go through Alembic. The replay
is checked against a real migration in ``tests/test_schema_replay.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event, inspect

from db import migrate

#: Transaction control the engine's own listeners issue; the replay runs in one transaction.
_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")

Statement = tuple[str, Any, bool]
_recorded: dict[str, list[Statement]] = {}


def _empty(engine: Engine) -> bool:
    with engine.connect() as conn:
        return not inspect(conn).get_table_names()


def record(engine: Engine, real: Callable[[Engine], None]) -> list[Statement]:
    """The statements ``real(engine)`` sends to the driver (transaction control left out)."""
    statements: list[Statement] = []

    def before(_conn: Any, _cursor: Any, sql: str, params: Any, _ctx: Any, many: bool) -> None:
        if not sql.lstrip().upper().startswith(_CONTROL):
            statements.append((sql, params, many))

    event.listen(engine, "before_cursor_execute", before)
    try:
        real(engine)
    finally:
        event.remove(engine, "before_cursor_execute", before)
    return statements


def replay(engine: Engine, statements: list[Statement]) -> None:
    """Run ``statements`` as recorded, in one transaction."""
    with engine.begin() as conn:
        for sql, params, many in statements:
            if many:
                conn.exec_driver_sql(sql, list(params))
            elif params:
                conn.exec_driver_sql(sql, params)
            else:
                conn.exec_driver_sql(sql)


#: The migration itself (:func:`install` replaces the module's name for it).
real_upgrade = migrate.upgrade


def head_statements(engine: Engine) -> list[Statement]:
    """The statements that bring an empty database of ``engine``'s dialect to the head,
    recorded by migrating ``engine`` (which must be empty) the first time they are asked for."""
    name = engine.dialect.name
    if name not in _recorded:
        _recorded[name] = record(engine, real_upgrade)
    return _recorded[name]


def upgrade(engine: Engine, revision: str = "head") -> None:
    """:func:`db.migrate.upgrade`, with an empty database brought to the head by a replay."""
    if revision != "head" or not _empty(engine):
        real_upgrade(engine, revision)
        return
    if engine.dialect.name not in _recorded:
        head_statements(engine)
        return
    replay(engine, _recorded[engine.dialect.name])
    real_upgrade(engine)


def install() -> None:
    """Route :func:`db.migrate.upgrade` of an empty database through the replay."""
    migrate.upgrade = upgrade  # type: ignore[assignment]
