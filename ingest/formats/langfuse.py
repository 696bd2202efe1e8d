"""Langfuse trace exports: ``{"trace": {...}, "observations": [...]}``, one trace per export.

Accepted containers: one export per JSON document, a JSON array of exports, or JSONL with one
export per line; a trace object holding its ``observations`` (the public API's trace detail) is
read the same way. Each observation is ``{id, parentObservationId, type: SPAN | GENERATION |
TOOL | AGENT | CHAIN …, name, startTime, endTime, level, statusMessage, model, usageDetails,
input, output, metadata: {attributes: <the original OTel span attributes>}}``.

The conversation is rebuilt (see ``_span_threads``) from

* the **LLM calls**: GENERATION observations (and spans of OpenInference kind ``LLM`` or GenAI
  operation ``chat``), leaving out those nested in another LLM call (Agno logs each call twice).
  Of a call's ``input``/``output`` and its attributes (``gen_ai.input.messages``,
  ``llm.input_messages.N.message.*``, ``gen_ai.prompt.N.*`` …) the reading with more messages and
  calls wins, the observation's own fields on a tie (``_span_payloads`` and ``_span_messages``
  read the dialects). Its ``usageDetails`` go to the first message of its answer. Calls whose
  input says nothing readable are left out (BeeAI streams its answer as a message per token),
  unless no call has a readable input: then their answers, in order, are the conversation;
* **conversation snapshots**: pydantic-ai's ``pydantic_ai.all_messages`` and
  ``all_messages_events`` on agent-run spans (the only record of an output tool's result);
* **tool runs**: TOOL observations, spans of OpenInference kind ``TOOL`` or GenAI operation
  ``execute_tool``, spans with ``gen_ai.tool.name``, and spans whose output is a LangChain
  ToolMessage. Their name, call id (``gen_ai.tool.call.id``, ``tool.id``), arguments and result
  come from the GenAI, pydantic-ai, ADK and OpenInference attributes, else from the
  observation's ``input``/``output``. ``level: ERROR`` (how Langfuse keeps OTel status code 2)
  or an ``error.type`` attribute is an explicit error; so is a ToolMessage ``status: "error"``.
  BeeAI's ReAct steps (spans with ``thought`` and ``tool.name``) give one run per iteration.

Tool definitions come from ``gen_ai.tool.definitions``, ``llm.tools``, pydantic-ai
``model_request_parameters``, request ``tools`` and Gemini ``function_declarations``, and the
``role: "tool"`` definition messages of Langfuse's LangChain integration (never results).
The trace ``id`` is the external id, its ``name`` the agent, its ``timestamp`` the start; its
other small fields go to the metadata.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ingest.formats._common import (
    ShapeError,
    expect_list,
    expect_object,
    json_type,
    make_trace,
    optional_str,
    parse_timestamp,
    small_metadata,
)
from ingest.formats._record_loop import trace_per_record_format
from ingest.formats._span_messages import (
    Memo,
    call_id,
    definitions,
    maybe_json,
)
from ingest.formats._span_payloads import (
    attribute_input,
    attribute_output,
    definition_message,
    read_input,
    read_list,
    read_output,
    weight,
)
from ingest.formats._span_threads import Source, ToolRun, assemble
from ingest.model import ToolDef, Trace
from ingest.records import Record

NAME = "langfuse"

#: Trace fields that become Trace fields (or are the conversation) rather than metadata.
_TRACE_FIELDS = {"id", "name", "timestamp", "tags", "input", "output", "observations"}
_LLM_OPERATIONS = {"chat", "generate_content", "text_completion"}
_SNAPSHOTS = ("pydantic_ai.all_messages", "all_messages_events")
_TOOL_NAME_PREFIXES = ("execute_tool ", "running tool: ", "tool.")
_ARGUMENT_KEYS = (
    "gen_ai.tool.call.arguments",
    "tool_arguments",
    "gcp.vertex.agent.tool_call_args",
    "input.value",
)
_RESULT_KEYS = (
    "gen_ai.tool.call.result",
    "tool_response",
    "gcp.vertex.agent.tool_response",
    "output.value",
)
_JSON_SCHEMA_KEY = re.compile(r"llm\.tools\.(\d+)\.tool\.json_schema")


@dataclass(slots=True)
class _Observation:
    raw: dict[str, Any]
    id: str | None
    parent: str | None
    type: str
    name: str
    start: datetime | None
    end: datetime | None
    attrs: dict[str, Any]

    @classmethod
    def read(cls, value: Any, path: str) -> _Observation:
        obs = expect_object(value, path)
        metadata = maybe_json(obs.get("metadata"))
        attrs = metadata.get("attributes") if isinstance(metadata, dict) else None
        kind, name = obs.get("type"), obs.get("name")
        return cls(
            raw=obs,
            id=optional_str(obs.get("id"), f"{path}.id"),
            parent=optional_str(obs.get("parentObservationId"), f"{path}.parentObservationId"),
            type=kind if isinstance(kind, str) else "",
            name=name if isinstance(name, str) else "",
            start=parse_timestamp(obs.get("startTime")),
            end=parse_timestamp(obs.get("endTime")) or parse_timestamp(obs.get("startTime")),
            attrs=attrs if isinstance(attrs, dict) else {},
        )

    @property
    def is_llm(self) -> bool:
        return (
            self.type == "GENERATION"
            or self.attrs.get("openinference.span.kind") == "LLM"
            or str(self.attrs.get("gen_ai.operation.name")) in _LLM_OPERATIONS
        )


def _export_trace(record: Record) -> Trace:
    value = record.value
    if not isinstance(value, dict):
        raise ShapeError(f"expected a Langfuse trace export object, got {json_type(value)}")
    if "trace" in value:
        trace = expect_object(value["trace"], "trace")
        path = "observations"
        items = expect_list(value.get("observations", []), "observations")
    elif "observations" in value:
        trace, path, items = (
            value,
            "observations",
            expect_list(value["observations"], "observations"),
        )
    else:
        raise ShapeError('no "trace" object and no "observations" (expected a Langfuse export)')
    observations = [_Observation.read(item, f"{path}[{i}]") for i, item in enumerate(items)]
    observations.sort(key=lambda o: (o.start is None, o.start or datetime.min))
    by_id = {o.id: o for o in observations if o.id is not None}
    llm_calls = [o for o in observations if o.is_llm and not _inside_llm_call(o, by_id)]
    messages = assemble(_sources(llm_calls, observations, by_id), _tool_runs(observations))
    for message in messages:
        message.source_line = record.line
    tags = trace.get("tags")
    model = next((o.raw["model"] for o in llm_calls if isinstance(o.raw.get("model"), str)), None)
    name = trace.get("name")
    fields = {k: maybe_json(v) for k, v in trace.items() if k not in _TRACE_FIELDS}
    return make_trace(
        messages,
        format=NAME,
        source_file=record.source_file,
        source_line=record.line,
        external_id=optional_str(trace.get("id"), "trace.id"),
        agent=name if isinstance(name, str) and name else None,
        model=model,
        started_at=parse_timestamp(trace.get("timestamp")),
        tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
        tools=_tool_definitions(observations, llm_calls),
        metadata=small_metadata({**fields, "observation_count": len(observations)}, set()),
    )


def _inside_llm_call(obs: _Observation, by_id: dict[str, _Observation]) -> bool:
    seen: set[str] = set()
    parent = by_id.get(obs.parent) if obs.parent else None
    while parent is not None and parent.id not in seen:
        if parent.is_llm:
            return True
        seen.add(parent.id or "")
        parent = by_id.get(parent.parent) if parent.parent else None
    return False


def _sources(
    llm_calls: list[_Observation], observations: list[_Observation], by_id: dict[str, _Observation]
) -> list[Source]:
    """LLM calls and conversation snapshots, in time order."""
    sources: list[Source] = []
    memo: Memo = {}
    for obs in llm_calls:
        from_fields = read_input(obs.raw.get("input"), memo)
        from_attrs = attribute_input(obs.attrs, memo)
        inputs = from_attrs if weight(from_attrs) > weight(from_fields) else from_fields
        said, said_attrs = read_output(obs.raw.get("output")), attribute_output(obs.attrs)
        outputs = said_attrs if weight(said_attrs) > weight(said) else said
        parent = by_id.get(obs.parent) if obs.parent else None
        usage = obs.raw.get("usageDetails")
        sources.append(
            Source(
                inputs=inputs,
                outputs=outputs,
                start=obs.start,
                end=obs.end,
                label=parent.name if parent is not None and parent.name else obs.name,
                usage=dict(usage) if isinstance(usage, dict) and usage else None,
                span_id=obs.id,
            )
        )
    if sources and not any(s.inputs for s in sources):
        # No call says what it was asked: their answers, one after the other, are still the
        # conversation (each message keeps the time of its answer).
        answers = []
        for source in sources:
            for answer in source.outputs:
                for message in answer.messages:
                    message.timestamp = source.end
                    message.source_id = source.span_id
                answers.append(answer)
        sources = [Source(dict(enumerate(answers)), [], sources[0].start, None, sources[0].label)]
    for obs in observations:
        for key in _SNAPSHOTS:
            snapshot = maybe_json(obs.attrs.get(key))
            if isinstance(snapshot, list) and snapshot:
                inputs = read_list(snapshot, 0, memo)
                sources.append(Source(inputs, [], obs.end, obs.end, obs.name or key, None, obs.id))
    sources.sort(key=lambda s: (s.start is None, s.start or datetime.min))
    return sources


def _first(attrs: dict[str, Any], keys: tuple[str, ...], fallback: Any) -> Any:
    return next((attrs[k] for k in keys if attrs.get(k) is not None), fallback)


def _tool_run(obs: _Observation) -> ToolRun | None:
    """The tool run an observation records, if it is a tool span with a name."""
    attrs, output = obs.attrs, obs.raw.get("output")
    tool_message = (
        output
        if isinstance(output, dict) and output.get("type") == "tool" and "tool_call_id" in output
        else None
    )
    named_span = obs.type == "TOOL" or obs.name.startswith(_TOOL_NAME_PREFIXES[0])
    if not (
        named_span
        or attrs.get("openinference.span.kind") == "TOOL"
        or attrs.get("gen_ai.operation.name") == "execute_tool"
        or "gen_ai.tool.name" in attrs
        or tool_message is not None
    ):
        return None
    span_name = obs.name
    for prefix in _TOOL_NAME_PREFIXES:
        span_name = span_name.removeprefix(prefix)
    names = [attrs.get("gen_ai.tool.name"), attrs.get("tool.name")]
    names += [tool_message.get("name") if tool_message else None, span_name if named_span else None]
    name = next((n for n in names if isinstance(n, str) and n), None)
    if name is None:
        return None
    ident = attrs.get("gen_ai.tool.call.id", attrs.get("tool.id"))
    error, source = _error(obs)
    if tool_message is not None:
        ident = ident or tool_message.get("tool_call_id")
        result = tool_message.get("content")
        if tool_message.get("status") == "error" and error is None:
            error, source = True, "status"
    else:
        result = _first(attrs, _RESULT_KEYS, output)
    if result is None and error:
        result = obs.raw.get("statusMessage")
    arguments = _first(attrs, _ARGUMENT_KEYS, obs.raw.get("input"))
    return _run(obs, name, call_id(ident), arguments, result, error, source)


def _run(
    obs: _Observation,
    name: str,
    ident: str | None,
    arguments: Any,
    output: Any,
    error: bool | None,
    source: str | None,
) -> ToolRun:
    return ToolRun(
        name=name,
        call_id=ident,
        arguments=arguments,
        output=output,
        start=obs.start,
        end=obs.end,
        raw=obs.raw,
        error=error,
        error_source=source,
        span_id=obs.id,
    )


def _error(obs: _Observation) -> tuple[bool | None, str | None]:
    if obs.raw.get("level") == "ERROR":
        return True, "level"
    if obs.attrs.get("error.type") is not None:
        return True, "error.type"
    return None, None


def _tool_runs(observations: list[_Observation]) -> list[ToolRun]:
    """Tool spans, and BeeAI's ReAct steps (the last update of each iteration that carries a
    tool, its parameters and its output), in time order."""
    runs = [run for obs in observations if (run := _tool_run(obs)) is not None]
    steps: dict[str | None, _Observation] = {}
    for obs in observations:
        attrs = obs.attrs
        step = "thought" in attrs and attrs.get("tool.name")
        if step and None not in (attrs.get("output.value"), attrs.get("tool.parameters")):
            steps[obs.parent] = obs
    for obs in steps.values():
        attrs = obs.attrs
        error, source = _error(obs)
        name = str(attrs["tool.name"])
        runs.append(
            _run(obs, name, None, attrs["tool.parameters"], attrs["output.value"], error, source)
        )
    runs.sort(key=lambda r: (r.start is None, r.start or datetime.min))
    return runs


def _tool_definitions(
    observations: list[_Observation], llm_calls: list[_Observation]
) -> list[ToolDef]:
    """Every declared tool, first declaration of a name wins."""
    found: list[ToolDef] = []
    for obs in observations:
        attrs = obs.attrs
        found += definitions(attrs.get("gen_ai.tool.definitions"))
        found += definitions(attrs.get("llm.tools"))
        schemas = sorted(
            (int(m.group(1)), v) for k, v in attrs.items() if (m := _JSON_SCHEMA_KEY.fullmatch(k))
        )
        found += definitions([v for _, v in schemas])
        request = maybe_json(attrs.get("model_request_parameters"))
        if isinstance(request, dict):
            found += definitions(request.get("function_tools"))
            found += definitions(request.get("output_tools"))
    for obs in llm_calls:
        sent, said = maybe_json(obs.raw.get("input")), maybe_json(obs.raw.get("output"))
        for holder in (sent, said, sent.get("config") if isinstance(sent, dict) else None):
            if isinstance(holder, dict):
                found += definitions(holder.get("tools"))
        for item in sent if isinstance(sent, list) else []:
            found += definition_message(item)
    unique: dict[str, ToolDef] = {}
    for tool in found:
        unique.setdefault(tool.name, tool)
    return list(unique.values())


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = trace_per_record_format(
    NAME,
    _export_trace,
    description="Langfuse trace exports (observations with OTel GenAI / OpenInference attributes)",
    # ``projectId`` comes first in an export, before a large trace input can push
    # ``observations`` out of the head.
    markers=(rb'"observations"\s*:', rb'"parentObservationId"\s*:', rb'"projectId"\s*:'),
    # Observations hold what each LLM call sent and got back, in any conversation format.
    embeds=("openai_chat", "anthropic", "openai_responses", "langchain"),
)

__all__ = ["FORMAT", "NAME"]
