"""Reading millions of rows fast: a statement's rows straight off the driver's cursor.

``toollens pairs`` writes every pair of the store (4-5 million rows for 10 million messages).
Through SQLAlchemy's result objects each row pays for a ``Row`` and for the type processing of
every column; here the statement is compiled once, run on the DBAPI cursor, and only the
columns whose type converts values (timestamps: UTC-aware ``datetime``; PostgreSQL numerics)
are passed through SQLAlchemy's own result processor for that type and driver type, so the
values are exactly those ``conn.execute(stmt)`` returns.

:func:`stream_ranges` runs one statement per range of a key (bound as ``lo`` and ``hi``), each
over a small part of the store, on :data:`READERS` connections in threads of their own that stay
up to :data:`READ_AHEAD` ranges ahead of the consumer, and hands the ranges over in order: the
database reads the next ranges while the caller writes out the last one (sqlite3 and psycopg
release the GIL while the database works; one SQLite connection uses one core). The threads and
the order are :func:`in_order`'s, which ``db.bulk.arrow_read`` and ``toollens pairs`` use too.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.sql import Select

Row = tuple[Any, ...]
T = TypeVar("T")
R = TypeVar("R")
#: Connections reading ranges at the same time (the machine's cores are shared with the
#: consumer, which formats the rows).
READERS = 2
#: Ranges read ahead of the consumer.
READ_AHEAD = 4


def _processors(stmt: Select[*tuple[Any, ...]], engine: Engine, description: Any) -> list[Any]:
    """Per selected column, SQLAlchemy's result processor for its type and the driver's type
    code, or ``None`` where values pass unchanged."""
    dialect = engine.dialect
    out = []
    for column, desc in zip(stmt.selected_columns, description, strict=True):
        impl = column.type.dialect_impl(dialect)
        out.append(impl.result_processor(dialect, desc[1]))
    return out


def read_columns(conn: Connection, stmt: Select[*tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows of ``stmt`` column by column, one tuple per selected column, with the values
    ``conn.execute(stmt).all()`` holds: the statement runs through ``conn`` (its transaction,
    its compiled-statement cache) and its rows are taken straight off the driver's cursor.

    Pages read histograms of 50,000 rows, where a ``Row`` per row and taking the rows apart
    again into columns cost a third as much as the database's own reading."""
    return read_keyed_columns(conn, stmt)[1]


def read_keyed_columns(
    conn: Connection, stmt: Select[*tuple[Any, ...]]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """:func:`read_columns` with the result's column names (``Result.keys()``)."""
    result = conn.execute(stmt)
    try:
        keys = list(result.keys())
        cursor = result.cursor
        rows = cursor.fetchall()
        description = cursor.description
    finally:
        result.close()
    if not rows:
        return keys, [() for _ in keys]
    return keys, _processed(
        list(zip(*rows, strict=True)), _processors(stmt, conn.engine, description)
    )


def _processed(columns: list[tuple[Any, ...]], processors: Sequence[Any]) -> list[tuple[Any, ...]]:
    """``columns`` with each passed through its column's processor (``None``: left as it is)."""
    for i, processor in enumerate(processors):
        if processor is not None:
            columns[i] = tuple(map(processor, columns[i]))
    return columns


def _converter(processors: Sequence[Any]) -> Callable[[list[Row]], list[Row]]:
    """A function turning a batch of raw rows into processed tuples (the batch itself when no
    column needs processing)."""
    if all(p is None for p in processors):
        return lambda rows: rows

    def convert(rows: list[Row]) -> list[Row]:
        return list(zip(*_processed(list(zip(*rows, strict=True)), processors), strict=True))

    return convert


def stream_ranges(
    engine: Engine, stmt: Select[Any], ranges: Iterable[tuple[int, int]]
) -> Iterator[list[Row]]:
    """The rows of ``stmt`` (with bind parameters ``lo`` and ``hi``) for each ``(lo, hi)`` of
    ``ranges`` in turn, one list per range, processed as ``conn.execute`` would."""
    compiled = stmt.compile(dialect=engine.dialect)
    local = threading.local()
    connections: list[Any] = []
    lock = threading.Lock()
    converters: list[Callable[[list[Row]], list[Row]]] = []

    def bound(lo: int, hi: int) -> tuple[str, Any]:
        """The SQL and driver parameters for one range (``IN`` lists expanded, every value
        through its type's bind processor, as ``conn.execute`` sends them)."""
        state = compiled.construct_expanded_state({"lo": lo, "hi": hi})
        values = {
            k: state.processors[k](v) if k in state.processors else v
            for k, v in state.parameters.items()
        }
        if state.positiontup is not None:
            return state.statement, tuple(values[k] for k in state.positiontup)
        return state.statement, values

    def read(lo: int, hi: int) -> list[Row]:
        raw = getattr(local, "raw", None)
        if raw is None:
            raw = local.raw = engine.raw_connection()
            with lock:
                connections.append(raw)
        cur = raw.cursor()
        try:
            cur.execute(*bound(lo, hi), **options)
            rows = list(cur.fetchall())
            with lock:
                if not converters:
                    converters.append(_converter(_processors(stmt, engine, cur.description)))
            return converters[0](rows) if rows else rows
        finally:
            cur.close()

    # psycopg prepares a statement run 5 times, and PostgreSQL may then switch to a generic
    # plan that ignores the range's bounds; each range is planned with its own values instead,
    # which reads the pairs of a large store about a fifth faster.
    options: dict[str, Any] = {"prepare": False} if engine.dialect.driver == "psycopg" else {}
    try:
        with closing(in_order(lambda r: read(*r), ranges, "toollens-stream")) as results:
            for rows in results:
                if rows:
                    yield rows
    finally:
        for raw in connections:
            raw.rollback()
            raw.close()


def in_order(
    work: Callable[[T], R], items: Iterable[T], name: str, *, threads: int = READERS
) -> Generator[R]:
    """``work`` of each of ``items`` on ``threads`` threads named ``name``, up to
    :data:`READ_AHEAD` items ahead of the consumer, the results handed over in the items'
    order (``items`` is read as the work goes, so a stream of any length fits). Closing the
    iterator cancels the work not started and waits for the rest."""
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(work, item))
            if len(pending) > READ_AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)
