"""Reading millions of rows as Arrow tables: the ADBC drivers, no Python object per value.

``toollens pairs --format csv`` writes every pair of the store, 4-5 million for 10 million
messages. Through the DB-API (:mod:`db.bulk.streaming`) each value of each row becomes a Python
object first, and building and converting them is most of the time such a read takes. The
ADBC drivers (Apache Arrow Database Connectivity: ``adbc-driver-sqlite`` over SQLite's C API,
``adbc-driver-postgresql`` over libpq's binary ``COPY``) read the rows straight into Arrow
columns in C, and the caller hands the tables to a C++ writer (``pyarrow.csv``).

:func:`stream_range_tables` runs one statement per range of a key, like
:func:`db.bulk.streaming.stream_ranges`: on connections of their own (read-only on SQLite), in
threads that stay a few ranges ahead of the consumer (``db.bulk.streaming.in_order``; the drivers
and the writer release the GIL), handing the tables over in order, each made by the
caller's function that puts a range's tables together (:func:`conform` casts them to the
caller's schema: timestamps as UTC instants on both databases, where SQLite keeps them as text
and PostgreSQL as ``timestamptz``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from typing import Any
from urllib.parse import quote

import pyarrow as pa
from sqlalchemy import Engine
from sqlalchemy.sql import Select

from db.bulk.streaming import in_order
from db.engine import PG_SESSION_SQL, SQLITE_READ_PRAGMAS, other_processes_can_open

#: Stand-ins for a range's bounds in the statement's SQL, replaced per range (the statement is
#: compiled once, with every other value written out, so PostgreSQL can read it by ``COPY``).
_LO, _HI = -7_345_912_001, -7_345_912_002
#: Rows the SQLite driver reads in one batch, and looks at to infer each column's type (a
#: statement option): more than a range holds, so a range is one batch and a column that
#: starts with NULLs still gets its type. A range that holds more is read again in one batch
#: when a column changes its type after the first (:func:`_sqlite_table`).
_SQLITE_BATCH_ROWS = 1_000_000
_SQLITE_BATCH_OPTION = "adbc.sqlite.query.batch_rows"
#: What timestamps are in the tables handed over.
UTC_MICROSECONDS = pa.timestamp("us", tz="UTC")


#: The bulk range reads' own PostgreSQL settings. No parallel workers: the ranges are read on
#: several connections already (``db.bulk.streaming.in_order``), and a parallel worker per range on
#: top makes a range slower. No merge joins: a range joins a few thousand calls to their
#: answers by (trace, seq), and PostgreSQL merges them on the trace alone, comparing every call
#: of a trace with each of its results, where hashing them costs about half as much
#: (docs/performance.md, "Measurements behind choices in the code").
_PG_BULK_SQL: tuple[str, ...] = (
    "SELECT set_config('max_parallel_workers_per_gather', '0', false)",
    "SELECT set_config('enable_mergejoin', 'off', false)",
)


class ArrowReadUnavailable(RuntimeError):
    """The store cannot be read through a driver of its own (an in-memory SQLite database)."""


def connect(engine: Engine) -> Any:
    """An ADBC connection to ``engine``'s database (a DB-API connection with Arrow fetches):
    read-only on SQLite; on PostgreSQL with the session settings :mod:`db.engine` gives it,
    and the bulk range reads' own (no parallel workers, no merge joins)."""
    url = engine.url
    if not other_processes_can_open(url):
        raise ArrowReadUnavailable("an in-memory SQLite database has no second connection")
    if engine.dialect.name == "sqlite":
        import adbc_driver_sqlite.dbapi

        path = quote(str(url.database), safe="/")
        conn = adbc_driver_sqlite.dbapi.connect(f"file:{path}?mode=ro")
        with conn.cursor() as cur:
            # busy_timeout: wait for a lock as the store's other connections do (a checkpoint,
            # another connection opening the write-ahead log) instead of failing at once.
            for pragma in SQLITE_READ_PRAGMAS:
                cur.execute(pragma)
        return conn
    if engine.dialect.name == "postgresql":
        import adbc_driver_postgresql.dbapi

        libpq = url.set(drivername="postgresql").render_as_string(hide_password=False)
        conn = adbc_driver_postgresql.dbapi.connect(libpq)
        with conn.cursor() as cur:
            for statement in (*PG_SESSION_SQL, *_PG_BULK_SQL):
                cur.execute(statement)
                cur.fetchall()
        return conn
    if engine.dialect.name == "clickhouse":
        from db.clickhouse.client import ArrowConnection
        from db.clickhouse.dialect import client_of

        return ArrowConnection(client_of(engine).fresh())
    raise ArrowReadUnavailable(f"no ADBC driver for {engine.dialect.name}")


def _table(conn: Any, sql: str, options: dict[str, str] | None = None) -> pa.Table:
    """The rows of ``sql`` on a connection of :func:`connect`, as one table (``options``:
    the driver's statement options)."""
    with conn.cursor(adbc_stmt_kwargs=options) as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def _sqlite_table(conn: Any, sql: str) -> pa.Table:
    """SQLite's driver gives each column the type of its values in the first batch (all
    NULL: integers) and fails on a later value of another type ("Type mismatch"): read in
    batches of :data:`_SQLITE_BATCH_ROWS`, and where that fails, again in one batch of all
    the statement's rows."""

    try:
        return _table(conn, sql, {_SQLITE_BATCH_OPTION: str(_SQLITE_BATCH_ROWS)})
    except OSError as exc:
        if "Type mismatch" not in str(exc):
            raise
    rows = _table(conn, f"SELECT count(*) FROM ({sql})").column(0)[0].as_py()
    return _table(conn, sql, {_SQLITE_BATCH_OPTION: str(max(rows, 1))})


def range_sql(engine: Engine, stmt: Select[Any]) -> str:
    """``stmt`` as SQL text for ``engine``'s database, every value written out but the bind
    parameters ``lo`` and ``hi``, left as ``{lo}`` and ``{hi}`` for :meth:`str.format`."""
    compiled = stmt.params(lo=_LO, hi=_HI).compile(
        dialect=engine.dialect, compile_kwargs={"literal_binds": True}
    )
    sql = str(compiled).replace("{", "{{").replace("}", "}}")
    lo, hi = str(_LO), str(_HI)
    if sql.count(lo) != sql.count(hi) or sql.count(lo) == 0:
        raise ValueError("the statement does not bound a range by the parameters lo and hi")
    return sql.replace(lo, "{lo}").replace(hi, "{hi}")


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` cast to ``schema`` (same column order): a driver infers each column's type
    from its values (SQLite: a column of NULLs reads as integers, timestamps as text)."""
    columns = []
    for column, field in zip(table.columns, schema, strict=True):
        if pa.types.is_timestamp(field.type) and pa.types.is_string(column.type):
            column = column.cast(pa.timestamp("us"))
        columns.append(column.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def stream_range_tables(
    engine: Engine,
    statements: Sequence[Any],
    ranges: Iterable[tuple[int, int]],
    assemble: Callable[[Sequence[pa.Table]], pa.Table],
) -> Iterator[pa.Table]:
    """For each ``(lo, hi)`` of ``ranges`` in turn, ``assemble`` of the tables of
    ``statements`` (each bound by ``lo`` and ``hi``), run in the thread that read them; the
    ranges whose table has no rows are left out."""
    sqls = [range_sql(engine, stmt) for stmt in statements]
    fetch = _sqlite_table if engine.dialect.name == "sqlite" else _table
    connections: dict[int, Any] = {}

    def read(lo: int, hi: int) -> pa.Table:
        key = threading.get_ident()
        conn = connections.get(key)
        if conn is None:
            conn = connections[key] = connect(engine)
        return assemble([fetch(conn, sql.format(lo=lo, hi=hi)) for sql in sqls])

    try:
        with closing(in_order(lambda r: read(*r), ranges, "toollens-arrow")) as results:
            for table in results:
                if table.num_rows:
                    yield table
    finally:
        for conn in connections.values():
            conn.close()
