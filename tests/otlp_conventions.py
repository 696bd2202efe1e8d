"""Agent runs in three more span conventions, recorded by the real OpenTelemetry SDK.

Each run is the weather agent of ``otlp_agent`` (one tool call, its result, the answer) as a
library of that convention writes it; the attribute names come from the libraries' sources:

* :func:`genai_events_run`: OTel GenAI before ``gen_ai.input.messages``: the messages are span
  events ``gen_ai.system.message`` / ``gen_ai.user.message`` / ``gen_ai.assistant.message``
  (``tool_calls``) / ``gen_ai.tool.message`` (``id``) and the answer a ``gen_ai.choice`` event
  (semantic-conventions ``deprecated/events-deprecated.yaml``); span events cannot nest, so the
  body's fields are attributes, nested ones JSON strings (as Strands Agents writes them);
* :func:`openllmetry_run`: OpenLLMetry (Traceloop ``opentelemetry-instrumentation-openai``):
  ``llm.request.type``, flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` with
  ``tool_calls.M.id/name/arguments``, ``llm.request.functions.N.*``;
* :func:`vercel_run`: the Vercel AI SDK's ``experimental_telemetry``: ``ai.generateText`` with
  its ``ai.generateText.doGenerate`` provider calls (``ai.prompt.messages``, ``ai.prompt.tools``,
  ``ai.response.text``, ``ai.response.toolCalls``) and an ``ai.toolCall`` span.
"""

from __future__ import annotations

import json

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider
from otlp_agent import BASE_NS, MS, SYSTEM, WEATHER_RESULT, span_between

USER = "Weather in Paris?"
CALL_ID = "call_VSPy"
ARGS = '{"location": "Paris"}'
ANSWER = "Rainy, 57°F."
PARAMETERS = {
    "type": "object",
    "properties": {"location": {"type": "string"}},
    "required": ["location"],
}
DESCRIPTION = "Current weather of a city"


def genai_events_run(tracer_provider: TracerProvider, base_ns: int = BASE_NS) -> None:
    """Two chat spans whose messages are deprecated GenAI events."""
    tracer = tracer_provider.get_tracer("opentelemetry.instrumentation.openai_v2", "2.0b0")
    t = base_ns
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
    }
    openai = {"gen_ai.system": "openai"}
    call = [
        {"id": CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
    ]
    root = tracer.start_span(
        "invoke_agent weather",
        start_time=t,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
    )
    ctx = trace_api.set_span_in_context(root)
    first = tracer.start_span(
        "chat gpt-4o",
        context=ctx,
        start_time=t,
        attributes={**chat, "gen_ai.usage.input_tokens": 47},
    )
    first.add_event("gen_ai.system.message", {**openai, "content": SYSTEM}, timestamp=t)
    first.add_event("gen_ai.user.message", {**openai, "content": USER}, timestamp=t)
    choice = {"role": "assistant", "tool_calls": call}
    first.add_event(
        "gen_ai.choice",
        {**openai, "index": 0, "finish_reason": "tool_calls", "message": json.dumps(choice)},
        timestamp=t + 300 * MS,
    )
    first.end(end_time=t + 300 * MS)
    second = tracer.start_span("chat gpt-4o", context=ctx, start_time=t + 400 * MS, attributes=chat)
    second.add_event("gen_ai.system.message", {**openai, "content": SYSTEM})
    second.add_event("gen_ai.user.message", {**openai, "content": USER})
    second.add_event("gen_ai.assistant.message", {**openai, "tool_calls": json.dumps(call)})
    second.add_event("gen_ai.tool.message", {**openai, "content": WEATHER_RESULT, "id": CALL_ID})
    said = {"role": "assistant", "content": ANSWER}
    second.add_event(
        "gen_ai.choice",
        {**openai, "index": 0, "finish_reason": "stop", "message": json.dumps(said)},
        timestamp=t + 700 * MS,
    )
    second.end(end_time=t + 700 * MS)
    root.end(end_time=t + 710 * MS)


def _openllmetry_prompt(index: int, role: str, **fields: str) -> dict[str, str]:
    prefix = f"gen_ai.prompt.{index}."
    return {prefix + "role": role, **{prefix + k: v for k, v in fields.items()}}


def _openllmetry_call(prefix: str) -> dict[str, str]:
    return {
        f"{prefix}tool_calls.0.id": CALL_ID,
        f"{prefix}tool_calls.0.name": "get_weather",
        f"{prefix}tool_calls.0.arguments": ARGS,
    }


def openllmetry_run(tracer_provider: TracerProvider, base_ns: int = BASE_NS) -> None:
    """A Traceloop workflow with two ``openai.chat`` spans in flattened attributes."""
    tracer = tracer_provider.get_tracer("opentelemetry.instrumentation.openai.v1", "0.40.14")
    t = base_ns
    root = tracer.start_span(
        "weather.workflow",
        start_time=t,
        attributes={"traceloop.span.kind": "workflow", "traceloop.workflow.name": "weather"},
    )
    ctx = trace_api.set_span_in_context(root)
    chat = {
        "llm.request.type": "chat",
        "gen_ai.system": "OpenAI",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "llm.request.functions.0.name": "get_weather",
        "llm.request.functions.0.description": DESCRIPTION,
        "llm.request.functions.0.parameters": json.dumps(PARAMETERS),
    }
    asked = {
        **_openllmetry_prompt(0, "system", content=SYSTEM),
        **_openllmetry_prompt(1, "user", content=USER),
    }
    span_between(
        tracer,
        "openai.chat",
        context=ctx,
        start_time=t + 5 * MS,
        end_time=t + 300 * MS,
        attributes={
            **chat,
            **asked,
            "gen_ai.usage.prompt_tokens": 47,
            "gen_ai.usage.completion_tokens": 12,
            "llm.usage.total_tokens": 59,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            **_openllmetry_call("gen_ai.completion.0."),
        },
    )
    span_between(
        tracer,
        "openai.chat",
        context=ctx,
        start_time=t + 400 * MS,
        end_time=t + 700 * MS,
        attributes={
            **chat,
            **asked,
            **_openllmetry_prompt(2, "assistant"),
            **_openllmetry_call("gen_ai.prompt.2."),
            **_openllmetry_prompt(3, "tool", content=WEATHER_RESULT, tool_call_id=CALL_ID),
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "stop",
            "gen_ai.completion.0.content": ANSWER,
        },
    )
    root.end(end_time=t + 710 * MS)


def vercel_run(tracer_provider: TracerProvider, base_ns: int = BASE_NS) -> None:
    """``generateText`` with a tool: two ``doGenerate`` calls around an ``ai.toolCall``."""
    tracer = tracer_provider.get_tracer("ai", "4.3.16")
    t = base_ns
    root = tracer.start_span(
        "ai.generateText",
        start_time=t,
        attributes={
            "operation.name": "ai.generateText weather",
            "ai.operationId": "ai.generateText",
            "resource.name": "weather",
            "ai.telemetry.functionId": "weather",
            "ai.model.id": "gpt-4o",
            "ai.model.provider": "openai.chat",
            "ai.prompt": json.dumps({"system": SYSTEM, "prompt": USER}),
            "ai.response.text": ANSWER,
        },
    )
    ctx = trace_api.set_span_in_context(root)
    tool = {
        "type": "function",
        "name": "get_weather",
        "description": DESCRIPTION,
        "parameters": PARAMETERS,
    }
    asked = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": USER}]},
    ]
    call = {
        "type": "tool-call",
        "toolCallId": CALL_ID,
        "toolName": "get_weather",
        "args": {"location": "Paris"},
    }
    provider_call = {
        "operation.name": "ai.generateText.doGenerate weather",
        "ai.operationId": "ai.generateText.doGenerate",
        "ai.model.id": "gpt-4o",
        "ai.model.provider": "openai.chat",
        "ai.prompt.format": "messages",
        "ai.prompt.tools": [json.dumps(tool)],
        "ai.prompt.toolChoice": json.dumps({"type": "auto"}),
        "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "ai.response.model": "gpt-4o-2024-08-06",
    }
    span_between(
        tracer,
        "ai.generateText.doGenerate",
        context=ctx,
        start_time=t + 5 * MS,
        end_time=t + 300 * MS,
        attributes={
            **provider_call,
            "ai.prompt.messages": json.dumps(asked),
            "ai.response.finishReason": "tool-calls",
            "ai.response.toolCalls": json.dumps(
                [
                    {
                        "toolCallType": "function",
                        "toolCallId": CALL_ID,
                        "toolName": "get_weather",
                        "args": ARGS,
                    }
                ]
            ),
            "ai.usage.promptTokens": 47,
            "ai.usage.completionTokens": 12,
        },
    )
    span_between(
        tracer,
        "ai.toolCall",
        context=ctx,
        start_time=t + 310 * MS,
        end_time=t + 350 * MS,
        attributes={
            "operation.name": "ai.toolCall weather",
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "get_weather",
            "ai.toolCall.id": CALL_ID,
            "ai.toolCall.args": ARGS,
            "ai.toolCall.result": json.dumps(WEATHER_RESULT),
        },
    )
    result = {
        "type": "tool-result",
        "toolCallId": CALL_ID,
        "toolName": "get_weather",
        "result": WEATHER_RESULT,
    }
    answered = [
        *asked,
        {"role": "assistant", "content": [call]},
        {"role": "tool", "content": [result]},
    ]
    span_between(
        tracer,
        "ai.generateText.doGenerate",
        context=ctx,
        start_time=t + 360 * MS,
        end_time=t + 600 * MS,
        attributes={
            **provider_call,
            "ai.prompt.messages": json.dumps(answered),
            "ai.response.finishReason": "stop",
            "ai.response.text": ANSWER,
            "ai.usage.promptTokens": 80,
            "ai.usage.completionTokens": 6,
        },
    )
    root.end(end_time=t + 610 * MS)
