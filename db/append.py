"""A trace that only grew: what an import needs to extend the stored version, and the write
of the new version that adds the appended messages instead of rewriting the trace.

A Claude Code session file that grew by a line holds one trace of thousands of messages; its
new version differs from the stored one by the appended messages, a few changed prefix
messages (a usage count that grew) and the derived facts (pairs, findings, aggregates), which
analysis recomputes over the whole trace. :func:`write_append` writes exactly that, in one
transaction: the stored messages stay (with their search index entries), the new ones are
inserted and indexed, calls, results and findings are rewritten, notes and corrections follow
their pairs (:mod:`db.carry_over`), and the trace row gets the new values and ``version`` + 1.
The rows stored are the rows a fresh import of the whole file would store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, delete, func, insert, select, update

from db import dialect, search
from db.carry_over import carry_over, pair_map, read_reviews
from db.engine import writing
from db.records import CHILD_COLUMNS, JSON_COLUMNS
from db.schema import (
    AnnotationRow,
    FindingRow,
    ImportRun,
    MessageRow,
    ToolCallRow,
    ToolResultRow,
    TraceRow,
    TraceUpdate,
)
from db.stored import StoredTrace, load_traces
from db.write import TraceRows


@dataclass(slots=True)
class AppendBase:
    """The stored version of a trace about to be extended."""

    stored: StoredTrace
    #: The token encoding of the import that wrote it (its counts are reused).
    encoding: str
    #: The findings of each Tool Message itself (not of a call), by seq, in stored order.
    result_findings: dict[int, list[str]]


def load_append_base(engine: Engine, format_name: str, source_file: str) -> AppendBase | None:
    """The one stored trace of ``format_name`` read from ``source_file``, with what extending
    it needs; ``None`` when the store holds none or several."""
    t, i, f = TraceRow, ImportRun, FindingRow
    with engine.connect() as conn:
        found = conn.execute(
            select(t.id, i.encoding)
            .join(i, i.id == t.import_id)
            .where(t.format == format_name, t.source_file == source_file)
            .limit(2)
        ).all()
        if len(found) != 1:
            return None
        trace_id, encoding = found[0]
        result_findings: dict[int, list[str]] = {}
        for seq, name in conn.execute(
            select(f.message_seq, f.name)
            .where(f.trace_id == trace_id, f.call_index.is_(None))
            .order_by(f.id)
        ):
            result_findings.setdefault(seq, []).append(name)
    return AppendBase(load_traces(engine, [trace_id])[0], encoding, result_findings)


def write_append(
    engine: Engine,
    import_id: int,
    base: AppendBase,
    rows: TraceRows,
    first_new_seq: int,
    tool_contents: dict[int, str],
) -> bool:
    """Store ``rows`` as the new version of ``base``'s trace, whose messages before
    ``first_new_seq`` are stored already: ``rows.messages`` holds the new messages and those
    stored ones whose row changed (same content: a usage count that grew), ``rows``' calls,
    results and findings are the whole new version's. ``tool_contents``: the text of every Tool
    Message of the new version by seq (to carry notes over).

    False, with nothing written, when the stored trace is no longer the version ``base`` read
    (another import replaced it meanwhile): the caller imports the file whole instead.
    """
    trace_id = base.stored.id
    old = base.stored.trace
    now = datetime.now(UTC)
    t = TraceRow
    with writing(engine) as conn:
        current = conn.execute(
            select(t.content_hash, t.message_count).where(t.id == trace_id).with_for_update()
        ).first()
        if current is None or tuple(current) != (old.content_hash, old.message_count):
            return False
        reviews = read_reviews(conn, trace_id) if _has_reviews(conn, trace_id) else None
        search.unindex_traces(conn, [trace_id], tables=("tool_calls",))
        for model in (FindingRow, ToolResultRow, ToolCallRow):
            conn.execute(delete(model).where(model.trace_id == trace_id))
        added = [m for m in rows.messages if m.seq >= first_new_seq]
        for message in rows.messages:
            if message.seq < first_new_seq:
                conn.execute(
                    update(MessageRow)
                    .where(MessageRow.trace_id == trace_id, MessageRow.seq == message.seq)
                    .values(usage=message.usage)
                )
        for table, columns in CHILD_COLUMNS.items():
            children = added if table == "messages" else rows.children(table)
            if children:
                dialect.bulk_insert(
                    conn,
                    table,
                    ("trace_id", *columns),
                    [(trace_id, *row) for row in children],
                    JSON_COLUMNS[table],
                )
        conn.execute(
            update(t)
            .where(t.id == trace_id)
            .values(
                **rows.trace._asdict(),
                import_id=import_id,
                imported_at=now,
                version=t.version + 1,
            )
        )
        conn.execute(
            insert(TraceUpdate).values(
                import_id=import_id,
                trace_id=trace_id,
                source_file=rows.trace.source_file,
                old_hash=old.content_hash,
                new_hash=rows.trace.content_hash,
                old_messages=old.message_count,
                new_messages=rows.trace.message_count,
                at=now,
            )
        )
        if reviews is not None:
            calls = [
                (c.message_seq, c.call_index, c.tool_call_id, c.tool_name, c.arguments_raw,
                 c.result_seq)
                for c in rows.tool_calls
            ]  # fmt: skip
            results = [
                (r.message_seq, r.tool_call_id, r.provided_name, r.tool, r.call_seq, r.call_index)
                for r in rows.tool_results
            ]
            new = pair_map(calls, results, tool_contents)
            carry_over(conn, trace_id, reviews, new, now)
        search.index_traces(conn, [trace_id], tables=("tool_calls",))
        search.index_traces(conn, [trace_id], tables=("messages",), from_seq=first_new_seq)
    return True


def _has_reviews(conn: Connection, trace_id: int) -> bool:
    """Whether the trace has notes on pairs or corrected results (to carry over)."""
    a, r = AnnotationRow, ToolResultRow
    notes = conn.execute(
        select(func.count()).where(a.trace_id == trace_id, a.message_seq.is_not(None))
    ).scalar_one()
    if notes:
        return True
    corrected = conn.execute(
        select(func.count()).where(
            r.trace_id == trace_id,
            r.error_type_corrected.is_not(None) | r.verdict_corrected.is_not(None),
        )
    ).scalar_one()
    return bool(corrected)


__all__ = ["AppendBase", "load_append_base", "write_append"]
