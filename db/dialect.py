"""Every difference between SQLite and PostgreSQL lives here.

Bulk loading, time bucketing, JSON text extraction, JSON list membership and percentiles are
spelled differently by the two databases; callers ask this module and never test
``dialect.name`` themselves.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from itertools import repeat
from typing import Any, ClassVar, Literal, TypeVar, assert_never

import orjson
from sqlalchemy import (
    Boolean,
    Connection,
    Engine,
    Float,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    bindparam,
    case,
    cast,
    func,
    literal_column,
)
from sqlalchemy import column as sa_column
from sqlalchemy import table as sa_table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from db.contract import exact_json

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
    serializer of every JSON column (the engine's and the bulk writer's).

    Canonical (keys sorted, no spaces): on SQLite a stored message's ``raw`` is then the very
    bytes ``ingest.model.content_hash`` hashes of it, so the hash of a grown trace is taken
    from the stored text without decoding it (``ingest.importing.appending``). PostgreSQL's JSONB
    keeps its own key order.
    """
    try:
        text = orjson.dumps(value, option=_JSON_OPTIONS, default=str).decode()
    except TypeError:  # an integer beyond 64 bits: written exactly (``db.contract.exact_json``)
        text = exact_json.dumps(value, sort_keys=True)
    if _NUL_ESCAPE in text:  # rare: a NUL in a key or string (or a backslash before "u0000")
        text = exact_json.dumps(storable_json(value), sort_keys=True)
    return text


_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS

#: What U+0000 becomes in stored text and JSON: PostgreSQL's ``text`` cannot hold it and its
#: ``jsonb`` refuses the ``\u0000`` escape, so every engine stores the replacement character
#: (the same one a record's own decoding puts there, :mod:`ingest.input.jsonrecord`) and the stores
#: agree. Rejected records keep their bytes as they came (a binary column).
NUL_REPLACEMENT = "\ufffd"
_NUL = "\x00"
_NUL_ESCAPE = "\\u0000"


def storable_text(value: str) -> str:
    """``value`` as every engine can store it: U+0000 replaced by :data:`NUL_REPLACEMENT`."""
    return value.replace(_NUL, NUL_REPLACEMENT) if _NUL in value else value


def storable_json(value: Any) -> Any:
    """``value`` (parsed JSON) with U+0000 replaced in every key and string, as a copy; the
    containers without one are returned as they are."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {
            (storable_text(k) if isinstance(k, str) else k): storable_json(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [storable_json(item) for item in value]
    return value


def storable_parameters(parameters: Any) -> Any:
    """Statement parameters (a tuple, list or dict, or a sequence of them for ``executemany``)
    with U+0000 replaced in every string (see :data:`NUL_REPLACEMENT`); returned as they are
    when none holds one (the common case costs one scan)."""
    if isinstance(parameters, dict):
        if not any(v.__class__ is str and _NUL in v for v in parameters.values()):
            return parameters
        return {k: storable_text(v) if v.__class__ is str else v for k, v in parameters.items()}
    if isinstance(parameters, list | tuple):
        if parameters and isinstance(parameters[0], dict | list | tuple):
            fixed = [storable_parameters(p) for p in parameters]
            return parameters if all(map(operator.is_, fixed, parameters)) else fixed
        if not any(v.__class__ is str and _NUL in v for v in parameters):
            return parameters
        return type(parameters)(storable_text(v) if v.__class__ is str else v for v in parameters)
    return parameters


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
    *,
    converted: bool = False,
) -> None:
    """Insert ``rows`` (tuples in ``columns`` order) into ``table`` as fast as the driver allows
    (``converted``: the rows come from :func:`driver_rows` already).

    SQLite: the DBAPI cursor's ``executemany`` inside the caller's transaction. PostgreSQL:
    ``COPY … FROM STDIN``, about 6x faster than ``executemany`` there.
    """
    kind = name_of(conn)
    ready = rows if converted else driver_rows(kind, columns, rows, json_columns)
    if kind == "sqlite":
        placeholders = ", ".join("?" for _ in columns)
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"
        raw = conn.connection.driver_connection
        assert raw is not None
        cur = raw.cursor()
        try:
            cur.executemany(sql, ready)
        finally:
            cur.close()
    elif kind == "postgresql":
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as cp:
            for row in ready:
                cp.write_row(row)
    else:
        assert_never(kind)


def driver_rows(
    kind: DialectName,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    json_columns: frozenset[str] = frozenset(),
) -> Sequence[Sequence[Any]]:
    """``rows`` (tuples in ``columns`` order) as :func:`bulk_insert` hands them to the driver
    of ``kind``: the ``json_columns`` as JSON text, on SQLite datetimes as its text. Work that
    needs no database, so a caller can do it before its write transaction."""
    json_idx = frozenset(i for i, c in enumerate(columns) if c in json_columns)
    plain = _sqlite_value if kind == "sqlite" else None
    return _converted(rows, json_idx, plain, text=storable_text)


def _converted(
    rows: Sequence[Sequence[Any]],
    json_idx: frozenset[int],
    plain: Callable[[Any], Any] | None,
    *,
    text: Callable[[str], str] | None = None,
) -> Sequence[Sequence[Any]]:
    """``rows`` with JSON columns serialized and, when ``plain`` is given, every column holding
    a datetime passed through it; when ``text`` is given, every text column holding a U+0000
    passed through it (see :data:`NUL_REPLACEMENT`); columns needing nothing are left
    alone.

    Works a column at a time: transposing with ``zip`` and testing a column's value types with
    ``set(map(type, ...))`` run in C, where a per-value Python call cost a quarter of a write.
    """
    if not rows or (not json_idx and plain is None and text is None):
        return rows
    columns = list(zip(*rows, strict=True))
    changed = False
    for i, column in enumerate(columns):
        if i in json_idx:
            values = column if plain is None else tuple(map(plain, column))
            columns[i] = tuple(map(_json_text, values))
            changed = True
            continue
        types = set(map(type, column))
        if plain is not None and any(issubclass(t, datetime) for t in types):
            columns[i] = tuple(map(plain, column))
            changed = True
        elif text is not None and str in types and types <= _TEXT_TYPES:
            strings = column if len(types) == 1 else filter(None, column)
            if any(map(operator.contains, strings, repeat(_NUL))):
                columns[i] = tuple(v if v is None else text(v) for v in column)
                changed = True
    return list(zip(*columns, strict=True)) if changed else rows


_TEXT_TYPES = frozenset({str, type(None)})


#: ``Connection.info`` key: the staging tables of :func:`add_into` filled in the connection's
#: open transaction (emptied by its end: :func:`transaction_ended`).
_STAGED = "toollens_staged"
#: ``Connection.info`` key: whether the session may create temporary tables (asked once).
_MAY_STAGE = "toollens_may_stage"


def add_into(
    conn: Connection,
    table: str,
    columns: Sequence[str],
    measures: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> None:
    """Add ``rows`` (tuples in ``columns`` order, the primary key ``key`` first) into
    ``table``: a new key is inserted, a stored one gets the row's ``measures`` added to its own.
    The rows are written in the order given (sorted by key, concurrent PostgreSQL writers lock
    them in the same order and cannot deadlock).

    SQLite: one ``executemany`` of ``INSERT … ON CONFLICT DO UPDATE`` (SQLAlchemy's per-row
    parameter processing cost more than the upsert itself). PostgreSQL: the rows are copied
    into a temporary table of the session (``COPY``), then one ``INSERT … SELECT … ON CONFLICT``
    adds them, in about half the time of upserting them row by row (``executemany``, pipelined;
    docs/postgresql.md). A role without the ``TEMPORARY`` privilege on the database upserts row
    by row.
    """
    kind = name_of(conn)
    listed = ", ".join(columns)
    if kind == "sqlite" or (kind == "postgresql" and not _may_stage(conn)):
        mark = "?" if kind == "sqlite" else "%s"
        owner = "" if kind == "sqlite" else f"{table}."
        updates = ", ".join(f"{m} = {owner}{m} + excluded.{m}" for m in measures)
        sql = (
            f"INSERT INTO {table} ({listed}) VALUES ({', '.join([mark] * len(columns))}) "
            f"ON CONFLICT (key) DO UPDATE SET {updates}"
        )
        if kind == "postgresql":
            conn.exec_driver_sql(sql, list(rows))
            return
        # The DBAPI cursor, past SQLAlchemy's per-statement hook, which looked for U+0000 in
        # every value of every row (a third of the upkeep's write); the text columns are made
        # storable here a column at a time, as the bulk writer's are.
        raw = conn.connection.driver_connection
        assert raw is not None
        cur = raw.cursor()
        try:
            cur.executemany(sql, _converted(rows, frozenset(), None, text=storable_text))
        finally:
            cur.close()
    elif kind == "postgresql":
        staged = f"staged_{table}"
        filled = conn.info.setdefault(_STAGED, set())
        if staged in filled:
            # Filled before in this transaction (an update's subtract and add, a rebuild's
            # chunks): the commit has not emptied it yet.
            conn.exec_driver_sql(f"TRUNCATE {staged}")
        else:
            # Every transaction asks: one that rolled back took the table's creation with it
            # (the "already exists" notice goes nowhere).
            conn.exec_driver_sql(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {staged} (LIKE {table}) "
                "ON COMMIT DELETE ROWS"
            )
            filled.add(staged)
        updates = ", ".join(f"{m} = {table}.{m} + excluded.{m}" for m in measures)
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur:
            with cur.copy(f"COPY {staged} ({listed}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cur.execute(
                f"INSERT INTO {table} ({listed}) SELECT {listed} FROM {staged} ORDER BY key "
                f"ON CONFLICT (key) DO UPDATE SET {updates}"
            )
    else:
        assert_never(kind)


def _may_stage(conn: Connection) -> bool:
    """Whether this PostgreSQL session may create temporary tables: the ``TEMPORARY`` privilege,
    which ``PUBLIC`` has unless an administrator revoked it (asked once per connection)."""
    found = conn.info.get(_MAY_STAGE)
    if found is None:
        asked = "SELECT has_database_privilege(current_database(), 'TEMPORARY')"
        found = conn.info[_MAY_STAGE] = bool(conn.exec_driver_sql(asked).scalar())
    return bool(found)


def transaction_ended(conn: Connection) -> None:
    """A commit or rollback listener (PostgreSQL engines): the staging tables of
    :func:`add_into` are empty again (``ON COMMIT DELETE ROWS``, or their rows rolled back)."""
    conn.info.pop(_STAGED, None)


def concurrent_writers(conn: Connection | Engine) -> bool:
    """Whether several processes can usefully write at the same time (PostgreSQL), or writes
    queue for one lock anyway and are best done in turn (SQLite)."""
    return name_of(conn) == "postgresql"


def lock_hashes(conn: Connection, hashes: Sequence[str]) -> None:
    """Hold, until the transaction ends, a lock on each of ``hashes`` (hex digests): where
    writers run concurrently (PostgreSQL), two transactions judging the same content take
    turns, so the second sees what the first stored. Taken in increasing order (no deadlock
    between two writers locking overlapping sets), before any row lock. SQLite has one writer
    at a time and takes none."""
    kind = name_of(conn)
    if kind == "sqlite" or not hashes:
        return
    if kind == "postgresql":
        # An advisory lock per digest, keyed by its first 64 bits as a signed bigint.
        keys = sorted({int(h[:16], 16) - (1 << 63) for h in hashes})
        conn.exec_driver_sql(
            "SELECT count(pg_advisory_xact_lock(k)) FROM"
            " (SELECT k FROM unnest(%(keys)s::bigint[]) AS k ORDER BY k) AS ordered",
            {"keys": keys},
        )
        return
    assert_never(kind)


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


def json_bytes(conn: Connection | Engine, column: Any) -> ColumnElement[bytes]:
    """A JSON column's stored text as UTF-8 bytes, not decoded: on SQLite the text
    :func:`json_dumps` wrote, on PostgreSQL JSONB's own rendering."""
    kind = name_of(conn)
    if kind == "sqlite":
        return cast(column, LargeBinary)
    if kind == "postgresql":
        return func.convert_to(cast(column, Text), literal_column("'UTF8'"), type_=LargeBinary)
    assert_never(kind)


def json_member(conn: Connection | Engine, column: Any, key: str) -> ColumnElement[str]:
    """The JSON text of the member ``key`` of the JSON object in ``column`` (``"abc"`` for a
    string, ``3``, ``{…}``); NULL when it has none or is no object. Only the member is sent,
    not the whole payload. ``key`` is an identifier (SQLite reads it as the path ``$.key``)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise ValueError(f"not an identifier: {key!r}")
    name: ColumnElement[str] = literal_column(f"'{key}'")
    kind = name_of(conn)
    if kind == "sqlite":
        return column.op("->", return_type=String())(name)
    if kind == "postgresql":
        return cast(column.op("->")(name), Text)
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


def _clause_children(*names: str) -> list[tuple[str, InternalTraversal]]:
    """``_traverse_internals`` of a construct whose attributes ``names`` are SQL elements: what
    the statement cache keys on (with ``inherit_cache`` alone such a construct has no cache key,
    and every statement holding it is compiled anew on every execution)."""
    return [(name, InternalTraversal.dp_clauseelement) for name in names]


_T = TypeVar("_T")


class _Spelled(ColumnElement[_T]):
    """A construct of the SQL elements named by ``parts`` (its constructor's arguments, in that
    order), spelled per database by ``spellings``: the database's name -> a ``str.format``
    template of the compiled parts. Its parts are what the statement cache keys on."""

    parts: ClassVar[tuple[str, ...]]
    spellings: ClassVar[dict[str, str]]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        # The cache reads ``inherit_cache`` from each class's own attributes.
        cls.inherit_cache = True
        cls._traverse_internals = _clause_children(*cls.parts)
        for name in cls.spellings:
            compiles(cls, name)(_spell)

    def __init__(self, *values: Any) -> None:
        for name, value in zip(self.parts, values, strict=True):
            setattr(self, name, value)


def _spell(element: _Spelled[Any], compiler: Any, **kw: Any) -> str:
    parts = {name: compiler.process(getattr(element, name), **kw) for name in element.parts}
    return element.spellings[compiler.dialect.name].format(**parts)


def _text(value: str) -> Any:
    return bindparam(None, value, type_=String())


class JsonListContains(_Spelled[bool]):
    """``value`` is an element of the JSON list in ``column`` (see :func:`json_list_contains`)."""

    type = Boolean()
    parts = ("column", "value")
    spellings: ClassVar[dict[str, str]] = {
        "sqlite": "EXISTS (SELECT 1 FROM json_each({column}) WHERE json_each.value = {value})",
        # ``@>`` on JSONB: containment of a one-element array is list membership.
        "postgresql": "({column} @> jsonb_build_array(CAST({value} AS text)))",
    }


def json_list_contains(column: Any, value: str) -> ColumnElement[bool]:
    """A condition: the JSON list in ``column`` holds the string ``value``.

    Built without a connection (filters are composed before one exists); each database gets
    its own spelling when the statement is compiled.
    """
    return JsonListContains(column, _text(value))


class JsonKeyEquals(_Spelled[bool]):
    """The JSON object in ``column`` has the key ``name`` with the value ``value`` (compared as
    text; see :func:`json_key_equals`)."""

    type = Boolean()
    parts = ("column", "name", "value")
    spellings: ClassVar[dict[str, str]] = {
        # json_each rather than a path: any key (quotes, dots) matches as it is. Numbers and
        # booleans compare by their JSON text.
        "sqlite": "EXISTS (SELECT 1 FROM json_each({column}) AS kv WHERE kv.key = {name} AND "
        "(CASE kv.type WHEN 'text' THEN kv.value ELSE kv.atom || '' END) = {value})",
        "postgresql": "(({column} ->> CAST({name} AS text)) = {value})",
    }


def json_key_equals(column: Any, key: str, value: str) -> ColumnElement[bool]:
    """A condition: the JSON object in ``column`` holds ``key`` with the value ``value`` (a
    number or boolean compares by its JSON text: ``3``, ``true``). Composed without a
    connection, like :func:`json_list_contains`."""
    return JsonKeyEquals(column, _text(key), _text(value))


def reclaim_space(engine: Engine, tables: Sequence[str]) -> None:
    """Give the space of deleted rows back: ``VACUUM`` outside any transaction.

    SQLite rewrites the whole file (it never shrinks by itself); on PostgreSQL plain ``VACUUM``
    of the store's ``tables`` (in its schema, by the search path: never the database's other
    schemas, whose tables a database-wide ``VACUUM`` would wait on and work through) makes the
    space reusable and refreshes statistics (autovacuum does the same in time; ``VACUUM FULL``,
    which returns it to the operating system, locks every table and is left to the
    administrator).
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
            cur.execute(f"VACUUM (ANALYZE) {', '.join(tables)}")
        else:
            assert_never(kind)
        cur.close()
    finally:
        raw.invalidate()  # its autocommit setting must not go back into the pool


# --- Content search ------------------------------------------------------------------------
#
# Both databases index words: runs of letters and digits, lowercased, everything else a
# separator, so ``customer_4711`` is the words ``customer 4711`` and ``permission denied`` two
# words; a query is a phrase (its words adjacent and in order). SQLite: an FTS5 table per
# searched column, *external content* (it stores the index only and reads the text from the
# table it indexes, so the text is not stored twice, and ``snippet()`` still works), written by
# :func:`index_search_rows`. PostgreSQL: a stored generated column :data:`SEARCH_VECTOR` =
# ``to_tsvector('simple', …)`` of the column, with every non-alphanumeric run replaced by a
# space first (the default parser would otherwise keep ``a.b.com`` or ``/usr/bin`` as single
# tokens, unlike FTS5), under a GIN index; the server keeps it current, so there is nothing to
# write. Stored rather than an expression index, because GIN cannot answer a phrase alone: each
# candidate row is rechecked, and recomputing its vector from the text made a phrase of two
# common words take a minute on 200,000 messages. ``simple``: no stemming and no stop words, because
# the text is identifiers, paths and error strings, not prose.

#: Characters of each text the search reads: PostgreSQL's tsvector holds at most 1 MB and
#: word positions up to 16,383, so both databases index this prefix of a longer text.
SEARCH_TEXT_CHARS = 50_000
#: The searched columns, per table.
SEARCHED_COLUMNS: dict[str, str] = {"messages": "content", "tool_calls": "arguments_raw"}
#: Snippet markers around the matched words (plain characters, never markup).
SNIPPET_START, SNIPPET_END, SNIPPET_ELLIPSIS = "«", "»", "…"
#: Words around a match in a snippet.
SNIPPET_WORDS = 16


#: The PostgreSQL column holding a row's words (generated from the searched column).
SEARCH_VECTOR = "search_vector"


def search_table(table: str) -> str:
    """The SQLite FTS5 table indexing ``table`` (``messages`` → ``messages_search``)."""
    return f"{table}_search"


def search_index_name(table: str) -> str:
    """The PostgreSQL GIN index over ``table``'s searched column."""
    return f"ix_{table}_search"


#: The column giving a searched row's message position, per searched table.
SEARCHED_SEQ: dict[str, str] = {"messages": "seq", "tool_calls": "message_seq"}


def _sqlite_fts_rows(
    conn: Connection,
    table: str,
    trace_ids: Sequence[int],
    delete: bool,
    from_seq: int | None = None,
) -> None:
    column = SEARCHED_COLUMNS[table]
    fts = search_table(table)
    ids = ", ".join(str(int(i)) for i in trace_ids)
    since = "" if from_seq is None else f" AND {SEARCHED_SEQ[table]} >= {int(from_seq)}"
    # External content: a delete must hand over the exact text that was indexed.
    command = "'delete', " if delete else ""
    target = f"{fts}({fts}, rowid, {column})" if delete else f"{fts}(rowid, {column})"
    conn.exec_driver_sql(
        f"INSERT INTO {target} SELECT {command}id, substr({column}, 1, {SEARCH_TEXT_CHARS}) "
        f"FROM {table} WHERE trace_id IN ({ids}) AND {column} IS NOT NULL{since}"
    )


def index_search_rows(
    conn: Connection, table: str, trace_ids: Sequence[int], from_seq: int | None = None
) -> None:
    """Add the searched text of ``table``'s rows of ``trace_ids`` (only those of messages at
    or after ``from_seq``, when given) to the content search (a no-op on PostgreSQL, whose
    index follows the table)."""
    kind = name_of(conn)
    if kind == "sqlite":
        if trace_ids:
            _sqlite_fts_rows(conn, table, trace_ids, delete=False, from_seq=from_seq)
    elif kind == "postgresql":
        pass
    else:
        assert_never(kind)


def index_search_id_range(conn: Connection, table: str, first: int, last: int) -> None:
    """Add the searched text of ``table``'s rows with ids from ``first`` to ``last`` to the
    content search (rows written by id, as ``toollens copy`` writes them; a no-op on
    PostgreSQL, whose index follows the table)."""
    kind = name_of(conn)
    if kind == "sqlite":
        column = SEARCHED_COLUMNS[table]
        conn.exec_driver_sql(
            f"INSERT INTO {search_table(table)}(rowid, {column}) SELECT id, "
            f"substr({column}, 1, {SEARCH_TEXT_CHARS}) FROM {table} "
            f"WHERE id BETWEEN {int(first)} AND {int(last)} AND {column} IS NOT NULL"
        )
    elif kind == "postgresql":
        pass
    else:
        assert_never(kind)


def unindex_search_rows(conn: Connection, table: str, trace_ids: Sequence[int]) -> None:
    """Take ``table``'s rows of ``trace_ids`` out of the content search; call it before the rows
    are deleted (SQLite reads the indexed text from them). A no-op on PostgreSQL."""
    kind = name_of(conn)
    if kind == "sqlite":
        if trace_ids:
            _sqlite_fts_rows(conn, table, trace_ids, delete=True)
    elif kind == "postgresql":
        pass
    else:
        assert_never(kind)


def search_words(text: str) -> list[str]:
    """The words of a search query as both indexes see them (letters and digits, lowercased).

    >>> search_words("Customer_4711: permission-denied!")
    ['customer', '4711', 'permission', 'denied']
    """
    return [w.lower() for w in re.findall(r"[^\W_]+", text)]


def search_match(conn: Connection, table: Any, words: Sequence[str]) -> tuple[Any, Any]:
    """``(from, condition)`` selecting the rows of ``table`` (a Table or alias of one of
    :data:`SEARCHED_COLUMNS`) whose searched text holds ``words`` as a phrase: join ``from``
    in place of ``table`` and add ``condition``."""
    name = table.element.name if hasattr(table, "element") else table.name
    phrase = " ".join(words)
    kind = name_of(conn)
    if kind == "sqlite":
        fts = sa_table(search_table(name), sa_column("rowid"))
        source = table.join(fts, fts.c.rowid == table.c.id)
        match = literal_column(search_table(name)).op("MATCH")(
            bindparam(None, '"' + phrase + '"', type_=String())
        )
        return source, match
    if kind == "postgresql":
        vector: Any = literal_column(f"{table.name}.{SEARCH_VECTOR}")
        query = func.phraseto_tsquery(literal_column("'simple'"), bindparam(None, phrase))
        return table, vector.op("@@")(query)
    assert_never(kind)


def search_snippets(
    conn: Connection, table: str, words: Sequence[str], ids: Sequence[int]
) -> dict[int, str]:
    """``{row id: snippet}`` for the rows ``ids`` of ``table``: the words around the first
    match, the matched words between :data:`SNIPPET_START` and :data:`SNIPPET_END`, as one
    line of plain text."""
    if not ids:
        return {}
    column = SEARCHED_COLUMNS[table]
    phrase = " ".join(words)
    id_list = ", ".join(str(int(i)) for i in ids)
    kind = name_of(conn)
    if kind == "sqlite":
        fts = search_table(table)
        sql = (
            f"SELECT rowid, snippet({fts}, 0, ?, ?, ?, {SNIPPET_WORDS}) FROM {fts} "
            f"WHERE {fts} MATCH ? AND rowid IN ({id_list})"
        )
        params: Any = (SNIPPET_START, SNIPPET_END, SNIPPET_ELLIPSIS, '"' + phrase + '"')
    elif kind == "postgresql":
        options = (
            f"StartSel={SNIPPET_START}, StopSel={SNIPPET_END}, MaxWords={SNIPPET_WORDS * 2}, "
            f"MinWords={SNIPPET_WORDS}, ShortWord=0, "
            f'FragmentDelimiter="{SNIPPET_ELLIPSIS}"'
        )
        # The headline is cut from the same prefix with the same separators as the index, so
        # it marks the words the index matched.
        sql = (
            "SELECT id, ts_headline('simple', regexp_replace(left("
            f"{column}, {SEARCH_TEXT_CHARS}), '\\s+', ' ', 'g'), "
            "phraseto_tsquery('simple', %s), %s) "
            f"FROM {table} WHERE id IN ({id_list})"
        )
        params = (phrase, options)
    else:
        assert_never(kind)
    # PostgreSQL marks each word of a phrase, FTS5 the phrase: adjacent marks are merged.
    adjacent = f"{SNIPPET_END} {SNIPPET_START}"
    return {
        int(i): " ".join(str(s).split()).replace(adjacent, " ")
        for i, s in conn.exec_driver_sql(sql, params)
    }


class SecondsBetween(_Spelled[float]):
    """Seconds from the timestamp ``start`` to ``end`` (see :func:`seconds_between`)."""

    type = Float()
    parts = ("start", "end")
    spellings: ClassVar[dict[str, str]] = {
        # julianday is a double of days: milliseconds survive, so round to them.
        "sqlite": "round((julianday({end}) - julianday({start})) * 86400.0, 3)",
        "postgresql": "round(CAST(EXTRACT(EPOCH FROM ({end} - {start})) AS numeric), 3)::float8",
    }


def seconds_between(start: Any, end: Any) -> ColumnElement[float]:
    """The seconds from timestamp ``start`` to ``end`` (NULL when either is), to the
    millisecond; composed without a connection, spelled per database when compiled."""
    return SecondsBetween(start, end)


class EpochSeconds(_Spelled[int]):
    """Whole seconds since 1970-01-01 UTC of a timestamp (see :func:`epoch_seconds`)."""

    type = Integer()
    parts = ("moment",)
    spellings: ClassVar[dict[str, str]] = {
        # Stored as naive UTC text; strftime('%s') reads it as UTC.
        "sqlite": "CAST(strftime('%s', {moment}) AS INTEGER)",
        "postgresql": "CAST(floor(EXTRACT(EPOCH FROM {moment})) AS BIGINT)",
    }


def floor_div(value: Any, divisor: int) -> ColumnElement[int]:
    """``floor(value / divisor)`` of an integer expression and a positive divisor, the same on
    both databases (their integer division truncates toward zero: wrong before 1970)."""
    return case(
        (value >= 0, value // divisor),
        else_=-((-value + (divisor - 1)) // divisor),
    )


def epoch_seconds(moment: Any) -> ColumnElement[int]:
    """Whole seconds since the epoch of the timestamp ``moment`` (NULL stays NULL), as an
    integer on both databases, so bucket arithmetic (``// 3600``) agrees between them."""
    return EpochSeconds(moment)
