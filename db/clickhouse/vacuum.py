"""``toollens vacuum`` on a ClickHouse store: the rows no read sees are taken off the disk, a
partition at a time, without a mutation.

What no read sees (:mod:`db.clickhouse.schema`): the rows of deleted traces (their tombstones
hide them), the rows of a trace's replaced versions (a re-import's or a re-analysis' new
version hides them), rows of a trace whose ``traces`` row was never written (an interrupted
import), and in the small tables every revision but an id's latest, and ids whose latest
revision deletes them. ``ALTER TABLE … DELETE`` would rewrite every part holding such a row, in
the background, for as long as it takes: what times out on large stores. Instead, on each
server and for each table of the store's local ones:

* the rows are counted per partition (``import_month``), split into those a read sees and
  the rest; a partition holding nothing else is left as it is;
* a partition holding only rows no read sees is dropped (``ALTER TABLE … DROP PARTITION``);
* any other is rebuilt: the rows a read sees are copied into an empty scratch table of the same
  structure (``<name>_vacuum``, ``INSERT … SELECT`` of that one partition), which then takes
  the partition's place (``ALTER TABLE … REPLACE PARTITION … FROM``: atomic, and the old parts
  are removed by the server once no query reads them).

Every step runs on one server over its own local tables (a trace and all its rows live on one
shard), one partition at a time: the work and the room it needs are those of one month of one
shard, whatever the store's size. At any moment a read answers as before: only rows it does not
see are removed, and a replaced partition holds exactly the ones it sees. The same SQL runs on
the 2018 server (18.16) and on the current one (chdb), which refuses ``REPLACE PARTITION`` from
an empty source, hence the drop.

The small tables (imports, their files, rejected records) and the tombstones have no partition
key: each is rebuilt whole (``PARTITION tuple()``), as they are small. A tombstone goes once its
trace's ``traces`` rows are gone from its server. The child tables are rebuilt before
``traces``, whose latest versions say what the children keep.

Vacuum writes like an import (partitions replaced while an import inserts into them would lose
its rows): it refuses to run while an import of the store is running.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import Engine

from db.clickhouse.client import Client, NativeClient, literal
from db.clickhouse.dialect import client_of, layout_of
from db.clickhouse.schema import (
    DELETED,
    DELETIONS,
    IMPORT_MONTH,
    REVISION,
    SMALL_TABLES,
    TRACE_TABLES,
    Layout,
)
from db.writes import processes

#: The order tables are vacuumed in: the children before ``traces`` (see the module's
#: docstring), the tombstones last.
ORDER: tuple[str, ...] = (
    *(name for name in TRACE_TABLES if name != "traces"),
    "traces",
    *SMALL_TABLES,
    DELETIONS,
)


class VacuumRefused(RuntimeError):
    """The store cannot be vacuumed now (the message says why)."""


@dataclass(frozen=True, slots=True)
class TableSpace:
    """A local table's rows and bytes on disk (active parts, every server), before and after."""

    table: str
    rows_before: int
    rows_after: int
    bytes_before: int
    bytes_after: int


@dataclass(frozen=True, slots=True)
class VacuumReport:
    """What :func:`vacuum` did: the space per table, the partitions rebuilt and dropped (counted
    per server)."""

    tables: list[TableSpace]
    rebuilt: int
    dropped: int


@dataclass(frozen=True, slots=True)
class _Server:
    """One server of the store: the rows of a query over its own tables, and a statement run."""

    rows: Callable[[str], list[tuple[Any, ...]]]
    run: Callable[[str], Any]


def _servers(client: Client) -> list[_Server]:
    if isinstance(client, NativeClient):
        return [
            _Server(partial(client.server_query, i), partial(client.server_query, i))
            for i in range(client.servers)
        ]
    return [_Server(lambda sql: client.query(sql)[1], client.command)]


def _seen(layout: Layout, name: str) -> str:
    """The condition on a row of ``name``'s local table: a read sees it."""
    if name == DELETIONS:
        return f"trace_id IN (SELECT id FROM {layout.local('traces')})"
    trace = "id" if name == "traces" else "trace_id"
    latest = f"SELECT id, max(version) FROM {layout.local('traces')} GROUP BY id"
    deleted = f"SELECT trace_id FROM {layout.local(DELETIONS)}"
    return f"({trace}, version) IN ({latest}) AND {trace} NOT IN ({deleted})"


def _seen_rows(layout: Layout, name: str) -> str:
    """The rows of ``name``'s local table a read sees, as a SELECT."""
    local = layout.local(name)
    if name in SMALL_TABLES:
        latest = f"SELECT * FROM {local} ORDER BY id, {REVISION} DESC LIMIT 1 BY id"
        return f"SELECT * FROM ({latest}) WHERE {DELETED} = 0"
    return f"SELECT * FROM {local} WHERE {_seen(layout, name)}"


def _partitions(server: _Server, layout: Layout, name: str) -> list[tuple[str, int, int]]:
    """``(partition, rows, rows a read sees)`` of ``name``'s local table on ``server``."""
    local = layout.local(name)
    if name in TRACE_TABLES:
        found = server.rows(
            f"SELECT {IMPORT_MONTH}, count(), countIf({_seen(layout, name)}) FROM {local} "
            f"GROUP BY {IMPORT_MONTH} ORDER BY {IMPORT_MONTH}"
        )
        return [(str(month), int(rows), int(seen)) for month, rows, seen in found]
    rows = int(server.rows(f"SELECT count() FROM {local}")[0][0])
    seen = int(server.rows(f"SELECT count() FROM ({_seen_rows(layout, name)})")[0][0])
    return [("tuple()", rows, seen)] if rows else []


def _vacuum_table(server: _Server, layout: Layout, name: str) -> tuple[int, int]:
    """Rebuild or drop the partitions of ``name`` on ``server`` that hold rows no read sees;
    how many were rebuilt and dropped."""
    local, scratch = layout.local(name), f"{layout.database}.{name}_vacuum"
    rebuilt = dropped = 0
    for partition, rows, seen in _partitions(server, layout, name):
        if seen == rows:
            continue
        if not seen:
            server.run(f"ALTER TABLE {local} DROP PARTITION {partition}")
            dropped += 1
            continue
        server.run(f"DROP TABLE IF EXISTS {scratch}")
        server.run(f"CREATE TABLE {scratch} AS {local}")
        where = f" WHERE {IMPORT_MONTH} = {partition}" if name in TRACE_TABLES else ""
        server.run(f"INSERT INTO {scratch} SELECT * FROM ({_seen_rows(layout, name)}){where}")
        server.run(f"ALTER TABLE {local} REPLACE PARTITION {partition} FROM {scratch}")
        server.run(f"DROP TABLE {scratch}")
        rebuilt += 1
    return rebuilt, dropped


def _space(servers: list[_Server], layout: Layout) -> dict[str, tuple[int, int]]:
    """Rows and bytes on disk of the store's local tables (active parts, every server)."""
    out = {f"{name}_local": (0, 0) for name in ORDER}
    for server in servers:
        for table, rows, size in server.rows(
            "SELECT table, sum(rows), sum(bytes_on_disk) FROM system.parts WHERE active AND "
            f"database = {literal(layout.database)} GROUP BY table"
        ):
            if table in out:
                before = out[table]
                out[table] = (before[0] + int(rows), before[1] + int(size))
    return out


def _refuse_while_importing(client: Client, layout: Layout) -> None:
    _, running = client.query(
        f"SELECT id, host, pid, process_start FROM {layout.view('imports')} "
        "WHERE state = 'running' ORDER BY id"
    )
    for import_id, host, pid, start in running:
        if pid is None or not processes.is_gone(processes.ProcessIdentity(host, pid, start)):
            raise VacuumRefused(
                f"import {import_id} is running (process {pid} on {host}): vacuum once it "
                "has finished (vacuum replaces partitions an import may be writing to)"
            )


def vacuum(engine: Engine) -> VacuumReport:
    """Take the rows no read sees off the disk (see the module's docstring)."""
    client, layout = client_of(engine), layout_of(engine)
    _refuse_while_importing(client, layout)
    servers = _servers(client)
    before = _space(servers, layout)
    rebuilt = dropped = 0
    for name in ORDER:
        for server in servers:
            done = _vacuum_table(server, layout, name)
            rebuilt, dropped = rebuilt + done[0], dropped + done[1]
    after = _space(servers, layout)
    tables = [
        TableSpace(table, before[table][0], after[table][0], before[table][1], after[table][1])
        for table in before
    ]
    return VacuumReport(tables, rebuilt, dropped)


__all__ = ["ORDER", "TableSpace", "VacuumRefused", "VacuumReport", "vacuum"]
