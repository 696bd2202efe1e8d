"""Replaced versions of traces, kept so that none is lost: written by :mod:`db.writes.traces` when
an import replaces a stored version, read back whole by :func:`kept_version`.

A kept version (``trace_versions``) holds the trace row's values and only the messages its
successor does not start with (``shared_messages`` counts those it does): a session that grows
is replaced at every import, and copying its unchanged messages each time would store it over
and over. The snapshot is zlib-compressed JSON: read rarely, it is kept compact and exact
(integers of any size, text as stored) on every engine.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

import orjson
from sqlalchemy import Connection, Engine, Table, insert, select

from db.contract.rows import MessageRecord, TraceRecord
from db.schema import MessageRow, TraceRow, TraceVersionRow

_TRACES = cast(Table, TraceRow.__table__)
_MESSAGES = cast(Table, MessageRow.__table__)


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=str)
    except TypeError:  # an integer beyond 64 bits: the standard library writes it exactly
        return json.dumps(value, default=str, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def keep_versions(
    conn: Connection,
    import_id: int,
    now: datetime,
    replaced: Sequence[tuple[int, int]],
) -> dict[int, int]:
    """Keep the stored versions of the traces about to be replaced, each given as (trace id,
    messages its successor starts with); ``{trace id: version kept}``. Called in the writing
    transaction before the replacement."""
    if not replaced:
        return {}
    shared = dict(replaced)
    fields = [_TRACES.c[name] for name in TraceRecord._fields]
    rows = conn.execute(
        select(_TRACES.c.id, _TRACES.c.version, *fields).where(_TRACES.c.id.in_(list(shared)))
    ).all()
    kept: dict[int, int] = {}
    values = []
    for trace_id, version, *trace in rows:
        record = TraceRecord._make(trace)
        messages = conn.execute(
            select(*[_MESSAGES.c[name] for name in MessageRecord._fields])
            .where(_MESSAGES.c.trace_id == trace_id)
            .order_by(_MESSAGES.c.seq)
            .offset(shared[trace_id])
        ).all()
        snapshot = {
            "trace": record._asdict(),
            "messages": [MessageRecord._make(m)._asdict() for m in messages],
        }
        values.append(
            {
                "trace_id": trace_id,
                "version": version,
                "content_hash": record.content_hash,
                "message_count": record.message_count,
                "shared_messages": shared[trace_id],
                "replaced_by": import_id,
                "replaced_at": now,
                "snapshot": zlib.compress(_dumps(snapshot)),
            }
        )
        kept[trace_id] = version
    conn.execute(insert(TraceVersionRow), values)
    return kept


def keep_rows(
    conn: Connection,
    import_id: int,
    now: datetime,
    kept: Sequence[tuple[int, int, TraceRecord, Sequence[MessageRecord]]],
) -> None:
    """Keep versions that were never stored, each given as (trace id, version, its trace row,
    its messages past those its successor starts with)."""
    if not kept:
        return
    values = []
    for trace_id, version, trace, messages in kept:
        snapshot = {"trace": trace._asdict(), "messages": [m._asdict() for m in messages]}
        values.append(
            {
                "trace_id": trace_id,
                "version": version,
                "content_hash": trace.content_hash,
                "message_count": trace.message_count,
                "shared_messages": trace.message_count - len(messages),
                "replaced_by": import_id,
                "replaced_at": now,
                "snapshot": zlib.compress(_dumps(snapshot)),
            }
        )
    conn.execute(insert(TraceVersionRow), values)


def kept_version(engine: Engine, trace_id: int, version: int) -> dict[str, Any] | None:
    """A kept version of a trace whole: ``{"trace": {…}, "messages": [{…}, …]}`` with the
    values of its trace row and its messages' rows (datetimes as ISO text); ``None`` when
    that version was not kept. The messages it shares with its successor are taken from the
    successor (the next kept version, else the stored trace)."""
    v = TraceVersionRow
    with engine.connect() as conn:
        kept = conn.execute(
            select(v.version, v.shared_messages, v.snapshot)
            .where(v.trace_id == trace_id, v.version >= version)
            .order_by(v.version.desc())
        ).all()
        if not kept or kept[-1][0] != version:
            return None
        current = [
            _loads(_dumps(MessageRecord._make(m)._asdict()))
            for m in conn.execute(
                select(*[_MESSAGES.c[name] for name in MessageRecord._fields])
                .where(_MESSAGES.c.trace_id == trace_id)
                .order_by(_MESSAGES.c.seq)
            )
        ]
    found: dict[str, Any] = {}
    for _number, shared, snapshot in kept:  # newest first: each one's successor is known
        found = _loads(zlib.decompress(snapshot))
        found["messages"] = current[:shared] + found["messages"]
        current = found["messages"]
    return found
