"""Format parsers: a rejection names its record, path and problem; no record makes one raise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from formats_helpers import GOLDEN_CASES, accounted, parse, records_of, recs, rejections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import formats
from ingest.input.records import Record
from ingest.model import Trace

# ---------------------------------------------------------------------------------------------
# Rejections: the record that does not fit is rejected alone, naming the path and the problem

USER = {"role": "user", "content": "hi"}

REJECTIONS: list[tuple[str, str, Any, str]] = [
    # (format, case id, record value, expected message)
    ("openai_chat", "missing role", {"traj": [{"content": "x"}]}, "traj[0].role: missing"),
    (
        "openai_chat",
        "no message list",
        {"task_id": 1},
        'no message list (expected "messages", "traj" or "history")',
    ),
    (
        "openai_chat",
        "message list not an array",
        {"history": "x"},
        "history: expected an array, got string",
    ),
    (
        "openai_chat",
        "message not an object",
        {"messages": [USER, 3]},
        "messages[1]: expected an object, got number",
    ),
    ("openai_chat", "scalar record", 42, "expected an object or an array, got number"),
    (
        "openai_chat",
        "tool_calls not an array",
        {"messages": [{"role": "assistant", "tool_calls": {"id": "c"}}]},
        "messages[0].tool_calls: expected an array, got object",
    ),
    (
        "openai_chat",
        "call without function name",
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}]},
        "messages[0].tool_calls[0].function.name: missing",
    ),
    (
        "openai_chat",
        "unknown call type",
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "mcp"}]}]},
        "messages[0].tool_calls[0].type: unknown tool call type 'mcp'",
    ),
    (
        "openai_chat",
        "legacy call not an object",
        {"messages": [{"role": "assistant", "function_call": "f()"}]},
        "messages[0].function_call: expected an object, got string",
    ),
    (
        "openai_chat",
        "tool_call_id not a string",
        {"messages": [{"role": "tool", "tool_call_id": ["c"]}]},
        "messages[0].tool_call_id: expected a string, got array",
    ),
    (
        "openai_chat",
        "tool without a name",
        {"messages": [], "tools": [{"type": "function", "function": {}}]},
        "tools[0].function.name: missing",
    ),
    (
        "openai_chat",
        "tools not an array",
        {"messages": [], "tools": {"name": "f"}},
        "tools: expected an array, got object",
    ),
    (
        "toolbench",
        "not a ToolBench file",
        {"messages": []},
        'no "answer_generation" object (expected a ToolBench answer file)',
    ),
    ("toolbench", "not an object", [1], "expected a ToolBench answer object, got array"),
    (
        "toolbench",
        "nothing to build a trace from",
        {"answer_generation": {"train_messages": []}},
        'answer_generation: neither "train_messages" nor a "query" string to build a trace from',
    ),
    ("anthropic", "no message list", {"model": "claude"}, 'no message list (expected "messages")'),
    (
        "anthropic",
        "block not an object",
        {"messages": [{"role": "user", "content": ["a", 1]}]},
        "messages[0].content[1]: expected an object, got number",
    ),
    (
        "anthropic",
        "content not text or blocks",
        {"messages": [{"role": "user", "content": 5}]},
        "messages[0].content: expected a string or an array, got number",
    ),
    (
        "anthropic",
        "tool_use without name",
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}]},
        "messages[0].content[0].name: missing",
    ),
    (
        "anthropic",
        "tool_result content not text or blocks",
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": {}}]}]},
        "messages[0].content[0].content: expected a string or an array, got object",
    ),
    (
        "anthropic",
        "system not text",
        {"messages": [], "system": 1},
        "system: expected a string or an array, got number",
    ),
    (
        "langchain",
        "dumpd without class name",
        {"messages": [{"lc": 1, "type": "constructor", "id": [], "kwargs": {}}]},
        "messages[0].id: no message class name",
    ),
    (
        "langchain",
        "chat message with unknown role",
        {"messages": [{"type": "chat", "data": {"content": "x", "role": "critic"}}]},
        "messages[0].data.role: unknown role 'critic'",
    ),
    (
        "langchain",
        "tool call without name",
        {"messages": [{"type": "ai", "content": "", "tool_calls": [{"args": {}, "id": "c"}]}]},
        "messages[0].tool_calls[0].name: missing",
    ),
    (
        "langchain",
        "no message list",
        {"values": {"plan": []}},
        'no message list (expected "messages")',
    ),
    (
        "openai_responses",
        "item without type or role",
        {"input": [{"content": "x"}]},
        'input[0]: item has neither "type" nor "role"',
    ),
    (
        "openai_responses",
        "tool role",
        {"input": [{"role": "tool", "content": "x"}]},
        "input[0].role: 'tool' is not a Responses message role (results are function_call_output"
        " items)",
    ),
    (
        "openai_responses",
        "unknown role",
        {"output": [{"type": "message", "role": "critic"}]},
        "output[0].role: unknown role 'critic'",
    ),
    (
        "openai_responses",
        "function_call without name",
        {"output": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]},
        "output[0].name: missing",
    ),
    (
        "openai_responses",
        "no item list",
        {"id": "resp_1"},
        'no item list (expected "input" or "output")',
    ),
    (
        "openai_responses",
        "input not text or items",
        {"input": 3},
        "input: expected a string or an array, got number",
    ),
]


GOOD_RECORDS: dict[str, Any] = {
    "openai_chat": {"messages": [USER]},
    "toolbench": {"answer_generation": {"query": "q"}},
    "anthropic": {"messages": [USER]},
    "langchain": {"messages": [{"type": "human", "content": "hi"}]},
    "openai_responses": {"input": "hi"},
}


@pytest.mark.parametrize(
    ("fmt", "value", "message"),
    [(fmt, value, message) for fmt, _, value, message in REJECTIONS],
    ids=[f"{fmt}: {case}" for fmt, case, _, _ in REJECTIONS],
)
def test_a_record_of_the_wrong_shape_is_rejected_with_its_path(
    fmt: str, value: Any, message: str
) -> None:
    good = GOOD_RECORDS[fmt]
    items = parse(fmt, recs(good, value, good))
    assert rejections(items) == [(2, "wrong_shape", message)]
    assert [t.source_line for t in items if isinstance(t, Trace)] == [1, 3]


def test_a_bad_item_of_a_message_array_is_rejected_and_the_rest_stay_one_trace() -> None:
    items = parse("openai_chat", recs(USER, {"role": "assistant", "tool_calls": 5}, USER))
    assert rejections(items) == [
        (2, "wrong_shape", "[1].tool_calls: expected an array, got number")
    ]
    trace = items[-1]
    assert isinstance(trace, Trace)
    assert (trace.record_count, [m.seq for m in trace.messages]) == (2, [0, 1])
    assert [m.source_line for m in trace.messages] == [1, 3]


def test_claude_code_rejects_only_lines_without_a_usable_message() -> None:
    items = parse(
        "claude_code",
        recs(
            {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "hi"}},
            {"type": "assistant", "message": "oops"},
            [1, 2],
            {"type": "summary", "summary": "Title"},
            {"type": "progress", "uuid": "u1", "data": {}},
            {"type": "user", "message": {"role": "critic", "content": "x"}},
        ),
    )
    assert rejections(items) == [
        (2, "wrong_shape", "message: expected an object, got string"),
        (3, "wrong_shape", "expected a JSON object, got array"),
        (6, "wrong_shape", "message.role: unknown role 'critic'"),
    ]
    trace = items[-1]
    assert isinstance(trace, Trace)
    assert (trace.record_count, len(trace.messages), trace.external_id) == (3, 1, "s1")
    assert trace.metadata == {"summaries": ["Title"], "other_line_types": {"progress": 1}}


def test_claude_code_rejects_lines_of_other_formats_instead_of_counting_them() -> None:
    conversation = {"id": "c1", "messages": [{"role": "user", "content": "hi"}]}
    items = parse(
        "claude_code",
        recs(conversation, {"type": "queue-operation", "sessionId": "s1"}, conversation),
    )
    message = (
        'not a Claude Code line (no known "type" and none of sessionId, uuid, parentUuid, '
        "leafUuid, messageId); if the file is another format, let it be sniffed or pass "
        "--format NAME"
    )
    assert rejections(items) == [(1, "not_this_format", message), (3, "not_this_format", message)]
    trace = items[-1]
    assert isinstance(trace, Trace)
    assert (trace.record_count, trace.metadata) == (1, {"other_line_types": {"queue-operation": 1}})


def test_a_rejected_claude_code_line_does_not_shift_call_numbering() -> None:
    def tool_use(call_id: str, name: Any) -> dict[str, Any]:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        return {
            "type": "assistant",
            "message": {"id": "m", "role": "assistant", "content": [block]},
        }

    items = parse("claude_code", recs(tool_use("t1", None), tool_use("t2", "Read")))
    assert rejections(items) == [(1, "wrong_shape", "message.content[0].name: missing")]
    assert items[-1].messages[0].tool_calls[0].call_index == 0  # type: ignore[union-attr]


def test_an_empty_input_gives_no_trace_in_any_format() -> None:
    for module in formats.FORMATS:
        assert list(module.parse(iter([]), "empty.jsonl")) == []


# ---------------------------------------------------------------------------------------------
# Never raise: any record, of any shape, ends up in exactly one trace or one rejection

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    for key, child in children:
        yield from _paths(child, (*prefix, key))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = orjson.loads(orjson.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_golden_record_with_any_part_replaced_never_makes_the_parser_raise(
    case: Path, data: st.DataObject
) -> None:
    source = next(case.glob("input.json*"))
    records = [r for r in records_of(source) if isinstance(r, Record)]
    index = data.draw(st.integers(0, len(records) - 1), label="record")
    record = records[index]
    path = data.draw(st.sampled_from(list(_paths(record.value))), label="path")
    value = _replaced(record.value, path, data.draw(_JSON, label="new value"))
    records[index] = Record(record.source_file, record.line, record.byte_offset, record.raw, value)
    items = list(formats.get_format(case.parent.name).parse(iter(records), source.name))
    assert accounted(items) == len(records)


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_parser_accounts_for_every_record_of_any_format(case: Path) -> None:
    # `--format NAME` can hand any file to any parser: wrong input is rejected, never raised on.
    source = next(case.glob("input.json*"))
    records = list(records_of(source))
    for module in formats.FORMATS:
        assert accounted(list(module.parse(iter(records), source.name))) == len(records)
