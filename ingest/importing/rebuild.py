"""Rebuild the canonical trace from its stored rows: the inverse of
``ingest.importing.rows.build_rows`` for every provided fact.

This is the one place that turns stored rows back into an :class:`ingest.model.Trace`;
``toollens reanalyze`` runs the analysis on what it returns, and ``tests/test_roundtrip.py``
holds it to "stored equals parsed", field for field.
"""

from __future__ import annotations

from typing import cast

from db.bulk.stored import StoredTrace
from db.contract.vocabulary import CallKind
from ingest.model import Message, ToolCall, ToolDef, ToolResult, Trace


def trace_from_stored(stored: StoredTrace) -> tuple[Trace, list[int]]:
    """The canonical trace of a stored trace, and its messages' stored token counts."""
    calls: dict[int, list[ToolCall]] = {}
    for c in stored.calls:
        calls.setdefault(c.message_seq, []).append(
            ToolCall(
                call_index=c.call_index,
                tool_call_id=c.tool_call_id,
                name=c.tool_name,
                arguments_raw=c.arguments_raw,
                arguments=c.arguments,
                args_valid=c.args_valid,
                args_error=c.args_error,
                kind=cast(CallKind, c.kind),
            )
        )
    results = {
        r.message_seq: ToolResult(
            tool_call_id=r.tool_call_id,
            name=r.provided_name,
            explicit_error=r.explicit_error,
            explicit_source=r.explicit_source,
            # A span's measure is stored as the duration; one from timestamps is derived.
            duration_ms=r.duration_ms if r.duration_source == "span" else None,
        )
        for r in stored.results
    }
    messages = [
        Message(
            seq=m.seq,
            role=m.role,
            content=m.content,
            timestamp=m.timestamp,
            tool_calls=calls.get(m.seq, []),
            tool_result=results.get(m.seq),
            usage=m.usage,
            source_id=m.source_id,
            source_line=m.source_line,
            branch=m.branch,
            branch_parent=m.branch_parent,
            raw=m.raw,
        )
        for m in stored.messages
    ]
    t = stored.trace
    metadata = dict(t.metadata or {})
    # Values cut to fit their columns were kept whole here by ``build_rows``: parsed again.
    full = metadata.pop("full_values", {})
    trace = Trace(
        format=t.format,
        source_file=t.source_file,
        source_line=t.source_line,
        external_id=full.get("external_id", t.external_id),
        agent=full.get("agent", t.agent),
        model=full.get("model", t.model),
        started_at=t.started_at,
        session_id=full.get("session_id", t.session_id),
        tags=t.tags or [],
        metadata=metadata,
        tools=[ToolDef(**tool) for tool in t.tools or []],
        messages=messages,
        record_count=t.record_count,
    )
    return trace, [m.tokens for m in stored.messages]
