"""A SQLAlchemy dialect for ClickHouse: the catalogue's Core statements, compiled for it.

The figure catalogue (``db.catalogue``) and the queries (``db.queries``) are SQLAlchemy Core
statements over the relational tables' names and columns. A ClickHouse store keeps a view of
each such name that reads the latest version of every trace (:mod:`db.clickhouse.schema`), so
the statements need only be spelled for ClickHouse; this compiler does that, for SQL that the
2018 server (18.16) and the current engine (chdb) both run:

* ``agg(x) FILTER (WHERE c)`` becomes ClickHouse's ``-If`` combinator (``countIf(c)``,
  ``sumIf(x, c)``);
* ``x IS 1`` (a flag compared as SQLite spells it) becomes ``ifNull(x = 1, 0)``;
* ``CAST(x AS T)`` casts to ``Nullable(T)`` in ClickHouse's type names (Float64, Int64,
  String), so a NULL survives it;
* ``substr``/``length`` count characters, as SQLite and PostgreSQL do (``substr`` cuts an
  array of the text's characters: 18.16's ``substringUTF8`` splits four-byte characters);
  ``octet_length`` counts bytes (``length``); ``a // b`` is ``intDiv``;
* ``LIMIT n OFFSET m`` is ``LIMIT m, n``;
* values are written into the statement by :func:`db.clickhouse.client.literal`;
* times are microseconds since the epoch (ClickHouse 18.16 has no sub-second ``DateTime``).

The DB-API beneath is a thin one over :class:`db.clickhouse.client.Client` (either engine).
``clickhouse-sqlalchemy`` (a dialect over ``clickhouse-driver``) was not used: it reaches the
servers only, not chdb, and the catalogue's filtered aggregates need this compiler anyway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from sqlalchemy import Engine
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import default
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import compiler, operators
from sqlalchemy.sql.elements import ColumnClause, Null
from sqlalchemy.sql.visitors import iterate

from db.clickhouse.client import SHADOW, ClickHouseError, Client, literal, result_name
from db.clickhouse.schema import Layout
from db.dialect import EpochSeconds, SecondsBetween

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _EpochMicros(sqltypes.DateTime):
    """A moment stored as microseconds since the epoch (an ``Int64``), read back UTC-aware."""

    def bind_processor(self, dialect: Any) -> Any:
        return None  # :func:`literal` writes a datetime as its microseconds

    def literal_processor(self, dialect: Any) -> Any:
        return literal

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        def process(value: Any) -> Any:
            if value is None or isinstance(value, datetime):
                return value
            return _EPOCH + timedelta(microseconds=int(value))

        return process


class ClickHouseCompiler(compiler.SQLCompiler):
    """See the module's docstring."""

    _FUNCTIONS: ClassVar[dict[str, str]] = {
        "length": "lengthUTF8",
        "char_length": "lengthUTF8",
        "octet_length": "length",
        "lower": "lowerUTF8",
        "upper": "upperUTF8",
    }

    def visit_function(self, func: Any, add_to_result_map: Any = None, **kw: Any) -> str:
        if func.name.lower() == "substr":
            # By characters, as SQLite and PostgreSQL cut: 18.16's substringUTF8 splits a
            # character of four bytes (an emoji), so the text is cut as an array of characters.
            # 18.16 has no Nullable array: NULL stays NULL around the cut.
            text, *bounds = (self.process(arg, **kw) for arg in func.clauses)
            chars = f"extractAll(assumeNotNull({text}), '(?s).')"
            cut = f"arrayStringConcat(arraySlice({chars}, {', '.join(bounds)}))"
            return f"if(isNull({text}), NULL, {cut})"
        name = self._FUNCTIONS.get(func.name.lower())
        if name is None:
            return super().visit_function(func, add_to_result_map=add_to_result_map, **kw)
        return f"{name}{self.process(func.clause_expr, **kw)}"

    def visit_funcfilter(self, funcfilter: Any, **kw: Any) -> str:
        func = funcfilter.func
        # A NULL condition leaves the row out, as FILTER does; 18.16 makes an -If aggregate of
        # a Nullable condition NULL where no row's condition is known (countIf: NULL, not 0).
        criterion = f"ifNull({self.process(funcfilter.criterion, **kw)}, 0)"
        args = list(func.clauses)
        name = func.name.lower()
        if name == "count":
            if not args or str(args[0]) == "*":
                return f"countIf({criterion})"
            return f"countIf(({self.process(args[0], **kw)}) IS NOT NULL AND ({criterion}))"
        if name in ("sum", "min", "max", "avg") and len(args) == 1:
            return f"{name}If({self.process(args[0], **kw)}, {criterion})"
        raise ClickHouseError(f"no ClickHouse form of {name}(…) FILTER (WHERE …)")

    def visit_binary(self, binary: Any, **kw: Any) -> str:  # type: ignore[override]
        op = binary.operator
        if op in (operators.is_, operators.is_not) and not isinstance(binary.right, Null):
            left, right = self.process(binary.left, **kw), self.process(binary.right, **kw)
            same = f"ifNull({left} = {right}, 0)"
            return same if op is operators.is_ else f"NOT {same}"
        return str(super().visit_binary(binary, **kw))

    def visit_label(  # type: ignore[override]
        self, label: Any, within_columns_clause: bool = False, **kw: Any
    ) -> str:
        # ClickHouse's aliases are visible in the whole query: ``coalesce(sum(x), 0) AS x``
        # would read its own alias inside (a cycle on 18.16). Such a label of the outer select
        # is renamed (:data:`SHADOW`), in its ORDER BY too, and the cursor gives the result
        # column its name back (:func:`result_name`).
        out = str(super().visit_label(label, within_columns_clause=within_columns_clause, **kw))
        element = label.element
        shadowed = (
            len(self.stack) <= 1
            and isinstance(label.name, str)
            and not isinstance(element, ColumnClause)
            and label.name in {c.name for c in iterate(element) if isinstance(c, ColumnClause)}
        )
        if not shadowed:
            return out
        name = str(label.name)
        quoted = str(self.preparer.format_label(label, name))
        if kw.get("render_label_as_label") is label and out == quoted:
            return f"{name}{SHADOW}"
        if within_columns_clause and out.endswith(f" AS {quoted}"):
            return out[: -len(quoted)] + f"{name}{SHADOW}"
        return out

    def visit_table(self, table: Any, asfrom: bool = False, **kw: Any) -> str:  # type: ignore[override]
        # Tables named in the store's database (``FROM toollens.traces``): one process may
        # hold several stores (each engine's dialect knows its own), chdb one engine for all.
        # Named by its own name too (``toollens.messages AS messages``): the current engine
        # resolves ``messages.content`` of a joined table only through such an alias.
        out = str(super().visit_table(table, asfrom=asfrom, **kw))
        database = self.dialect.database  # type: ignore[attr-defined]
        if not (asfrom and database and table.schema is None):
            return out
        aliased = kw.get("enclosing_alias") is not None or kw.get("iscrud")
        return f"{database}.{out}" if aliased else f"{database}.{out} AS {out}"

    def visit_floordiv_binary(self, binary: Any, operator: Any, **kw: Any) -> str:
        return f"intDiv({self.process(binary.left, **kw)}, {self.process(binary.right, **kw)})"

    def visit_cast(self, cast: Any, **kw: Any) -> str:
        type_ = self.dialect.type_compiler_instance.process(cast.typeclause.type)
        return f"CAST({self.process(cast.clause, **kw)} AS Nullable({type_}))"

    def limit_clause(self, select: Any, **kw: Any) -> str:
        limit, offset = select._limit_clause, select._offset_clause
        if limit is None and offset is None:
            return ""
        n = self.process(limit, **kw) if limit is not None else "18446744073709551615"
        if offset is None:
            return f"\n LIMIT {n}"
        return f"\n LIMIT {self.process(offset, **kw)}, {n}"

    def render_literal_value(self, value: Any, type_: Any) -> str:
        if isinstance(value, dict | list) and isinstance(type_, sqltypes.JSON):
            serialize: Any = getattr(self.dialect, "_json_serializer", None) or json.dumps
            value = serialize(value)
        # Doubled like every other % of a pyformat statement; the DB-API halves them.
        return literal(value).replace("%", "%%")


@compiles(EpochSeconds, "clickhouse")
def _epoch_seconds(element: EpochSeconds, compiler: Any, **kw: Any) -> str:
    # Stored as microseconds: floored to whole seconds (before 1970 too), NULL stays NULL.
    # A double holds every microsecond count up to year 2255 exactly.
    return f"toInt64(floor({compiler.process(element.moment, **kw)} / 1000000))"


@compiles(SecondsBetween, "clickhouse")
def _seconds_between(element: SecondsBetween, compiler: Any, **kw: Any) -> str:
    start = compiler.process(element.start, **kw)
    end = compiler.process(element.end, **kw)
    return f"round(({end} - {start}) / 1000000, 3)"


class ClickHouseTypeCompiler(compiler.GenericTypeCompiler):
    """SQLAlchemy's types as ClickHouse names them (for ``CAST``)."""

    def visit_INTEGER(self, type_: Any, **kw: Any) -> str:
        return "Int64"

    visit_BIGINT = visit_SMALLINT = visit_integer = visit_big_integer = visit_INTEGER

    def visit_FLOAT(self, type_: Any, **kw: Any) -> str:
        return "Float64"

    visit_REAL = visit_DOUBLE = visit_NUMERIC = visit_DECIMAL = visit_float = visit_FLOAT

    def visit_VARCHAR(self, type_: Any, **kw: Any) -> str:
        return "String"

    visit_TEXT = visit_CHAR = visit_string = visit_text = visit_unicode = visit_VARCHAR

    def visit_BOOLEAN(self, type_: Any, **kw: Any) -> str:
        return "UInt8"

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:
        return "Int64"

    visit_TIMESTAMP = visit_datetime = visit_DATETIME


class _Cursor:
    """A DB-API cursor over a :class:`Client`: a statement's rows, all read at once."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._rows: list[tuple[Any, ...]] = []
        self._at = 0
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1
        self.arraysize = 1000
        self.lastrowid = None

    def execute(self, sql: str, parameters: Any = None) -> None:
        if isinstance(parameters, dict):
            sql = sql % {k: literal(v) for k, v in parameters.items()}
        elif parameters:
            sql = sql % tuple(literal(v) for v in parameters)
        else:
            sql = sql % {}
        names, rows = self._client.query(sql)
        self._rows, self._at = rows, 0
        self.description = [
            (result_name(n), None, None, None, None, None, True) for n in names
        ] or None
        self.rowcount = len(rows)

    def executemany(self, sql: str, seq: Sequence[Any]) -> None:
        for parameters in seq:
            self.execute(sql, parameters)

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        n = size or self.arraysize
        out = self._rows[self._at : self._at + n]
        self._at += len(out)
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        out = self._rows[self._at :]
        self._at = len(self._rows)
        return out

    def close(self) -> None:
        self._rows = []


class _Connection:
    """A DB-API connection: the client; ClickHouse has no transactions to commit."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def cursor(self) -> _Cursor:
        return _Cursor(self.client)

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass


class _DBAPI:
    """The DB-API module SQLAlchemy asks for (``paramstyle``, the error classes)."""

    paramstyle = "pyformat"
    #: A bytes value (a rollup key) bound as itself: :func:`literal` writes it as ``unhex(…)``.
    Binary = bytes
    Error = ClickHouseError
    Warning = ClickHouseError
    InterfaceError = OperationalError = DatabaseError = ClickHouseError
    IntegrityError = DataError = ProgrammingError = ClickHouseError
    InternalError = NotSupportedError = ClickHouseError


#: The client each engine's connections use, by the URL's ``client`` key (set by
#: :func:`db.clickhouse.engine.clickhouse_engine`).
CLIENTS: dict[str, Client] = {}


def client_of(engine: Engine) -> Client:
    """The client of a ClickHouse store's engine."""
    return CLIENTS[engine.url.query["client"]]  # type: ignore[index]


def layout_of(engine: Engine) -> Layout:
    """Where a ClickHouse store's tables are."""
    target = client_of(engine).target
    return Layout(target.database, target.cluster)


class ClickHouseDialect(default.DefaultDialect):
    """See the module's docstring."""

    name = "clickhouse"
    driver = "toollens"
    statement_compiler = ClickHouseCompiler
    type_compiler_cls = ClickHouseTypeCompiler
    #: The store's database (set by :func:`db.clickhouse.engine.clickhouse_engine`).
    database: str | None = None
    supports_native_boolean = False
    supports_statement_cache = True
    supports_sane_rowcount = False
    supports_sane_multi_rowcount = False
    postfetch_lastrowid = False
    implicit_returning = False
    insert_returning = False
    default_paramstyle = "pyformat"
    colspecs = {sqltypes.DateTime: _EpochMicros}  # noqa: RUF012 (SQLAlchemy's own attribute)

    def __init__(self, json_serializer: Any = None, json_deserializer: Any = None, **kw: Any):
        super().__init__(**kw)
        self._json_serializer = json_serializer
        self._json_deserializer = json_deserializer

    @classmethod
    def import_dbapi(cls) -> Any:
        return _DBAPI

    def create_connect_args(self, url: Any) -> tuple[list[Any], dict[str, Any]]:
        return [url.query["client"]], {}

    def connect(self, *cargs: Any, **cparams: Any) -> Any:
        # A connection of its own per pooled connection: a driver's client serves one thread.
        return _Connection(CLIENTS[cargs[0]].fresh())

    def _get_server_version_info(self, connection: Any) -> Any:
        return None

    def _get_default_schema_name(self, connection: Any) -> Any:
        return None

    def do_ping(self, dbapi_connection: Any) -> bool:
        return True

    def get_isolation_level(self, dbapi_connection: Any) -> Any:
        return None

    def do_rollback(self, dbapi_connection: Any) -> None:
        pass

    def do_commit(self, dbapi_connection: Any) -> None:
        pass

    def do_begin(self, dbapi_connection: Any) -> None:
        pass

    def has_table(self, connection: Any, table_name: str, schema: Any = None, **kw: Any) -> bool:
        sql = f"EXISTS TABLE {table_name}"
        return bool(connection.exec_driver_sql(sql).scalar())
