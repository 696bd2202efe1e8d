"""The rollups on a ClickHouse store: signed rows, their state, a recount.

The same rollups as on SQLite and PostgreSQL (``db.rollups.upkeep``: the same rows, counted
by the same statements, read by the same queries), kept the way ClickHouse takes writes:
inserts only. Each rollup's ``rollup_*_local`` is a ``SummingMergeTree`` by the row's key
(:mod:`db.clickhouse.schema`); a change inserts the contributions of the traces written and,
negated, those of the versions they replace or the traces deleted; the view ``rollup_*`` sums a
key's rows and leaves out the keys summed to zero, so a read never waits for a merge.

There is no transaction over a batch's inserts, so the writer brackets every change
(:func:`changing`): the state (``rollup_state``, its latest revision counts) says incomplete
while it writes — readers then read the base tables — and complete again once the traces'
rows and their contributions are all in. A writer that dies between leaves it incomplete, so
nothing inexact is ever read: the pages read the base tables until ``toollens rebuild-rollups``
(:func:`rebuild`); a later import does not count into rollups it finds incomplete.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine

from db.clickhouse.client import Client
from db.clickhouse.dialect import client_of, layout_of
from db.clickhouse.rows import StoredRows
from db.clickhouse.schema import REVISION, ROLLUP_STATE, Layout, rollup_measures
from db.rollups import upkeep

#: The last revision of the state this process wrote (revisions must grow).
_LAST_REVISION = [0]


def insert(conn: Connection, table: str, columns: Sequence[str], rows: Sequence[Any]) -> None:
    """Insert signed rollup ``rows`` (``columns`` order) into ``table`` on every shard."""
    engine = conn.engine
    client_of(engine).insert(layout_of(engine).every_row(table), columns, rows)


def write_state(client: Client, layout: Layout, *, complete: bool, rebuilt: bool = False) -> None:
    """A new revision of the state: ``complete`` or not (``rebuilt``: just recounted)."""
    revision = max(time.time_ns() // 1000, _LAST_REVISION[0] + 1)
    _LAST_REVISION[0] = revision
    rows = StoredRows(ROLLUP_STATE)
    rows.add_mapping(
        {
            "id": 1,
            "complete": complete,
            "rebuilt_at": datetime.now(UTC) if rebuilt else None,
            REVISION: revision,
        }
    )
    rows.write(client, layout)


def initialize(client: Client, layout: Layout) -> None:
    """Give a store without a state one: complete when it holds no trace (its rollups, empty,
    hold it), else incomplete (traces written before the rollups: ``rebuild-rollups``)."""
    if client.query(f"SELECT count() FROM {layout.view(ROLLUP_STATE)}")[1][0][0]:
        return
    stored = client.query(f"SELECT count() FROM {layout.every_row('traces')}")[1][0][0]
    write_state(client, layout, complete=not stored)


@contextmanager
def changing(engine: Engine, before: Sequence[int]) -> Iterator[list[int]]:
    """Bracket a change of the traces ``before`` (replaced or deleted): while the rollups are
    complete, mark them incomplete, take ``before`` out, let the caller write, then count the
    traces it put in the list yielded and mark them complete again. Rollups found incomplete
    are left as they are (see the module's docstring)."""
    after: list[int] = []
    client, layout = client_of(engine), layout_of(engine)
    with engine.connect() as conn:
        counting = upkeep.complete(conn)
        if counting:
            write_state(client, layout, complete=False)
            upkeep.count(conn, before, -1)
    yield after
    if counting:
        with engine.connect() as conn:
            upkeep.count(conn, after, 1)
        write_state(client, layout, complete=True)


def rebuild(engine: Engine, chunk: int = upkeep.CLICKHOUSE_CHUNK) -> int:
    """Recount every rollup from the traces stored (``toollens rebuild-rollups``): marked
    incomplete, emptied on every server, counted ``chunk`` traces at a time, marked complete;
    the traces counted."""
    client, layout = client_of(engine), layout_of(engine)
    write_state(client, layout, complete=False)
    for name in rollup_measures():
        client.on_every_server(f"TRUNCATE TABLE {layout.local(name)}")
    ids = [int(row[0]) for row in client.query(f"SELECT id FROM {layout.view('traces')}")[1]]
    ids.sort()
    with engine.connect() as conn:
        for i in range(0, len(ids), chunk):
            upkeep.count(conn, ids[i : i + chunk], 1)
    write_state(client, layout, complete=True, rebuilt=True)
    return len(ids)


upkeep.INSERTERS["clickhouse"] = insert
upkeep.RECOUNTS["clickhouse"] = rebuild

__all__ = ["changing", "initialize", "insert", "rebuild", "write_state"]
