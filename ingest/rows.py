"""Turn a canonical trace and its derived facts into the plain rows ``db.write`` stores."""

from __future__ import annotations

import re
from collections.abc import Sequence

from db.vocabulary import DEFAULT_LOOP_K
from db.write import TraceRows
from ingest.facts import ResultFacts, TraceFacts
from ingest.model import Message, Trace

# Variable parts of error messages that would split one error into many fingerprints.
_FINGERPRINT_SUBS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(['\"`]).*?\1"), "'…'"),
    (re.compile(r"\b[0-9a-f]{8,}\b|\b[\w-]*\d[\w-]*\b", re.IGNORECASE), "#"),
    (re.compile(r"\s+"), " "),
)
FINGERPRINT_MAX = 200


def error_fingerprint(tool: str, text: str) -> str:
    """Group key for "the same error": tool + the message with ids, numbers and quotes masked.

    >>> error_fingerprint("get_user", "Error: user 'mia_li_3668' not found (code 404)")
    "get_user: Error: user '…' not found (code #)"
    """
    first = text.strip().splitlines()[0] if text.strip() else ""
    for pattern, repl in _FINGERPRINT_SUBS:
        first = pattern.sub(repl, first)
    return f"{tool}: {first.strip()}"[:FINGERPRINT_MAX]


def display_id(trace: Trace, dedupe_key: str) -> str:
    """What users call a trace: its external id, else the first 12 hex digits of its hash."""
    if trace.external_id:
        return trace.external_id
    return dedupe_key.rsplit(":", 1)[-1][:12]


def build_rows(trace: Trace, facts: TraceFacts, tokens: Sequence[int]) -> TraceRows:
    """All rows of one trace, ready for :func:`db.write.write_traces`."""
    key = trace.dedupe_key()
    by_seq = {m.seq: m for m in trace.messages}
    calls = {(c.message_seq, c.call_index): c for c in facts.calls}
    rows = TraceRows(trace={})
    for message, n_tokens in zip(trace.messages, tokens, strict=True):
        rows.messages.append(_message_row(message, n_tokens))
    for message in trace.messages:
        for call in message.tool_calls:
            cf = calls[(message.seq, call.call_index)]
            rows.tool_calls.append(
                (
                    message.seq, call.call_index, call.tool_call_id, call.name,
                    call.arguments_raw, call.arguments, call.args_valid, call.args_error,
                    message.timestamp, cf.signature, cf.occurrence, cf.run_length,
                    cf.retry_after_error, cf.ping_pong, cf.pair_state, cf.pairing_method,
                    cf.result_seq, cf.name_mismatch, cf.reused_id, cf.schema_issue,
                    cf.schema_detail,
                )
            )  # fmt: skip
            rows.findings.extend((f, call.name, message.seq, call.call_index) for f in cf.findings)
    for rf in facts.results:
        message = by_seq[rf.message_seq]
        tool = _result_tool(message, rf, by_seq)
        rows.tool_results.append(_result_row(message, rf, tool))
        rows.findings.extend((f, tool, rf.message_seq, None) for f in rf.findings)
    errors = sum(1 for r in facts.results if r.content.status == "error")
    rows.trace = {
        "dedupe_key": key,
        "external_id": trace.external_id,
        "display_id": display_id(trace, key),
        "format": trace.format,
        "source_file": trace.source_file,
        "source_line": trace.source_line,
        "agent": trace.agent,
        "model": trace.model,
        "started_at": trace.started_at or _first_timestamp(trace),
        "tags": trace.tags,
        "meta": trace.metadata,
        # The fields of ``ToolDef`` (already JSON values): faster than ``model_dump`` per tool.
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in trace.tools
        ],
        "record_count": trace.record_count,
        "message_count": len(trace.messages),
        "tool_call_count": len(facts.calls),
        "tool_result_count": len(facts.results),
        "error_count": errors,
        "problem_count": _problem_count(facts, errors),
        "total_tokens": facts.total_tokens,
        "tool_result_tokens": facts.tool_result_tokens,
        "wasted_tokens": facts.wasted_tokens,
        "max_occurrence": max((c.occurrence for c in calls.values()), default=0),
    }
    return rows


def _message_row(message: Message, n_tokens: int) -> tuple[object, ...]:
    content = message.content
    return (
        message.seq, message.role, content, message.timestamp, n_tokens, len(content),
        len(content.encode("utf-8", "surrogatepass")), message.usage, message.source_id,
        message.source_line, message.raw,
    )  # fmt: skip


def _result_tool(message: Message, rf: ResultFacts, by_seq: dict[int, Message]) -> str:
    if rf.call_ref is not None:
        call_msg = by_seq.get(rf.call_ref[0])
        if call_msg is not None:
            for call in call_msg.tool_calls:
                if call.call_index == rf.call_ref[1]:
                    return call.name
    provided = message.tool_result.name if message.tool_result else None
    return provided or "(unknown)"


def _result_row(message: Message, rf: ResultFacts, tool: str) -> tuple[object, ...]:
    cf = rf.content
    provided = message.tool_result
    content = message.content
    fingerprint = None
    if cf.status == "error":
        fingerprint = error_fingerprint(tool, cf.summary or content)
    call_seq, call_index = rf.call_ref if rf.call_ref else (None, None)
    return (
        message.seq, provided.tool_call_id if provided else None,
        provided.name if provided else None, provided.explicit_error if provided else None,
        provided.explicit_source if provided else None, message.timestamp, rf.tokens,
        len(content), len(content.encode("utf-8", "surrogatepass")), tool, cf.status,
        cf.status_source, cf.error_type, cf.rule, fingerprint, cf.summary, cf.suggestion,
        cf.suggestion_kind, cf.suggestion_detail or None, cf.is_protocol, rf.pair_state,
        rf.pairing_method, call_seq, call_index, rf.name_mismatch, rf.oversized, rf.verdict,
        rf.verdict_reason, rf.next_call_succeeded,
    )  # fmt: skip


def _first_timestamp(trace: Trace) -> object:
    return next((m.timestamp for m in trace.messages if m.timestamp is not None), None)


def _problem_count(facts: TraceFacts, errors: int) -> int:
    """Severity for the review queue: errors, pairing problems, loop calls, ignored advice."""
    pairing = sum(1 for c in facts.calls if c.pair_state != "paired")
    pairing += sum(1 for r in facts.results if r.call_ref is None)
    looping = {c.signature for c in facts.calls if c.occurrence >= DEFAULT_LOOP_K}
    loops = sum(1 for c in facts.calls if c.signature in looping)
    ignored = sum(1 for r in facts.results if r.verdict == "ignored")
    return errors + pairing + loops + ignored
