"""The schema replay of ``tests/schema_replay.py`` builds exactly what the migrations build:
the same tables, columns, indexes, constraints, triggers and seeded rows, on both databases."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schema_replay
import sqlalchemy as sa
from conftest import fresh_pg_schema

from db.engine import make_engine

_SQLITE_CATALOG = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
_PG_CATALOG = (
    # Columns with their types and defaults, indexes, constraints and triggers of the schema.
    "SELECT 'column', table_name || '.' || column_name, data_type || ' ' || is_nullable || ' '"
    " || coalesce(column_default, '') || ' ' || coalesce(generation_expression, '')"
    " FROM information_schema.columns WHERE table_schema = current_schema()"
    " UNION ALL SELECT 'index', indexname, indexdef FROM pg_indexes"
    " WHERE schemaname = current_schema()"
    " UNION ALL SELECT 'constraint', c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c"
    " JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = current_schema()"
    " UNION ALL SELECT 'trigger', t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
    " JOIN pg_class k ON k.oid = t.tgrelid JOIN pg_namespace n ON n.oid = k.relnamespace"
    " WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
    " UNION ALL SELECT 'function', p.proname, pg_get_functiondef(p.oid) FROM pg_proc p"
    " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()"
    " ORDER BY 1, 2, 3"
)


def _snapshot(engine: sa.Engine) -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[Any, ...]]]]:
    """The database's catalog (schema names taken out) and every table's rows."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            catalog = [tuple(row) for row in conn.exec_driver_sql(_SQLITE_CATALOG)]
        else:
            schema = conn.exec_driver_sql("SELECT current_schema()").scalar_one()
            catalog = [
                tuple(re.sub(rf'"?{schema}"?\.', "", str(v)) for v in row)
                for row in conn.exec_driver_sql(_PG_CATALOG)
            ]
        rows = {
            name: sorted(
                (tuple(row) for row in conn.execute(sa.text(f'SELECT * FROM "{name}"'))), key=repr
            )
            for name in sa.inspect(conn).get_table_names()
        }
    return catalog, rows


def _databases(dialect: str, folder: Path, stack: contextlib.ExitStack) -> Iterator[sa.Engine]:
    """Empty databases of ``dialect``, unmigrated, each closed with ``stack``."""
    for n in range(3):
        url = (
            stack.enter_context(fresh_pg_schema())
            if dialect == "postgresql"
            else f"sqlite:///{folder / str(n)}.db"
        )
        engine = make_engine(url, migrate=False)
        stack.callback(engine.dispose)
        yield engine


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_replayed_database_equals_a_migrated_one(dialect: str, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        migrated, recorder, replayed = _databases(dialect, tmp_path, stack)
        schema_replay.real_upgrade(migrated)
        statements = schema_replay.record(recorder, schema_replay.real_upgrade)
        schema_replay.replay(replayed, statements)
        schema_replay.real_upgrade(replayed)  # at the head: only looks at the rollups
        catalog, rows = _snapshot(migrated)
        assert (catalog, rows) == _snapshot(recorder)
        replayed_catalog, replayed_rows = _snapshot(replayed)
    assert len(catalog) > 50  # not two empty catalogs compared
    assert rows["alembic_version"]  # the revision is among the rows compared
    assert replayed_catalog == catalog
    assert replayed_rows == rows
