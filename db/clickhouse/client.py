"""Running SQL on a ClickHouse store: a cluster of servers or chdb, behind one small interface.

:class:`Client` runs a statement and gives its rows (``query``), its rows as an Arrow table
(``arrow``), inserts rows (``insert``: one block per call, so the caller batches) and runs a
statement on every server (``on_every_server``: the schema is created per server, no
``ON CLUSTER``, which needs ZooKeeper on 18.16). Statements are complete SQL text: values are
written into them by :func:`literal`, the one place that quotes.
"""

from __future__ import annotations

import abc
import atexit
import json
import logging
import math
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from db.clickhouse.url import ClickHouseTarget

#: What a label that names a column of its own expression is suffixed with in the SQL
#: (``db.clickhouse.dialect``).
SHADOW = "__tl"

#: Seconds to wait for a server to accept a connection before saying it is unreachable.
CONNECT_TIMEOUT_S = 5
#: An insert into a Distributed table returns once every shard holds its rows (else a read
#: right after an import could miss the rows still queued for another shard).
INSERT_SETTINGS = {"insert_distributed_sync": 1}
#: Every statement's settings on a server: :data:`INSERT_SETTINGS`, and a query's conditions
#: pushed into the views it reads (18.16 does not by default; chdb does): a read of a range of
#: rollup keys then reads that range of the rollup's primary key, not the whole rollup
#: (``db.clickhouse.schema``).
SETTINGS = {**INSERT_SETTINGS, "enable_optimize_predicate_expression": 1}


class ClickHouseError(RuntimeError):
    """A statement failed, or a server could not be reached; the message is the server's."""


def epoch_us(value: datetime) -> int:
    """A moment as microseconds since the epoch, UTC (naive moments are UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def literal(value: Any) -> str:
    """``value`` as a ClickHouse SQL literal.

    >>> literal("it's \\\\ ok"), literal(None), literal(True), literal(2.5)
    ("'it\\\\'s \\\\\\\\ ok'", 'NULL', '1', '2.5')
    """
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, datetime):
        return str(epoch_us(value))
    if isinstance(value, bytes):
        return f"unhex('{value.hex()}')"  # any bytes, valid UTF-8 or not
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(literal(v) for v in value) + ")"
    if isinstance(value, dict):
        value = json.dumps(value)
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def result_name(name: str) -> str:
    """A result column's name as the statement labelled it (:data:`SHADOW` taken off)."""
    return name[: -len(SHADOW)] if name.endswith(SHADOW) else name


def _first_line(message: str) -> str:
    """A server's message without its stack trace, on one line."""
    return " ".join(message.split("Stack trace")[0].split()).rstrip(". ")


class Client(abc.ABC):
    """The store's engine: see the module's docstring. Two kinds: :class:`NativeClient` (the
    servers) and :class:`ChdbClient` (in process)."""

    target: ClickHouseTarget

    @abc.abstractmethod
    def query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names and rows of ``sql`` (run on the first server)."""

    def arrow(self, sql: str) -> pa.Table:
        """The rows of ``sql`` as an Arrow table."""
        names, rows = self.query(sql)
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        return pa.table({n: pa.array(list(c)) for n, c in zip(names, columns, strict=True)})

    def command(self, sql: str) -> None:
        """Run a statement that returns nothing."""
        self.query(sql)

    def on_every_server(self, sql: str) -> None:
        """Run ``sql`` on every server of the store."""
        self.command(sql)

    @abc.abstractmethod
    def insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` (values in ``columns`` order) into ``table`` as one block."""

    @property
    def servers(self) -> int:
        """How many servers (shards) hold the store."""
        return 1

    def fresh(self) -> Client:
        """A client of the same store for another thread (a driver's client serves one)."""
        return self

    @abc.abstractmethod
    def close(self) -> None:
        """Close every connection."""


class NativeClient(Client):
    """Servers reached by the native protocol (``clickhouse-driver``), one per shard."""

    def __init__(self, target: ClickHouseTarget) -> None:
        try:
            from clickhouse_driver import Client as DriverClient
        except ImportError:
            raise ClickHouseError(
                "the ClickHouse client is not installed: pip install 'toollens[clickhouse]'"
            ) from None

        # The driver logs a traceback for every refused connection; the caller says it in
        # one line instead.
        logging.getLogger("clickhouse_driver").addHandler(logging.NullHandler())
        logging.getLogger("clickhouse_driver").propagate = False

        self.target = target
        self._clients = [
            DriverClient(
                host=host,
                port=port,
                user=target.user,
                password=target.password,
                secure=target.secure,
                connect_timeout=CONNECT_TIMEOUT_S,
                settings=SETTINGS,
            )
            for host, port in target.hosts
        ]

    def _run(self, client: Any, sql: str, rows: Any = None) -> Any:
        from clickhouse_driver import errors

        try:
            return client.execute(sql, rows, with_column_types=rows is None)
        except errors.Error as exc:
            raise ClickHouseError(_first_line(str(exc))) from None
        except OSError as exc:
            raise ClickHouseError(f"{exc.strerror or exc}") from None

    def query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        rows, types = self._run(self._clients[0], sql)
        return [name for name, _ in types], list(rows)

    def on_every_server(self, sql: str) -> None:
        for client in self._clients:
            self._run(client, sql)

    def insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self._run(self._clients[0], f"INSERT INTO {table} ({', '.join(columns)}) VALUES", rows)

    @property
    def servers(self) -> int:
        return len(self._clients)

    def fresh(self) -> Client:
        return NativeClient(self.target)

    def server_query(self, index: int, sql: str) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` on server ``index`` alone (its local tables)."""
        rows, _ = self._run(self._clients[index], sql)
        return list(rows)

    def close(self) -> None:
        for client in self._clients:
            client.disconnect()


class ChdbClient(Client):
    """The in-process engine (chdb): one per process, so every store of the process shares it
    (each in a database of its own)."""

    def __init__(self, target: ClickHouseTarget) -> None:
        self.target = target
        self._session = _chdb_session(target.path)

    def close(self) -> None:
        """Nothing to close: the process's one engine serves every store of the process."""

    def _run(self, sql: str, fmt: str) -> Any:
        try:
            with _CHDB_LOCK:  # one engine per process, asked by one thread at a time
                return self._session.query(sql, fmt)
        except Exception as exc:  # chdb raises its own RuntimeError subclasses
            raise ClickHouseError(_first_line(str(exc))) from None

    def arrow(self, sql: str) -> pa.Table:
        table: pa.Table = self._run(sql, "ArrowTable")
        return table

    def query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        table = self.arrow(sql)
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        return list(table.column_names), list(zip(*columns, strict=True))

    def command(self, sql: str) -> None:
        self._run(sql, "CSV")

    def insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        values = ",".join("(" + ",".join(literal(v) for v in row) + ")" for row in rows)
        self.command(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values}")


_CHDB: dict[str, Any] = {}
_CHDB_LOCK = threading.Lock()


def _chdb_session(path: str | None) -> Any:
    """The process's chdb engine (a session of it; at ``path`` when it is opened first here:
    chdb keeps one engine per process, which every session shares)."""
    if "engine" not in _CHDB:
        try:
            from chdb import session
        except ImportError:
            raise ClickHouseError(
                "the in-process ClickHouse (chdb) is not installed: pip install 'toollens[chdb]'"
            ) from None

        try:
            _CHDB["engine"] = session.Session(path) if path else session.Session()
            atexit.register(_close_chdb)
        except Exception as exc:  # chdb raises its own RuntimeError subclasses
            raise ClickHouseError(
                f"chdb at {path or '(in memory)'}: {_first_line(str(exc))} (chdb keeps a "
                "store to the one process that opened it: is another process using it?)"
            ) from None
    return _CHDB["engine"]


def _close_chdb() -> None:
    """Close the process's engine while the interpreter still runs: left to chdb's own
    teardown at exit, an engine over a folder whose rollup tables have parts to merge can
    crash the process after its work is done (seen: `summary` printed whole, then SIGSEGV)."""
    engine = _CHDB.pop("engine", None)
    if engine is not None:
        engine.close()


def connect(target: ClickHouseTarget) -> Client:
    """A client of the store at ``target``; :class:`ClickHouseError` when a server does not
    answer (each server is asked once)."""
    client: Client = ChdbClient(target) if target.engine == "chdb" else NativeClient(target)
    if isinstance(client, NativeClient):
        for index, (host, port) in enumerate(target.hosts):
            try:
                client.server_query(index, "SELECT 1")
            except ClickHouseError as exc:
                client.close()
                raise ClickHouseError(f"ClickHouse at {host}:{port}: {exc}") from None
    else:
        client.query("SELECT 1")
    return client


class ArrowConnection:
    """A connection as ``db.bulk.arrow_read`` reads ranges through one (the ADBC drivers'
    shape: ``cursor()``, ``execute``, ``fetch_arrow_table``), over a client of its own."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def cursor(self, adbc_stmt_kwargs: Any = None) -> _ArrowCursor:
        return _ArrowCursor(self._client)

    def close(self) -> None:
        self._client.close()


class _ArrowCursor:
    def __init__(self, client: Client) -> None:
        self._client = client
        self._table: pa.Table | None = None

    def __enter__(self) -> _ArrowCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self._table = None

    def execute(self, sql: str) -> None:
        table = self._client.arrow(sql % {})  # the statement's % are doubled (pyformat)
        self._table = table.rename_columns([result_name(n) for n in table.column_names])

    def fetch_arrow_table(self) -> pa.Table:
        assert self._table is not None
        return self._table

    def fetchall(self) -> list[Any]:
        return []
