"""Span conventions beyond the golden cases: the variants the libraries also write (AI SDK 5,
JSON event bodies, streamed calls) and partial spans, which give what can be read."""

from __future__ import annotations

import json
from typing import Any

from ingest.formats.otlp import trace_of
from ingest.input.otlp_spans import OtlpSpan, SpanEvent
from ingest.model import Message

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _span(number: int, name: str, attrs: dict[str, Any], **extra: Any) -> OtlpSpan:
    start = 1_767_607_200_000_000_000 + number * 10**6
    return OtlpSpan(
        trace_id=TRACE,
        span_id=f"{number:016x}",
        parent_span_id=None,
        name=name,
        kind=1,
        start_unix_nano=start,
        end_unix_nano=start + 10**5,
        attributes=attrs,
        **extra,
    )


def _summary(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [
        (
            m.role,
            m.content,
            [(c.tool_call_id, c.name, c.arguments) for c in m.tool_calls],
            (m.tool_result.tool_call_id, m.tool_result.explicit_error) if m.tool_result else None,
        )
        for m in messages
    ]


def test_ai_sdk_5_stream_call_reads_input_parts_error_outputs_and_input_schema() -> None:
    asked = [
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "w", "input": {"q": "P"}}
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "w",
                    "output": {"type": "error-text", "value": "no such city"},
                }
            ],
        },
    ]
    tool = {"type": "function", "name": "w", "inputSchema": {"type": "object"}}
    span = _span(
        1,
        "ai.streamText.doStream",
        {
            "ai.prompt.messages": json.dumps(asked),
            "ai.prompt.tools": [json.dumps(tool)],
            "ai.response.text": "Sorry.",
        },
    )
    trace = trace_of([span], source_file="f")
    assert _summary(trace.messages) == [
        ("user", "Weather?", [], None),
        ("assistant", "", [("c1", "w", {"q": "P"})], None),
        ("tool", "no such city", [], ("c1", True)),
        ("assistant", "Sorry.", [], None),
    ]
    assert [(t.name, t.parameters) for t in trace.tools] == [("w", {"type": "object"})]


def test_a_genai_event_with_a_json_body_reads_like_one_with_flat_fields() -> None:
    body = {"content": "ok", "id": "c9"}
    events = [
        SpanEvent(
            "gen_ai.user.message", 1, {"gen_ai.event.content": json.dumps({"content": "Hi"})}
        ),
        SpanEvent("gen_ai.tool.message", 2, {"gen_ai.event.content": json.dumps(body)}),
        SpanEvent("gen_ai.choice", 3, {"gen_ai.event.content": json.dumps({"index": 0})}),
    ]
    span = _span(1, "chat m", {"gen_ai.operation.name": "chat"}, events=events)
    assert _summary(trace_of([span], source_file="f").messages) == [
        ("user", "Hi", [], None),
        ("tool", "ok", [], ("c9", None)),
        # A choice without content (content capture off) is still the call's answer.
        ("assistant", "", [], None),
    ]


def test_partial_openllmetry_and_vercel_attributes_keep_what_they_say() -> None:
    llm = _span(
        1,
        "openai.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Go",
            # A call without its name still counts; a tool span without a name is no run.
            "gen_ai.completion.0.tool_calls.0.id": "c1",
            "gen_ai.completion.0.tool_calls.0.arguments": "{not json",
        },
    )
    broken = _span(2, "ai.generateText.doGenerate", {"ai.prompt.messages": "[not json"})
    nameless = _span(3, "ai.toolCall", {"ai.toolCall.id": "c1", "ai.toolCall.result": "x"})
    trace = trace_of([llm, broken, nameless], source_file="f")
    assert [(m.role, m.content) for m in trace.messages] == [("user", "Go"), ("assistant", "")]
    (call,) = trace.messages[1].tool_calls
    assert (call.tool_call_id, call.name, call.arguments_raw, call.args_valid) == (
        "c1",
        "",
        "{not json",
        False,
    )


def _oi_messages(prefix: str, messages: list[tuple[str, str, str | None]]) -> dict[str, Any]:
    """OpenInference flattened messages: (role, content, call id of a call or of a result)."""
    attrs: dict[str, Any] = {}
    for i, (role, content, ident) in enumerate(messages):
        p = f"{prefix}.{i}.message."
        attrs[p + "role"] = role
        if content:
            attrs[p + "content"] = content
        if ident and role == "assistant":
            attrs[p + "tool_calls.0.tool_call.id"] = ident
            attrs[p + "tool_calls.0.tool_call.function.name"] = "grep"
            attrs[p + "tool_calls.0.tool_call.function.arguments"] = "{}"
        elif ident:
            attrs[p + "tool_call_id"] = ident
    return attrs


def test_a_sliding_window_prompt_continues_the_conversation_without_repeating_it() -> None:
    # Each call sends the system and user messages, then only the previous call and result
    # (the shared OTLP benchmark's ``history=last``).
    head = [("system", "Be brief.", None), ("user", "Find it.", None)]
    spans = []
    previous: list[tuple[str, str, str | None]] = []
    for step in range(3):
        call = ("assistant", f"step {step}", f"c{step}")
        attrs = {
            "openinference.span.kind": "LLM",
            **_oi_messages("llm.input_messages", head + previous),
            **_oi_messages("llm.output_messages", [call]),
        }
        spans.append(_span(10 * step + 1, "llm.chat", attrs))
        previous = [call, ("tool", f"found {step}", f"c{step}")]
    trace = trace_of(spans, source_file="f")
    assert [(m.role, m.content, m.branch) for m in trace.messages] == [
        ("system", "Be brief.", None),
        ("user", "Find it.", None),
        ("assistant", "step 0", None),
        ("tool", "found 0", None),
        ("assistant", "step 1", None),
        ("tool", "found 1", None),
        ("assistant", "step 2", None),
    ]
