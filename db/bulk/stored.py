"""Read stored traces back as their row contracts, and replace their derived facts (``reanalyze``).

Human corrections (``error_type_corrected``, ``verdict_corrected`` …) survive a replacement:
they are read before the derived rows are rewritten and put back on the same Tool Message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Engine, Table, delete, select, update

from db import dialect, schema
from db.contract import rows as contract
from db.contract.vocabulary import DEFAULT_ENCODING
from db.rollups import upkeep as rollups
from db.writes import search_index as search
from db.writes.traces import TraceRows
from db.writes.transaction import writing

CORRECTION_FIELDS = ("error_type_corrected", "verdict_corrected", "corrected_by", "corrected_at")
#: The per-trace figures derived by analysis (rewritten by :func:`replace_derived`).
AGGREGATES = (
    "error_count", "problem_count", "total_tokens", "tool_result_tokens", "wasted_tokens",
    "max_occurrence", "tool_call_count", "tool_result_count", "token_counts",
)  # fmt: skip


@dataclass(slots=True)
class StoredTrace:
    """A stored trace as its row contracts: what the import wrote, read back."""

    id: int
    trace: contract.TraceRecord
    messages: list[contract.MessageRecord]
    calls: list[contract.ToolCallRecord]
    results: list[contract.ToolResultRecord]
    #: The encoding its token counts were taken with (its import's).
    encoding: str = DEFAULT_ENCODING


def iter_trace_id_batches(engine: Engine, size: int = 200) -> Iterator[list[int]]:
    """All trace ids, in batches, in id order."""
    with engine.connect() as conn:
        ids = list(conn.execute(select(schema.TraceRow.id).order_by(schema.TraceRow.id)).scalars())
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def _children(
    conn: Connection, model: Any, fields: tuple[str, ...], ids: Sequence[int], order: list[str]
) -> dict[int, list[tuple[Any, ...]]]:
    """The rows of a child table (its ORM class ``model``) for ``ids``, grouped by trace, as
    tuples in ``fields`` order."""
    table = cast(Table, model.__table__)
    stmt = (
        select(table.c.trace_id, *[table.c[f] for f in fields])
        .where(table.c.trace_id.in_(ids))
        .order_by(table.c.trace_id, *[table.c[c] for c in order])
    )
    grouped: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in conn.execute(stmt):
        grouped[row[0]].append(tuple(row[1:]))
    return grouped


def load_traces(engine: Engine, ids: Sequence[int], *, messages: bool = True) -> list[StoredTrace]:
    """The stored traces ``ids`` (in that order) with their messages (unless ``messages`` is
    false: the caller reads them its own way), calls and results."""
    traces_table = cast(Table, schema.TraceRow.__table__)
    with engine.connect() as conn:
        stmt = (
            select(
                traces_table.c.id,
                schema.ImportRun.encoding,
                *[traces_table.c[f] for f in contract.TraceRecord._fields],
            )
            .join(schema.ImportRun, schema.ImportRun.id == traces_table.c.import_id)
            .where(traces_table.c.id.in_(ids))
        )
        encodings: dict[int, str] = {}
        traces: dict[int, contract.TraceRecord] = {}
        for row in conn.execute(stmt):
            encodings[row[0]] = row[1]
            traces[row[0]] = contract.TraceRecord(*row[2:])
        message_rows = (
            _children(conn, schema.MessageRow, contract.MessageRecord._fields, ids, ["seq"])
            if messages
            else {}
        )
        calls = _children(
            conn,
            schema.ToolCallRow,
            contract.ToolCallRecord._fields,
            ids,
            ["message_seq", "call_index"],
        )
        results = _children(
            conn, schema.ToolResultRow, contract.ToolResultRecord._fields, ids, ["message_seq"]
        )
    return [
        StoredTrace(
            id=trace_id,
            trace=traces[trace_id],
            messages=[contract.MessageRecord(*r) for r in message_rows.get(trace_id, [])],
            calls=[contract.ToolCallRecord(*r) for r in calls.get(trace_id, [])],
            results=[contract.ToolResultRecord(*r) for r in results.get(trace_id, [])],
            encoding=encodings[trace_id],
        )
        for trace_id in ids
    ]


def _corrections(conn: Connection, ids: Sequence[int]) -> dict[tuple[int, int], dict[str, Any]]:
    r = schema.ToolResultRow
    stmt = select(r.trace_id, r.message_seq, *[getattr(r, f) for f in CORRECTION_FIELDS]).where(
        r.trace_id.in_(ids),
        (r.error_type_corrected.is_not(None)) | (r.verdict_corrected.is_not(None)),
    )
    return {
        (row[0], row[1]): dict(zip(CORRECTION_FIELDS, row[2:], strict=True))
        for row in conn.execute(stmt)
    }


def replace_derived(engine: Engine, batch: Sequence[tuple[int, TraceRows]]) -> None:
    """Rewrite calls, results, findings and aggregates of stored traces; keeps corrections."""
    if not batch:
        return
    ids = [trace_id for trace_id, _ in batch]
    with writing(engine) as conn:
        kept = _corrections(conn, ids)
        rollups.subtract(conn, ids)
        search.unindex_traces(conn, ids, tables=("tool_calls",))
        for model in (
            schema.ErrorStreakRow,
            schema.FindingRow,
            schema.ToolResultRow,
            schema.ToolCallRow,
        ):
            conn.execute(delete(model).where(model.trace_id.in_(ids)))
        for table, columns in contract.CHILD_COLUMNS.items():
            if table == "messages":
                continue
            rows = [(tid, *row) for tid, tr in batch for row in tr.children(table)]
            if rows:
                dialect.bulk_insert(
                    conn, table, ("trace_id", *columns), rows, contract.JSON_COLUMNS[table]
                )
        search.index_traces(conn, ids, tables=("tool_calls",))
        for trace_id, tr in batch:
            conn.execute(
                update(schema.TraceRow)
                .where(schema.TraceRow.id == trace_id)
                .values({a: getattr(tr.trace, a) for a in AGGREGATES})
            )
        for (trace_id, seq), values in kept.items():
            conn.execute(
                update(schema.ToolResultRow)
                .where(
                    schema.ToolResultRow.trace_id == trace_id,
                    schema.ToolResultRow.message_seq == seq,
                )
                .values(values)
            )
        rollups.add(conn, ids)
