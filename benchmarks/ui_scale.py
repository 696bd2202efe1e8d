"""A bigger benchmark store from a smaller one, by SQL: ``factor`` shifted copies of every row.

Generating rows in Python costs minutes per million messages (:mod:`benchmarks.ui_store`);
copying them inside the database costs seconds. Copy ``k`` (``0 … factor-1``) of the base store
is the base with

* every id shifted by ``k`` times the base's largest id of its table (trace, import and every
  child id alike), so ids stay dense per copy and unique overall;
* new trace identities: ``dedupe_key``, ``external_id`` and ``display_id`` with ``.c<k>``
  appended, a content hash whose last 8 hex digits are ``k`` (the times differ, so an import
  would have hashed other content), source lines after the base's;
* every timestamp moved ``k × days`` later, so the copies follow each other in time as more
  imports of the same agents would; copy 0 is the base itself, unchanged.

Messages, calls, results and findings are copied as stored: their derived facts depend only on
their trace, and each copy is a whole trace, so trace counters (``message_count``,
``problem_count`` …) stay consistent. The search index gets the copies' rows as the import
would have written them (SQLite's FTS5 tables; PostgreSQL's generated ``search_vector``
column fills itself). Secondary indexes are dropped for the copy and built again afterwards
(several times faster than updating them row by row); foreign keys are not checked while
copying (the copied rows reference the copied traces by construction).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from sqlalchemy import Engine, Table, update

from db import dialect
from db.engine import SQLITE_JOURNAL_MODE, SQLITE_SYNCHRONOUS
from db.schema import Base, ImportRun, UtcTimeStamp

#: The tables copied, parents first. Every other table of the base store must be empty
#: (a bench store has no rejected records, source files or per-file accounting), except the
#: derived summaries that :func:`benchmarks.ui_store.after_bulk_load` rebuilds.
COPIED_TABLES: tuple[str, ...] = (
    "imports", "traces", "messages", "tool_calls", "tool_results", "findings", "error_streaks",
    "annotations", "trace_updates",
)  # fmt: skip
#: Tables a bench store leaves empty; scaling refuses a base that has rows in them.
EMPTY_TABLES: tuple[str, ...] = ("rejected_records", "import_files", "source_files")
#: Trace identity columns that get the copy's suffix.
_SUFFIXED = ("dedupe_key", "external_id", "display_id")

Log = Callable[[str], None]


def _quote_base(kind: str, base: str, table: str) -> str:
    return f"{base}.{table}" if kind == "sqlite" else f'"{base}".{table}'


def _shift_time(kind: str, column: str, days: int) -> str:
    if days == 0:
        return column
    if kind == "sqlite":
        # Stored as naive UTC text 'YYYY-MM-DD HH:MM:SS.ffffff' (db.dialect._sqlite_value):
        # datetime() shifts the whole seconds, the fraction is kept as it was.
        return f"datetime({column}, '+{days} days') || substr({column}, 20)"
    return f"{column} + interval '{days} days'"


def _expressions(kind: str, table: Table, k: int, days: int, max_ids: dict[str, int]) -> list[str]:
    """The SELECT list of copy ``k`` of ``table``, in the order of its columns."""
    out = []
    for col in table.columns:
        name = col.name
        if name == "id":
            expr = f"id + {k * max_ids[table.name]}"
        elif name == "trace_id":
            expr = f"trace_id + {k * max_ids['traces']}"
        elif name in ("import_id", "last_import_id"):
            expr = f"{name} + {k * max_ids['imports']}"
        elif isinstance(col.type, UtcTimeStamp):
            expr = _shift_time(kind, name, k * days)
        elif k and table.name == "traces" and name in _SUFFIXED:
            expr = f"{name} || '.c{k}'"
        elif k and table.name == "traces" and name == "content_hash":
            expr = f"substr(content_hash, 1, 56) || '{k:08x}'"
        elif k and table.name == "traces" and name == "source_line":
            expr = f"source_line + {k * max_ids['traces']}"
        elif k and table.name == "imports" and name == "paths":
            copy = f'["copy {k} of the base store"]'
            expr = f"'{copy}'" if kind == "sqlite" else f"CAST('{copy}' AS jsonb)"
        else:
            expr = name
        out.append(expr)
    return out


def _secondary_indexes(conn: Any, kind: str, table: str) -> list[tuple[str, str]]:
    """``(name, CREATE statement)`` of ``table``'s indexes that no constraint owns."""
    if kind == "sqlite":
        rows = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
            "AND sql IS NOT NULL",
            (table,),
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = "
            "current_schema() AND i.tablename = %s AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
            "WHERE c.conname = i.indexname)",
            (table,),
        ).fetchall()
    return [(str(name), str(sql)) for name, sql in rows]


def scale_into(
    target: Engine, base: str, factor: int, days: int, log: Log = print
) -> dict[str, int]:
    """Fill the empty, migrated store ``target`` with ``factor`` copies of the base store
    ``base`` (SQLite: the base file, attached; PostgreSQL: the base's schema in the same
    database); copy ``k`` moved ``k × days`` later. Returns the rows copied per table.

    The caller runs :func:`benchmarks.ui_store.after_bulk_load` afterwards (statistics, and
    whatever else a bulk load must refresh).
    """
    kind = dialect.name_of(target)
    tables = {name: cast(Table, Base.metadata.tables[name]) for name in COPIED_TABLES}
    raw = target.raw_connection()
    try:
        cur = raw.cursor()
        if kind == "sqlite":
            cur.execute("PRAGMA foreign_keys = OFF")
            # No journal while the new file is filled: under WAL one transaction of 10M
            # messages wrote all of them twice (WAL, then checkpoint), with the disk space for
            # both. The file is a partial one that nobody reads until it is complete.
            cur.execute("PRAGMA journal_mode = OFF")
            cur.execute("PRAGMA synchronous = OFF")
            cur.execute("PRAGMA cache_size = -262144")
            cur.execute("ATTACH DATABASE ? AS base", (base,))
            source = "base"
            cur.execute("BEGIN IMMEDIATE")
        else:
            source = base
            # Foreign keys are checked by triggers, which replica mode skips; big sorts for
            # the index builds.
            cur.execute("SET LOCAL session_replication_role = replica")
            cur.execute("SET LOCAL maintenance_work_mem = '512MB'")
            cur.execute("SET LOCAL synchronous_commit = off")
        for name in EMPTY_TABLES:
            cur.execute(f"SELECT count(*) FROM {_quote_base(kind, source, name)}")
            if cur.fetchone()[0]:
                raise ValueError(f"the base store has rows in {name}; scaling does not copy them")
        max_ids = {}
        for name in COPIED_TABLES:
            cur.execute(f"SELECT coalesce(max(id), 0) FROM {_quote_base(kind, source, name)}")
            max_ids[name] = int(cur.fetchone()[0])
        dropped: list[tuple[str, str]] = []
        for name in COPIED_TABLES:
            for index, create in _secondary_indexes(cur, kind, name):
                cur.execute(f"DROP INDEX {index}")
                dropped.append((index, create))
        copied: dict[str, int] = {}
        for name, table in tables.items():
            started = time.perf_counter()
            columns = ", ".join(c.name for c in table.columns)
            for k in range(factor):
                select_list = ", ".join(_expressions(kind, table, k, days, max_ids))
                cur.execute(
                    f"INSERT INTO {name} ({columns}) SELECT {select_list} "
                    f"FROM {_quote_base(kind, source, name)} ORDER BY id"
                )
                copied[name] = copied.get(name, 0) + max(cur.rowcount, 0)
            log(f"  {name}: {copied[name]:,} rows in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        for _, create in dropped:
            cur.execute(create)
        log(f"  {len(dropped)} indexes built in {time.perf_counter() - started:.1f} s")
        if kind == "sqlite":
            started = time.perf_counter()
            _sqlite_search_rows(cur)
            log(f"  search index filled in {time.perf_counter() - started:.1f} s")
        else:
            for name in COPIED_TABLES:
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                    f"(SELECT coalesce(max(id), 1) FROM {name}))"
                )
        raw.commit() if kind == "postgresql" else cur.execute("COMMIT")
        if kind == "sqlite":
            cur.execute("DETACH DATABASE base")
            cur.execute(f"PRAGMA journal_mode = {SQLITE_JOURNAL_MODE}")
            cur.execute(f"PRAGMA synchronous = {SQLITE_SYNCHRONOUS}")
            cur.execute("PRAGMA foreign_keys = ON")
        cur.close()
    finally:
        raw.close()
    return copied


def _sqlite_search_rows(cur: Any) -> None:
    """The FTS5 rows of every searched row, as :func:`db.writes.search_index.index_traces` writes
    them."""
    for table, column in dialect.SEARCHED_COLUMNS.items():
        cur.execute(
            f"INSERT INTO {dialect.search_table(table)}(rowid, {column}) SELECT id, "
            f"substr({column}, 1, {dialect.SEARCH_TEXT_CHARS}) FROM {table} "
            f"WHERE {column} IS NOT NULL"
        )


def set_marker(engine: Engine, text: str) -> None:
    """Write ``text`` as the only path of the store's first import (where the bench's marker
    lives, see :func:`benchmarks.ui_store.store_marker`)."""
    with engine.begin() as conn:
        first = conn.execute(ImportRun.__table__.select().order_by(ImportRun.id).limit(1)).first()
        if first is not None:
            conn.execute(update(ImportRun).where(ImportRun.id == first.id).values(paths=[text]))


def table_counts(engine: Engine, tables: Sequence[str] = COPIED_TABLES) -> dict[str, int]:
    """Rows per table (for the build's report and the tests)."""
    with engine.connect() as conn:
        return {
            t: int(conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar_one()) for t in tables
        }
