"""Langfuse trace exports: ``{"trace": {...}, "observations": [...]}``, one trace per export.

Accepted containers: one export per JSON document, a JSON array of exports, or JSONL with one
export per line; a trace object holding its ``observations`` (the public API's trace detail) is
read the same way. Each observation is ``{id, parentObservationId, type: SPAN | GENERATION |
TOOL | AGENT | CHAIN …, name, startTime, endTime, level, statusMessage, model, usageDetails,
input, output, metadata: {attributes: <the original OTel span attributes>}}``.

The conversation is rebuilt from the observations by ``_span_conversation`` (the same code
reads OTLP spans): ``input``/``output`` and the OTel attributes give the LLM calls and tool runs,
``usageDetails`` the usage, ``level: ERROR`` (how Langfuse keeps OTel status code 2) a failed span.
The trace ``id`` is the external id, its ``name`` the agent, its ``timestamp`` the start; its
other small fields go to the metadata; its ``sessionId`` is the session.
"""

from __future__ import annotations

from typing import Any

from ingest.formats import _common
from ingest.formats._record_loop import trace_per_record_format
from ingest.formats._shapes import (
    SIGN,
    CutDict,
    Fit,
    Misfit,
    object_list,
)
from ingest.formats._span_conversation import SpanNode, span_conversation
from ingest.formats._span_messages import maybe_json
from ingest.input.records import Record
from ingest.model import Trace

NAME = "langfuse"

#: Trace fields that become Trace fields (or are the conversation) rather than metadata.
_TRACE_FIELDS = {"id", "name", "timestamp", "tags", "input", "output", "observations"}


def _observation(value: Any, path: str) -> SpanNode:
    obs = _common.expect_object(value, path)
    metadata = maybe_json(obs.get("metadata"))
    attrs = metadata.get("attributes") if isinstance(metadata, dict) else None
    kind, name, model, usage = (
        obs.get("type"),
        obs.get("name"),
        obs.get("model"),
        obs.get("usageDetails"),
    )
    return SpanNode(
        raw=obs,
        id=_common.optional_str(obs.get("id"), f"{path}.id"),
        parent=_common.optional_str(obs.get("parentObservationId"), f"{path}.parentObservationId"),
        type=kind if isinstance(kind, str) else "",
        name=name if isinstance(name, str) else "",
        start=_common.parse_timestamp(obs.get("startTime")),
        end=_common.parse_timestamp(obs.get("endTime"))
        or _common.parse_timestamp(obs.get("startTime")),
        attrs=attrs if isinstance(attrs, dict) else {},
        input=obs.get("input"),
        output=obs.get("output"),
        model=model if isinstance(model, str) else None,
        usage=usage if isinstance(usage, dict) and usage else None,
        failure="level" if obs.get("level") == "ERROR" else None,
        status_message=obs.get("statusMessage"),
    )


def _export_trace(record: Record) -> Trace:
    value = record.value
    if not isinstance(value, dict):
        raise _common.ShapeError(
            f"expected a Langfuse trace export object, got {_common.json_type(value)}"
        )
    if "trace" in value:
        trace = _common.expect_object(value["trace"], "trace")
        path = "observations"
        items = _common.expect_list(value.get("observations", []), "observations")
    elif "observations" in value:
        trace, path, items = (
            value,
            "observations",
            _common.expect_list(value["observations"], "observations"),
        )
    else:
        raise _common.ShapeError(
            'no "trace" object and no "observations" (expected a Langfuse export)'
        )
    observations = [_observation(item, f"{path}[{i}]") for i, item in enumerate(items)]
    conversation = span_conversation(observations)
    for message in conversation.messages:
        message.source_line = record.line
    tags = trace.get("tags")
    name = trace.get("name")
    session = trace.get("sessionId")
    fields = {k: maybe_json(v) for k, v in trace.items() if k not in _TRACE_FIELDS}
    return _common.make_trace(
        conversation.messages,
        format=NAME,
        source_file=record.source_file,
        source_line=record.line,
        external_id=_common.optional_str(trace.get("id"), "trace.id"),
        session_id=session if isinstance(session, str) and session else None,
        agent=name if isinstance(name, str) and name else None,
        model=conversation.model,
        started_at=_common.parse_timestamp(trace.get("timestamp")),
        tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
        tools=conversation.tools,
        metadata=_common.small_metadata({**fields, "observation_count": len(observations)}, set()),
    )


def shape(record: Any) -> Fit:
    """A Langfuse export: an object holding an ``observations`` array of objects, or (its
    observations past the head) a ``trace`` object with a ``projectId``."""
    observations = object_list(record, "observations")
    if not isinstance(observations, Misfit):
        return SIGN
    trace = record.get("trace") if isinstance(record, dict) else None
    if isinstance(record, CutDict) and isinstance(trace, dict) and "projectId" in trace:
        return SIGN
    return observations


FORMAT = trace_per_record_format(
    NAME,
    _export_trace,
    description="Langfuse trace exports (observations with OTel GenAI / OpenInference attributes)",
    # Observations hold what each LLM call sent and got back, in any conversation format
    # (chat completion responses with `choices` as request logs hold them too).
    shape=shape,
    embeds=("openai_chat", "anthropic", "openai_responses", "langchain", "request_log", "gemini"),
)

__all__ = ["FORMAT", "NAME"]
