"""OTLP JSON trace exports: ``{"resourceSpans": [...]}``, one conversation per OTel trace.

Accepted containers: one export per JSON document (what ``OTLPSpanExporter``'s JSON encoding or
an HTTP request body holds), or JSONL with one ``ExportTraceServiceRequest`` per line (the
Collector's ``fileexporter``). Spans of one trace may be spread over many lines: they are grouped
by trace id across the whole file (a span id seen twice is one span, as a retried export sends
it again), and each trace becomes one canonical trace whose external id is the OTel trace id.

The spans are decoded by :mod:`ingest.input.otlp_spans` and read by the same span-to-conversation
code as Langfuse exports (``_span_conversation``): OTel GenAI (attributes or the deprecated message
events), OpenInference, OpenLLMetry and Vercel AI SDK attributes give the LLM calls (messages,
model, usage) and the tool runs (calls and results paired by id). Status ``ERROR`` or an
``exception`` event marks a span as failed (an explicit error on its tool result, whose content
falls back to the status or exception message).

The agent is the first ``gen_ai.agent.name`` attribute, else the root span's name; the start
is the earliest span start; ``service.name``, ``session.id`` and the span count go to the
metadata. The session is the ``session.id`` attribute, else ``gen_ai.conversation.id``. A
line that is not an OTLP export, or holds no span with valid ids, is rejected; every other line
is counted in the trace of its first span.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from ingest.formats._common import make_trace, small_metadata
from ingest.formats._shapes import (
    SIGN,
    Fit,
    Misfit,
    object_list,
)
from ingest.formats._span_conversation import SpanNode, span_conversation
from ingest.formats.base import TraceFormat
from ingest.input.otlp_spans import (
    STATUS_ERROR,
    OtlpDecodeError,
    OtlpSpan,
    decode_json_value,
)
from ingest.input.records import Record
from ingest.model import Rejected, Trace

NAME = "otlp"

_MODEL_KEYS = (
    "gen_ai.response.model",
    "gen_ai.request.model",
    "llm.model_name",
    "ai.response.model",
    "ai.model.id",
)
_USAGE_PREFIXES = ("gen_ai.usage.", "llm.token_count.", "llm.usage.", "ai.usage.")
_TRACE_ATTRIBUTES = ("session.id", "user.id", "gen_ai.conversation.id")
#: The attributes naming the trace's session, first found wins.
_SESSION_ATTRIBUTES = ("session.id", "gen_ai.conversation.id")


def _parse(records: Iterable[Record | Rejected], source_file: str) -> Iterator[Trace | Rejected]:
    """One trace per OTel trace id of the file (spans grouped across records)."""
    spans: dict[str, dict[str, OtlpSpan]] = {}
    first_line: dict[str, int] = {}
    record_counts: dict[str, int] = {}
    span_lines: dict[str, int] = {}
    for record in records:
        if isinstance(record, Rejected):
            yield record
            continue
        try:
            export = decode_json_value(record.value)
        except OtlpDecodeError as exc:
            yield record.reject("wrong_shape", str(exc))
            continue
        if not export.spans:
            reason = "; ".join(export.errors[:3]) or "no spans"
            yield record.reject("wrong_shape", f"no span with valid ids ({reason})")
            continue
        owner = export.spans[0].trace_id
        record_counts[owner] = record_counts.get(owner, 0) + 1
        for span in export.spans:
            first_line.setdefault(span.trace_id, record.line)
            spans.setdefault(span.trace_id, {}).setdefault(span.span_id, span)
            span_lines.setdefault(span.span_id, record.line)
    for trace_id, by_id in spans.items():
        trace = trace_of(
            list(by_id.values()),
            source_file=source_file,
            source_line=first_line[trace_id],
            span_lines=span_lines,
        )
        trace.record_count = record_counts.get(trace_id, 0)
        yield trace


def _time(unix_nano: int) -> datetime | None:
    if not unix_nano:
        return None
    try:
        return datetime.fromtimestamp(unix_nano / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None  # past what a datetime holds: the span's own value stays in its raw


def _failure(span: OtlpSpan) -> tuple[str | None, str | None]:
    """Where the span says it failed, and the message it gives."""
    exception = next((e for e in span.events if e.name == "exception"), None)
    detail = None
    if exception is not None:
        kind = exception.attributes.get("exception.type")
        text = exception.attributes.get("exception.message")
        detail = ": ".join(str(p) for p in (kind, text) if p) or None
    if span.status_code == STATUS_ERROR:
        return "status", span.status_message or detail
    if exception is not None:
        return "exception", detail
    return None, None


def span_node(span: OtlpSpan) -> SpanNode:
    """The span as the shared span-to-conversation code reads it."""
    attrs = span.attributes
    model = next((attrs[k] for k in _MODEL_KEYS if isinstance(attrs.get(k), str)), None)
    usage = {k: v for k, v in attrs.items() if k.startswith(_USAGE_PREFIXES)}
    failure, message = _failure(span)
    raw = {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "name": span.name,
        "kind": span.kind,
        "start_unix_nano": span.start_unix_nano,
        "end_unix_nano": span.end_unix_nano,
        "attributes": attrs,
        "events": [{"name": e.name, "attributes": e.attributes} for e in span.events],
        "status": {"code": span.status_code, "message": span.status_message},
    }
    return SpanNode(
        raw=raw,
        id=span.span_id,
        parent=span.parent_span_id,
        type="",
        name=span.name,
        start=_time(span.start_unix_nano),
        end=_time(span.end_unix_nano) or _time(span.start_unix_nano),
        attrs=attrs,
        model=model,
        usage=usage or None,
        failure=failure,
        status_message=message,
        events=[(e.name, e.attributes) for e in span.events],
    )


def trace_of(
    spans: list[OtlpSpan],
    *,
    source_file: str,
    source_line: int | None = None,
    span_lines: dict[str, int] | None = None,
) -> Trace:
    """The canonical trace of the spans of ONE OTel trace (a file's or the receiver's).

    Its identity is ``otlp`` + the trace id, so assembling the trace again when more spans
    have arrived gives the same trace, grown.
    """
    nodes = [span_node(span) for span in spans]
    conversation = span_conversation(nodes)
    lines = span_lines or {}
    for message in conversation.messages:
        line = lines.get(message.source_id or "")
        message.source_line = line if line is not None else source_line
    known = {span.span_id for span in spans}
    roots = sorted(
        (s for s in spans if s.parent_span_id not in known),
        key=lambda s: s.start_unix_nano,
    )
    agents = [s.attributes.get("gen_ai.agent.name") for s in spans]
    agent = next((a for a in agents if isinstance(a, str) and a), None)
    agent = agent or (roots[0].name if roots and roots[0].name else None)
    starts = [s.start_unix_nano for s in spans if s.start_unix_nano]
    fields: dict[str, Any] = {"span_count": len(spans)}
    service = next((s.resource.get("service.name") for s in spans if s.resource), None)
    if service is not None:
        fields["service.name"] = service
    for key in _TRACE_ATTRIBUTES:
        value = next((s.attributes[key] for s in spans if key in s.attributes), None)
        if value is not None:
            fields[key] = value
    session = next((fields[k] for k in _SESSION_ATTRIBUTES if isinstance(fields.get(k), str)), None)
    return make_trace(
        conversation.messages,
        format=NAME,
        source_file=source_file,
        source_line=source_line,
        external_id=spans[0].trace_id,
        session_id=session or None,
        agent=agent,
        model=conversation.model,
        started_at=_time(min(starts)) if starts else None,
        tools=conversation.tools,
        metadata=small_metadata(fields, set()),
    )


def shape(record: Any) -> Fit:
    """An OTLP export: an object holding a ``resourceSpans`` array of objects."""
    spans = object_list(record, "resourceSpans")
    return spans if isinstance(spans, Misfit) else SIGN


FORMAT = TraceFormat(
    name=NAME,
    description=(
        "OpenTelemetry OTLP JSON exports (GenAI / OpenInference spans, Collector file lines)"
    ),
    shape=shape,
    parse=_parse,
    # Span attributes hold what each LLM call sent and got back, in any conversation format,
    # and spans sent by Langfuse's own SDK carry its observation fields.
    embeds=frozenset(
        {"langfuse", "openai_chat", "anthropic", "openai_responses", "langchain", "gemini"}
    ),
)

__all__ = ["FORMAT", "NAME", "span_node", "trace_of"]
