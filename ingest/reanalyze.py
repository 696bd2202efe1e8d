"""``toollens reanalyze``: recompute every derived fact from the stored provided facts.

No re-import is needed when a rule improves: the canonical trace is rebuilt from the stored
messages, calls and results (the same values the parser produced), analyzed again with the
stored token counts, and its derived rows are replaced. Human corrections are kept.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from db.stored import iter_trace_id_batches, load_traces, replace_derived
from db.vocabulary import DEFAULT_TOKEN_BUDGET
from ingest.analysis import analyze_trace
from ingest.model import Message, ToolCall, ToolDef, ToolResult, Trace
from ingest.rows import build_rows


def trace_from_stored(stored: dict[str, Any]) -> tuple[Trace, list[int]]:
    """The canonical trace and per-message token counts of a stored trace."""
    calls: dict[int, list[ToolCall]] = {}
    for c in stored["calls"]:
        calls.setdefault(c["message_seq"], []).append(
            ToolCall(
                call_index=c["call_index"],
                tool_call_id=c["tool_call_id"],
                name=c["tool_name"],
                arguments_raw=c["arguments_raw"],
                arguments=c["arguments"],
                args_valid=c["args_valid"],
                args_error=c["args_error"],
            )
        )
    results = {
        r["message_seq"]: ToolResult(
            tool_call_id=r["tool_call_id"],
            name=r["provided_name"],
            explicit_error=r["explicit_error"],
            explicit_source=r["explicit_source"],
        )
        for r in stored["results"]
    }
    messages = [
        Message(
            seq=m["seq"],
            role=m["role"],
            content=m["content"],
            timestamp=m["timestamp"],
            tool_calls=calls.get(m["seq"], []),
            tool_result=results.get(m["seq"]),
            usage=m["usage"],
            source_id=m["source_id"],
            source_line=m["source_line"],
            raw=m["raw"],
        )
        for m in stored["messages"]
    ]
    trace = Trace(
        format=stored["format"],
        source_file=stored["source_file"],
        source_line=stored["source_line"],
        external_id=stored["external_id"],
        agent=stored["agent"],
        model=stored["model"],
        started_at=stored["started_at"],
        tags=stored["tags"] or [],
        metadata=stored["meta"] or {},
        tools=[ToolDef(**t) for t in stored["tools"] or []],
        messages=messages,
        record_count=stored["record_count"],
    )
    return trace, [m["tokens"] for m in stored["messages"]]


def reanalyze(engine: Engine, *, budget: int = DEFAULT_TOKEN_BUDGET) -> int:
    """Re-run the analysis over every stored trace; returns how many traces were updated."""
    done = 0
    for ids in iter_trace_id_batches(engine):
        batch = []
        for stored in load_traces(engine, ids):
            trace, tokens = trace_from_stored(stored)
            facts = analyze_trace(trace, tokens, budget=budget)
            batch.append((stored["id"], build_rows(trace, facts, tokens)))
        replace_derived(engine, batch)
        done += len(batch)
    return done
