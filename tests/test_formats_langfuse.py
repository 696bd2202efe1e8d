"""The ``langfuse`` format: edge cases of rebuilding a conversation from a Langfuse export.

Each case is a small export in the shape one framework really writes (see FORMATS.md A9 and the
exports in ``../shared/realdata/langfuse-export``); the golden files show whole traces.
"""

from __future__ import annotations

from typing import Any

import orjson
from formats_helpers import only_trace, parse, recs, rejections

from ingest import formats
from ingest.formats.base import Deferred
from ingest.model import Message, Trace

TRACE = {"id": "t-1", "projectId": "p", "name": "agent", "timestamp": "2025-01-01T00:00:00Z"}


def obs(ident: str, start: float, **fields: Any) -> dict[str, Any]:
    """An observation starting ``start`` seconds into the trace (ending 0.1 s later unless
    ``end`` says when)."""
    attrs = fields.pop("attrs", None)
    return {
        "id": ident,
        "type": fields.pop("type", "SPAN"),
        "name": fields.pop("name", ident),
        "parentObservationId": fields.pop("parent", None),
        "startTime": f"2025-01-01T00:00:{start:06.3f}Z",
        "endTime": f"2025-01-01T00:00:{fields.pop('end', start + 0.1):06.3f}Z",
        "level": fields.pop("level", "DEFAULT"),
        "metadata": {"attributes": attrs} if attrs is not None else {},
        **fields,
    }


def gen(ident: str, start: float, sent: Any, said: Any, **fields: Any) -> dict[str, Any]:
    return obs(ident, start, type="GENERATION", input=sent, output=said, **fields)


def export(*observations: dict[str, Any], **trace: Any) -> dict[str, Any]:
    return {"trace": {**TRACE, **trace}, "observations": list(observations)}


def trace_of(*observations: dict[str, Any]) -> Trace:
    return only_trace(parse("langfuse", recs(export(*observations))))


def shape(trace: Trace) -> list[tuple[str, str, list[tuple[str, str | None]], Any]]:
    """(role, content, calls, result) per message: what a reader of the trace sees."""

    def result(m: Message) -> Any:
        r = m.tool_result
        return r and (r.tool_call_id, r.name, r.explicit_error, r.explicit_source)

    return [
        (m.role, m.content, [(c.name, c.tool_call_id) for c in m.tool_calls], result(m))
        for m in trace.messages
    ]


USER = {"role": "user", "content": "Greet Bob."}
SYSTEM = {"role": "system", "content": "Be polite."}


# ---------------------------------------------------------------------------------------------
# Threads: how LLM calls make one conversation


def test_calls_sent_back_with_role_tool_are_calls_and_bare_results_take_the_span_ids() -> None:
    # Koog: two answers with one call each; the next prompt sends each call back as a "tool"
    # message holding the call, then the result without id.
    hello = {"id": "c1", "type": "function", "function": {"name": "Hello", "arguments": {}}}
    bye = {"id": "c2", "type": "function", "function": {"name": "Bye", "arguments": {}}}
    first_answer = [
        {"role": "assistant", "content": [hello]},
        {"role": "assistant", "content": [bye]},
    ]
    second_prompt = [
        SYSTEM,
        USER,
        {"role": "tool", "content": [hello]},
        {"role": "tool", "content": "Hello Bob!"},
        {"role": "tool", "content": [bye]},
        {"role": "tool", "content": "Bye Bob!"},
    ]
    tool_attrs = [
        {"gen_ai.tool.name": "Bye", "gen_ai.tool.call.id": "c2", "output.value": "Bye Bob!"},
        {"gen_ai.tool.name": "Hello", "gen_ai.tool.call.id": "c1", "output.value": "Hello Bob!"},
    ]
    trace = trace_of(
        gen("g1", 1, [SYSTEM, USER], first_answer),
        obs("t1", 2, attrs=tool_attrs[0]),
        obs("t2", 2.01, attrs=tool_attrs[1]),
        gen("g2", 3, second_prompt, [{"role": "assistant", "content": "Hello Bob! Bye Bob!"}]),
    )
    assert shape(trace)[2:] == [
        ("assistant", "", [("Hello", "c1")], None),
        ("tool", "Hello Bob!", [], ("c1", "Hello", None, None)),
        ("assistant", "", [("Bye", "c2")], None),
        ("tool", "Bye Bob!", [], ("c2", "Bye", None, None)),
        ("assistant", "Hello Bob! Bye Bob!", [], None),
    ]


def test_a_prompt_of_only_the_new_messages_continues_the_thread_and_list_ids_give_the_call_id() -> (
    None
):
    # Microsoft Agent Framework on an Assistants thread: the second call sends only the call
    # and its result; its ids are [run id, call id].
    ids = ["run_1", "call_1"]
    call = {"type": "tool_call", "id": ids, "name": "get_weather", "arguments": {"city": "Oslo"}}
    asked = {"role": "assistant", "parts": [call]}
    answered = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": ids, "response": "rain"}],
    }
    question = {"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]}
    final = {"role": "assistant", "parts": [{"type": "text", "content": "Rain."}]}
    trace = trace_of(
        gen("g1", 1, [question], [asked]),
        obs(
            "t1",
            2,
            type="TOOL",
            attrs={"gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": ids},
        ),
        gen("g2", 3, [asked, answered], [final]),
    )
    assert shape(trace) == [
        ("user", "Weather in Oslo?", [], None),
        ("assistant", "", [("get_weather", "call_1")], None),
        ("tool", "rain", [], ("call_1", "get_weather", None, None)),
        ("assistant", "Rain.", [], None),
    ]


def test_a_second_agent_with_its_own_prompt_follows_as_a_branch_named_by_its_agent_span() -> None:
    trace = trace_of(
        obs("a1", 0.5, name="writer run"),
        gen("g1", 1, [SYSTEM, USER], "Hi Bob!", parent="a1"),
        obs("a2", 1.5, name="critic run"),
        gen("g2", 2, [{"role": "system", "content": "Rate it."}, USER], "Good.", parent="a2"),
    )
    assert [(m.role, m.content, m.branch) for m in trace.messages] == [
        ("system", "Be polite.", None),
        ("user", "Greet Bob.", None),
        ("assistant", "Hi Bob!", None),
        ("system", "Rate it.", "critic run"),
        ("user", "Greet Bob.", "critic run"),
        ("assistant", "Good.", "critic run"),
    ]
    # The user message both agents got is read once but is two messages of the trace.
    assert [m.seq for m in trace.messages] == [0, 1, 2, 3, 4, 5]
    assert trace.messages[1] is not trace.messages[4]


def test_a_generation_nested_in_another_is_read_once() -> None:
    # Agno logs each call twice: its own span and the OpenAI instrumentation's inside it.
    trace = trace_of(
        gen("g1", 1, [USER], "Hi Bob!", usageDetails={"input": 9, "output": 3}),
        gen("g1b", 1.01, "user: Greet Bob.", "Hi Bob!", parent="g1", usageDetails={"input": 9}),
    )
    assert shape(trace) == [("user", "Greet Bob.", [], None), ("assistant", "Hi Bob!", [], None)]
    assert trace.messages[1].usage == {"input": 9, "output": 3}
    assert trace.messages[1].source_id == "g1"


def test_the_same_prompt_sent_again_keeps_one_conversation_with_the_later_answer() -> None:
    trace = trace_of(
        gen("g1", 1, [USER], None, level="ERROR", statusMessage="rate limited"),
        gen("g2", 2, [USER], "Hi Bob!"),
    )
    assert shape(trace) == [("user", "Greet Bob.", [], None), ("assistant", "Hi Bob!", [], None)]


def test_a_new_run_with_a_shorter_prompt_starts_a_new_thread() -> None:
    trace = trace_of(
        gen("g1", 1, [USER, {"role": "assistant", "content": "Hi!"}, USER], "Hi again!"),
        gen("g2", 2, [USER], "Hello!"),
    )
    assert [(m.content, m.branch) for m in trace.messages] == [
        ("Greet Bob.", None),
        ("Hi!", None),
        ("Greet Bob.", None),
        ("Hi again!", None),
        ("Greet Bob.", "g2"),
        ("Hello!", "g2"),
    ]


def test_messages_an_attribute_prompt_skips_keep_what_the_earlier_answer_said() -> None:
    # OpenInference drops an assistant message it cannot flatten (Agno): position 1 is missing.
    completion = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "search", "arguments": "{}"},
                        }
                    ],
                }
            }
        ]
    }
    second = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Search.",
        "llm.input_messages.2.message.role": "tool",
        "llm.input_messages.2.message.content": [{"title": "x"}],
    }
    trace = trace_of(
        gen(
            "g1",
            1,
            {"messages": ["role='user' content='Search.'"]},
            completion,
            attrs={
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "Search.",
            },
        ),
        obs(
            "t1",
            2,
            attrs={
                "openinference.span.kind": "TOOL",
                "tool.name": "search",
                "output.value": [{"title": "x"}],
            },
        ),
        gen("g2", 3, None, "Found x.", attrs=second),
    )
    assert shape(trace) == [
        ("user", "Search.", [], None),
        ("assistant", "", [("search", "c1")], None),
        ("tool", '[{"title":"x"}]', [], (None, "search", None, None)),
        ("assistant", "Found x.", [], None),
    ]


def test_calls_whose_prompt_is_unreadable_still_give_their_answers() -> None:
    trace = trace_of(gen("g1", 1, {"query": "x"}, "First."), gen("g2", 2, None, "Second."))
    assert shape(trace) == [("assistant", "First.", [], None), ("assistant", "Second.", [], None)]
    assert [(m.branch, m.source_id) for m in trace.messages] == [(None, "g1"), (None, "g2")]


def test_a_pydantic_ai_run_snapshot_adds_the_result_of_its_output_tool() -> None:
    call = {"type": "tool_call", "id": "c1", "name": "final_result", "arguments": {"ok": True}}
    asked = {"role": "assistant", "parts": [call]}
    done = {"type": "tool_call_response", "id": "c1", "name": "final_result", "result": "Done."}
    question = {"role": "user", "parts": [{"type": "text", "content": "Rate it."}]}
    snapshot = [question, asked, {"role": "user", "parts": [done]}]
    trace = trace_of(
        obs(
            "run",
            0.5,
            end=2,
            name="critic run",
            attrs={"pydantic_ai.all_messages": orjson.dumps(snapshot).decode()},
        ),
        gen("g1", 1, [question], [asked], parent="run"),
    )
    assert shape(trace) == [
        ("user", "Rate it.", [], None),
        ("assistant", "", [("final_result", "c1")], None),
        ("tool", "Done.", [], ("c1", "final_result", None, None)),
    ]


# ---------------------------------------------------------------------------------------------
# Tool runs the conversation does not show, and errors


def test_a_tool_run_the_conversation_does_not_show_is_inserted_at_its_time() -> None:
    trace = trace_of(
        gen("g1", 1, [USER], "Let me look."),
        obs("t1", 2, type="TOOL", name="lookup", input={"q": "Bob"}, output={"found": True}),
        gen("g2", 3, [USER, {"role": "assistant", "content": "Let me look."}], "Found Bob."),
    )
    assert shape(trace) == [
        ("user", "Greet Bob.", [], None),
        ("assistant", "Let me look.", [], None),
        ("assistant", "", [("lookup", None)], None),
        ("tool", '{"found":true}', [], (None, "lookup", None, None)),
        ("assistant", "Found Bob.", [], None),
    ]
    assert trace.messages[2].tool_calls[0].arguments == {"q": "Bob"}
    assert [m.source_id for m in trace.messages[2:4]] == ["t1", "t1"]


def test_a_failed_tool_run_without_output_shows_its_status_message_as_an_explicit_error() -> None:
    trace = trace_of(
        obs(
            "t1",
            1,
            type="TOOL",
            name="execute_tool fetch",
            level="ERROR",
            statusMessage="TimeoutError: 30 s",
            input='{"url": "https://x"}',
            output=None,
        ),
    )
    assert shape(trace) == [
        ("assistant", "", [("fetch", None)], None),
        ("tool", "TimeoutError: 30 s", [], (None, "fetch", True, "level")),
    ]
    assert trace.messages[0].tool_calls[0].arguments == {"url": "https://x"}


def test_a_failed_last_tool_run_adds_the_result_the_conversation_never_got() -> None:
    # The tool raised and the agent stopped: no later LLM call sends the result back.
    call = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": "{}"}}
    other = {"id": "c2", "type": "function", "function": {"name": "log", "arguments": "{}"}}
    asked = {"role": "assistant", "content": None, "tool_calls": [call, other]}
    trace = trace_of(
        gen("g1", 1, [USER], [asked]),
        obs("t2", 1.5, type="TOOL", name="log", output="logged"),
        obs(
            "t1",
            2,
            type="TOOL",
            name="pay",
            level="ERROR",
            statusMessage="GatewayTimeout",
            attrs={"gen_ai.tool.call.id": "c1"},
        ),
    )
    assert shape(trace) == [
        ("user", "Greet Bob.", [], None),
        ("assistant", "", [("pay", "c1"), ("log", "c2")], None),
        ("tool", "logged", [], ("c2", "log", None, None)),
        ("tool", "GatewayTimeout", [], ("c1", "pay", True, "level")),
    ]


def test_a_result_whose_call_no_llm_call_shows_gets_the_call_of_its_tool_run() -> None:
    answered = {"role": "tool", "tool_call_id": "c9", "content": "42"}
    trace = trace_of(
        obs(
            "t1",
            0.5,
            type="TOOL",
            name="answer",
            input={"q": "life"},
            output="42",
            attrs={"gen_ai.tool.call.id": "c9"},
        ),
        gen("g1", 1, [USER, answered], "It is 42."),
    )
    assert shape(trace) == [
        ("user", "Greet Bob.", [], None),
        ("assistant", "", [("answer", "c9")], None),
        ("tool", "42", [], ("c9", "answer", None, None)),
        ("assistant", "It is 42.", [], None),
    ]
    assert trace.messages[1].tool_calls[0].arguments == {"q": "life"}


def test_error_type_on_a_tool_span_flags_the_result_the_conversation_holds() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": "{}"}}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    answered = {"role": "tool", "tool_call_id": "c1", "content": "card declined"}
    trace = trace_of(
        gen("g1", 1, [USER], [asked]),
        obs(
            "t1",
            2,
            attrs={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "pay",
                "gen_ai.tool.call.id": "c1",
                "error.type": "CardDeclined",
            },
        ),
        gen("g2", 3, [USER, asked, answered], "Your card was declined."),
    )
    assert shape(trace)[2] == ("tool", "card declined", [], ("c1", "pay", True, "error.type"))


def test_gemini_function_responses_with_an_error_key_are_explicit_errors() -> None:
    request = {
        "config": {"system_instruction": "Use tools."},
        "contents": [
            {"role": "user", "parts": [{"text": "Book it."}]},
            {"role": "model", "parts": [{"function_call": {"name": "book", "args": {"id": 7}}}]},
            {
                "role": "user",
                "parts": [{"function_response": {"name": "book", "response": {"error": "full"}}}],
            },
        ],
    }
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "It is full."}]}}]}
    trace = trace_of(gen("g1", 1, request, answer))
    assert shape(trace) == [
        ("system", "Use tools.", [], None),
        ("user", "Book it.", [], None),
        ("assistant", "", [("book", None)], None),
        ("tool", '{"error":"full"}', [], (None, "book", True, "response.error")),
        ("assistant", "It is full.", [], None),
    ]


def test_beeai_react_steps_give_one_tool_run_per_iteration() -> None:
    def step(ident: str, start: float, parent: str, output: Any) -> dict[str, Any]:
        attrs = {
            "thought": "I should search.",
            "tool.name": "Wikipedia",
            "tool.parameters": {"query": "Oslo"},
            "output.value": output,
        }
        return obs(ident, start, parent=parent, attrs=attrs)

    trace = trace_of(
        gen("g1", 1, [USER], None),
        step("u1", 2, "it-1", None),
        step("u2", 3, "it-1", "Oslo is a city."),
        step("u3", 3.01, "it-1", "Oslo is a city."),
    )
    assert shape(trace) == [
        ("user", "Greet Bob.", [], None),
        ("assistant", "", [("Wikipedia", None)], None),
        ("tool", "Oslo is a city.", [], (None, "Wikipedia", None, None)),
    ]


# ---------------------------------------------------------------------------------------------
# Attribute values, tool definitions


def test_json_string_attributes_and_numbers_as_strings_are_read() -> None:
    prompt = [{"role": "user", "parts": [{"type": "text", "content": "Add 2 and 3."}]}]
    call = {"type": "tool_call", "id": "c1", "name": "add", "arguments": '{"a": "2", "b": 3}'}
    attrs = {
        "gen_ai.system_instructions": '[{"type": "text", "content": "Be exact."}]',
        "gen_ai.input.messages": orjson.dumps(prompt).decode(),
        "gen_ai.output.messages": orjson.dumps([{"role": "assistant", "parts": [call]}]).decode(),
        "gen_ai.usage.input_tokens": "12",
        "gen_ai.tool.definitions": '[{"type": "function", '
        '"function": {"name": "add", "parameters": {}}}]',
    }
    trace = trace_of(gen("g1", 1, None, None, attrs=attrs))
    assert shape(trace) == [
        ("system", "Be exact.", [], None),
        ("user", "Add 2 and 3.", [], None),
        ("assistant", "", [("add", "c1")], None),
    ]
    assert trace.messages[2].tool_calls[0].arguments == {"a": "2", "b": 3}
    assert [(t.name, t.parameters) for t in trace.tools] == [("add", {})]


def test_tool_definitions_sent_as_tool_messages_are_tools_not_results() -> None:
    definition = {
        "type": "function",
        "function": {"name": "search", "description": "Search.", "parameters": {"type": "object"}},
    }
    trace = trace_of(gen("g1", 1, [USER, {"role": "tool", "content": definition}], "Hi."))
    assert shape(trace) == [("user", "Greet Bob.", [], None), ("assistant", "Hi.", [], None)]
    assert [(t.name, t.description) for t in trace.tools] == [("search", "Search.")]


def test_responses_items_pair_on_call_id_and_instructions_come_from_the_attributes() -> None:
    items = [
        {"role": "user", "content": "Weather?"},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "w",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
    response = {
        "object": "response",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Sunny."}],
            }
        ],
    }
    attrs = {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "Help.",
    }
    for index, item in enumerate(items, start=1):
        attrs[f"llm.input_messages.{index}.message.role"] = item.get("role", "x")
    trace = trace_of(gen("g1", 1, items, response, attrs=attrs))
    assert shape(trace) == [
        ("user", "Weather?", [], None),
        ("assistant", "", [("w", "call_1")], None),
        ("tool", "sunny", [], ("call_1", None, None, None)),
        ("assistant", "Sunny.", [], None),
    ]


# ---------------------------------------------------------------------------------------------
# Containers, trace fields, rejections


def test_an_array_of_exports_and_jsonl_give_one_trace_per_export() -> None:
    first = export(gen("g1", 1, [USER], "Hi."))
    second = export(gen("g1", 1, [USER], "Hello."), id="t-2")
    items = parse("langfuse", recs(first, second))
    assert [(t.external_id, t.messages[1].content) for t in items if isinstance(t, Trace)] == [
        ("t-1", "Hi."),
        ("t-2", "Hello."),
    ]


def test_a_trace_holding_its_observations_is_read_like_an_export() -> None:
    detail = {**TRACE, "observations": [gen("g1", 1, [USER], "Hi.")]}
    trace = only_trace(parse("langfuse", recs(detail)))
    assert (trace.external_id, len(trace.messages)) == ("t-1", 2)


def test_trace_fields_become_the_trace_and_small_fields_the_metadata() -> None:
    fields = {"tags": ["a", 3], "sessionId": "s-1", "metadata": '{"release": "1.0"}', "input": "x"}
    trace = only_trace(parse("langfuse", recs(export(**fields))))
    assert (trace.agent, trace.model, trace.tags, trace.messages) == ("agent", None, ["a"], [])
    assert (
        trace.started_at is not None and trace.started_at.isoformat() == "2025-01-01T00:00:00+00:00"
    )
    assert trace.metadata == {
        "release": "1.0",
        "projectId": "p",
        "sessionId": "s-1",
        "observation_count": 0,
    }


def test_records_that_are_not_exports_are_rejected_naming_the_problem() -> None:
    items = parse(
        "langfuse",
        recs(
            [1], {"hello": "world"}, {"trace": [], "observations": []}, export("not an observation")
        ),
    )
    assert rejections(items) == [
        (1, "wrong_shape", "expected a Langfuse trace export object, got array"),
        (2, "wrong_shape", 'no "trace" object and no "observations" (expected a Langfuse export)'),
        (3, "wrong_shape", "trace: expected an object, got array"),
        (4, "wrong_shape", "observations[0]: expected an object, got string"),
    ]


def test_split_leaves_every_export_to_a_worker_and_parse_one_finishes_it() -> None:
    records = recs(export(gen("g1", 1, [USER], "Hi.")))
    fmt = formats.langfuse.FORMAT
    assert fmt.split is not None and fmt.parse_one is not None
    deferred = list(fmt.split(iter(records), "t.jsonl"))
    assert [type(d) for d in deferred] == [Deferred]
    assert isinstance(deferred[0], Deferred)
    finished = fmt.parse_one(deferred[0].record, "t.jsonl")
    assert finished == only_trace(parse("langfuse", records))
