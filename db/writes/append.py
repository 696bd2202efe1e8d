"""A trace that only grew: what an import needs to extend the stored version, and the write
of the new version that adds the appended messages instead of rewriting the trace.

A Claude Code session file that grew by a line holds one trace of thousands of messages; its
new version differs from the stored one by the appended messages, a few changed prefix
messages (a usage count that grew) and the derived facts (pairs, findings, aggregates), which
analysis recomputes over the whole trace. :func:`write_append` writes exactly that, in one
transaction: the stored messages stay (with their search index entries), the new ones are
inserted and indexed, calls, results and findings are rewritten, notes and corrections follow
their pairs (:mod:`db.writes.carry_over`), and the trace row gets the new values and ``version`` +
1. The rows stored are the rows a fresh import of the whole file would store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import orjson
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Table,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)

from db import dialect, schema
from db.bulk.stored import StoredTrace, load_traces
from db.contract import rows as contract
from db.rollups import upkeep as rollups
from db.writes import search_index as search
from db.writes.carry_over import carry_over, pair_map, read_reviews
from db.writes.traces import TraceRows, renew_trace
from db.writes.transaction import writing

#: The most seqs :func:`raw_members` sends as an ``IN`` list.
IN_LIST_MAX = 1000

K = TypeVar("K")
R = TypeVar("R", contract.ToolCallRecord, contract.ToolResultRecord)


@dataclass(slots=True)
class AppendBase:
    """The stored version of a trace about to be extended.

    Its messages' raw payloads are not decoded (on a 10,000-line session they are most of the
    stored bytes): each message's ``raw`` is ``None``, :attr:`raw_json` holds the payloads'
    stored JSON text and :func:`raw_members` reads single members of them.
    """

    stored: StoredTrace
    #: The token encoding of the import that wrote it (its counts are reused).
    encoding: str
    #: Its findings, in stored order.
    findings: list[contract.FindingRecord]
    #: Each message's raw payload as stored (UTF-8 JSON text; ``None``: SQL NULL), in seq order.
    raw_json: list[bytes | None]


def load_append_base(engine: Engine, format_name: str, source_file: str) -> AppendBase | None:
    """The one stored trace of ``format_name`` read from ``source_file``, with what extending
    it needs; ``None`` when the store holds none or several."""
    t, i = cast(Table, schema.TraceRow.__table__), cast(Table, schema.ImportRun.__table__)
    f = cast(Table, schema.FindingRow.__table__)
    with engine.connect() as conn:
        found = conn.execute(
            select(t.c.id, i.c.encoding)
            .join(i, i.c.id == t.c.import_id)
            .where(t.c.format == format_name, t.c.source_file == source_file)
            .limit(2)
        ).all()
        if len(found) != 1:
            return None
        trace_id, encoding = found[0]
        findings = [
            contract.FindingRecord(*row)
            for row in conn.execute(
                select(*[f.c[name] for name in contract.FindingRecord._fields])
                .where(f.c.trace_id == trace_id)
                .order_by(f.c.id)
            )
        ]
        messages, raw_json = _messages(conn, trace_id)
    stored = load_traces(engine, [trace_id], messages=False)[0]
    stored.messages = messages
    return AppendBase(stored, encoding, findings, raw_json)


def _messages(
    conn: Connection, trace_id: int
) -> tuple[list[contract.MessageRecord], list[bytes | None]]:
    """The messages of a trace (``raw`` left ``None``) and their payloads' stored JSON text."""
    m = cast(Table, schema.MessageRow.__table__)
    fields = contract.MessageRecord._fields[:-1]
    assert contract.MessageRecord._fields[-1] == "raw"
    stmt = (
        select(*[m.c[name] for name in fields], dialect.json_bytes(conn, m.c.raw))
        .where(m.c.trace_id == trace_id)
        .order_by(m.c.seq)
    )
    messages: list[contract.MessageRecord] = []
    raw_json: list[bytes | None] = []
    for row in conn.execute(stmt):
        messages.append(contract.MessageRecord._make((*row[:-1], None)))
        raw_json.append(row[-1])
    return messages, raw_json


def raw_members(
    engine: Engine, trace_id: int, key: str, seqs: Sequence[int] | None = None
) -> dict[int, str]:
    """The string values of the member ``key`` of the raw payloads of the trace's messages
    (those with ``seqs``, else all) by seq; payloads without it, or where it is no string, are
    left out. Only the members leave the database."""
    m = cast(Table, schema.MessageRow.__table__)
    stmt = select(m.c.seq, dialect.json_member(engine, m.c.raw, key)).where(
        m.c.trace_id == trace_id
    )
    # A long list is not sent (SQLite takes at most 32,766 parameters): all rows are read and
    # those not asked for dropped here.
    keep = None if seqs is None or len(seqs) <= IN_LIST_MAX else set(seqs)
    if seqs is not None and keep is None:
        stmt = stmt.where(m.c.seq.in_(seqs))
    found: dict[int, str] = {}
    with engine.connect() as conn:
        for seq, text in conn.execute(stmt.order_by(m.c.seq)):
            if text is not None and text.startswith('"') and (keep is None or seq in keep):
                found[seq] = orjson.loads(text)
    return found


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
    t = schema.TraceRow
    with writing(engine) as conn:
        current = conn.execute(
            select(t.content_hash, t.message_count).where(t.id == trace_id).with_for_update()
        ).first()
        if current is None or tuple(current) != (old.content_hash, old.message_count):
            return False
        reviews = read_reviews(conn, trace_id) if _has_reviews(conn, trace_id) else None
        rollups.subtract(conn, [trace_id])
        added = [m for m in rows.messages if m.seq >= first_new_seq]
        m = schema.MessageRow
        for message in rows.messages:
            if message.seq < first_new_seq:
                conn.execute(
                    update(m)
                    .where(m.trace_id == trace_id, m.seq == message.seq)
                    .values(usage=message.usage)
                )
        _insert(conn, "messages", trace_id, added)
        # Without reviews to carry over, only the derived rows that changed are written (a
        # call that got its result, a verdict that now has a next action), else all of them.
        if reviews is not None or not _update_derived(conn, base, rows):
            _rewrite_derived(conn, trace_id, rows)
        renew_trace(conn, trace_id, rows.trace, import_id, now, 1)
        conn.execute(
            insert(schema.TraceUpdate).values(
                import_id=import_id,
                trace_id=trace_id,
                source_file=rows.trace.source_file,
                old_hash=old.content_hash,
                new_hash=rows.trace.content_hash,
                old_messages=old.message_count,
                new_messages=rows.trace.message_count,
                # The stored messages stay: the new version starts with them.
                messages_added=rows.trace.message_count - old.message_count,
                messages_removed=0,
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
        search.index_traces(conn, [trace_id], tables=("messages",), from_seq=first_new_seq)
        rollups.add(conn, [trace_id])
    return True


def _insert(conn: Connection, table: str, trace_id: int, rows: Sequence[tuple[Any, ...]]) -> None:
    if rows:
        dialect.bulk_insert(
            conn,
            table,
            ("trace_id", *contract.CHILD_COLUMNS[table]),
            [(trace_id, *row) for row in rows],
            contract.JSON_COLUMNS[table],
        )


def _rewrite_derived(conn: Connection, trace_id: int, rows: TraceRows) -> None:
    """Replace the trace's calls, results and findings by ``rows``'."""
    search.unindex_traces(conn, [trace_id], tables=("tool_calls",))
    for model in (schema.FindingRow, schema.ToolResultRow, schema.ToolCallRow):
        conn.execute(delete(model).where(model.trace_id == trace_id))
    for table in ("tool_calls", "tool_results", "findings"):
        _insert(conn, table, trace_id, rows.children(table))
    search.index_traces(conn, [trace_id], tables=("tool_calls",))


def _update_derived(conn: Connection, base: AppendBase, rows: TraceRows) -> bool:
    """Bring the stored calls, results and findings to ``rows``' by writing only what differs;
    False, with nothing written, unless every stored call and result is still there with the
    same arguments (then :func:`_rewrite_derived` is needed)."""
    stored_calls = {(c.message_seq, c.call_index): c for c in base.stored.calls}
    stored_results = {r.message_seq: r for r in base.stored.results}
    new_calls, changed_calls = _diff(stored_calls, rows.tool_calls, _call_key)
    new_results, changed_results = _diff(stored_results, rows.tool_results, _result_key)
    if new_calls is None or new_results is None:
        return False
    first_new_seq = base.stored.trace.message_count
    if any(c.message_seq < first_new_seq for c in new_calls):
        return False  # a stored message with a new call: not an append
    if any(stored_calls[_call_key(c)].arguments_raw != c.arguments_raw for c in changed_calls):
        return False  # the searched text changed: rewrite (and index) them all
    trace_id = base.stored.id
    _update_rows(conn, "tool_calls", trace_id, changed_calls, ("message_seq", "call_index"))
    _update_rows(conn, "tool_results", trace_id, changed_results, ("message_seq",))
    _insert(conn, "tool_calls", trace_id, new_calls)
    _insert(conn, "tool_results", trace_id, new_results)
    search.index_traces(conn, [trace_id], tables=("tool_calls",), from_seq=first_new_seq)
    gone = Counter(base.findings) - Counter(rows.findings)
    f = cast(Table, schema.FindingRow.__table__)
    for finding, times in gone.items():
        for _ in range(times):
            row_id = conn.execute(
                select(f.c.id)
                .where(f.c.trace_id == trace_id, *_equal(f, finding._asdict()))
                .limit(1)
            ).scalar_one()
            conn.execute(delete(f).where(f.c.id == row_id))
    _insert(
        conn,
        "findings",
        trace_id,
        list((Counter(rows.findings) - Counter(base.findings)).elements()),
    )
    return True


def _call_key(call: contract.ToolCallRecord) -> tuple[int, int]:
    return call.message_seq, call.call_index


def _result_key(result: contract.ToolResultRecord) -> int:
    return result.message_seq


def _diff(
    stored: dict[K, R], new: Sequence[R], key: Callable[[R], K]
) -> tuple[list[R] | None, list[R]]:
    """The rows of ``new`` not stored yet and those stored otherwise; ``None`` for the first
    when a stored row is not in ``new``."""
    added: list[R] = []
    changed: list[R] = []
    found = 0
    for row in new:
        old = stored.get(key(row))
        if old is None:
            added.append(row)
            continue
        found += 1
        if old != row:
            changed.append(row)
    return (added if found == len(stored) else None), changed


def _equal(table: Table, values: dict[str, Any]) -> list[ColumnElement[bool]]:
    """``column = value`` for each of ``values`` (``IS NULL`` for a None)."""
    return [table.c[k].is_(None) if v is None else table.c[k] == v for k, v in values.items()]


def _update_rows(
    conn: Connection,
    table_name: str,
    trace_id: int,
    rows: Sequence[tuple[Any, ...]],
    keys: tuple[str, ...],
) -> None:
    """Give the stored rows of ``table_name`` with the ``keys`` of ``rows`` their values."""
    if not rows:
        return
    table = cast(Table, schema.Base.metadata.tables[table_name])
    columns = contract.CHILD_COLUMNS[table_name]
    stmt = (
        update(table)
        .where(
            table.c.trace_id == bindparam("_trace"),
            *[table.c[k] == bindparam(f"_{k}") for k in keys],
        )
        .values({c: bindparam(f"v_{c}") for c in columns if c not in keys})
    )
    params = []
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        params.append(
            {"_trace": trace_id, **{f"_{k}": values[k] for k in keys},
             **{f"v_{c}": v for c, v in values.items() if c not in keys}}
        )  # fmt: skip
    conn.execute(stmt, params)


def _has_reviews(conn: Connection, trace_id: int) -> bool:
    """Whether the trace has notes on pairs or corrected results (to carry over)."""
    a, r = schema.AnnotationRow, schema.ToolResultRow
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


__all__ = ["AppendBase", "load_append_base", "raw_members", "write_append"]
