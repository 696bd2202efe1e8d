"""Rejections with reasons for broken tau2 results, Gemini records, LangSmith runs and Anthropic
server / MCP blocks, and what the golden cases cannot show (the golden cases show what they read
when whole)."""

from __future__ import annotations

from formats_helpers import parse, recs, rejections

from ingest.model import Trace


def _simulation(sim_id: str, messages: list[object]) -> dict[str, object]:
    return {"id": sim_id, "task_id": "1", "trial": 0, "messages": messages}


def test_a_broken_tau2_simulation_is_rejected_alone_and_the_others_import() -> None:
    good = _simulation("s1", [{"role": "user", "content": "hi"}])
    nameless = _simulation(
        "s2", [{"role": "assistant", "tool_calls": [{"id": "c1", "arguments": {}}]}]
    )
    items = parse("tau2", recs({"info": {}, "tasks": [], "simulations": [good, nameless, 7]}))
    assert [t.external_id for t in items if isinstance(t, Trace)] == ["s1"]
    assert rejections(items) == [
        (
            1,
            "wrong_shape",
            "2 of 3 simulations unreadable: simulations[1].messages[0].tool_calls[0].function: "
            "expected an object, got null; simulations[2]: expected an object, got number",
        )
    ]
    # The document is one record: counted by the rejection, the trace counts none.
    assert [t.record_count for t in items if isinstance(t, Trace)] == [0]


def test_a_tau2_file_without_simulations_is_rejected_with_its_reason() -> None:
    items = parse("tau2", recs({"info": {}, "tasks": []}, {"simulations": []}))
    assert rejections(items) == [
        (1, "wrong_shape", "simulations: expected an array, got null"),
        (2, "wrong_shape", "simulations: empty (a run that finished no task)"),
    ]


def test_simulations_standing_alone_are_a_trace_each_and_a_broken_one_is_rejected_alone() -> None:
    # A bare array of simulations (each item a record), as some published result files hold.
    good = {**_simulation("s1", [{"role": "user", "content": "hi"}]), "termination_reason": "x"}
    broken = {**_simulation("s2", "none"), "termination_reason": "max_steps"}
    items = parse("tau2", recs(good, broken))
    assert [(t.external_id, t.record_count, t.metadata) for t in items if isinstance(t, Trace)] == [
        ("s1", 1, {"task_id": "1", "trial": 0, "termination_reason": "x"})
    ]
    assert rejections(items) == [
        (2, "wrong_shape", "simulation.messages: expected an array, got string")
    ]


def test_broken_gemini_records_are_rejected_with_the_path_and_problem() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"args": {}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "ok"}}]}
    items = parse(
        "gemini",
        recs(
            {"generationConfig": {}},
            {"contents": [call]},
            {"contents": [answer]},
            {"contents": [{"role": "bot", "parts": []}]},
        ),
    )
    assert rejections(items) == [
        (1, "wrong_shape", 'no contents (expected "contents" or "request.contents")'),
        (2, "wrong_shape", "contents[0].parts[0].functionCall.name: missing"),
        (
            3,
            "wrong_shape",
            "contents[0].parts[0].functionResponse.response: expected an object, got string",
        ),
        (4, "wrong_shape", "contents[0].role: unknown role 'bot'"),
    ]


def test_an_mcp_result_with_content_of_the_wrong_type_is_rejected() -> None:
    blocks = [
        {"type": "mcp_tool_use", "id": "m1", "name": "echo", "server_name": "s", "input": {}},
        {"type": "mcp_tool_result", "tool_use_id": "m1", "is_error": False, "content": 5},
    ]
    items = parse("anthropic", recs({"messages": [{"role": "assistant", "content": blocks}]}))
    assert rejections(items) == [
        (
            1,
            "wrong_shape",
            "messages[0].content[1].content: expected a string or an array, got number",
        )
    ]


def test_server_tool_calls_number_with_the_client_calls_of_their_message() -> None:
    blocks = [
        {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}},
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []},
    ]
    items = parse("anthropic", recs({"messages": [{"role": "assistant", "content": blocks}]}))
    (trace,) = items
    assert isinstance(trace, Trace)
    calls = trace.messages[0].tool_calls
    assert [(c.call_index, c.name, c.kind) for c in calls] == [
        (0, "lookup", "client"),
        (1, "web_search", "server"),
    ]
    assert [(m.role, m.content) for m in trace.messages] == [("assistant", ""), ("tool", "[]")]


def _run(run_id: str, run_type: str, **fields: object) -> dict[str, object]:
    return {"id": run_id, "run_type": run_type, "name": run_id, **fields}


def test_langsmith_runs_are_grouped_by_trace_and_a_run_without_trace_id_joins_its_root() -> None:
    ask = {"messages": [{"role": "user", "content": "hi"}]}
    answer = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}
    items = parse(
        "langsmith",
        recs(
            _run("root-a", "chain", trace_id="A", dotted_order="1"),
            _run("root-b", "chain", trace_id="B", dotted_order="1"),
            _run("llm-a", "llm", parent_run_id="root-a", dotted_order="1.1", inputs=ask,
                 outputs=answer),
            _run("llm-b", "llm", trace_id="B", dotted_order="1.1", inputs=ask),
        ),
    )  # fmt: skip
    traces = [t for t in items if isinstance(t, Trace)]
    assert [(t.external_id, t.record_count, [m.content for m in t.messages]) for t in traces] == [
        ("A", 2, ["hi", "hello"]),
        ("B", 2, ["hi"]),
    ]


def test_langsmith_records_that_are_not_runs_or_hold_unreadable_messages_are_rejected() -> None:
    bad_prompt = {"messages": [[{"lc": 1, "type": "constructor", "id": ["x"], "kwargs": 5}]]}
    items = parse(
        "langsmith",
        recs(
            {"name": "no id"},
            _run("root", "chain", trace_id="T"),
            _run("llm", "llm", trace_id="T", inputs=bad_prompt),
        ),
    )
    assert rejections(items) == [
        (1, "wrong_shape", 'run: not a LangSmith run (expected "id" and "run_type")'),
        (3, "wrong_shape", "run llm: inputs.messages[0].kwargs: expected an object, got number"),
    ]
    (trace,) = [t for t in items if isinstance(t, Trace)]
    assert (trace.external_id, trace.record_count, trace.messages) == ("T", 1, [])


def test_a_failed_langsmith_tool_run_without_output_answers_its_unanswered_call() -> None:
    call = {"name": "book", "args": {}, "id": "c1", "type": "tool_call"}
    ai = {"type": "ai", "content": "", "tool_calls": [call]}
    llm = _run(
        "llm", "llm", trace_id="T", dotted_order="1",
        inputs={"messages": [[{"type": "human", "content": "book it"}]]},
        outputs={"generations": [[{"text": "", "message": ai}]]},
    )  # fmt: skip
    tool = _run("book", "tool", trace_id="T", dotted_order="2", error="Timeout", outputs=None)
    (trace,) = parse("langsmith", recs(llm, tool))
    assert isinstance(trace, Trace)
    result = trace.messages[-1]
    assert (result.role, result.content) == ("tool", "Timeout")
    assert result.tool_result is not None
    assert (result.tool_result.tool_call_id, result.tool_result.explicit_error) == ("c1", True)
    assert len(trace.messages) == 3
