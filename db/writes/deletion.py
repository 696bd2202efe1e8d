"""Deletion and retention: remove a trace, an import, or everything imported before a date.

What a deletion removes is derived from the schema, not listed: every table with a foreign key
to a deleted row's table loses the rows that point at deleted rows, recursively (a trace's
messages, calls, results, findings and notes; an import's traces and rejected records with their
raw bytes; any table added later that points at ``traces`` or ``imports``, or at one of their
children). Rows are counted before they are deleted, so a caller can show what will go and ask
first; the deletion is one transaction.

Example::

    sel = import_by_id(3)
    count_rows(engine, sel)   # {'imports': 1, 'traces': 215, 'messages': 9120, ...}
    delete_rows(engine, sel)  # the same counts, now deleted
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import (
    ColumnElement,
    Engine,
    MetaData,
    Table,
    delete,
    false,
    func,
    or_,
    select,
)

from db import dialect
from db.contract.vocabulary import counted
from db.rollups import upkeep as rollups
from db.schema import Base
from db.writes import search_index as search
from db.writes.transaction import writing

if TYPE_CHECKING:
    from db.clickhouse.vacuum import VacuumReport


@dataclass(frozen=True)
class Selection:
    """The rows to delete at the root: a table (``traces`` or ``imports``) and a condition on
    it (a function of the table, so that it applies to any metadata holding that table)."""

    table: str
    where: Callable[[Table], ColumnElement[bool]]
    #: What the selection names, for messages (``trace run-1``, ``import 3``).
    description: str


def traces_by_display_id(display_id: str) -> Selection:
    """The trace(s) shown as ``display_id`` (the id the dashboard and ``toollens pairs`` show)."""
    return Selection("traces", lambda t: t.c.display_id == display_id, f"trace {display_id}")


def traces_by_id(ids: list[int], description: str | None = None) -> Selection:
    """Traces by their database ids (``traces.id``); ``description`` names them in messages."""
    return Selection("traces", lambda t: t.c.id.in_(ids), description or counted(len(ids), "trace"))


def import_by_id(import_id: int) -> Selection:
    """One import run with everything it brought: traces and rejected records."""
    return Selection("imports", lambda t: t.c.id == import_id, f"import {import_id}")


def imports_before(cutoff: datetime) -> Selection:
    """Every import started before ``cutoff`` (aware datetime), with everything it brought."""
    return Selection(
        "imports", lambda t: t.c.started_at < cutoff, f"imports before {cutoff.isoformat()}"
    )


def _plan(selection: Selection, metadata: MetaData) -> dict[Table, list[ColumnElement[bool]]]:
    """Per table, the conditions naming its rows to delete (any of them), root included."""
    plan: dict[Table, list[ColumnElement[bool]]] = defaultdict(list)
    root = metadata.tables[selection.table]

    def walk(table: Table, where: ColumnElement[bool], depth: int) -> None:
        plan[table].append(where)
        if depth > len(metadata.tables):  # a cycle of foreign keys: nothing more to find
            return
        for child in metadata.tables.values():
            for fk in child.foreign_keys:
                if fk.column.table is table and child is not table:
                    rows = fk.parent.in_(select(fk.column).where(where))
                    walk(child, rows, depth + 1)

    walk(root, selection.where(root), 0)
    return plan


def _ordered(
    plan: dict[Table, list[ColumnElement[bool]]], metadata: MetaData
) -> list[tuple[Table, ColumnElement[bool]]]:
    """The plan's tables, parents first (``metadata.sorted_tables``), each with one condition."""
    return [
        (table, or_(false(), *plan[table])) for table in metadata.sorted_tables if table in plan
    ]


def _table_names(selection: Selection, metadata: MetaData) -> list[str]:
    """The tables deleting ``selection`` reaches, parents first."""
    return [table.name for table, _ in _ordered(_plan(selection, metadata), metadata)]


def count_rows(
    engine: Engine, selection: Selection, metadata: MetaData = Base.metadata
) -> dict[str, int]:
    """How many rows of each table deleting ``selection`` would remove (parents first)."""
    if engine.dialect.name == "clickhouse":
        from db.clickhouse import deletion as clickhouse

        return clickhouse.count_rows(engine, selection, metadata, _table_names(selection, metadata))
    with engine.connect() as conn:
        return {
            table.name: int(conn.execute(select(func.count()).where(where)).scalar_one())
            for table, where in _ordered(_plan(selection, metadata), metadata)
        }


def delete_rows(
    engine: Engine, selection: Selection, metadata: MetaData = Base.metadata
) -> dict[str, int]:
    """Delete ``selection`` and every row that points at it, in one transaction; the counts
    per table (parents first), as :func:`count_rows` gave them. On ClickHouse: inserts, no
    mutation (:mod:`db.clickhouse.deletion`)."""
    if engine.dialect.name == "clickhouse":
        from db.clickhouse import deletion as clickhouse

        return clickhouse.delete_rows(
            engine, selection, metadata, _table_names(selection, metadata)
        )
    ordered = _ordered(_plan(selection, metadata), metadata)
    counts: dict[str, int] = {}
    with writing(engine) as conn:
        traces = metadata.tables.get("traces")
        trace_where = [where for table, where in ordered if table is traces]
        if traces is not None and trace_where:
            # The content search has no foreign key (an FTS5 table on SQLite reads the text
            # from the rows): out of it first, while the rows are still there.
            ids = conn.execute(select(traces.c.id).where(or_(*trace_where))).scalars().all()
            search.unindex_traces(conn, list(ids))
            rollups.subtract(conn, list(ids))
        # Children before parents: a child's condition reads the parent rows still there.
        for table, where in reversed(ordered):
            counts[table.name] = conn.execute(delete(table).where(where)).rowcount
        registry = metadata.tables.get("source_files")
        if counts.get("traces") and registry is not None:
            # The registry of files read is a cache of what the store holds: with traces gone,
            # the next import must read their files again instead of skipping them unchanged.
            conn.execute(delete(registry))
    return {table.name: counts[table.name] for table, _ in ordered}


def vacuum(engine: Engine) -> VacuumReport | None:
    """Give the space of deleted rows back to the disk (``toollens vacuum``): the store's own
    tables only (``db.dialect.reclaim_space``). On ClickHouse, the rows no read sees, a
    partition at a time (:func:`db.clickhouse.vacuum.vacuum`), with what it took off the disk."""
    if engine.dialect.name == "clickhouse":
        from db.clickhouse.vacuum import vacuum as clickhouse_vacuum

        return clickhouse_vacuum(engine)
    dialect.reclaim_space(engine, [table.name for table in Base.metadata.sorted_tables])
    return None
