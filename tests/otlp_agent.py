"""Agent runs recorded by the real OpenTelemetry SDK, and their OTLP JSON encoding.

The OTLP tests, the receiver tests and ``make_otlp_fixtures.py`` (the provenance of the
``tests/golden/otlp`` inputs) share these runs. Span shapes mirror the OTLP/Phoenix benchmark
workload (``../shared/bench/otlp-phoenix/workload.py``): an AGENT root, LLM spans whose
OpenInference ``llm.output_messages`` carry the tool call, TOOL spans with ``input.value`` /
``output.value``, and a failing tool with status ERROR and an ``exception`` event. The GenAI run
uses ``gen_ai.input.messages`` / ``gen_ai.output.messages`` and ``execute_tool`` spans.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Status, StatusCode

#: 2026-01-05 10:00:00 UTC, so the fixtures' times are fixed.
BASE_NS = 1_767_607_200_000_000_000
MS = 1_000_000
SYSTEM = "You are a weather assistant."
USER = "What is the weather in Paris, and the forecast for 3 days?"
WEATHER_ARGS = '{"city": "Paris"}'
WEATHER_RESULT = "rainy, 57°F"
FORECAST_ARGS = '{"city": "Paris", "days": 3}'
FORECAST_ERROR = "upstream timeout after 30s"
ANSWER = "It is rainy in Paris (57°F); the forecast service timed out."


class CountingIds(IdGenerator):
    """Ids 1, 2, 3 … (trace ids from ``trace_base``): fixtures that do not change per run."""

    def __init__(self, trace_base: int = 0xA1) -> None:
        self.span, self.trace = 0, trace_base

    def generate_span_id(self) -> int:
        self.span += 1
        return self.span

    def generate_trace_id(self) -> int:
        self.trace += 1
        return self.trace


def provider(
    exporter: SpanExporter, service: str = "weather-agent", trace_base: int = 0xA1
) -> TracerProvider:
    """A tracer provider sending every ended span to ``exporter`` at once."""
    tracer_provider = TracerProvider(
        resource=Resource.create({"service.name": service}), id_generator=CountingIds(trace_base)
    )
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider


def span_between(
    tracer: trace_api.Tracer,
    name: str,
    *,
    context: Context,
    start_time: int,
    end_time: int,
    attributes: dict[str, Any],
) -> None:
    """A span ``name`` under ``context`` from ``start_time`` to ``end_time`` (ns), ended (so
    exported) at once."""
    span = tracer.start_span(name, context=context, start_time=start_time, attributes=attributes)
    span.end(end_time=end_time)


def _messages(prefix: str, messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference flattened messages (``llm.input_messages.N.message.*``)."""
    attrs: dict[str, Any] = {}
    for i, message in enumerate(messages):
        p = f"{prefix}.{i}.message."
        attrs[p + "role"] = message["role"]
        if message.get("content"):
            attrs[p + "content"] = message["content"]
        if "tool_call_id" in message:
            attrs[p + "tool_call_id"] = message["tool_call_id"]
        for k, (ident, name, arguments) in enumerate(message.get("calls", [])):
            q = f"{p}tool_calls.{k}.tool_call."
            attrs[q + "id"], attrs[q + "function.name"] = ident, name
            attrs[q + "function.arguments"] = arguments
    return attrs


def openinference_run(tracer_provider: TracerProvider, base_ns: int = BASE_NS) -> None:
    """One agent run: two tool calls (the second fails), then the answer."""
    tracer = tracer_provider.get_tracer("openinference.instrumentation.openai", "0.1.0")
    t = base_ns
    root = tracer.start_span(
        "agent.run",
        attributes={"openinference.span.kind": "AGENT", "session.id": "session-7"},
        start_time=t,
    )
    ctx = trace_api.set_span_in_context(root)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
    ]
    steps = [
        ("call_weather_1", "get_weather", WEATHER_ARGS, WEATHER_RESULT, None),
        ("call_forecast_2", "get_forecast", FORECAST_ARGS, None, FORECAST_ERROR),
    ]
    for ident, name, arguments, result, error in steps:
        said = {"role": "assistant", "calls": [(ident, name, arguments)]}
        span_between(
            tracer,
            "llm.chat",
            context=ctx,
            start_time=t + 10 * MS,
            end_time=t + 400 * MS,
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.token_count.prompt": 120 + 40 * len(history),
                "llm.token_count.completion": 18,
                **_messages("llm.input_messages", history),
                **_messages("llm.output_messages", [said]),
            },
        )
        tool_attrs = {
            "openinference.span.kind": "TOOL",
            "tool.name": name,
            "tool.id": ident,
            "input.value": arguments,
        }
        if result is not None:
            tool_attrs["output.value"] = result
        tool = tracer.start_span(
            f"tool.{name}", context=ctx, start_time=t + 410 * MS, attributes=tool_attrs
        )
        if error is not None:
            tool.add_event(
                "exception",
                {"exception.type": "TimeoutError", "exception.message": error},
                timestamp=t + 900 * MS,
            )
            tool.set_status(Status(StatusCode.ERROR, error))
        tool.end(end_time=t + 900 * MS)
        history += [said, {"role": "tool", "content": result or error, "tool_call_id": ident}]
        t += 1000 * MS
    span_between(
        tracer,
        "llm.chat",
        context=ctx,
        start_time=t + 10 * MS,
        end_time=t + 300 * MS,
        attributes={
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o",
            **_messages("llm.input_messages", history),
            **_messages("llm.output_messages", [{"role": "assistant", "content": ANSWER}]),
        },
    )
    root.end(end_time=t + 310 * MS)


def genai_run(tracer_provider: TracerProvider, base_ns: int = BASE_NS) -> None:
    """One agent run in OTel GenAI conventions: a chat span asking for a tool, the
    ``execute_tool`` span, and the chat span that answers."""
    tracer = tracer_provider.get_tracer("opentelemetry.instrumentation.openai_v2", "2.1b0")
    t = base_ns
    root = tracer.start_span(
        "invoke_agent weather",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
        start_time=t,
    )
    ctx = trace_api.set_span_in_context(root)
    asked = [
        {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
    ]
    call = {
        "role": "assistant",
        "parts": [
            {
                "type": "tool_call",
                "id": "call_VSPy",
                "name": "get_weather",
                "arguments": {"location": "Paris"},
            }
        ],
        "finish_reason": "tool_call",
    }
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
    }
    span_between(
        tracer,
        "chat gpt-4o",
        context=ctx,
        start_time=t + 5 * MS,
        end_time=t + 300 * MS,
        attributes={
            **chat,
            "gen_ai.usage.input_tokens": 47,
            "gen_ai.usage.output_tokens": 12,
            "gen_ai.input.messages": json.dumps(asked),
            "gen_ai.output.messages": json.dumps([call]),
        },
    )
    span_between(
        tracer,
        "execute_tool get_weather",
        context=ctx,
        start_time=t + 310 * MS,
        end_time=t + 350 * MS,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_VSPy",
            "gen_ai.tool.call.arguments": '{"location": "Paris"}',
            "gen_ai.tool.call.result": WEATHER_RESULT,
        },
    )
    answered = [
        *asked,
        {"role": "assistant", "parts": call["parts"]},
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "call_VSPy", "response": WEATHER_RESULT}
            ],
        },
    ]
    said = [{"role": "assistant", "parts": [{"type": "text", "content": "Rainy, 57°F."}]}]
    span_between(
        tracer,
        "chat gpt-4o",
        context=ctx,
        start_time=t + 360 * MS,
        end_time=t + 600 * MS,
        attributes={
            **chat,
            "gen_ai.usage.input_tokens": 80,
            "gen_ai.usage.output_tokens": 6,
            "gen_ai.input.messages": json.dumps(answered),
            "gen_ai.output.messages": json.dumps(said),
        },
    )
    root.end(end_time=t + 610 * MS)


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP JSON encoding of ``spans``: proto3 JSON with hex ids and integer enums."""
    value = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in value.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return value


#: The calls of :func:`openinference_run` and the results the store must pair them with:
#: (tool, call id, arguments, pair state, result content, status, explicit error).
OPENINFERENCE_PAIRS = [
    ("get_weather", "call_weather_1", WEATHER_ARGS, "paired", WEATHER_RESULT, "success", None),
    ("get_forecast", "call_forecast_2", FORECAST_ARGS, "paired", FORECAST_ERROR, "error", True),
]


def stored_pairs(engine: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Per stored trace (by external id): its calls with their paired results, in order."""
    import sqlalchemy as sa

    from db.schema import MessageRow, ToolCallRow, ToolResultRow, TraceRow

    query = (
        sa.select(
            TraceRow.external_id,
            ToolCallRow.tool_name,
            ToolCallRow.tool_call_id,
            ToolCallRow.arguments_raw,
            ToolCallRow.pair_state,
            MessageRow.content,
            ToolResultRow.status,
            ToolResultRow.explicit_error,
        )
        .join(TraceRow, TraceRow.id == ToolCallRow.trace_id)
        .join(
            ToolResultRow,
            (ToolResultRow.trace_id == ToolCallRow.trace_id)
            & (ToolResultRow.message_seq == ToolCallRow.result_seq),
        )
        .join(
            MessageRow,
            (MessageRow.trace_id == ToolResultRow.trace_id)
            & (MessageRow.seq == ToolResultRow.message_seq),
        )
        .order_by(TraceRow.external_id, ToolCallRow.message_seq, ToolCallRow.call_index)
    )
    found: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for external_id, *pair in conn.execute(query):
            found.setdefault(external_id, []).append(tuple(pair))
    return found
