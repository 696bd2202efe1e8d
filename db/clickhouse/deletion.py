"""Deleting on a ClickHouse store (``toollens delete``, ``toollens prune``): inserts, never
mutations.

A deleted trace's id is written to ``trace_deletions`` (:mod:`db.clickhouse.schema`), which
every view leaves out; a deleted import or rejected record gets a revision marked deleted. Both
complete in the time of one insert whatever the store's size (``ALTER TABLE … DELETE`` would
rewrite every part holding a row). The rows stay on disk until their month's partition is
dropped; ``toollens vacuum`` does not reclaim them on ClickHouse yet.

The counts are those :func:`db.writes.deletion.count_rows` gives on the other engines, table by
table in its order; the tables a ClickHouse store does not keep count 0.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Engine, select

from db.clickhouse import rollups
from db.clickhouse.client import epoch_us, literal
from db.clickhouse.dialect import client_of, layout_of
from db.clickhouse.schema import (
    DELETED,
    DELETION_COLUMNS,
    DELETIONS,
    REVISION,
    SMALL_TABLES,
    TRACE_TABLES,
)

if TYPE_CHECKING:
    from sqlalchemy import MetaData, Table


class Selection(Protocol):
    """What ``db.writes.deletion.Selection`` holds: the root table and the condition on it."""

    @property
    def table(self) -> str: ...

    @property
    def where(self) -> Callable[[Table], Any]: ...


def _ids(engine: Engine, table: Table, where: Any) -> list[int]:
    with engine.connect() as conn:
        return [int(i) for i in conn.execute(select(table.c.id).where(where)).scalars()]


def _selected(
    engine: Engine, selection: Selection, metadata: MetaData
) -> tuple[list[int], list[int]]:
    """The ids of the imports and of the traces ``selection`` deletes."""
    root = metadata.tables[selection.table]
    traces = metadata.tables["traces"]
    if selection.table == "traces":
        return [], _ids(engine, traces, selection.where(root))
    imports = _ids(engine, root, selection.where(root))
    return imports, _ids(engine, traces, traces.c.import_id.in_(imports)) if imports else []


def _count(engine: Engine, table: str, column: str, ids: list[int]) -> int:
    if not ids:
        return 0
    layout = layout_of(engine)
    sql = f"SELECT count() FROM {layout.view(table)} WHERE {column} IN {literal(ids)}"
    return int(client_of(engine).query(sql)[1][0][0])


def _counts(
    engine: Engine, imports: list[int], traces: list[int], tables: list[str]
) -> dict[str, int]:
    out = dict.fromkeys(tables, 0)
    for name in tables:
        if name == "traces":
            out[name] = len(traces)
        elif name == "imports":
            out[name] = len(imports)
        elif name in TRACE_TABLES:
            out[name] = _count(engine, name, "trace_id", traces)
        elif name in SMALL_TABLES:
            out[name] = _count(engine, name, "import_id", imports)
    return out


def count_rows(
    engine: Engine, selection: Selection, metadata: MetaData, tables: list[str]
) -> dict[str, int]:
    """How many rows of each of ``tables`` deleting ``selection`` removes."""
    imports, traces = _selected(engine, selection, metadata)
    return _counts(engine, imports, traces, tables)


def delete_rows(
    engine: Engine, selection: Selection, metadata: MetaData, tables: list[str]
) -> dict[str, int]:
    """Delete ``selection``: its traces' tombstones, its imports' and their rejected records'
    deleted revisions (see the module's docstring); the counts of :func:`count_rows`."""
    imports, traces = _selected(engine, selection, metadata)
    counts = _counts(engine, imports, traces, tables)
    client, layout = client_of(engine), layout_of(engine)
    now = epoch_us(datetime.now(UTC))
    with rollups.changing(engine, traces):
        client.insert(
            layout.every_row(DELETIONS),
            [name for name, _ in DELETION_COLUMNS],
            [(trace_id, now) for trace_id in traces],
        )
    for name, key in (("rejected_records", "import_id"), ("import_files", "import_id"),
                      ("imports", "id")):  # fmt: skip
        if not imports:
            break
        names, rows = client.query(
            f"SELECT * FROM {layout.view(name)} WHERE {key} IN {literal(imports)}"
        )
        at, deleted = names.index(REVISION), names.index(DELETED)
        changed = [
            tuple(row[i] + 1 if i == at else 1 if i == deleted else v for i, v in enumerate(row))
            for row in rows
        ]
        client.insert(layout.every_row(name), names, changed)
    return counts


__all__ = ["count_rows", "delete_rows"]
