"""The conversation of one trace's spans, whatever exported them.

Langfuse observations and OTLP spans are the same thing seen through two exporters: a tree of
spans whose attributes (OTel GenAI, OpenInference, OpenLLMetry, pydantic-ai, ADK …) and, for
Langfuse, ``input``/``output`` fields hold the LLM calls and the tool runs of an agent. Each
format reads its container into :class:`SpanNode` objects; :func:`span_conversation` turns them
into messages, the model, and the declared tools:

* the **LLM calls**: GENERATION nodes (and spans of OpenInference kind ``LLM`` or GenAI
  operation ``chat``), leaving out those nested in another LLM call (Agno logs each call twice).
  Of a call's ``input``/``output`` and its attributes (``gen_ai.input.messages``,
  ``llm.input_messages.N.message.*``, ``gen_ai.prompt.N.*`` …) the reading with more messages and
  calls wins, the node's own fields on a tie (``_span_payloads`` and ``_span_messages`` read the
  dialects). Its usage goes to the first message of its answer. Calls whose input says nothing
  readable are left out (BeeAI streams its answer as a message per token), unless no call has a
  readable input: then their answers, in order, are the conversation;
* **conversation snapshots**: pydantic-ai's ``pydantic_ai.all_messages`` and
  ``all_messages_events`` on agent-run spans (the only record of an output tool's result);
* **tool runs**: TOOL nodes, spans of OpenInference kind ``TOOL`` or GenAI operation
  ``execute_tool``, spans with ``gen_ai.tool.name``, and spans whose output is a LangChain
  ToolMessage. Their name, call id (``gen_ai.tool.call.id``, ``tool.id``), arguments and result
  come from the GenAI, pydantic-ai, ADK and OpenInference attributes, else from the node's
  ``input``/``output``. A node's ``failure`` (what its exporter says about a failed span: OTel
  status ERROR, an ``exception`` event, Langfuse ``level: ERROR``) or an ``error.type``
  attribute is an explicit error; so is a ToolMessage ``status: "error"``. BeeAI's ReAct steps
  (spans with ``thought`` and ``tool.name``) give one run per iteration.

Tool definitions come from ``gen_ai.tool.definitions``, ``llm.tools``, pydantic-ai
``model_request_parameters``, request ``tools`` and Gemini ``function_declarations``, and the
``role: "tool"`` definition messages of Langfuse's LangChain integration (never results).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ingest.formats._span_messages import Memo, call_id, definitions, maybe_json
from ingest.formats._span_payloads import (
    attribute_input,
    attribute_output,
    definition_message,
    event_input,
    event_output,
    read_input,
    read_list,
    read_output,
    weight,
)
from ingest.formats._span_threads import Source, ToolRun, assemble
from ingest.model import Message, ToolDef

_LLM_OPERATIONS = {"chat", "generate_content", "text_completion"}
#: OpenLLMetry's ``llm.request.type`` of a model call.
_LLM_REQUEST_TYPES = {"chat", "completion"}
#: The Vercel AI SDK's provider-call spans (the outer ``ai.generateText`` only sums them up).
_VERCEL_LLM_OPERATIONS = {
    "ai.generateText.doGenerate",
    "ai.streamText.doStream",
    "ai.generateObject.doGenerate",
    "ai.streamObject.doStream",
}
_SNAPSHOTS = ("pydantic_ai.all_messages", "all_messages_events")
_TOOL_NAME_PREFIXES = ("execute_tool ", "running tool: ", "tool.")
_ARGUMENT_KEYS = (
    "gen_ai.tool.call.arguments",
    "tool_arguments",
    "gcp.vertex.agent.tool_call_args",
    "ai.toolCall.args",
    "ai.toolCall.input",
    "input.value",
)
_RESULT_KEYS = (
    "gen_ai.tool.call.result",
    "tool_response",
    "gcp.vertex.agent.tool_response",
    "ai.toolCall.result",
    "ai.toolCall.output",
    "output.value",
)
_JSON_SCHEMA_KEY = re.compile(r"llm\.tools\.(\d+)\.tool\.json_schema")
_FUNCTION_KEY = re.compile(r"llm\.request\.functions\.(\d+)\.(\w+)")


@dataclass(slots=True)
class SpanNode:
    """One span (a Langfuse observation, an OTLP span) as the conversation code reads it."""

    #: The span as its source gave it: the raw payload of the messages built from it.
    raw: Any
    id: str | None
    parent: str | None
    #: Langfuse observation type (``GENERATION``, ``TOOL`` …); empty for plain OTel spans.
    type: str
    name: str
    start: datetime | None
    end: datetime | None
    #: The span's attributes, flattened to ``{"a.b": value}``.
    attrs: dict[str, Any]
    #: Langfuse's ``input``/``output`` fields (OTel spans keep theirs in attributes).
    input: Any = None
    output: Any = None
    #: The model the exporter names, and the provider's usage, verbatim.
    model: str | None = None
    usage: dict[str, Any] | None = None
    #: Where the exporter said the span failed (``level``, ``status``, ``exception``), if it did.
    failure: str | None = None
    #: The failure's message (OTel status message, exception message, Langfuse statusMessage).
    status_message: Any = None
    #: The span's events as ``(name, attributes)``: the deprecated GenAI message events.
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def is_llm(self) -> bool:
        """Whether the span is an LLM call."""
        attrs = self.attrs
        return (
            self.type == "GENERATION"
            or attrs.get("openinference.span.kind") == "LLM"
            or str(attrs.get("gen_ai.operation.name")) in _LLM_OPERATIONS
            or str(attrs.get("llm.request.type")) in _LLM_REQUEST_TYPES
            or str(attrs.get("ai.operationId", self.name)) in _VERCEL_LLM_OPERATIONS
        )


@dataclass(slots=True)
class SpanConversation:
    """What a trace's spans say: the messages (``seq`` numbered by ``make_trace``), the model
    of the first LLM call that names one, and the declared tools."""

    messages: list[Message]
    model: str | None
    tools: list[ToolDef]


def span_conversation(nodes: list[SpanNode]) -> SpanConversation:
    """The conversation of one trace's spans (see the module docstring)."""
    nodes = sorted(nodes, key=lambda o: (o.start is None, o.start or datetime.min))
    by_id = {o.id: o for o in nodes if o.id is not None}
    llm_calls = [o for o in nodes if o.is_llm and not _inside_llm_call(o, by_id)]
    messages = assemble(_sources(llm_calls, nodes, by_id), _tool_runs(nodes))
    model = next((o.model for o in llm_calls if o.model is not None), None)
    return SpanConversation(messages, model, _tool_definitions(nodes, llm_calls))


def _inside_llm_call(obs: SpanNode, by_id: dict[str, SpanNode]) -> bool:
    seen: set[str] = set()
    parent = by_id.get(obs.parent) if obs.parent else None
    while parent is not None and parent.id not in seen:
        if parent.is_llm:
            return True
        seen.add(parent.id or "")
        parent = by_id.get(parent.parent) if parent.parent else None
    return False


def _ancestors(obs: SpanNode, by_id: dict[str, SpanNode]) -> tuple[str, ...]:
    """The ids of the spans ``obs`` lies under, nearest first (a cycle ends the walk)."""
    chain: list[str] = []
    parent = by_id.get(obs.parent) if obs.parent else None
    while parent is not None and parent.id and parent.id not in chain:
        chain.append(parent.id)
        parent = by_id.get(parent.parent) if parent.parent else None
    return tuple(chain)


def _sources(
    llm_calls: list[SpanNode], observations: list[SpanNode], by_id: dict[str, SpanNode]
) -> list[Source]:
    """LLM calls and conversation snapshots, in time order."""
    sources: list[Source] = []
    memo: Memo = {}
    for obs in llm_calls:
        from_fields = read_input(obs.input, memo)
        from_attrs = attribute_input(obs.attrs, memo) or event_input(obs.events, memo)
        inputs = from_attrs if weight(from_attrs) > weight(from_fields) else from_fields
        said = read_output(obs.output)
        said_attrs = attribute_output(obs.attrs) or event_output(obs.events)
        outputs = said_attrs if weight(said_attrs) > weight(said) else said
        parent = by_id.get(obs.parent) if obs.parent else None
        sources.append(
            Source(
                inputs=inputs,
                outputs=outputs,
                start=obs.start,
                end=obs.end,
                label=parent.name if parent is not None and parent.name else obs.name,
                usage=dict(obs.usage) if obs.usage else None,
                span_id=obs.id,
                ancestors=_ancestors(obs, by_id),
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


def _tool_run(obs: SpanNode) -> ToolRun | None:
    """The tool run a span records, if it is a tool span with a name."""
    attrs, output = obs.attrs, obs.output
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
        or "ai.toolCall.name" in attrs
        or tool_message is not None
    ):
        return None
    span_name = obs.name
    for prefix in _TOOL_NAME_PREFIXES:
        span_name = span_name.removeprefix(prefix)
    names = [attrs.get("gen_ai.tool.name"), attrs.get("tool.name"), attrs.get("ai.toolCall.name")]
    names += [tool_message.get("name") if tool_message else None, span_name if named_span else None]
    name = next((n for n in names if isinstance(n, str) and n), None)
    if name is None:
        return None
    ident = attrs.get("gen_ai.tool.call.id", attrs.get("tool.id", attrs.get("ai.toolCall.id")))
    error, source = _error(obs)
    if tool_message is not None:
        ident = ident or tool_message.get("tool_call_id")
        result = tool_message.get("content")
        if tool_message.get("status") == "error" and error is None:
            error, source = True, "status"
    else:
        result = _first(attrs, _RESULT_KEYS, output)
    if result is None and error:
        result = obs.status_message
    arguments = _first(attrs, _ARGUMENT_KEYS, obs.input)
    return _run(obs, name, call_id(ident), arguments, result, error, source)


def _run(
    obs: SpanNode,
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


def _error(obs: SpanNode) -> tuple[bool | None, str | None]:
    if obs.failure is not None:
        return True, obs.failure
    if obs.attrs.get("error.type") is not None:
        return True, "error.type"
    return None, None


def _tool_runs(observations: list[SpanNode]) -> list[ToolRun]:
    """Tool spans, and BeeAI's ReAct steps (the last update of each iteration that carries a
    tool, its parameters and its output), in time order."""
    runs = [run for obs in observations if (run := _tool_run(obs)) is not None]
    steps: dict[str | None, SpanNode] = {}
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


def _tool_definitions(observations: list[SpanNode], llm_calls: list[SpanNode]) -> list[ToolDef]:
    """Every declared tool, first declaration of a name wins."""
    found: list[ToolDef] = []
    # Every LLM span of a run usually declares the same tools, as the same JSON text: a text
    # read once adds nothing the second time (its tools are declared already), so it is
    # skipped rather than parsed and validated again for each span.
    read: set[tuple[bool, str]] = set()

    def once(value: Any, *, item: bool = False) -> list[ToolDef]:
        if isinstance(value, str):
            if (item, value) in read:
                return []
            read.add((item, value))
        return definitions([value] if item else value)

    for obs in observations:
        attrs = obs.attrs
        found += once(attrs.get("gen_ai.tool.definitions"))
        found += once(attrs.get("llm.tools"))
        schemas = sorted(
            (int(m.group(1)), v) for k, v in attrs.items() if (m := _JSON_SCHEMA_KEY.fullmatch(k))
        )
        for _, schema in schemas:
            found += once(schema, item=True)
        found += definitions(_functions(attrs))
        found += once(attrs.get("ai.prompt.tools"))
        request = maybe_json(attrs.get("model_request_parameters"))
        if isinstance(request, dict):
            found += definitions(request.get("function_tools"))
            found += definitions(request.get("output_tools"))
    for obs in llm_calls:
        sent, said = maybe_json(obs.input), maybe_json(obs.output)
        for holder in (sent, said, sent.get("config") if isinstance(sent, dict) else None):
            if isinstance(holder, dict):
                found += definitions(holder.get("tools"))
        for item in sent if isinstance(sent, list) else []:
            found += definition_message(item)
    unique: dict[str, ToolDef] = {}
    for tool in found:
        unique.setdefault(tool.name, tool)
    return list(unique.values())


def _functions(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenLLMetry's flattened ``llm.request.functions.N.name/description/parameters``."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith("llm.request.functions.") and (m := _FUNCTION_KEY.fullmatch(key)):
            value = maybe_json(value) if m.group(2) == "parameters" else value
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [found[i] for i in sorted(found)]
