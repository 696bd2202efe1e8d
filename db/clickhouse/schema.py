"""The ClickHouse store's tables: made for ClickHouse, named so ``db.queries`` read them.

Per relational table of ``db.schema`` that the store keeps (:data:`TRACE_TABLES`,
:data:`SMALL_TABLES`), three objects in the store's database, created on every server by
ToolLens itself (``ON CLUSTER`` needs ZooKeeper on 18.16; a loop over the servers does not):

* ``<name>_local``: the rows this server holds. Trace-scoped tables are partitioned by the
  month of the import that wrote the row (``import_month``, ``YYYYMM``): retention drops whole
  partitions, instant at any size (18.16 has no table ``TTL``). ``traces_local`` is a
  ``ReplacingMergeTree(version)`` by ``id``: a re-imported trace is written again, same id,
  higher ``version``, and merges reclaim the old row. The child tables (messages, calls,
  results, findings, streaks) are ``MergeTree`` with the ``version`` of the trace they belong
  to: they have no key unique per row to replace by, so an old version's rows go with their
  partition.
* ``<name>_all`` (with a cluster): ``Distributed`` over every server's ``<name>_local``,
  sharded by ``cityHash64`` of the trace id (``traces``: its ``id``; the rest: ``trace_id``),
  so a trace and all its rows live on one shard and every per-trace computation is local.
* ``<name>``: a view of the latest version of every trace, which is what the relational
  table holds: the rows whose ``(trace_id, version)`` is the largest ``version`` of their
  trace in ``traces_local``. No ``FINAL`` and no wait for merges: correctness never depends
  on them. The ``IN`` subquery reads ``traces_local`` and runs on each shard for its own rows
  (both sides sharded by trace), so nothing crosses shards.

The small tables (imports, files, rejected records) are ``ReplacingMergeTree(_rev)`` by
``id``: a row changed (an import finishing) is written again with a higher ``_rev``, and the
view keeps each id's highest (``LIMIT 1 BY``) unless that revision deletes it (``_deleted``).

The rollups (``db.rollups.upkeep``), per rollup table ``rollup_*`` of ``db.schema``:
``rollup_*_local`` is a ``SummingMergeTree`` by the row's ``key`` that receives signed rows
(the contributions of the traces written, and those of the versions they replace or delete,
negated), sharded by ``cityHash64(key)`` so that merges sum each key's rows on one shard; the
view ``rollup_*`` sums them per row (``HAVING n != 0``): the rows the relational rollup holds,
without ``FINAL`` and without waiting for a merge. ``rollup_state`` is a small table like the
imports (its latest revision counts).

Deleting is an insert too, never a mutation (``ALTER TABLE … DELETE`` rewrites every part
holding a row: what times out on large stores): a deleted trace's id goes into
``trace_deletions`` (sharded like the trace, so the views' ``NOT IN`` is local per shard) and
its rows stay on disk until their partition is dropped.

Columns keep ``db.schema``'s names; types keep to 18.16 (:func:`column_type`): times are
``Int64`` microseconds since the epoch (no ``DateTime64``), JSON is ``String``, flags ``UInt8``,
``Nullable`` only where the relational column is nullable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Float, Integer, LargeBinary, String, Table, Text

from db.clickhouse.client import Client
from db.contract.vocabulary import FINDING_KINDS
from db.schema import Base, UtcTimeStamp

#: The trace-scoped tables, their local engine's sort key and whether rows are replaced by it.
TRACE_TABLES: dict[str, tuple[str, ...]] = {
    "traces": ("id",),
    "messages": ("trace_id", "seq"),
    "tool_calls": ("trace_id", "message_seq", "call_index"),
    "tool_results": ("trace_id", "message_seq"),
    "findings": ("trace_id", "message_seq"),
    "error_streaks": ("trace_id", "first_seq"),
}
#: Tables read whole, each row by its id.
SMALL_TABLES: tuple[str, ...] = ("imports", "import_files", "rejected_records")
#: The columns the store adds: the partition of a trace-scoped row, the revision of a small
#: table's row and whether that revision deletes it.
IMPORT_MONTH, REVISION, DELETED = "import_month", "_rev", "_deleted"
#: The deleted traces (tombstones), sharded with their traces: ``toollens delete`` is an
#: insert here, and every view leaves these traces out.
DELETIONS = "trace_deletions"
DELETION_COLUMNS: tuple[tuple[str, str], ...] = (("trace_id", "Int64"), ("at", "Int64"))
#: Whether the rollups hold the store (``db.schema.RollupState``): revisions like a small table's,
#: written by the rollups' upkeep alone (not copied, not deleted with an import).
ROLLUP_STATE = "rollup_state"


def rollup_measures() -> dict[str, tuple[str, ...]]:
    """The measures (summed columns) of each rollup table, by name."""
    from db.rollups.upkeep import ROLLUPS  # the rollups import the catalogue, which imports us

    return {name: rollup.measures for name, rollup in ROLLUPS.items()}


def relational(name: str) -> Table:
    """The relational table ``name`` of ``db.schema``."""
    return Base.metadata.tables[name]


def column_type(column: Any) -> str:
    """A ``db.schema`` column's ClickHouse type."""
    kind = column.type
    base: str
    if isinstance(kind, UtcTimeStamp):
        base = "Int64"
    elif isinstance(kind, Boolean):
        base = "UInt8"
    elif isinstance(kind, Integer | BigInteger):
        base = "Int64"
    elif isinstance(kind, Float):
        base = "Float64"
    elif isinstance(kind, JSON | String | Text | LargeBinary):
        base = "String"
    else:  # pragma: no cover - a type db.schema does not use yet
        raise TypeError(f"no ClickHouse type for {column.table.name}.{column.name}: {kind}")
    return f"Nullable({base})" if column.nullable else base


@dataclass(frozen=True)
class Layout:
    """Where a store's tables are: its database and, on a cluster, the cluster's name."""

    database: str
    cluster: str | None

    def local(self, name: str) -> str:
        return f"{self.database}.{name}_local"

    def every_row(self, name: str) -> str:
        """The table holding every row of ``name`` on every server (all versions)."""
        return f"{self.database}.{name}_all" if self.cluster else self.local(name)

    def view(self, name: str) -> str:
        return f"{self.database}.{name}"


def stored_columns(name: str) -> list[tuple[str, str]]:
    """``(column, ClickHouse type)`` of table ``name`` as the store keeps it."""
    table = relational(name)
    columns = [(c.name, column_type(c)) for c in table.columns]
    if name in TRACE_TABLES:
        if name != "traces":
            columns = [c for c in columns if c[0] != "id"]
            columns.append(("version", "Int64"))
        columns.append((IMPORT_MONTH, "UInt32"))
    else:
        columns += [(REVISION, "UInt64"), (DELETED, "UInt8")]
    return columns


def _shard_key(name: str) -> str:
    if name == "traces" or name in SMALL_TABLES or name == ROLLUP_STATE:
        return "cityHash64(id)"
    if name.startswith("rollup_"):
        return "cityHash64(key)"
    return "cityHash64(trace_id)"


def _local_ddl(layout: Layout, name: str, measures: dict[str, tuple[str, ...]]) -> str:
    if name == DELETIONS:
        columns = ", ".join(f"`{c}` {t}" for c, t in DELETION_COLUMNS)
        return (
            f"CREATE TABLE IF NOT EXISTS {layout.local(name)} ({columns}) "
            "ENGINE = MergeTree() ORDER BY (trace_id)"
        )
    if name in measures:
        columns = ", ".join(f"`{c.name}` {column_type(c)}" for c in relational(name).columns)
        return (
            f"CREATE TABLE IF NOT EXISTS {layout.local(name)} ({columns}) "
            f"ENGINE = SummingMergeTree(({', '.join(measures[name])})) ORDER BY (key)"
        )
    columns = ", ".join(f"`{c}` {t}" for c, t in stored_columns(name))
    if name in TRACE_TABLES:
        key = ", ".join(TRACE_TABLES[name])
        engine = "ReplacingMergeTree(version)" if name == "traces" else "MergeTree()"
        return (
            f"CREATE TABLE IF NOT EXISTS {layout.local(name)} ({columns}) ENGINE = {engine} "
            f"PARTITION BY {IMPORT_MONTH} ORDER BY ({key})"
        )
    return (
        f"CREATE TABLE IF NOT EXISTS {layout.local(name)} ({columns}) "
        f"ENGINE = ReplacingMergeTree({REVISION}) ORDER BY (id)"
    )


#: The ``id`` a child table's view gives each row (the relational tables' key, which the
#: pages order ties by and join a table's own rows on): unique per row from the row's place
#: in its trace, ordered as the relational store numbers them (trace, then message, then
#: call). It holds while a trace id stays under 2**31, a message's seq under 2**24 and a
#: message's calls under 256 (16 for calls with findings).
ROW_IDS: dict[str, str] = {
    "messages": "trace_id * 4294967296 + seq * 256",
    "tool_calls": "trace_id * 4294967296 + message_seq * 256 + call_index",
    "tool_results": "trace_id * 4294967296 + message_seq * 256",
    "findings": (
        "trace_id * 4294967296 + message_seq * 256 + ifNull(call_index, 0) * 16 "
        f"+ indexOf([{', '.join(repr(k) for k in FINDING_KINDS)}], name)"
    ),
    "error_streaks": "trace_id * 4294967296 + first_seq * 256 + first_index",
}


def _view_ddl(layout: Layout, name: str, measures: dict[str, tuple[str, ...]]) -> str:
    source = layout.every_row(name)
    if name in measures:
        # Grouped by every column but the measures (each a function of ``key``): a reader's
        # conditions on them reach the tables (with ``enable_optimize_predicate_expression``,
        # ``db.clickhouse.client``), so a range of keys reads that range of the primary key.
        summed = measures[name]
        keys = ", ".join(c.name for c in relational(name).columns if c.name not in summed)
        sums = ", ".join(f"sum({m}) AS {m}" for m in summed)
        return (
            f"CREATE VIEW IF NOT EXISTS {layout.view(name)} AS SELECT {keys}, {sums} "
            f"FROM {source} GROUP BY {keys} HAVING n != 0"
        )
    if name in TRACE_TABLES:
        trace = "id" if name == "traces" else "trace_id"
        latest = f"SELECT id, max(version) FROM {layout.local('traces')} GROUP BY id"
        deleted = f"SELECT trace_id FROM {layout.local(DELETIONS)}"
        where = f"({trace}, version) IN ({latest}) AND {trace} NOT IN ({deleted})"
        row_id = f", toInt64({ROW_IDS[name]}) AS id" if name in ROW_IDS else ""
        return (
            f"CREATE VIEW IF NOT EXISTS {layout.view(name)} AS SELECT *{row_id} FROM {source} "
            f"WHERE {where}"
        )
    latest = f"SELECT * FROM {source} ORDER BY id, {REVISION} DESC LIMIT 1 BY id"
    return (
        f"CREATE VIEW IF NOT EXISTS {layout.view(name)} AS SELECT * FROM ({latest}) "
        f"WHERE {DELETED} = 0"
    )


#: Relational tables the ClickHouse store keeps empty, so that the pages' reads of them
#: answer "none": review notes (the store refuses them: ``db.door.review_refused``), and the
#: log of trace updates and replaced versions (its writer records neither yet).
EMPTY_TABLES: tuple[str, ...] = ("annotations", "trace_updates", "trace_versions")


def _empty_ddl(layout: Layout, name: str) -> str:
    columns = ", ".join(f"`{c.name}` {column_type(c)}" for c in relational(name).columns)
    return f"CREATE TABLE IF NOT EXISTS {layout.view(name)} ({columns}) ENGINE = TinyLog"


def statements(layout: Layout) -> list[str]:
    """The DDL of a store on one server, in order."""
    out = [f"CREATE DATABASE IF NOT EXISTS {layout.database}"]
    out += [_empty_ddl(layout, name) for name in EMPTY_TABLES]
    measures = rollup_measures()
    names = [*TRACE_TABLES, *SMALL_TABLES, ROLLUP_STATE, DELETIONS, *measures]
    out += [_local_ddl(layout, name, measures) for name in names]
    if layout.cluster:
        out += [
            f"CREATE TABLE IF NOT EXISTS {layout.every_row(name)} AS {layout.local(name)} "
            f"ENGINE = Distributed({layout.cluster}, {layout.database}, {name}_local, "
            f"{_shard_key(name)})"
            for name in names
        ]
    out += [_view_ddl(layout, name, measures) for name in names if name != DELETIONS]
    return out


def create(client: Client, layout: Layout) -> None:
    """Create the store's tables on every server (those missing)."""
    for sql in statements(layout):
        client.on_every_server(sql)
