"""Request logs rebuilt into conversations (``request_log``, ``_request_history``).

The golden cases (``tests/golden/request_log``) show whole logs of each shape; these tests pin
the grouping rules one by one, the rejections, the sniffing, and the import into both
databases: a log of N requests repeating a growing history is ONE trace, each call once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from formats_helpers import GOLDEN, only_trace, parse, recs, rejections

from db.engine import make_engine
from db.queries.summary import summarize
from ingest import formats
from ingest.formats._request_history import Request, conversations
from ingest.importing.pipeline import import_paths
from ingest.model import Message, ToolCall, ToolResult, Trace

SYSTEM = {"role": "system", "content": "You look orders up."}
USER = {"role": "user", "content": "Where are orders 1 to 3?"}


def _call(n: int) -> dict[str, Any]:
    function = {"name": "get_order", "arguments": json.dumps({"order_id": str(n)})}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{n}", "type": "function", "function": function}],
    }


def _result(n: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"call_{n}", "content": f"order {n}: shipped"}


def _answer(message: dict[str, Any], n: int) -> dict[str, Any]:
    usage = {"prompt_tokens": 10 * n, "completion_tokens": 5, "total_tokens": 10 * n + 5}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "choices": [choice], "usage": usage}


def growing_log(calls: int) -> list[dict[str, Any]]:
    """``calls + 1`` logged requests of one conversation: each repeats the history so far and
    its response makes the next call (the last one answers in text)."""
    history: list[dict[str, Any]] = [SYSTEM, USER]
    lines = []
    for n in range(1, calls + 2):
        answer = _call(n) if n <= calls else {"role": "assistant", "content": "All shipped."}
        lines.append(
            {
                "request": {"model": "gpt-4o", "messages": list(history)},
                "response": _answer(answer, n),
            }
        )
        history += [answer, _result(n)] if n <= calls else [answer]
    return lines


# ---------------------------------------------------------------------------------------------
# Grouping (pure)


def _msg(role: str, text: str, call: str | None = None, answers: str | None = None) -> Message:
    calls = [ToolCall(call_index=0, tool_call_id=call, name="f", arguments={})] if call else []
    result = ToolResult(tool_call_id=answers) if answers else None
    return Message(seq=0, role=role, content=text, tool_calls=calls, tool_result=result)  # type: ignore[arg-type]


def _request(index: int, *prompt: Message, answer: Message | None = None, **fields: Any) -> Request:
    return Request(index, list(prompt), [answer] if answer else [], label=f"r{index}", **fields)


def test_requests_repeating_a_growing_history_are_one_conversation_with_each_message_once() -> None:
    u, a, t = _msg("user", "go"), _msg("assistant", "", call="c1"), _msg("tool", "ok", answers="c1")
    final = _msg("assistant", "done")
    # The resent copies are other objects with the same content: the first copy is kept.
    again_a, again_u = _msg("assistant", "", call="c1"), _msg("user", " go ")
    [conversation] = conversations(
        [
            _request(0, u, answer=a),
            _request(1, again_u, again_a, t, answer=final),
        ]
    )
    assert conversation.messages == [u, a, t, final]
    assert conversation.messages[1] is a
    assert (conversation.branches, [m.branch for m in conversation.messages]) == (0, [None] * 4)


def test_two_answers_to_one_history_are_kept_as_a_branch_named_after_the_request() -> None:
    u, a = _msg("user", "go"), _msg("assistant", "", call="c1")
    t = _msg("tool", "ok", answers="c1")
    first, other = _msg("assistant", "done"), _msg("assistant", "failed?")
    [conversation] = conversations(
        [
            _request(0, u, answer=a),
            _request(1, u, a, t, answer=first),
            _request(2, u, a, t, answer=other),
        ]
    )
    assert [(m.content, m.branch) for m in conversation.messages] == [
        ("go", None),
        ("", None),
        ("ok", None),
        ("done", None),
        ("failed?", "r2"),
    ]
    assert conversation.branches == 1


def test_the_same_prompt_sent_again_without_an_id_starts_its_own_conversation() -> None:
    # Another run of the same task (or a retry) cannot be told from a branch without an id.
    system, u = _msg("system", "s"), _msg("user", "task")
    groups = conversations(
        [
            _request(0, system, u, answer=_msg("assistant", "a")),
            _request(1, system, u, answer=_msg("assistant", "b")),
        ]
    )
    assert [[m.content for m in g.messages] for g in groups] == [
        ["s", "task", "a"],
        ["s", "task", "b"],
    ]


def test_a_shared_explicit_id_groups_and_an_id_on_one_request_only_does_not_separate() -> None:
    u, a = _msg("user", "go"), _msg("assistant", "hi")
    groups = conversations(
        [
            _request(0, u, answer=a, conversation_id="trace-1"),
            _request(1, u, a, _msg("user", "more"), conversation_id="trace-2"),  # unique: ignored
            _request(2, _msg("user", "other"), conversation_id="s"),
            _request(3, _msg("user", "unrelated"), conversation_id="s"),
        ]
    )
    assert [(g.conversation_id, len(g.requests), g.branches) for g in groups] == [
        (None, 2, 0),
        ("s", 2, 1),
    ]


def test_a_previous_response_id_chain_rebuilds_the_history_each_request_left_out() -> None:
    system, u = _msg("system", "be brief"), _msg("user", "go")
    call, result = _msg("assistant", "", call="c1"), _msg("tool", "ok", answers="c1")
    groups = conversations(
        [
            _request(0, system, u, answer=call, response_id="resp_1"),
            # The instructions are sent again (left out), then only the new item.
            _request(
                1,
                _msg("system", "be brief"),
                result,
                answer=_msg("assistant", "done"),
                response_id="resp_2",
                previous_response_id="resp_1",
            ),
            # Continuing a response the log does not hold: grouped by that response's id.
            _request(2, _msg("user", "x"), previous_response_id="resp_0", response_id="resp_9"),
            _request(3, _msg("user", "y"), previous_response_id="resp_9"),
        ]
    )
    assert [[m.content for m in g.messages] for g in groups] == [
        ["be brief", "go", "", "ok", "done"],
        ["x", "y"],
    ]
    assert [g.conversation_id for g in groups] == [None, "resp_0"]


# ---------------------------------------------------------------------------------------------
# The format


def test_a_log_of_growing_requests_is_one_trace_with_each_call_once() -> None:
    trace = only_trace(parse("request_log", recs(*growing_log(3))))
    calls = [c.tool_call_id for m in trace.messages for c in m.tool_calls]
    results = [m.tool_result.tool_call_id for m in trace.messages if m.tool_result]
    assert (trace.record_count, len(trace.messages)) == (4, 9)
    assert calls == results == ["call_1", "call_2", "call_3"]
    # Each response's usage once, on the answer it paid for.
    assert [m.usage["total_tokens"] for m in trace.messages if m.usage] == [15, 25, 35, 45]
    assert trace.metadata == {"requests": 4}


def test_responses_of_another_conversation_in_the_log_make_their_own_trace() -> None:
    other = {"request": {"messages": [{"role": "user", "content": "hello"}]}, "response": None}
    items = parse("request_log", recs(*growing_log(1), other, *growing_log(1)[1:]))
    traces = [t for t in items if isinstance(t, Trace)]
    assert [(t.source_line, t.record_count, len(t.messages)) for t in traces] == [
        (1, 3, 5),
        (3, 1, 1),
    ]


def test_the_request_body_and_response_body_of_a_gateway_log_are_read() -> None:
    # Portkey-style {"request": {"body": …}, "response": {"body": …}}, a body given as JSON text.
    request = {
        "url": "https://api.openai.com/v1/chat/completions",
        "method": "POST",
        "body": json.dumps({"model": "gpt-4o", "messages": [USER]}),
    }
    response = {"status": 200, "body": _answer({"role": "assistant", "content": "soon"}, 1)}
    trace = only_trace(parse("request_log", recs({"request": request, "response": response})))
    assert [(m.role, m.content) for m in trace.messages] == [
        ("user", "Where are orders 1 to 3?"),
        ("assistant", "soon"),
    ]


def test_a_litellm_failure_keeps_its_prompt_and_counts_as_failed() -> None:
    payload = {
        "id": "x",
        "call_type": "acompletion",
        "status": "failure",
        "trace_id": None,
        "messages": [USER],
        "response": None,
        "error_str": "RateLimitError",
        "model": "gpt-4o",
        "model_parameters": {},
    }
    trace = only_trace(parse("request_log", recs(payload)))
    assert (trace.model, trace.metadata) == ("gpt-4o", {"requests": 1, "failed_requests": 1})
    assert [m.content for m in trace.messages] == ["Where are orders 1 to 3?"]


def test_a_text_response_is_the_answer() -> None:
    payload = {"call_type": "text_completion", "messages": "Say hi", "response": "hi"}
    trace = only_trace(parse("request_log", recs(payload)))
    assert [(m.role, m.content) for m in trace.messages] == [
        ("user", "Say hi"),
        ("assistant", "hi"),
    ]


def test_a_responses_log_of_response_objects_chains_with_format_request_log() -> None:
    # The openai_responses golden log, read as a request log: its two responses are one
    # conversation (the second continues the first), so the result meets its call.
    path = GOLDEN / "openai_responses" / "responses" / "input.jsonl"
    values = [json.loads(line) for line in path.read_text().splitlines()]
    trace = only_trace(parse("request_log", recs(*values)))
    assert [(m.role, [c.tool_call_id for c in m.tool_calls]) for m in trace.messages] == [
        ("system", []),
        ("user", []),
        ("assistant", ["call_11"]),
        ("tool", []),
        ("assistant", []),
    ]
    assert trace.messages[3].tool_result is not None
    assert trace.messages[3].tool_result.tool_call_id == "call_11"


GOOD = {"request": {"messages": [USER]}, "response": None}

REJECTIONS: list[tuple[str, Any, str]] = [
    ("not an object", [1, 2], "expected an object (a logged request), got array"),
    ("null request", {"request": None}, "request: missing (null)"),
    ("request text", {"request": "oops"}, "request: a string that is not JSON"),
    (
        "no prompt",
        {"request": {"model": "m"}},
        'no prompt (expected "messages" or "input", in the record or its "request")',
    ),
    (
        # An unknown role degrades to an opaque message; a message without one is no message.
        "missing role",
        {"request": {"messages": [{"content": "hi"}]}},
        "messages[0].role: missing",
    ),
    (
        "choices not a list",
        {"request": {"messages": [USER]}, "response": {"choices": {}}},
        "response.choices: expected an array, got object",
    ),
    (
        "choice without message",
        {"request": {"messages": [USER]}, "response": {"choices": [{}]}},
        "response.choices[0].message: expected an object, got null",
    ),
    (
        "bad system",
        {"request": {"system": 5, "messages": []}},
        "system: expected a string or an array, got number",
    ),
    ("bad input", {"request": {"input": 3}}, "input: expected a string or an array, got number"),
]


@pytest.mark.parametrize(
    ("value", "message"),
    [(v, m) for _, v, m in REJECTIONS],
    ids=[case for case, _, _ in REJECTIONS],
)
def test_a_record_that_is_no_request_is_rejected_with_its_reason(value: Any, message: str) -> None:
    items = parse("request_log", recs(GOOD, value, GOOD))
    assert rejections(items) == [(2, "wrong_shape", message)]
    # The same prompt twice, no id: two conversations (see the grouping rules).
    assert [t.source_line for t in items if isinstance(t, Trace)] == [1, 3]


# ---------------------------------------------------------------------------------------------
# Sniffing


@pytest.mark.parametrize(
    "head",
    [
        b'{"request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}}',
        b'{"id": "chatcmpl-1", "trace_id": null, "call_type": "acompletion", "messages": []}',
        b'{"request": {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}}',
        b'{"request": {"input": [{"type": "function_call_output", "call_id": "c"}]}}',
        b'{"model": "gpt-4o", "max_completion_tokens": 500, "messages": [{"role": "tool"}]}',
        b'{"model": "claude", "max_tokens": 1024, "messages": [{"content": [{"type": "tool_use"'
        b"}]}]}",
    ],
    ids=[
        "chat pair",
        "litellm",
        "anthropic pair",
        "responses pair",
        "chat body",
        "anthropic body",
    ],
)
def test_request_logs_are_sniffed_as_request_log(head: bytes) -> None:
    assert [f.name for f in formats.fitting(head)][:1] == ["request_log"]


@pytest.mark.parametrize(
    ("head", "name"),
    [
        (
            b'{"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "c"}]}',
            "openai_chat",
        ),
        (
            b'{"id": "resp_1", "object": "response", "previous_response_id": "resp_0"}',
            "openai_responses",
        ),
    ],
    ids=["bare chat body", "response object"],
)
def test_bare_request_bodies_and_response_objects_stay_with_their_api_format(
    head: bytes, name: str
) -> None:
    # They are the conversation formats' files too; --format request_log reads them as a log.
    assert getattr(formats.sniff_format(head), "name", None) == name


# ---------------------------------------------------------------------------------------------
# Import, both databases


def test_a_growing_request_log_imports_as_one_trace_with_each_call_once(
    db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in growing_log(5)))
    engine = make_engine(db_url)
    try:
        summary = import_paths(engine, [path], workers=0)
        assert (summary.traces, summary.records_imported, summary.rejected) == (1, 6, 0)
        data = summarize(engine)
        again = import_paths(engine, [path], workers=0, incremental=False)
        assert (again.traces, again.unchanged) == (0, 1)
    finally:
        engine.dispose()
    counts = {k: data[k] for k in ("traces", "messages", "tool_calls", "tool_results")}
    # system, user, then per call its assistant message and its result, then the final answer
    assert counts == {"traces": 1, "messages": 13, "tool_calls": 5, "tool_results": 5}


@pytest.mark.parametrize(
    "user_id",
    [
        "user_5dd07c33_account__session_d2e70091-3007-41a3-a916-cb8b0d3098de",
        '{"device_id": "5dd07c33", "account_uuid": "", '
        '"session_id": "d2e70091-3007-41a3-a916-cb8b0d3098de"}',
    ],
    ids=["legacy", "json"],
)
def test_claude_code_requests_are_grouped_by_the_session_in_their_user_id(user_id: str) -> None:
    def request(text: str) -> dict[str, Any]:
        messages = [{"role": "user", "content": text}]
        return {"request": {"system": "s", "messages": messages, "metadata": {"user_id": user_id}}}

    # A sub-agent's request starts differently: in the session, it is a branch.
    trace = only_trace(parse("request_log", recs(request("main"), request("sub-agent task"))))
    assert trace.external_id == "d2e70091-3007-41a3-a916-cb8b0d3098de"
    assert [(m.content, m.branch) for m in trace.messages] == [
        ("s", None),
        ("main", None),
        ("sub-agent task", "line 2"),
    ]


def test_runs_sharing_their_first_messages_are_traces_owning_their_own_copies() -> None:
    # The second run's system and user messages are interned to the first run's copies while
    # reading; each trace still gets its own, stamped with its own request's time.
    def run(at: str, answer: str) -> dict[str, Any]:
        reply = {"role": "assistant", "content": answer}
        return {
            "timestamp": at,
            "request": {"messages": [SYSTEM, USER]},
            "response": _answer(reply, 1),
        }

    first, second = [
        t
        for t in parse(
            "request_log", recs(run("2026-01-01T10:00:00Z", "a"), run("2026-01-01T11:00:00Z", "b"))
        )
        if isinstance(t, Trace)
    ]
    assert first.messages[0] is not second.messages[0]
    assert [m.seq for m in first.messages] == [m.seq for m in second.messages] == [0, 1, 2]
    assert [
        (m.timestamp.hour if m.timestamp else None) for m in first.messages + second.messages
    ] == [10, 10, 10, 11, 11, 11]


def test_requests_appended_to_a_log_update_its_conversation(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    log = growing_log(3)
    path.write_text("".join(json.dumps(line) + "\n" for line in log[:2]))
    engine = make_engine(db_url)
    try:
        first = import_paths(engine, [path], workers=0)
        with path.open("a") as out:
            out.writelines(json.dumps(line) + "\n" for line in log[2:])
        grown = import_paths(engine, [path], workers=0)
        data = summarize(engine)
    finally:
        engine.dispose()
    assert (first.traces, grown.traces, grown.updated) == (1, 0, 1)
    counts = {k: data[k] for k in ("traces", "messages", "tool_calls", "tool_results")}
    assert counts == {"traces": 1, "messages": 9, "tool_calls": 3, "tool_results": 3}


def test_bare_request_bodies_without_responses_are_one_conversation() -> None:
    # Three logged request bodies (no response logged): the calls come from the later prompts.
    bodies = [
        {"model": "gpt-4o", "max_tokens": 256, "messages": line["request"]["messages"]}
        for line in growing_log(2)
    ]
    head = json.dumps(bodies[0]).encode()
    assert getattr(formats.sniff_format(head), "name", None) == "request_log"
    trace = only_trace(parse("request_log", recs(*bodies)))
    calls = [c.tool_call_id for m in trace.messages for c in m.tool_calls]
    assert (trace.record_count, len(trace.messages), calls) == (3, 6, ["call_1", "call_2"])
