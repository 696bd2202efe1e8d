"""Format parsers: golden files, every rejection, the registry and sniffing, real data.

Golden files live in ``tests/golden/<format>/<case>/``: a hand-written ``input.json(l)`` and the
canonical output ``expected.json`` (traces without ``Message.raw``). Regenerate them with
``UPDATE_GOLDEN=1 pytest tests/test_formats.py`` and review the diff by eye.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import formats
from ingest.model import Rejected, Trace
from ingest.records import Record

GOLDEN = Path(__file__).parent / "golden"
FORMATS_DIR = Path(formats.__file__).parent
GOLDEN_CASES = sorted(path.parent for path in GOLDEN.glob("*/*/input.json*"))

# ---------------------------------------------------------------------------------------------
# Records, built here until tests can rely on ingest.jsonstream: a JSONL line, a top-level
# array item or the whole document, each with the 1-based line where it starts.

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]', re.DOTALL)


def _array_item_spans(data: bytes) -> list[tuple[int, int]]:
    """Byte spans of the object/array/string items of a top-level JSON array."""
    spans: list[tuple[int, int]] = []
    depth, start, end = 0, -1, -1
    for match in _TOKENS.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            if depth == 1 and start < 0:
                start = match.start()
            depth += 1
        elif token in (b"]", b"}"):
            depth -= 1
            end = match.end() if depth == 1 else end
            if depth == 0 and start >= 0:
                spans.append((start, end))
        elif token == b",":
            if depth == 1 and start >= 0:
                spans.append((start, end))
                start = -1
        elif depth == 1:
            start, end = (match.start() if start < 0 else start), match.end()
    return spans


def records_of(path: Path, name: str | None = None) -> Iterator[Record | Rejected]:
    """The records of a trace file, as ``ingest.jsonstream`` cuts them."""
    data, name = path.read_bytes(), name or path.name
    body = data.lstrip()
    if path.suffix == ".jsonl":
        offset = 0
        for number, line in enumerate(data.splitlines(keepends=True), start=1):
            raw = line.strip()
            if raw:
                yield _record(name, number, offset, raw)
            offset += len(line)
    elif body.startswith(b"["):
        for start, end in _array_item_spans(data):
            yield _record(name, data.count(b"\n", 0, start) + 1, start, data[start:end])
    else:
        start = len(data) - len(body)
        yield _record(name, data.count(b"\n", 0, start) + 1, start, body.rstrip())


def _record(name: str, line: int, offset: int, raw: bytes) -> Record | Rejected:
    try:
        return Record(name, line, offset, raw, orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        return Rejected(
            source_file=name,
            line=line,
            byte_offset=offset,
            reason="malformed_json",
            message=str(exc),
            raw=raw,
        )


def recs(*values: Any, name: str = "t.jsonl") -> list[Record | Rejected]:
    """In-memory records, one per value, on lines 1, 2, …"""
    return [Record(name, i, 0, orjson.dumps(v), v) for i, v in enumerate(values, start=1)]


def parse(fmt: str, records: list[Record | Rejected]) -> list[Trace | Rejected]:
    return list(formats.get_format(fmt).parse(iter(records), "t.jsonl"))


def only_trace(items: list[Trace | Rejected]) -> Trace:
    assert len(items) == 1 and isinstance(items[0], Trace), items
    return items[0]


def rejections(items: list[Trace | Rejected]) -> list[tuple[int, str, str]]:
    return [(r.line, r.reason, r.message) for r in items if isinstance(r, Rejected)]


def golden_dump(traces: list[Trace]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", exclude={"messages": {"__all__": {"raw"}}}) for t in traces]


def accounted(items: list[Trace | Rejected]) -> int:
    """Records accounted for: consumed by traces plus rejected."""
    return sum(i.record_count if isinstance(i, Trace) else 1 for i in items)


# ---------------------------------------------------------------------------------------------
# Golden files


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_fixture_parses_to_its_expected_canonical_output(case: Path) -> None:
    source = next(case.glob("input.json*"))
    module = formats.get_format(case.parent.name)
    items = list(module.parse(records_of(source), source.name))
    assert rejections(items) == []
    actual = golden_dump([t for t in items if isinstance(t, Trace)])
    expected_path = case / "expected.json"
    if os.environ.get("UPDATE_GOLDEN"):
        expected_path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2) + b"\n")
    assert actual == orjson.loads(expected_path.read_bytes())


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_fixture_is_sniffed_as_its_format(case: Path) -> None:
    head = next(case.glob("input.json*")).read_bytes()[:65536]
    module = formats.sniff_format(head)
    assert getattr(module, "NAME", None) == case.parent.name
    assert [m.NAME for m in formats.FORMATS if m.sniff(head)] == [case.parent.name]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_golden_record_ends_up_in_exactly_one_trace(case: Path) -> None:
    source = next(case.glob("input.json*"))
    records = list(records_of(source))
    items = list(formats.get_format(case.parent.name).parse(iter(records), source.name))
    assert accounted(items) == len(records)


def test_golden_cases_cover_every_format() -> None:
    assert sorted({case.parent.name for case in GOLDEN_CASES}) == sorted(formats.format_names())


# ---------------------------------------------------------------------------------------------
# Behaviour the golden files cannot show (they leave out Message.raw)


def test_incoming_rejections_pass_through_unchanged_in_every_format() -> None:
    broken = Rejected(
        source_file="t.jsonl", line=3, byte_offset=9, reason="malformed_json", message="x"
    )
    for module in formats.FORMATS:
        assert list(module.parse(iter([broken]), "t.jsonl")) == [broken]


def test_claude_code_messages_keep_the_whole_line_as_raw() -> None:
    source = GOLDEN / "claude_code" / "session" / "input.jsonl"
    trace = only_trace(list(formats.claude_code.parse(records_of(source), source.name)))
    error_result = trace.messages[5]
    assert error_result.raw["toolUseResult"] == "Error: File does not exist."
    assert error_result.raw["uuid"] == "u-3"
    assert trace.messages[7].raw["isSidechain"] is True


def test_claude_code_sidechain_messages_carry_the_branch_of_their_first_line() -> None:
    def line(uuid: str, parent: str | None, side: bool, text: str) -> dict[str, Any]:
        return {
            "type": "user",
            "uuid": uuid,
            "parentUuid": parent,
            "isSidechain": side,
            "sessionId": "s",
            "message": {"role": "user", "content": text},
        }

    items = parse(
        "claude_code",
        recs(
            line("m1", None, False, "main"),
            line("a1", None, True, "agent A starts"),
            line("b1", None, True, "agent B starts"),
            line("a2", "a1", True, "agent A goes on"),
            line("b2", "b1", True, "agent B goes on"),
            {**line("c1", None, True, "newer agent"), "agentId": "agent-7"},
            line("m2", "m1", False, "main again"),
        ),
    )
    branches = [m.branch for m in only_trace(items).messages]
    assert branches == [None, "a1", "b1", "a1", "b1", "agent-7", None]


def test_claude_code_numbers_calls_and_keeps_usage_once_per_api_message() -> None:
    def tool_use_line(msg_id: str, call_id: str, output_tokens: int) -> dict[str, Any]:
        block = {"type": "tool_use", "id": call_id, "name": "Read", "input": {}}
        usage = {"input_tokens": 4, "output_tokens": output_tokens}
        message = {"id": msg_id, "role": "assistant", "content": [block], "usage": usage}
        return {"type": "assistant", "sessionId": "s", "message": message}

    lines = [tool_use_line("msg_1", "t1", 1), tool_use_line("msg_1", "t2", 57)]
    items = parse("claude_code", recs(*lines, tool_use_line("msg_2", "t3", 9)))
    messages = only_trace(items).messages
    # The usage sits on the first line's message, with the final count of the last line.
    assert [(m.tool_calls[0].call_index, m.usage) for m in messages] == [
        (0, {"input_tokens": 4, "output_tokens": 57}),
        (1, None),
        (0, {"input_tokens": 4, "output_tokens": 9}),
    ]


def test_claude_code_skips_the_synthetic_model_when_naming_the_trace_model() -> None:
    def assistant(model: str) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {"role": "assistant", "model": model, "content": []},
        }

    items = parse("claude_code", recs(assistant("<synthetic>"), assistant("claude-opus-4")))
    assert only_trace(items).model == "claude-opus-4"


def test_anthropic_split_messages_keep_only_their_own_blocks_as_raw() -> None:
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    text = {"type": "text", "text": "thanks"}
    message = {"role": "user", "content": [result, text]}
    trace = only_trace(parse("anthropic", recs({"messages": [message]})))
    assert [m.raw for m in trace.messages] == [
        {"role": "user", "content": [result]},
        {"role": "user", "content": [text]},
    ]


def test_responses_assistant_turn_raw_is_the_list_of_its_items() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "f",
        "arguments": "{}",
    }
    output = {"type": "function_call_output", "call_id": "call_1", "output": "done"}
    trace = only_trace(parse("openai_responses", recs(reasoning, call, output)))
    assert [m.raw for m in trace.messages] == [[reasoning, call], output]
    assert trace.messages[0].tool_calls[0].tool_call_id == "call_1"


def test_responses_never_pair_on_the_item_id() -> None:
    call = {"type": "function_call", "id": "fc_1", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "id": "fco_1", "output": "done"}
    trace = only_trace(parse("openai_responses", recs(call, output)))
    assert trace.messages[0].tool_calls[0].tool_call_id is None
    assert trace.messages[1].tool_result is not None
    assert trace.messages[1].tool_result.tool_call_id is None


def test_openai_arguments_given_as_an_object_keep_a_compact_dump_as_raw() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": [1, 2]}}}
    trace = only_trace(
        parse("openai_chat", recs({"messages": [{"role": "assistant", "tool_calls": [call]}]}))
    )
    assert trace.messages[0].tool_calls[0].arguments_raw == '{"a":[1,2]}'


def test_metadata_leaves_out_large_container_fields_and_names_them() -> None:
    big = "x" * 9000
    trace = only_trace(parse("openai_chat", recs({"messages": [], "blob": big, "small": 1})))
    assert trace.metadata == {"small": 1, "omitted_fields": ["blob"]}


def test_unix_millisecond_and_iso_timestamps_are_read_as_utc() -> None:
    msgs = [
        {"role": "user", "content": "a", "timestamp": 1718000000123},
        {"role": "user", "content": "b", "timestamp": "2024-06-10T06:13:20+02:00"},
        {"role": "user", "content": "c", "timestamp": "yesterday"},
    ]
    trace = only_trace(parse("openai_chat", recs({"messages": msgs})))
    stamps = [m.timestamp.isoformat() if m.timestamp else None for m in trace.messages]
    assert stamps == ["2024-06-10T06:13:20.123000+00:00", "2024-06-10T06:13:20+02:00", None]
    assert trace.started_at == trace.messages[0].timestamp


# ---------------------------------------------------------------------------------------------
# Rejections: the record that does not fit is rejected alone, naming the path and the problem

USER = {"role": "user", "content": "hi"}

REJECTIONS: list[tuple[str, str, Any, str]] = [
    # (format, case id, record value, expected message)
    (
        "openai_chat",
        "unknown role",
        {"messages": [USER, USER, {"role": "bot"}]},
        "messages[2].role: unknown role 'bot'",
    ),
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
    (
        "toolbench",
        "bad role in the last train list",
        {"answer_generation": {"train_messages": [[USER], [USER, {"role": "observer"}]]}},
        "answer_generation.train_messages[1][1].role: unknown role 'observer'",
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
        "unknown message type",
        {"messages": [{"type": "human", "data": {}}, {"type": "bot"}]},
        "messages[1].type: unknown message type 'bot'",
    ),
    (
        "langchain",
        "unknown dumpd class",
        {"messages": [{"lc": 1, "type": "constructor", "id": ["x", "Blob"], "kwargs": {}}]},
        "messages[0].id: unknown message type 'Blob'",
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
        "unknown item type",
        {"output": [{"type": "banana"}]},
        "output[0].type: unknown item type 'banana'",
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
    items = parse("openai_chat", recs(USER, {"role": "bot", "content": "x"}, USER))
    assert rejections(items) == [(2, "wrong_shape", "[1].role: unknown role 'bot'")]
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
            {"type": "progress", "data": {}},
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


# ---------------------------------------------------------------------------------------------
# The registry and sniffing


def test_the_registry_lists_every_format_module_in_the_folder() -> None:
    in_folder = sorted(p.stem for p in FORMATS_DIR.glob("*.py") if not p.stem.startswith("_"))
    registered = sorted(module.__name__.rsplit(".", 1)[1] for module in formats.FORMATS)
    assert registered == in_folder
    assert [m.__name__.rsplit(".", 1)[1] for m in formats.FORMATS] == formats.format_names()


def test_every_format_exposes_a_name_a_one_line_description_sniff_and_parse() -> None:
    for module in formats.FORMATS:
        assert isinstance(module.NAME, str) and module.NAME
        assert isinstance(module.DESCRIPTION, str) and module.DESCRIPTION
        assert "\n" not in module.DESCRIPTION
        assert callable(module.sniff) and callable(module.parse)


def test_format_names_are_listed_most_specific_first() -> None:
    assert formats.format_names() == [
        "claude_code",
        "toolbench",
        "openai_responses",
        "anthropic",
        "langchain",
        "openai_chat",
    ]


def test_get_format_returns_the_module_by_name() -> None:
    assert formats.get_format("toolbench") is formats.toolbench


def test_get_format_names_the_valid_formats_for_an_unknown_name() -> None:
    with pytest.raises(KeyError) as excinfo:
        formats.get_format("otel")
    assert excinfo.value.args[0] == (
        "unknown format 'otel' (valid formats: claude_code, toolbench, openai_responses, "
        "anthropic, langchain, openai_chat)"
    )


SNIFFED: list[tuple[str, bytes, str | None]] = [
    ("empty head", b"", None),
    ("unknown JSON", b'{"hello": "world"}', None),
    (
        "plain chat messages are valid in several formats",
        b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]',
        None,
    ),
    (
        "Anthropic and Responses markers together",
        b'[{"type": "tool_use", "id": "t"}, {"type": "function_call", "call_id": "c"}]',
        None,
    ),
    (
        "a Langfuse export embeds chat messages",
        b'{"trace": {}, "observations": [{"input": [{"role": "tool", "tool_call_id": 1}]}]}',
        None,
    ),
    ("system role", b'{"messages": [{"role": "system", "content": "Be brief."}]}', "openai_chat"),
    (
        "a marker quoted inside a string does not count",
        b'[{"role": "tool", "tool_call_id": "c", "content": "{\\"tool_use_id\\": 1}"}]',
        "openai_chat",
    ),
    ("content null", b'{"messages":[{"role":"assistant","content":null}]}', "openai_chat"),
    (
        "LangChain messages carrying Anthropic blocks",
        b'[{"type": "ai", "content": [{"type": "tool_use", "id": "t"}], "tool_calls": []}]',
        "langchain",
    ),
    ("dumpd", b'{"lc": 1, "type": "constructor", "id": ["x"], "kwargs": {}}', "langchain"),
    ("Responses items", b'[{"type": "function_call_output", "call_id": "c"}]', "openai_responses"),
    (
        "Anthropic tools",
        b'{"tools": [{"name": "f", "input_schema": {}}], "messages": []}',
        "anthropic",
    ),
    (
        "a Claude Code head cut mid-line",
        b'{"parentUuid":null,"sessionId":"s","type":"assistant","message":{"content":[{"type":"tool_u',
        "claude_code",
    ),
    (
        "Claude Code summaries only",
        b'{"type":"summary","summary":"x","leafUuid":"l"}',
        "claude_code",
    ),
    (
        "a ToolBench tree filling the head",
        b'{"win": true, "tree": {"observation_code": null',
        "toolbench",
    ),
]


@pytest.mark.parametrize(
    ("head", "expected"), [(h, e) for _, h, e in SNIFFED], ids=[c for c, _, _ in SNIFFED]
)
def test_sniffing_claims_only_heads_that_one_format_explains(
    head: bytes, expected: str | None
) -> None:
    module = formats.sniff_format(head)
    assert (module.NAME if module else None) == expected
    assert [m.NAME for m in formats.FORMATS if m.sniff(head)] == ([expected] if expected else [])


# ---------------------------------------------------------------------------------------------
# Real data (../shared/realdata): exact figures

REAL_FOLDERS = [
    # folder, format, traces, tool calls, tool results
    ("openai-chat", "openai_chat", 200, 1164, 1164),
    ("claude-code", "claude_code", 15, 1092, 1091),
    ("openai-legacy", "toolbench", 15, 50, 37),
]


def _parse_folder(folder: Path, fmt: str) -> tuple[list[Trace], int, int]:
    """Traces of every file in ``folder``, how many records they had, how many were rejected."""
    module = formats.get_format(fmt)
    traces, record_total, rejected = [], 0, 0
    for path in sorted(folder.iterdir()):
        records = list(records_of(path))
        items = list(module.parse(iter(records), path.name))
        assert accounted(items) == len(records), path.name
        record_total += len(records)
        rejected += sum(1 for i in items if isinstance(i, Rejected))
        traces += [i for i in items if isinstance(i, Trace)]
    return traces, record_total, rejected


@pytest.mark.realdata
@pytest.mark.parametrize(("folder", "fmt", "traces", "calls", "results"), REAL_FOLDERS)
def test_real_traces_give_the_known_counts_of_traces_calls_and_results(
    realdata: Path, folder: str, fmt: str, traces: int, calls: int, results: int
) -> None:
    parsed, _, rejected = _parse_folder(realdata / folder, fmt)
    assert rejected == 0
    assert len(parsed) == traces
    assert sum(len(m.tool_calls) for t in parsed for m in t.messages) == calls
    assert sum(1 for t in parsed for m in t.messages if m.tool_result is not None) == results


@pytest.mark.realdata
@pytest.mark.parametrize(("folder", "fmt"), [(f, fmt) for f, fmt, *_ in REAL_FOLDERS])
def test_every_real_file_is_sniffed_as_its_format(realdata: Path, folder: str, fmt: str) -> None:
    for path in sorted((realdata / folder).iterdir()):
        module = formats.sniff_format(path.read_bytes()[:65536])
        assert getattr(module, "NAME", None) == fmt, path.name


@pytest.mark.realdata
def test_langfuse_exports_are_not_claimed_by_any_message_format(realdata: Path) -> None:
    for path in sorted((realdata / "langfuse-export").iterdir()):
        assert formats.sniff_format(path.read_bytes()[:65536]) is None, path.name


@pytest.mark.realdata
def test_real_claude_code_sessions_keep_every_line_and_flag_149_errors(realdata: Path) -> None:
    parsed, records, _ = _parse_folder(realdata / "claude-code", "claude_code")
    assert sum(t.record_count for t in parsed) == records == 3096
    flagged = [
        m for t in parsed for m in t.messages if m.tool_result and m.tool_result.explicit_error
    ]
    assert len(flagged) == 149
    assert sum(1 for t in parsed if not t.messages) == 1  # the file of summary lines only
    assert sum(1 for t in parsed for m in t.messages if m.branch is not None) == 384
    usages = [m.usage for t in parsed for m in t.messages if m.usage is not None]
    assert len(usages) == 1118  # one per distinct message.id
    assert sum(u["output_tokens"] for u in usages) == 138636


@pytest.mark.realdata
def test_real_tau_bench_conversations_reuse_73_call_ids(realdata: Path) -> None:
    parsed, _, _ = _parse_folder(realdata / "openai-chat", "openai_chat")
    reused = 0
    for trace in parsed:
        seen: set[str | None] = set()
        for call in (c for m in trace.messages for c in m.tool_calls):
            reused += call.tool_call_id in seen
            seen.add(call.tool_call_id)
    assert reused == 73
