"""Every difference between SQLite and PostgreSQL lives here.

Bulk loading, time bucketing, JSON text extraction, JSON list membership and percentiles are
spelled differently by the two databases; callers ask this module and never test
``dialect.name`` themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, assert_never

import orjson
from sqlalchemy import Boolean, Connection, Engine, String, Table, bindparam, func
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement

DialectName = Literal["sqlite", "postgresql"]
#: Rows SQLite's ANALYZE looks at per index (``PRAGMA analysis_limit``).
SQLITE_ANALYSIS_LIMIT = 1000


def name_of(conn: Connection | Engine) -> DialectName:
    """``sqlite`` or ``postgresql``; anything else is not supported."""
    name = conn.dialect.name
    if name == "sqlite":
        return "sqlite"
    if name == "postgresql":
        return "postgresql"
    raise ValueError(f"unsupported database dialect {name!r} (use SQLite or PostgreSQL)")


def json_dumps(value: Any) -> str:
    """``value`` as JSON text: orjson, several times faster than the standard library, the
    serializer of every JSON column (the engine's and the bulk writer's)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def _json_text(value: Any) -> str | None:
    return None if value is None else json_dumps(value)


def _sqlite_value(value: Any) -> Any:
    # SQLAlchemy's SQLite DateTime stores naive UTC text in this exact shape; raw writes must match
    # so that ORM reads and SQL comparisons see the same values.
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


def bulk_insert(
    conn: Connection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    json_columns: frozenset[str] = frozenset(),
) -> None:
    """Insert ``rows`` (tuples in ``columns`` order) into ``table`` as fast as the driver allows.

    SQLite: the DBAPI cursor's ``executemany`` inside the caller's transaction. PostgreSQL:
    ``COPY … FROM STDIN``, about 6x faster than ``executemany`` there.
    """
    json_idx = frozenset(i for i, c in enumerate(columns) if c in json_columns)
    kind = name_of(conn)
    if kind == "sqlite":
        placeholders = ", ".join("?" for _ in columns)
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"
        raw = conn.connection.driver_connection
        assert raw is not None
        cur = raw.cursor()
        try:
            cur.executemany(sql, _converted(rows, json_idx, _sqlite_value))
        finally:
            cur.close()
    elif kind == "postgresql":
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as cp:
            for row in _converted(rows, json_idx, None):
                cp.write_row(row)
    else:
        assert_never(kind)


def _converted(
    rows: Sequence[Sequence[Any]], json_idx: frozenset[int], plain: Callable[[Any], Any] | None
) -> Sequence[Sequence[Any]]:
    """``rows`` with JSON columns serialized and, when ``plain`` is given, every column holding
    a datetime passed through it; columns needing nothing are left alone.

    Works a column at a time: transposing with ``zip`` and testing a column's value types with
    ``set(map(type, ...))`` run in C, where a per-value Python call cost a quarter of a write.
    """
    if not rows or (not json_idx and plain is None):
        return rows
    columns = list(zip(*rows, strict=True))
    changed = False
    for i, column in enumerate(columns):
        if i in json_idx:
            values = column if plain is None else tuple(map(plain, column))
            columns[i] = tuple(map(_json_text, values))
            changed = True
        elif plain is not None and any(issubclass(t, datetime) for t in set(map(type, column))):
            columns[i] = tuple(map(plain, column))
            changed = True
    return list(zip(*columns, strict=True)) if changed else rows


def concurrent_writers(conn: Connection | Engine) -> bool:
    """Whether several processes can usefully write at the same time (PostgreSQL), or writes
    queue for one lock anyway and are best done in turn (SQLite)."""
    return name_of(conn) == "postgresql"


def reserve_ids(conn: Connection, table: Table, count: int) -> list[int] | None:
    """``count`` fresh ids of ``table``, increasing, for rows written later in any order; or
    ``None`` where rows written one batch at a time get increasing ids anyway (SQLite)."""
    kind = name_of(conn)
    if kind == "sqlite":
        return None
    if kind == "postgresql":
        sequence = f"pg_get_serial_sequence('{table.name}', 'id')"
        sql = f"SELECT nextval({sequence}) FROM generate_series(1, {int(count)})"
        return [int(v) for v in conn.exec_driver_sql(sql).scalars()]
    assert_never(kind)


def insert_new(
    conn: Connection, table: Table, key: str, rows: Sequence[dict[str, Any]]
) -> dict[Any, int]:
    """Insert the ``rows`` whose unique ``key`` is not stored yet; ``{key: id}`` of those
    inserted. Rows whose key exists (or is being inserted by another transaction, which this
    one then waits for) are skipped, so concurrent writers never fail on a duplicate.

    On PostgreSQL the rows go in key order: two transactions inserting overlapping keys then
    take their locks in the same order and cannot deadlock; ids still follow the input order
    (rows without an ``id`` get one from :func:`reserve_ids` first).
    """
    if not rows:
        return {}
    kind = name_of(conn)
    if kind == "sqlite":
        stmt: Any = sqlite.insert(table).on_conflict_do_nothing(index_elements=[key])
    elif kind == "postgresql":
        stmt = postgresql.insert(table).on_conflict_do_nothing(index_elements=[key])
        if "id" not in rows[0]:  # ids in input order, though the rows go in key order
            ids = reserve_ids(conn, table, len(rows)) or []
            rows = [{**row, "id": n} for row, n in zip(rows, ids, strict=True)]
        rows = sorted(rows, key=lambda row: row[key])
    else:
        assert_never(kind)
    returned = conn.execute(stmt.returning(table.c[key], table.c.id), list(rows))
    return {row_key: row_id for row_key, row_id in returned}


def time_bucket(conn: Connection, column: Any, unit: Literal["hour", "day", "week"]) -> Any:
    """An expression truncating a timestamp column to ``unit``, as text ``YYYY-MM-DD[ HH]``."""
    kind = name_of(conn)
    if kind == "sqlite":
        fmt = {"hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d", "week": "%Y-W%W"}[unit]
        return func.strftime(fmt, column)
    if kind == "postgresql":
        fmt = {"hour": "YYYY-MM-DD HH24:00", "day": "YYYY-MM-DD", "week": 'IYYY-"W"IW'}[unit]
        return func.to_char(func.date_trunc(unit, column), fmt)
    assert_never(kind)


def json_text(conn: Connection, column: Any, key: str) -> ColumnElement[Any]:
    """The text value of ``column[key]`` for a JSON column."""
    kind = name_of(conn)
    if kind == "sqlite":
        return func.json_extract(column, f"$.{key}")
    if kind == "postgresql":
        result: ColumnElement[Any] = column.op("->>")(key)
        return result
    assert_never(kind)


def analyze(conn: Connection, tables: Sequence[str]) -> None:
    """Refresh the planner's statistics of ``tables`` after a large load."""
    kind = name_of(conn)
    if kind == "sqlite":
        # A row limit per index keeps this to milliseconds on any size; estimates suffice.
        conn.exec_driver_sql(f"PRAGMA analysis_limit={SQLITE_ANALYSIS_LIMIT}")
        for table in tables:
            conn.exec_driver_sql(f"ANALYZE {table}")
    elif kind == "postgresql":
        conn.exec_driver_sql(f"ANALYZE {', '.join(tables)}")
    else:
        assert_never(kind)


class JsonListContains(ColumnElement[bool]):
    """``value`` is an element of the JSON list in ``column`` (see :func:`json_list_contains`)."""

    inherit_cache = True
    type = Boolean()

    def __init__(self, column: Any, value: str) -> None:
        self.column = column
        self.value = bindparam(None, value, type_=String())


@compiles(JsonListContains, "sqlite")
def _sqlite_list_contains(element: JsonListContains, compiler: Any, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    value = compiler.process(element.value, **kw)
    return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE json_each.value = {value})"


@compiles(JsonListContains, "postgresql")
def _postgresql_list_contains(element: JsonListContains, compiler: Any, **kw: Any) -> str:
    column = compiler.process(element.column, **kw)
    value = compiler.process(element.value, **kw)
    # ``@>`` on JSONB: containment of a one-element array is list membership.
    return f"({column} @> jsonb_build_array(CAST({value} AS text)))"


def json_list_contains(column: Any, value: str) -> ColumnElement[bool]:
    """A condition: the JSON list in ``column`` holds the string ``value``.

    Built without a connection (filters are composed before one exists); each database gets
    its own spelling when the statement is compiled.
    """
    return JsonListContains(column, value)


def reclaim_space(engine: Engine) -> None:
    """Give the space of deleted rows back: ``VACUUM`` outside any transaction.

    SQLite rewrites the whole file (it never shrinks by itself); on PostgreSQL plain ``VACUUM``
    makes the space reusable and refreshes statistics (autovacuum does the same in time;
    ``VACUUM FULL``, which returns it to the operating system, locks every table and is left
    to the administrator).
    """
    kind = name_of(engine)
    # A DBAPI connection of its own: VACUUM refuses to run inside a transaction, and the
    # engine's connections always begin one (SQLite's through the ``begin`` listener).
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if kind == "sqlite":
            cur.execute("VACUUM")
            # Under WAL the rewritten pages sit in the -wal file; the file shrinks only once
            # they are checkpointed back into it.
            cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        elif kind == "postgresql":
            raw.driver_connection.autocommit = True  # type: ignore[union-attr]
            cur.execute("VACUUM (ANALYZE)")
        else:
            assert_never(kind)
        cur.close()
    finally:
        raw.invalidate()  # its autocommit setting must not go back into the pool
