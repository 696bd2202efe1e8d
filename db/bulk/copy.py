"""Moving a store from one engine to another: ``toollens copy --from URL --to URL``.

Every table of :mod:`db.schema` is copied — imports, traces and their messages, calls, results,
findings and streaks, source files, rejected records, annotations, trace updates, the rollups and
their state — with the same ids, so every reference between rows holds. Tables go parents
first (the target checks foreign keys as rows arrive).

**Streamed.** A table is read in batches in the order of its primary key (keyset pagination:
``WHERE key > last ORDER BY key LIMIT n``, an index range however far into the table the copy is),
and only one batch is in memory at a time, whatever the store's size.

**Resumable.** Each batch is written in one transaction of the target together with the copy
state (:data:`STATE`: per table the last key copied, the rows copied so far, whether it is done).
An interruption (Ctrl-C, a killed process, a lost connection) leaves the target at a batch
boundary, and the same command continues after the last key copied. The state table is dropped
once every table is copied; a target that holds data without it is refused, so a copy never mixes
into a store that is in use.

**Checked.** The target must be empty (it is then migrated to the source's schema) or hold an
unfinished copy of the same source; the source must be at this ToolLens's schema head (a store at
an older one is migrated by opening it once with any command). At the end, PostgreSQL's id
sequences are moved past the copied ids (new imports into the target get fresh ids), the planner
statistics are refreshed, the rows per table are counted on both sides, and the target's
``summary`` is compared with the source's.

**Engines.** The copy meets an engine at two small interfaces: :class:`CopySource` (its schema
revision, a table's batch after a key, a table's row count, the summary) and :class:`CopyTarget`
(the same, and: make an empty store at a revision, read the copy state, write a batch with its
state, finish). A batch is engine-neutral: tuples in the column order of the :mod:`db.schema`
table, holding Python values (int, float, str, bytes, bool, timezone-aware datetime, decoded
JSON). :class:`SqlStore` implements both interfaces for SQLite and PostgreSQL through SQLAlchemy.
A ClickHouse store (:class:`db.clickhouse.copy.ClickHouseCopyStore`) holds fewer tables and
keeps no ids for child rows, so a copy with one goes trace by trace instead
(:mod:`db.bulk.copy_across`, whose :func:`~db.bulk.copy_across.copy_store` is the entry for
any two stores and calls :func:`copy_relational` for two relational ones).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Engine,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import make_url

from db import dialect
from db.clickhouse.url import is_clickhouse
from db.engine import make_engine, missing_sqlite_file, resolve_url
from db.migrate import current_revision, head_revision, known_revisions, store_location, upgrade
from db.schema import Base, RollupState
from db.writes.transaction import writing

#: Rows per batch: one read of the source and one transaction of the target each. Large enough
#: that a transaction's fixed cost is small beside its rows, small enough that a batch of long
#: messages stays a few megabytes.
BATCH_ROWS = 5_000

#: The copy state in the target while a copy is unfinished: one row per table of the schema.
STATE = Table(
    "toollens_copy_state",
    MetaData(),
    Column("table_name", String(64), primary_key=True),
    #: Where the copy reads from (password masked): a resumed copy must read the same store.
    Column("source", Text, nullable=False),
    #: The last key copied: an integer id, or the bytes key of a rollup row (NULL: none yet).
    Column("last_id", BigInteger),
    Column("last_key", LargeBinary),
    Column("rows", BigInteger, nullable=False),
    Column("done", Boolean, nullable=False),
)

#: Tables the migrations seed with a row of their own (the rollup state of an empty store): a
#: copied row replaces the target's row of the same key.
SEEDED_TABLES = frozenset({RollupState.__tablename__})


class CopyRefused(Exception):
    """The copy cannot start; the message is one line saying why and what to do."""


class CopyInterrupted(Exception):
    """The copy stopped before the end (the target holds every batch written so far)."""


def copy_tables() -> list[Table]:
    """The tables to copy, parents before children."""
    tables = list(Base.metadata.sorted_tables)
    for table in tables:
        if len(table.primary_key.columns) != 1:
            raise TypeError(f"table {table.name} needs a single-column primary key to be copied")
    return tables


def _key_column(table: Table) -> Column[Any]:
    (key,) = table.primary_key.columns
    return key


def _json_columns(table: Table) -> frozenset[str]:
    return frozenset(c.name for c in table.columns if isinstance(c.type, JSON))


@dataclass
class TableState:
    """How far the copy of one table is."""

    name: str
    last_key: Any = None
    rows: int = 0
    done: bool = False


class CopySource(Protocol):
    """What the copy reads from a store."""

    location: str

    def revision(self) -> str | None: ...

    def batch(self, table: Table, after: Any, limit: int) -> list[tuple[Any, ...]]: ...

    def count(self, table: Table) -> int: ...

    def summary(self) -> dict[str, Any]: ...

    def dispose(self) -> None: ...


class CopyTarget(CopySource, Protocol):
    """What the copy does to the store it writes."""

    def holds_data(self) -> str | None: ...

    def create(self, revision: str) -> None: ...

    def state(self) -> dict[str, TableState] | None: ...

    def start(self, source: str, tables: Sequence[Table]) -> None: ...

    def copied_from(self) -> str | None: ...

    def write(self, table: Table, rows: Sequence[tuple[Any, ...]], state: TableState) -> None: ...

    def finish(self, tables: Sequence[Table]) -> None: ...


class SqlStore:
    """A SQLite or PostgreSQL store as a copy's source or target."""

    def __init__(self, url: str) -> None:
        self.engine: Engine = make_engine(url, migrate=False)
        self.location = store_location(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()

    def revision(self) -> str | None:
        return current_revision(self.engine)

    def batch(self, table: Table, after: Any, limit: int) -> list[tuple[Any, ...]]:
        key = _key_column(table)
        query = select(*table.columns).order_by(key).limit(limit)
        if after is not None:
            query = query.where(key > after)
        with self.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def count(self, table: Table) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar_one())

    def summary(self) -> dict[str, Any]:
        from db.queries.summary import summarize

        return summarize(self.engine)

    def trace_sizes(self, after: int, limit: int) -> list[tuple[int, int]]:
        """``(id, message_count)`` of the next ``limit`` traces after id ``after``."""
        traces = Base.metadata.tables["traces"]
        query = (
            select(traces.c.id, traces.c.message_count)
            .where(traces.c.id > after)
            .order_by(traces.c.id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [(int(i), int(n)) for i, n in conn.execute(query)]

    def trace_rows(self, table: Table, first: int, last: int) -> list[tuple[Any, ...]]:
        """The rows of ``table`` belonging to the traces with ids ``first`` to ``last``."""
        trace = table.c.id if table.name == "traces" else table.c.trace_id
        query = select(*table.columns).where(trace.between(first, last)).order_by(table.c.id)
        with self.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def write_unit(
        self,
        unit: dict[str, list[tuple[Any, ...]]],
        states: dict[str, TableState],
        *,
        maybe_present: bool,
    ) -> None:
        """The rows of a run of traces (every trace-scoped table) and their state, in one
        transaction (so never partly present). Rows without an id (read from ClickHouse,
        which keeps none for child rows) get the next ids of their table."""
        with writing(self.engine) as conn:
            for name, rows in unit.items():
                table = Base.metadata.tables[name]
                if rows and rows[0][0] is None:
                    first = conn.execute(select(func.max(table.c.id))).scalar_one() or 0
                    rows = [(first + i + 1, *row[1:]) for i, row in enumerate(rows)]
                self._insert(conn, table, rows)
                state = states[name]
                values = {"rows": state.rows, "done": state.done, "last_id": state.last_key}
                conn.execute(update(STATE).where(STATE.c.table_name == name).values(values))

    def _insert(self, conn: Any, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
        if not rows:
            return
        key = _key_column(table)
        position = list(table.columns).index(key)
        keys = [row[position] for row in rows]
        if table.name in SEEDED_TABLES:
            conn.execute(delete(table).where(key.in_(keys)))
        columns = [c.name for c in table.columns]
        dialect.bulk_insert(conn, table.name, columns, rows, _json_columns(table))
        if table.name in dialect.SEARCHED_COLUMNS:
            dialect.index_search_id_range(conn, table.name, int(keys[0]), int(keys[-1]))

    def holds_data(self) -> str | None:
        """The first table holding rows (the seeded rollup state aside), or ``None``."""
        with self.engine.connect() as conn:
            present = set(inspect(conn).get_table_names())
            for table in copy_tables():
                if table.name in SEEDED_TABLES or table.name not in present:
                    continue
                if conn.execute(select(_key_column(table)).limit(1)).first() is not None:
                    return table.name
        return None

    def create(self, revision: str) -> None:
        if revision != head_revision():
            raise CopyRefused(f"this ToolLens creates stores at schema {head_revision()} only")
        upgrade(self.engine)

    def _has_state(self) -> bool:
        with self.engine.connect() as conn:
            return bool(inspect(conn).has_table(STATE.name))

    def state(self) -> dict[str, TableState] | None:
        if not self._has_state():
            return None
        with self.engine.connect() as conn:
            rows = conn.execute(select(STATE)).mappings().all()
        return {
            row["table_name"]: TableState(
                row["table_name"],
                row["last_id"] if row["last_key"] is None else bytes(row["last_key"]),
                int(row["rows"]),
                bool(row["done"]),
            )
            for row in rows
        }

    def copied_from(self) -> str | None:
        if not self._has_state():
            return None
        with self.engine.connect() as conn:
            return conn.execute(select(STATE.c.source).limit(1)).scalar_one_or_none()

    def start(self, source: str, tables: Sequence[Table]) -> None:
        with writing(self.engine) as conn:
            STATE.create(conn)
            conn.execute(
                STATE.insert(),
                [
                    {"table_name": t.name, "source": source, "rows": 0, "done": False}
                    for t in tables
                ],
            )

    def write(self, table: Table, rows: Sequence[tuple[Any, ...]], state: TableState) -> None:
        with writing(self.engine) as conn:
            self._insert(conn, table, rows)
            values: dict[str, Any] = {"rows": state.rows, "done": state.done}
            if state.last_key is not None:
                as_bytes = isinstance(state.last_key, bytes)
                values["last_key" if as_bytes else "last_id"] = state.last_key
            conn.execute(update(STATE).where(STATE.c.table_name == table.name).values(values))

    def finish(self, tables: Sequence[Table]) -> None:
        with writing(self.engine) as conn:
            if dialect.name_of(conn) == "postgresql":
                _advance_sequences(conn, tables)
            dialect.analyze(conn, [t.name for t in tables])
            STATE.drop(conn)


def _advance_sequences(conn: Any, tables: Sequence[Table]) -> None:
    """Move each id sequence past the largest copied id (a fresh table's sequence would hand
    out ids the copy already used)."""
    for table in tables:
        key = _key_column(table)
        if key.type.python_type is not int:
            continue
        sequence = conn.exec_driver_sql(
            f"SELECT pg_get_serial_sequence('{table.name}', '{key.name}')"
        ).scalar_one()
        if sequence is None:
            continue
        largest = f"max({key.name})"
        conn.exec_driver_sql(
            f"SELECT setval('{sequence}', coalesce({largest}, 1), {largest} IS NOT NULL)"
            f" FROM {table.name}"
        )


@dataclass
class CopyResult:
    """What a finished copy did and found."""

    #: Per table: rows in the source, rows in the target.
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Rows copied before this run (a resumed copy), and in this run.
    resumed_rows: int = 0
    copied_rows: int = 0
    #: The summary's differences, one line each (empty: identical).
    summary_differences: list[str] = field(default_factory=list)
    #: What was not copied and why, one line each (a copy with ClickHouse).
    notes: list[str] = field(default_factory=list)

    @property
    def counts_match(self) -> bool:
        return all(source == target for source, target in self.counts.values())


def _refuse_source(url: str, source: CopySource) -> None:
    revision = source.revision()
    if revision is None:
        raise CopyRefused(f"the source at {source.location} holds no ToolLens store")
    if revision not in known_revisions():
        raise CopyRefused(
            f"the source at {source.location} was written by a newer ToolLens "
            f"(schema {revision}); upgrade ToolLens"
        )
    if revision != head_revision():
        raise CopyRefused(
            f"the source at {source.location} is at schema {revision}, this ToolLens at "
            f"{head_revision()}: open it once with this ToolLens (`toollens summary --db {url}`) "
            "to migrate it, then copy"
        )


def _prepare_target(
    source: CopySource, target: CopyTarget, tables: Sequence[Table] | None = None
) -> dict[str, TableState]:
    """The target ready to receive ``tables`` (default: every table): an unfinished copy of the
    same source continues, an empty store is brought to the source's schema; anything else is
    refused."""
    revision = source.revision()
    assert revision is not None
    tables = copy_tables() if tables is None else list(tables)
    state = target.state()
    if state is not None:
        origin = target.copied_from()
        if origin != source.location:
            raise CopyRefused(
                f"the target at {target.location} holds an unfinished copy from {origin}: "
                f"continue it with --from {origin}, or copy into another empty store"
            )
        if target.revision() != revision:
            raise CopyRefused(
                f"the target at {target.location} is at schema {target.revision()}, the source "
                f"at {revision}: both must be at the same schema"
            )
        return state
    target_revision = target.revision()
    if target_revision is None:
        target.create(revision)
    elif target_revision != revision:
        raise CopyRefused(
            f"the target at {target.location} is at schema {target_revision}, the source at "
            f"{revision}: both must be at the same schema (copy into an empty store)"
        )
    holding = target.holds_data()
    if holding is not None:
        raise CopyRefused(
            f"the target at {target.location} already holds data (table {holding}): "
            "copy into an empty store"
        )
    target.start(source.location, tables)
    return {t.name: TableState(t.name) for t in tables}


def differences(source: Any, target: Any, path: str = "") -> list[str]:
    """Where two summaries differ, one line per differing value (``key.sub: source → target``).

    >>> differences({"traces": 3, "status": {"error": 1}}, {"traces": 3, "status": {"error": 2}})
    ['status.error: 1 → 2']
    """
    if isinstance(source, dict) and isinstance(target, dict):
        lines: list[str] = []
        for key in sorted(set(source) | set(target), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in target:
                lines.append(f"{where}: only in the source")
            elif key not in source:
                lines.append(f"{where}: only in the target")
            else:
                lines.extend(differences(source[key], target[key], where))
        return lines
    return [] if source == target else [f"{path}: {source!r} → {target!r}"]


def _batches(
    source: CopySource, table: Table, state: TableState, batch_rows: int
) -> Iterator[list[tuple[Any, ...]]]:
    position = list(table.columns).index(_key_column(table))
    after = state.last_key
    while rows := source.batch(table, after, batch_rows):
        yield rows
        after = rows[-1][position]


def copy_relational(
    source_url: str,
    target_url: str,
    *,
    batch_rows: int = BATCH_ROWS,
    stop_after_batches: int | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> CopyResult:
    """Copy the store at ``source_url`` into the one at ``target_url`` (empty, or holding an
    unfinished copy of the same source, which continues); see the module's docstring.

    ``stop_after_batches``: raise :class:`CopyInterrupted` after writing that many batches
    (what an interruption leaves behind, for tests). ``progress(table, rows)`` is called as
    each table is done. Raises :class:`CopyRefused` before writing anything when the stores do
    not fit. Both stores are SQLite or PostgreSQL: :func:`db.bulk.copy_across.copy_store`
    is the entry for any two stores.
    """
    missing = missing_sqlite_file(source_url)
    if missing is not None:
        raise CopyRefused(f"no database at {missing} (check --from)")
    resolved = [resolve_url(url) for url in (source_url, target_url)]
    if any(is_clickhouse(url) for url in resolved):
        raise CopyRefused("a ClickHouse store is copied by db.bulk.copy_across.copy_store")
    if make_url(resolved[0]) == make_url(resolved[1]):
        raise CopyRefused("--from and --to name the same store")
    source = SqlStore(source_url)
    target = SqlStore(target_url)
    try:
        _refuse_source(source_url, source)
        states = _prepare_target(source, target)
        result = CopyResult(resumed_rows=sum(s.rows for s in states.values()))
        tables = copy_tables()
        written = 0
        for table in tables:
            state = states[table.name]
            if not state.done:
                position = list(table.columns).index(_key_column(table))
                for rows in _batches(source, table, state, batch_rows):
                    if stop_after_batches is not None and written >= stop_after_batches:
                        raise CopyInterrupted(f"stopped after {written} batches")
                    state.last_key = rows[-1][position]
                    state.rows += len(rows)
                    target.write(table, rows, state)
                    result.copied_rows += len(rows)
                    written += 1
                state.done = True
                target.write(table, [], state)
            if progress is not None:
                progress(table.name, state.rows)
        target.finish(tables)
        for table in tables:
            result.counts[table.name] = (source.count(table), target.count(table))
        result.summary_differences = differences(source.summary(), target.summary())
        return result
    finally:
        source.dispose()
        target.dispose()
