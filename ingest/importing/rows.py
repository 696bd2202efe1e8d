"""Turn a canonical trace and its derived facts into the plain rows ``db.writes.traces`` stores."""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from db.contract.bounds import fit, fit_key, storable_time
from db.contract.rows import (
    TITLE_MAX_CHARS,
    ErrorStreakRecord,
    FindingRecord,
    MessageRecord,
    ToolCallRecord,
    ToolResultRecord,
    TraceRecord,
    one_line_preview,
)
from db.contract.vocabulary import DEFAULT_LOOP_K
from db.contract.widths import column_width
from db.session import TraceRows
from ingest.analysis.facts import ResultFacts, TraceFacts
from ingest.analysis.fingerprints import error_fingerprint
from ingest.model import Message, Trace, content_hash, display_id


class _Said(Protocol):
    """A message as far as its title is concerned (a ``Message`` or a ``MessageRecord``)."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...


def trace_title(messages: Iterable[_Said]) -> str | None:
    """What lists call a trace: its first user message with any text, on one line, cut to
    :data:`db.contract.rows.TITLE_MAX_CHARS` characters (an ellipsis marks the cut).

    >>> from ingest.model import Message
    >>> trace_title([Message(seq=0, role="user", content="  Refund order\\n 4711,  please ")])
    'Refund order 4711, please'
    """
    for message in messages:
        if message.role != "user":
            continue
        text = " ".join(message.content.split())
        if text:
            if len(text) <= TITLE_MAX_CHARS:
                return text
            return text[: TITLE_MAX_CHARS - 1].rstrip() + "…"
    return None


def build_rows(
    trace: Trace,
    facts: TraceFacts,
    tokens: Sequence[int],
    *,
    message_seqs: Container[int] | None = None,
    digest: str | None = None,
) -> TraceRows:
    """All rows of one trace, ready for :func:`db.writes.traces.write_traces`; ``message_seqs``:
    only the message rows of these messages (the rest are stored already: :mod:`db.writes.append`);
    ``digest``: its :func:`ingest.model.content_hash` when the caller has it (taken without
    reading the stored messages' payloads again: :mod:`ingest.importing.appending`)."""
    key = fit_key("traces", "dedupe_key", trace.dedupe_key())
    if digest is None:
        digest = content_hash(trace)
    by_seq = {m.seq: m for m in trace.messages}
    calls = {(c.message_seq, c.call_index): c for c in facts.calls}
    messages = [
        _message_row(m, n)
        for m, n in zip(trace.messages, tokens, strict=True)
        if message_seqs is None or m.seq in message_seqs
    ]
    tool_calls: list[ToolCallRecord] = []
    findings: list[FindingRecord] = []
    for message in trace.messages:
        for call in message.tool_calls:
            cf = calls[(message.seq, call.call_index)]
            tool_calls.append(
                ToolCallRecord(
                    message_seq=message.seq, call_index=call.call_index,
                    tool_call_id=_call_id(call.tool_call_id),
                    tool_name=_tool_name(call.name),
                    arguments_raw=call.arguments_raw, arguments=call.arguments,
                    args_valid=call.args_valid, args_error=call.args_error,
                    timestamp=storable_time(message.timestamp),
                    signature=fit_key("tool_calls", "signature", cf.signature),
                    occurrence=cf.occurrence, run_length=cf.run_length,
                    retry_after_error=cf.retry_after_error, ping_pong=cf.ping_pong,
                    pair_state=cf.pair_state, pairing_method=cf.pairing_method,
                    result_seq=cf.result_seq, name_mismatch=cf.name_mismatch,
                    reused_id=cf.reused_id, schema_issue=cf.schema_issue,
                    schema_detail=cf.schema_detail, kind=call.kind,
                )
            )  # fmt: skip
            findings.extend(
                FindingRecord(f, _tool_name(call.name), message.seq, call.call_index)
                for f in cf.findings
            )
    tool_results: list[ToolResultRecord] = []
    for rf in facts.results:
        message = by_seq[rf.message_seq]
        tool = _tool_name(_result_tool(message, rf, by_seq))
        tool_results.append(_result_row(message, rf, tool))
        findings.extend(FindingRecord(f, tool, rf.message_seq, None) for f in rf.findings)
    errors = sum(1 for r in facts.results if r.content.status == "error")
    record = TraceRecord(
        dedupe_key=key,
        content_hash=digest,
        external_id=fit_key("traces", "external_id", trace.external_id)
        if trace.external_id
        else None,
        display_id=fit_key("traces", "display_id", display_id(trace, digest)),
        title=trace_title(trace.messages),
        format=trace.format,
        source_file=trace.source_file,
        source_line=trace.source_line,
        agent=fit("traces", "agent", trace.agent),
        model=fit("traces", "model", trace.model),
        started_at=storable_time(trace.started_at) or _first_timestamp(trace),
        tags=trace.tags,
        metadata=_with_full_values(trace),
        # The fields of ``ToolDef`` (already JSON values): faster than ``model_dump`` per tool.
        tools=[
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in trace.tools
        ],
        record_count=trace.record_count,
        message_count=len(trace.messages),
        tool_call_count=len(facts.calls),
        tool_result_count=len(facts.results),
        error_count=errors,
        problem_count=_problem_count(facts, errors),
        total_tokens=facts.total_tokens,
        tool_result_tokens=facts.tool_result_tokens,
        wasted_tokens=facts.wasted_tokens,
        max_occurrence=max((c.occurrence for c in calls.values()), default=0),
        token_counts=facts.token_counts,
        session_id=fit_key("traces", "session_id", trace.session_id) if trace.session_id else None,
    )
    return TraceRows(
        record, messages, tool_calls, tool_results, findings, _streak_rows(facts, tool_results)
    )


def _streak_rows(facts: TraceFacts, results: list[ToolResultRecord]) -> list[ErrorStreakRecord]:
    """The error streaks, each with the stored fingerprint and error type of its first result."""
    answer = {(c.message_seq, c.call_index): c.result_seq for c in facts.calls}
    by_seq = {r.message_seq: r for r in results}
    rows: list[ErrorStreakRecord] = []
    for streak in facts.streaks:
        result_seq = answer[streak.calls[0]]
        assert result_seq is not None, "a streak's calls all have error results"
        first = by_seq[result_seq]
        (first_seq, first_index), (last_seq, last_index) = streak.calls[0], streak.calls[-1]
        rows.append(
            ErrorStreakRecord(
                tool=_tool_name(streak.tool), fingerprint=first.fingerprint,
                error_type=first.error_type, first_seq=first_seq, first_index=first_index,
                last_seq=last_seq, last_index=last_index, length=streak.length,
                wasted_tokens=streak.wasted_tokens, wasted_ms=streak.wasted_ms,
            )
        )  # fmt: skip
    return rows


def _with_full_values(trace: Trace) -> dict[str, Any]:
    """The trace's metadata, plus (under ``full_values``) each trace-level value that had to be
    cut to fit its column; a message's own values stay whole in its raw payload."""
    cut = {
        name: value
        for name, value, column in (
            ("external_id", trace.external_id, "external_id"),
            ("agent", trace.agent, "agent"),
            ("model", trace.model, "model"),
        )
        if value is not None and len(value) > column_width("traces", column)
    }
    if trace.started_at is not None and storable_time(trace.started_at) is None:
        cut["started_at"] = trace.started_at.isoformat()
    if not cut:
        return trace.metadata
    return trace.metadata | {"full_values": cut}


def _tool_name(name: str) -> str:
    # Tool names are grouping keys on every page: long distinct names must stay distinct.
    return fit_key("tool_calls", "tool_name", name)


def _call_id(call_id: str | None) -> str | None:
    # Both tables cut an id the same way, so a stored call and its result still share it.
    return fit_key("tool_calls", "tool_call_id", call_id) if call_id else None


def _message_row(message: Message, n_tokens: int) -> MessageRecord:
    content = message.content
    return MessageRecord(
        seq=message.seq, role=message.role, content=content,
        timestamp=storable_time(message.timestamp), tokens=n_tokens, chars=len(content),
        bytes=len(content.encode("utf-8", "surrogatepass")), usage=message.usage,
        source_id=fit("messages", "source_id", message.source_id),
        source_line=message.source_line,
        branch=fit_key("messages", "branch", message.branch) if message.branch else None,
        branch_parent=(
            fit_key("messages", "branch_parent", message.branch_parent)
            if message.branch_parent
            else None
        ),
        raw=message.raw,
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


def _result_row(message: Message, rf: ResultFacts, tool: str) -> ToolResultRecord:
    cf = rf.content
    provided = message.tool_result
    content = message.content
    fingerprint = None
    if cf.status == "error":
        fingerprint = error_fingerprint(tool, cf.summary or content)
    call_seq, call_index = rf.call_ref if rf.call_ref else (None, None)
    return ToolResultRecord(
        message_seq=message.seq,
        tool_call_id=_call_id(provided.tool_call_id) if provided else None,
        provided_name=_tool_name(provided.name) if provided and provided.name else None,
        explicit_error=provided.explicit_error if provided else None,
        explicit_source=fit("tool_results", "explicit_source", provided.explicit_source)
        if provided
        else None,
        timestamp=storable_time(message.timestamp), tokens=rf.tokens, chars=len(content),
        bytes=len(content.encode("utf-8", "surrogatepass")), tool=tool, status=cf.status,
        status_source=cf.status_source,
        error_type=fit("tool_results", "error_type", cf.error_type), rule=cf.rule,
        fingerprint=fit("tool_results", "fingerprint", fingerprint), summary=cf.summary,
        suggestion=cf.suggestion,
        suggestion_kind=cf.suggestion_kind, suggestion_detail=cf.suggestion_detail or None,
        is_protocol=cf.is_protocol, pair_state=rf.pair_state, pairing_method=rf.pairing_method,
        call_seq=call_seq, call_index=call_index, name_mismatch=rf.name_mismatch,
        oversized=rf.oversized, image_tokens=rf.image_tokens, images=rf.images or None,
        read_by_seq=rf.read_by_seq, read_input_tokens=rf.read_input_tokens,
        verdict=rf.verdict, verdict_reason=rf.verdict_reason,
        next_call_succeeded=rf.next_call_succeeded,
        duration_ms=rf.duration_ms, duration_source=rf.duration_source,
        preview=one_line_preview(content),
        later_calls=rf.later_calls, reread_tokens=rf.reread_tokens,
        reread_cached=rf.reread_cached, reread_measured=rf.reread_measured,
        cost_nano_usd=rf.cost_nano_usd,
    )  # fmt: skip


def _first_timestamp(trace: Trace) -> datetime | None:
    stamps = (storable_time(m.timestamp) for m in trace.messages)
    return next((t for t in stamps if t is not None), None)


def _problem_count(facts: TraceFacts, errors: int) -> int:
    """Severity for the review queue: errors, pairing problems, loop calls, ignored advice."""
    pairing = sum(1 for c in facts.calls if c.pair_state != "paired")
    pairing += sum(1 for r in facts.results if r.call_ref is None)
    looping = {c.signature for c in facts.calls if c.occurrence >= DEFAULT_LOOP_K}
    loops = sum(1 for c in facts.calls if c.signature in looping)
    ignored = sum(1 for r in facts.results if r.verdict == "ignored")
    return errors + pairing + loops + ignored
