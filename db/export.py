"""Row-per-pair export for ``toollens pairs`` (streamed, so any store size fits in memory)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Engine, and_, literal, null, select, union_all

from db.queries.common import effective_error_type, effective_verdict, unpaired_result
from db.schema import ToolCallRow, ToolResultRow, TraceRow

#: Columns of ``toollens pairs``, in output order.
PAIR_COLUMNS: tuple[str, ...] = (
    "trace", "call_id", "tool", "pair_state", "status", "status_source", "error_type",
    "tokens", "occurrence", "suggestion", "verdict", "verdict_reason",
)  # fmt: skip


def pairs_statement() -> Any:
    """Calls with their paired result, plus every result that answers no call."""
    r = ToolResultRow
    calls = (
        select(
            TraceRow.display_id.label("trace"),
            ToolCallRow.tool_call_id.label("call_id"),
            ToolCallRow.tool_name.label("tool"),
            ToolCallRow.pair_state.label("pair_state"),
            r.status.label("status"),
            r.status_source.label("status_source"),
            effective_error_type.label("error_type"),
            r.tokens.label("tokens"),
            ToolCallRow.occurrence.label("occurrence"),
            r.suggestion.label("suggestion"),
            effective_verdict.label("verdict"),
            r.verdict_reason.label("verdict_reason"),
            ToolCallRow.trace_id.label("trace_id"),
            ToolCallRow.message_seq.label("seq"),
            ToolCallRow.call_index.label("idx"),
        )
        .join(TraceRow, TraceRow.id == ToolCallRow.trace_id)
        .outerjoin(
            r, and_(r.trace_id == ToolCallRow.trace_id, r.message_seq == ToolCallRow.result_seq)
        )
    )
    orphans = (
        select(
            TraceRow.display_id,
            r.tool_call_id,
            r.tool,
            r.pair_state,
            r.status,
            r.status_source,
            effective_error_type,
            r.tokens,
            null(),
            r.suggestion,
            effective_verdict,
            r.verdict_reason,
            r.trace_id,
            r.message_seq,
            literal(-1),
        )
        .join(TraceRow, TraceRow.id == r.trace_id)
        .where(unpaired_result)
    )
    sub = union_all(calls, orphans).subquery()
    return select(*[sub.c[c] for c in PAIR_COLUMNS]).order_by(sub.c.trace_id, sub.c.seq, sub.c.idx)


def iter_pairs(engine: Engine, batch: int = 5000) -> Iterator[dict[str, Any]]:
    """Yield one dict per pair (``PAIR_COLUMNS`` keys), streaming from the database."""
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True, yield_per=batch).execute(
            pairs_statement()
        )
        for row in result:
            yield dict(zip(PAIR_COLUMNS, row, strict=True))
