"""A ClickHouse store as the source or the target of ``toollens copy`` (:mod:`db.bulk.copy`).

The copy meets it in the relational shape of :mod:`db.schema`: a batch is tuples in a
relational table's column order holding Python values. Read from the views (each trace's latest
version, deletions left out), converted back (times from microseconds, JSON decoded, flags as
booleans, raw bytes through ``hex``); written through the import writer's conversion
(:class:`db.clickhouse.rows.StoredRows`) into the Distributed tables, one insert per table
per batch, each child row given the ``version`` and ``import_month`` of its trace and each
small table's row the revision 1.

Child rows have no id on ClickHouse (rows are found by their trace and position), so a copy from
ClickHouse gives them fresh ids in the target, in the order of their trace and position.

The copy state lives in ``toollens_copy_state`` on the first server (one row per table and
write: the latest row of a table is its state). ClickHouse has no transaction over a batch and
its state, so :meth:`ClickHouseCopyStore.write_unit` can be told the batch may be partly in
the target already (the first batch of a resumed copy) and then leaves out what is there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import JSON, Boolean, LargeBinary, Table

from db.bulk.copy import TableState
from db.clickhouse.client import literal
from db.clickhouse.dialect import client_of, layout_of
from db.clickhouse.rollups import write_state
from db.clickhouse.rows import StoredRows
from db.clickhouse.schema import (
    IMPORT_MONTH,
    REVISION,
    SMALL_TABLES,
    TRACE_TABLES,
    relational,
)
from db.contract import exact_json
from db.engine import display_url, make_engine
from db.migrate import head_revision
from db.schema import UtcTimeStamp

STATE_TABLE = "toollens_copy_state"
#: The tables a ClickHouse store holds, in the order a copy fills them (parents first).
HELD: tuple[str, ...] = (*SMALL_TABLES, *TRACE_TABLES)
#: Extra columns that order the child rows of one position (a stable order, so fresh ids
#: follow the same rows on every run).
_TIE_BREAK: dict[str, tuple[str, ...]] = {
    "tool_results": ("call_index", "tool_call_id"),
    "findings": ("name", "call_index", "tool"),
    "error_streaks": ("tool", "first_index"),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _from_store(column: Any) -> Callable[[Any], Any]:
    """How a value read from ClickHouse becomes the Python value of relational ``column``."""
    kind = column.type
    convert: Callable[[Any], Any]
    if isinstance(kind, UtcTimeStamp):
        convert = lambda v: _EPOCH + timedelta(microseconds=int(v))  # noqa: E731
    elif isinstance(kind, Boolean):
        convert = bool
    elif isinstance(kind, JSON):
        convert = exact_json.loads
    elif isinstance(kind, LargeBinary):
        convert = bytes.fromhex
    else:
        return lambda v: v
    return lambda v: None if v is None else convert(v)


def month_of(moment: datetime) -> int:
    """The partition (``YYYYMM``) of a row imported at ``moment``."""
    return moment.year * 100 + moment.month


class ClickHouseCopyStore:
    """A ClickHouse store (cluster or chdb) as a copy's source or target."""

    def __init__(self, url: str) -> None:
        self.engine = make_engine(url, migrate=False)
        self.client = client_of(self.engine)
        self.layout = layout_of(self.engine)
        self.location = display_url(url)
        self._state = f"{self.layout.database}.{STATE_TABLE}"
        #: Where the copy reads from, written on every state row (read back on resume).
        self._source: str | None = None

    def dispose(self) -> None:
        self.engine.dispose()

    def revision(self) -> str | None:
        """The head: ToolLens creates a ClickHouse store's tables as they are now."""
        return head_revision()

    # ---- reading --------------------------------------------------------------------------

    def _select(self, table: Table, where: str, order: str, limit: int | None) -> list[tuple]:
        child = table.name in TRACE_TABLES and table.name != "traces"
        columns = [c for c in table.columns if not (child and c.name == "id")]
        names = ", ".join(
            f"hex(`{c.name}`)" if isinstance(c.type, LargeBinary) else f"`{c.name}`"
            for c in columns
        )
        sql = f"SELECT {names} FROM {self.layout.view(table.name)} WHERE {where} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {limit}"
        plan = [_from_store(c) for c in columns]
        out = [tuple(f(v) for f, v in zip(plan, row, strict=True)) for row in self._rows(sql)]
        return [(None, *row) for row in out] if child else out

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self.client.query(sql)[1]

    def batch(self, table: Table, after: Any, limit: int) -> list[tuple[Any, ...]]:
        where = "1" if after is None else f"id > {int(after)}"
        return self._select(table, where, "id", limit)

    def trace_sizes(self, after: int, limit: int) -> list[tuple[int, int]]:
        return [
            (int(i), int(n))
            for i, n in self._rows(
                f"SELECT id, message_count FROM {self.layout.view('traces')} "
                f"WHERE id > {int(after)} ORDER BY id LIMIT {int(limit)}"
            )
        ]

    def trace_rows(self, table: Table, first: int, last: int) -> list[tuple[Any, ...]]:
        trace = "id" if table.name == "traces" else "trace_id"
        order = ", ".join((*TRACE_TABLES[table.name], *_TIE_BREAK.get(table.name, ())))
        return self._select(table, f"{trace} BETWEEN {first} AND {last}", order, None)

    def count(self, table: Table) -> int:
        if table.name not in HELD:
            return 0
        return int(self._rows(f"SELECT count() FROM {self.layout.view(table.name)}")[0][0])

    def summary(self) -> dict[str, Any]:
        from db.queries.summary import summarize

        return summarize(self.engine)

    # ---- the target ---------------------------------------------------------------------------

    def holds_data(self) -> str | None:
        for name in HELD:
            if self._rows(f"SELECT 1 FROM {self.layout.every_row(name)} LIMIT 1"):
                return name
        return None

    def create(self, revision: str) -> None:
        """Nothing to do: the tables were created when the store was opened."""

    def _has_state(self) -> bool:
        return bool(
            self._rows(
                f"SELECT 1 FROM system.tables WHERE database = {literal(self.layout.database)} "
                f"AND name = {literal(STATE_TABLE)}"
            )
        )

    def state(self) -> dict[str, TableState] | None:
        if not self._has_state():
            return None
        rows = self._rows(
            "SELECT table_name, argMax(last_id, seq), argMax(rows, seq), argMax(done, seq) "
            f"FROM {self._state} GROUP BY table_name"
        )
        return {
            name: TableState(name, int(last) or None, int(count), bool(done))
            for name, last, count, done in rows
        }

    def copied_from(self) -> str | None:
        if not self._has_state():
            return None
        found = self._rows(f"SELECT source FROM {self._state} LIMIT 1")
        return str(found[0][0]) if found else None

    def start(self, source: str, tables: Sequence[Table]) -> None:
        # The copied traces go in past the rollups: the base tables answer until the copy
        # recounts them at its end.
        write_state(self.client, self.layout, complete=False)
        self.client.command(
            f"CREATE TABLE {self._state} (table_name String, source String, last_id Int64, "
            "rows Int64, done UInt8, seq UInt64) ENGINE = MergeTree() ORDER BY (table_name, seq)"
        )
        self._source = source
        self._save({t.name: (0, 0, False) for t in tables})

    def _save(self, states: Mapping[str, tuple[int, int, bool]]) -> None:
        if self._source is None:
            self._source = self.copied_from() or ""
        seq = time.time_ns()
        self.client.insert(
            self._state,
            ["table_name", "source", "last_id", "rows", "done", "seq"],
            [
                (name, self._source, last, rows, int(done), seq)
                for name, (last, rows, done) in states.items()
            ],
        )

    def write(self, table: Table, rows: Sequence[tuple[Any, ...]], state: TableState) -> None:
        """A batch of a small table (imports, their files, rejected records) and its state.
        Written again after an interruption, a row is its own revision again: the view keeps
        one row per id."""
        if rows:
            out = StoredRows(table.name, (*(c.name for c in table.columns), REVISION))
            for row in rows:
                out.add((*row, 1))
            out.write(self.client, self.layout)
        self._save({table.name: (state.last_key or 0, state.rows, state.done)})

    def write_unit(
        self,
        unit: Mapping[str, Sequence[tuple[Any, ...]]],
        states: Mapping[str, TableState],
        *,
        maybe_present: bool,
    ) -> None:
        """The rows of a run of traces (every trace-scoped table) and their state: the child
        rows first, the traces last (a reader sees a trace once its ``traces`` row is in).
        ``maybe_present``: leave out the traces whose rows of a table the target holds already
        (one insert holds all of a trace's rows of a table, on one shard in one partition,
        so they are in whole or not at all)."""
        traces = relational("traces")
        names = [c.name for c in traces.columns]
        at = {n: names.index(n) for n in ("id", "version", "imported_at")}
        own = {
            row[at["id"]]: (row[at["version"]], month_of(row[at["imported_at"]]))
            for row in unit["traces"]
        }
        ids = sorted(own)
        for name in (*(n for n in TRACE_TABLES if n != "traces"), "traces"):
            table = relational(name)
            key = "id" if name == "traces" else "trace_id"
            present: set[int] = set()
            if maybe_present and ids:
                present = {
                    int(t)
                    for (t,) in self._rows(
                        f"SELECT DISTINCT {key} FROM {self.layout.every_row(name)} "
                        f"WHERE {key} BETWEEN {ids[0]} AND {ids[-1]}"
                    )
                }
            columns = [c.name for c in table.columns]
            if name == "traces":
                out = StoredRows(name, (*columns, IMPORT_MONTH))
                for row in unit[name]:
                    if row[at["id"]] not in present:
                        out.add((*row, own[row[at["id"]]][1]))
            else:
                out = StoredRows(name, (*columns, "version", IMPORT_MONTH))
                position = columns.index("trace_id")
                for row in unit[name]:
                    if row[position] not in present:
                        out.add((*row, *own[row[position]]))
            out.write(self.client, self.layout)
        self._save(
            {n: (s.last_key or 0, s.rows, s.done) for n, s in states.items() if n in TRACE_TABLES}
        )

    def finish(self, tables: Sequence[Table]) -> None:
        self.client.command(f"DROP TABLE IF EXISTS {self._state}")
