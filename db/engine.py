"""Engine setup: SQLite by default (a file), PostgreSQL by URL; migrations applied on first use.

``TOOLLENS_DB`` (or ``--db``) takes a file path or any SQLAlchemy URL, for example
``postgresql+psycopg://postgres@127.0.0.1/toollens``. A password belongs in
``TOOLLENS_DB_PASSWORD`` (or a file, ``toollens --db-password-file``), not in the URL: a URL is
shown on command lines (``ps``), in shell histories and banners.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.pool import NullPool

from db import dialect
from db.clickhouse.url import is_clickhouse
from db.clickhouse.url import parse as parse_clickhouse
from db.contract import exact_json
from db.writes.transaction import on_sqlite_begin

#: The database password, added to a URL that has none (so it never has to be typed in one).
PASSWORD_ENV = "TOOLLENS_DB_PASSWORD"
#: Where the embedded database lives when nothing else is configured.
DEFAULT_DB_PATH = "toollens.db"

# SQLite pragmas, each for a reason:
#: WAL lets the dashboard read while an import writes (readers never block the writer).
SQLITE_JOURNAL_MODE = "WAL"
#: Wait this long (ms) for a lock instead of failing at once with "database is locked".
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: Foreign keys are off by default in SQLite; ON DELETE CASCADE depends on them.
SQLITE_FOREIGN_KEYS = "ON"
#: NORMAL is durable under WAL but for the last transactions on power loss; imports can be re-run.
SQLITE_SYNCHRONOUS = "NORMAL"
#: 64 MiB page cache (negative = KiB) keeps indexes of a large store in memory for chart queries.
SQLITE_CACHE_SIZE_KIB = -65536
#: Reads through a memory map of the file (up to SQLite's default ceiling, 2 GiB) instead of a
#: read() per 4 KiB page: a fresh connection reading a long trace back (a grown session, about
#: 10,000 pages) spends a fifth of the CPU, far less again on a loaded machine. The mapped pages
#: are the OS's file cache, not the process's memory.
SQLITE_MMAP_SIZE = 2 * 1024**3

# PostgreSQL session settings, each for a reason (see docs/postgresql.md):
#: Memory per sort or hash before it spills to disk. The server default (4 MB) makes the
#: fingerprint list's sort and the pairs table's hash joins write temporary files on a
#: million-message store (twice as slow); raised per session only where the server's is lower,
#: so an administrator's larger setting stands.
PG_WORK_MEM = "64MB"
#: No JIT compilation: the planner's estimate for a list of key ranges
#: (``db.rollups.wide_histograms``) or a rollup's GROUP BY passes ``jit_above_cost`` while the
#: statement runs in milliseconds, and compiling it costs most of the statement's time
#: (docs/postgresql.md).
PG_JIT = "off"


def resolve_url(db: str | None = None) -> str:
    """Turn ``--db`` / ``TOOLLENS_DB`` / the default into a SQLAlchemy URL.

    >>> resolve_url("traces.db")
    'sqlite:///traces.db'
    >>> resolve_url("postgresql+psycopg://u@h/d")
    'postgresql+psycopg://u@h/d'
    """
    value = db or os.environ.get("TOOLLENS_DB") or DEFAULT_DB_PATH
    if is_clickhouse(value):
        # Several servers in one URL, read by ``db.clickhouse.url`` (its password too).
        return value
    if "://" in value:
        if value.startswith("postgresql://") or value.startswith("postgres://"):
            # psycopg 3 is the driver we ship; the bare scheme would ask for psycopg2.
            value = "postgresql+psycopg://" + value.split("://", 1)[1]
        password = os.environ.get(PASSWORD_ENV)
        if password and not value.startswith("sqlite"):
            url = make_url(value)
            if url.password is None:
                return url.set(password=password).render_as_string(hide_password=False)
        return value
    return f"sqlite:///{Path(value).expanduser()}"


def display_url(url: str | URL) -> str:
    """A URL fit to print: its password masked.

    >>> display_url("postgresql+psycopg://u:hunter2@h/d")
    'postgresql+psycopg://u:***@h/d'
    >>> display_url("clickhouse://u:hunter2@h1:9000,h2:9000/d")
    'clickhouse://u:***@h1:9000,h2:9000/d'
    """
    if isinstance(url, str) and is_clickhouse(url):
        return parse_clickhouse(url).display()
    if isinstance(url, URL) and url.drivername == "clickhouse+toollens":
        # A ClickHouse engine's own URL names its client; the store is the client's target.
        from db.clickhouse.dialect import CLIENTS

        return CLIENTS[str(url.query["client"])].target.display()
    return make_url(url).render_as_string(hide_password=True)


#: The pragmas of every SQLite connection that reads (the bulk readers of ``db.bulk.arrow_read``
#: too).
SQLITE_READ_PRAGMAS: tuple[str, ...] = (
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
    f"PRAGMA cache_size={SQLITE_CACHE_SIZE_KIB}",
    f"PRAGMA mmap_size={SQLITE_MMAP_SIZE}",
)
#: The session settings above as statements, run on every PostgreSQL connection (the bulk
#: readers of ``db.bulk.arrow_read`` too).
PG_SESSION_SQL: tuple[str, ...] = (
    f"SELECT set_config('work_mem', '{PG_WORK_MEM}', false) WHERE "
    f"pg_size_bytes(current_setting('work_mem')) < pg_size_bytes('{PG_WORK_MEM}')",
    f"SELECT set_config('jit', '{PG_JIT}', false)",
)


def _on_sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    # Take over transaction control so that writes can start with BEGIN IMMEDIATE (see below).
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA journal_mode={SQLITE_JOURNAL_MODE}")
    cur.execute(f"PRAGMA foreign_keys={SQLITE_FOREIGN_KEYS}")
    cur.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
    for pragma in SQLITE_READ_PRAGMAS:
        cur.execute(pragma)
    cur.close()


def _unmapped(dbapi_conn: Any, _record: Any) -> None:
    # After _on_sqlite_connect (listeners run in order): no memory map for this connection.
    dbapi_conn.execute("PRAGMA mmap_size=0")


def _on_postgresql_connect(dbapi_conn: Any, _record: Any) -> None:
    # In its own transaction, committed: SET is transactional, and SQLAlchemy's first
    # transaction on the connection must not roll it back.
    cur = dbapi_conn.cursor()
    for statement in PG_SESSION_SQL:
        cur.execute(statement)
    cur.close()
    dbapi_conn.commit()


def _storable_statement(
    _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool
) -> tuple[str, Any]:
    # PostgreSQL's text cannot hold U+0000: a NUL in any parameter would fail the statement,
    # and with it the transaction. Every engine stores the same replacement, so stores agree
    # (the bulk writer's rows are made storable in ``dialect.driver_rows``; this covers every
    # other statement).
    return statement, dialect.storable_parameters(parameters)


def other_processes_can_open(url: URL) -> bool:
    """Whether another process can open the database at ``url``: not an in-memory SQLite one,
    which exists only inside the process that made it."""
    return url.get_backend_name() != "sqlite" or url.database not in (None, "", ":memory:")


def missing_sqlite_file(db: str | None = None) -> Path | None:
    """The SQLite file ``db`` names when it does not exist (opening it would create an empty
    store: what ``import`` wants, and a typo anywhere else); ``None`` for an existing file, an
    in-memory database or a server URL.

    >>> missing_sqlite_file("/nonexistent/runs.db")
    PosixPath('/nonexistent/runs.db')
    >>> missing_sqlite_file("postgresql+psycopg://u@h/d") is None
    True
    """
    resolved = resolve_url(db)
    if is_clickhouse(resolved):
        return None
    url = make_url(resolved)
    if not other_processes_can_open(url) or url.get_backend_name() != "sqlite":
        return None
    path = Path(url.database or "").expanduser()
    return None if path.exists() else path


class StoreConnectionError(Exception):
    """The store could not be opened; the message is one line: what failed, where, and what
    to do (never the password)."""


#: What a server or driver says when a connection fails, and how ToolLens puts it: (pattern
#: on the driver's message, what failed, what to do). ``{…}`` fields come from the URL.
_CONNECTION_PROBLEMS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r'database "[^"]*" does not exist'),
        'database "{database}" does not exist on the server at {where}',
        "create it with createdb -h {host} -p {port} -U {user} {database}, or name an "
        "existing one in --db / TOOLLENS_DB",
    ),
    (
        re.compile(r'role "[^"]*" does not exist'),
        'the server at {where} has no role "{user}"',
        "check the user name in --db / TOOLLENS_DB",
    ),
    (
        re.compile(r"password authentication failed|authentication failed"),
        'the server at {where} refused the password of user "{user}"',
        "check the password in TOOLLENS_DB_PASSWORD or --db-password-file",
    ),
    (
        re.compile(r"no password supplied|password is required"),
        'the server at {where} asks for a password for user "{user}" and none was given',
        "set TOOLLENS_DB_PASSWORD or pass --db-password-file",
    ),
    (
        re.compile(r"Connection refused"),
        "no database server accepts connections at {where}",
        "start the database server, or fix the host and port in --db / TOOLLENS_DB",
    ),
    (
        re.compile(r"resolve host|Name or service not known|nodename nor servname"),
        'the host "{host}" is not known',
        "fix the host name in --db / TOOLLENS_DB",
    ),
    (
        re.compile(r"timeout expired|timed out"),
        "the server at {where} did not answer in time",
        "check that it runs and that the network lets you reach it",
    ),
    (
        re.compile(r"unable to open database file"),
        "cannot open the SQLite database {database}",
        "check the path in --db / TOOLLENS_DB and that its folder exists and is writable",
    ),
)


def describe_connection_failure(url: URL, message: str) -> str:
    """One line about a failed connection to ``url`` whose driver said ``message``: what failed,
    where, what to do. The password of ``url`` never appears in it.

    >>> url = make_url("postgresql+psycopg://ann:pw@db.example:5433/traces")
    >>> describe_connection_failure(url, 'FATAL:  role "ann" does not exist')
    'the server at db.example:5433 has no role "ann" (check the user name in --db / TOOLLENS_DB)'
    """
    fields = {
        "host": url.host or "localhost",
        "port": url.port or 5432,
        "user": url.username or os.environ.get("USER", ""),
        "database": url.database or "",
    }
    where = f"{fields['host']}:{fields['port']}"
    for pattern, what, todo in _CONNECTION_PROBLEMS:
        if pattern.search(message):
            line = f"{what.format(where=where, **fields)} ({todo.format(**fields)})"
            break
    else:
        said = " ".join(message.split()) or "no reason given"
        line = (
            f"cannot connect to the database {display_url(url)}: {said} (check --db / "
            "TOOLLENS_DB and that the server runs)"
        )
    if url.password:
        line = line.replace(str(url.password), "***")
    return line


def _check_connection(engine: Engine, url: URL) -> None:
    """Open and close one connection, so that an unreachable store fails here, in one line
    (:class:`StoreConnectionError`), rather than deep inside the first query."""
    try:
        with engine.connect():
            pass
    except (OperationalError, InterfaceError) as exc:
        engine.dispose()
        message = str(exc.orig) if exc.orig is not None else str(exc)
        raise StoreConnectionError(describe_connection_failure(url, message)) from None


def make_engine(
    db: str | URL | None = None, *, migrate: bool = True, map_file: bool = True
) -> Engine:
    """Create an engine for ``db`` (path, URL string or URL object) and bring its schema up to
    date; :class:`StoreConnectionError` when the store cannot be reached or opened.

    ``map_file=False``: a SQLite file is read through SQLite's own page cache (bounded by
    :data:`SQLITE_CACHE_SIZE_KIB`) instead of a memory map, for a process that mostly writes
    (an import's workers): the pages a map touches stay in the process's resident set, which
    then grows with the store (to :data:`SQLITE_MMAP_SIZE`) instead of staying flat.

    >>> engine = make_engine("sqlite://")  # in memory
    >>> engine.dialect.name
    'sqlite'
    """
    if not isinstance(db, URL) and is_clickhouse(resolve_url(db)):
        return _clickhouse_engine(resolve_url(db))
    url = db if isinstance(db, URL) else make_url(resolve_url(db))
    kwargs: dict[str, Any] = {}
    if url.get_backend_name() == "sqlite":
        if not other_processes_can_open(url):
            # One shared in-memory database for the whole engine.
            from sqlalchemy.pool import StaticPool

            kwargs["poolclass"] = StaticPool
            kwargs["connect_args"] = {"check_same_thread": False}
        else:
            Path(url.database or "").expanduser().parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    elif os.environ.get("TOOLLENS_NULLPOOL"):
        kwargs["poolclass"] = NullPool
    engine = create_engine(
        url, json_serializer=dialect.json_dumps, json_deserializer=exact_json.loads, **kwargs
    )
    event.listen(engine, "before_cursor_execute", _storable_statement, retval=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _on_sqlite_connect)
        if not map_file:
            event.listen(engine, "connect", _unmapped)
        event.listen(engine, "begin", on_sqlite_begin)
    elif engine.dialect.name == "postgresql":
        event.listen(engine, "connect", _on_postgresql_connect)
        event.listen(engine, "commit", dialect.transaction_ended)
        event.listen(engine, "rollback", dialect.transaction_ended)
    _check_connection(engine, url)
    if migrate:
        from db.migrate import upgrade

        upgrade(engine)
    return engine


def _clickhouse_engine(value: str) -> Engine:
    """The engine of the ClickHouse store ``value`` (``db.clickhouse``); its schema is created
    there, not migrated. :class:`StoreConnectionError` when it cannot be opened."""
    from db.clickhouse.engine import ClickHouseError, ClickHouseUrlError, clickhouse_engine

    try:
        return clickhouse_engine(
            value, json_serializer=dialect.json_dumps, json_deserializer=exact_json.loads
        )
    except ClickHouseUrlError as exc:
        raise StoreConnectionError(f"{exc} (check --db / TOOLLENS_DB)") from None
    except ClickHouseError as exc:
        target = parse_clickhouse(value)
        if target.engine == "chdb":
            raise StoreConnectionError(str(exc)) from None
        line = f"{exc} (start the ClickHouse servers, or fix the hosts and ports in --db)"
        password = target.password
        raise StoreConnectionError(line.replace(password, "***") if password else line) from None
