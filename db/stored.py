"""Read stored traces back as plain data, and replace their derived facts (``reanalyze``).

Human corrections (``error_type_corrected``, ``verdict_corrected`` …) survive a replacement:
they are read before the derived rows are rewritten and put back on the same Tool Message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, delete, select, update

from db import dialect
from db.engine import writing
from db.schema import FindingRow, MessageRow, ToolCallRow, ToolResultRow, TraceRow
from db.write import CHILD_TABLES, JSON_COLUMNS, TraceRows

#: Columns of a stored trace that rebuild the canonical trace (provided facts only).
TRACE_FIELDS = (
    "id", "format", "source_file", "source_line", "external_id", "agent", "model",
    "started_at", "tags", "meta", "tools", "record_count",
)  # fmt: skip
CORRECTION_FIELDS = ("error_type_corrected", "verdict_corrected", "corrected_by", "corrected_at")


def iter_trace_id_batches(engine: Engine, size: int = 200) -> Iterator[list[int]]:
    """All trace ids, in batches, in id order."""
    with engine.connect() as conn:
        ids = list(conn.execute(select(TraceRow.id).order_by(TraceRow.id)).scalars())
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def load_traces(engine: Engine, ids: Sequence[int]) -> list[dict[str, Any]]:
    """Stored traces as dicts: trace fields plus ``messages``, ``calls``, ``results`` lists."""
    with engine.connect() as conn:
        columns = [getattr(TraceRow, f).label(f) for f in TRACE_FIELDS]
        stmt = select(*columns).where(TraceRow.id.in_(ids))
        traces = {row.id: dict(row._mapping) for row in conn.execute(stmt)}
        children: dict[str, dict[int, list[dict[str, Any]]]] = {}
        for name, model, order in (
            ("messages", MessageRow, (MessageRow.seq,)),
            ("calls", ToolCallRow, (ToolCallRow.message_seq, ToolCallRow.call_index)),
            ("results", ToolResultRow, (ToolResultRow.message_seq,)),
        ):
            grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
            stmt = select(model.__table__).where(model.trace_id.in_(ids)).order_by(*order)
            for row in conn.execute(stmt).mappings():
                grouped[row["trace_id"]].append(dict(row))
            children[name] = grouped
    out = []
    for trace_id in ids:
        trace = traces[trace_id]
        for name in ("messages", "calls", "results"):
            trace[name] = children[name].get(trace_id, [])
        out.append(trace)
    return out


def _corrections(conn: Connection, ids: Sequence[int]) -> dict[tuple[int, int], dict[str, Any]]:
    r = ToolResultRow
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
        for model in (FindingRow, ToolResultRow, ToolCallRow):
            conn.execute(delete(model).where(model.trace_id.in_(ids)))
        for table, columns in CHILD_TABLES.items():
            if table == "messages":
                continue
            rows = [(tid, *row) for tid, tr in batch for row in tr.children(table)]
            if rows:
                dialect.bulk_insert(conn, table, ("trace_id", *columns), rows, JSON_COLUMNS[table])
        aggregates = (
            "error_count", "problem_count", "total_tokens", "tool_result_tokens",
            "wasted_tokens", "max_occurrence", "tool_call_count", "tool_result_count",
        )  # fmt: skip
        for trace_id, tr in batch:
            conn.execute(
                update(TraceRow)
                .where(TraceRow.id == trace_id)
                .values({a: tr.trace[a] for a in aggregates})
            )
        for (trace_id, seq), values in kept.items():
            conn.execute(
                update(ToolResultRow)
                .where(ToolResultRow.trace_id == trace_id, ToolResultRow.message_seq == seq)
                .values(values)
            )
