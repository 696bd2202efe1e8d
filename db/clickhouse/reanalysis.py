"""Re-analysis on a ClickHouse store (``toollens reanalyze``): a changed trace becomes a new
version, as a re-import writes one; nothing is updated in place.

For each trace of a batch the analysis' rows (calls, results, findings, error streaks and the
trace's aggregates) are compared with the stored ones, converted as the store keeps them. A
trace whose rows all match is left alone. A changed one is written again under its id at
``version`` + 1, in the partition (``import_month``) of the version it replaces, so that it
stays with its import for retention:

* its messages (not derived: the stored ones) are copied by each server from its own local
  table (``INSERT … SELECT`` on every server: a trace's rows are on one shard, and nothing goes
  through this process or crosses shards);
* its derived rows, with any reviewer's correction (copied from another store) put back on the
  same Tool Message, are inserted through the Distributed tables;
* its ``traces`` row last, so that a reader (which takes every row at its trace's latest
  version, :mod:`db.clickhouse.schema`) sees the new version whole or not at all.

No ``ALTER … UPDATE`` or ``DELETE`` mutation runs; the replaced version's rows stay on disk
until ``toollens vacuum`` (:mod:`db.clickhouse.vacuum`) or their partition is dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine

from db.bulk.stored import AGGREGATES, CORRECTION_FIELDS
from db.clickhouse import rollups
from db.clickhouse.client import Client, literal
from db.clickhouse.dialect import client_of, layout_of
from db.clickhouse.rows import StoredRows
from db.clickhouse.schema import IMPORT_MONTH, Layout, stored_columns
from db.contract.rows import CHILD_COLUMNS
from db.writes.traces import TraceRows

#: The tables analysis writes (a trace's messages are its provided facts).
DERIVED = ("tool_calls", "tool_results", "findings", "error_streaks")
_OWN = ("version", IMPORT_MONTH)


def _content(table: str) -> list[str]:
    """The stored columns of a derived table that the analysis gives (not the version's)."""
    return [name for name, _ in stored_columns(table) if name not in _OWN]


def _stored(
    client: Client, layout: Layout, table: str, ids: Sequence[int]
) -> dict[int, list[tuple[Any, ...]]]:
    """The stored rows of ``table`` for traces ``ids``, per trace, in :func:`_content` order."""
    columns = _content(table)
    names = ", ".join(f"`{c}`" for c in columns)
    _, rows = client.query(
        f"SELECT {names} FROM {layout.view(table)} WHERE trace_id IN {literal(list(ids))}"
    )
    at = columns.index("trace_id")
    out: dict[int, list[tuple[Any, ...]]] = {}
    for row in rows:
        out.setdefault(int(row[at]), []).append(tuple(row))
    return out


def _fresh(table: str, trace_id: int, rows: TraceRows) -> list[tuple[Any, ...]]:
    """The analysis' rows of ``table`` for one trace, converted as stored, in :func:`_content`
    order."""
    out = StoredRows(table, (*CHILD_COLUMNS[table], "trace_id"))
    for record in rows.children(table):
        out.add((*record, trace_id))
    keep = [i for i, name in enumerate(out.columns) if name not in _OWN]
    return [tuple(row[i] for i in keep) for row in out.rows]


def _with_corrections(
    fresh: list[tuple[Any, ...]], stored: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """``fresh`` results with the stored results' corrections put back on the same message."""
    columns = _content("tool_results")
    seq = columns.index("message_seq")
    at = [columns.index(c) for c in CORRECTION_FIELDS]
    kept = {row[seq]: row for row in stored if any(row[i] is not None for i in at)}
    if not kept:
        return fresh
    out = []
    for row in fresh:
        old = kept.get(row[seq])
        out.append(
            row if old is None else tuple(old[i] if i in at else v for i, v in enumerate(row))
        )
    return out


def replace_derived(engine: Engine, batch: Sequence[tuple[int, TraceRows]]) -> int:
    """Store the re-analysed ``batch`` (trace id, its rows) as new versions of the traces whose
    derived rows changed (see the module's docstring); how many changed."""
    if not batch:
        return 0
    client, layout = client_of(engine), layout_of(engine)
    ids = [trace_id for trace_id, _ in batch]
    names, rows = client.query(f"SELECT * FROM {layout.view('traces')} WHERE id IN {literal(ids)}")
    traces = {int(row[names.index("id")]): row for row in rows}
    stored = {table: _stored(client, layout, table, ids) for table in DERIVED}
    aggregates = StoredRows("traces", AGGREGATES)
    at = [aggregates.columns.index(name) for name in AGGREGATES]
    in_row = [names.index(name) for name in AGGREGATES]
    changed: dict[int, dict[str, Any]] = {}
    for trace_id, trace_rows in batch:
        old = traces[trace_id]
        fresh = {table: _fresh(table, trace_id, trace_rows) for table in DERIVED}
        fresh["tool_results"] = _with_corrections(
            fresh["tool_results"], stored["tool_results"].get(trace_id, [])
        )
        aggregates.add([getattr(trace_rows.trace, name) for name in AGGREGATES])
        converted = aggregates.rows.pop()
        figures = [converted[i] for i in at]
        same = [old[i] for i in in_row] == figures and all(
            Counter(fresh[table]) == Counter(stored[table].get(trace_id, [])) for table in DERIVED
        )
        if not same:
            changed[trace_id] = {"rows": fresh, "figures": figures}
    if changed:
        # The rollups count each trace's latest version: the replaced one out, the new one in.
        with rollups.changing(engine, list(changed)) as counted:
            _write(client, layout, names, traces, changed, in_row)
            counted.extend(changed)
    return len(changed)


def _write(
    client: Client,
    layout: Layout,
    names: list[str],
    traces: dict[int, tuple[Any, ...]],
    changed: dict[int, dict[str, Any]],
    in_row: list[int],
) -> None:
    """Write the ``changed`` traces' new versions: messages, derived rows, ``traces`` last."""
    version, month = names.index("version"), names.index(IMPORT_MONTH)
    columns = [name for name, _ in stored_columns("messages")]
    selected = ", ".join("version + 1" if c == "version" else f"`{c}`" for c in columns)
    # The latest version is still the replaced one: the new traces rows are written last.
    latest = f"SELECT id, max(version) FROM {layout.local('traces')} GROUP BY id"
    client.on_every_server(
        f"INSERT INTO {layout.local('messages')} ({', '.join(columns)}) SELECT {selected} "
        f"FROM {layout.local('messages')} WHERE trace_id IN {literal(sorted(changed))} "
        f"AND (trace_id, version) IN ({latest})"
    )
    for table in DERIVED:
        own = [
            (*row, traces[trace_id][version] + 1, traces[trace_id][month])
            for trace_id, values in changed.items()
            for row in values["rows"][table]
        ]
        client.insert(layout.every_row(table), [*_content(table), *_OWN], own)
    rows = []
    for trace_id, values in changed.items():
        row = list(traces[trace_id])
        for i, figure in zip(in_row, values["figures"], strict=True):
            row[i] = figure
        row[version] += 1
        rows.append(tuple(row))
    client.insert(layout.every_row("traces"), names, rows)


__all__ = ["replace_derived"]
