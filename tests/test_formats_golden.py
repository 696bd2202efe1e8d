"""Format parsers: golden files, and the behaviour golden files cannot show (``Message.raw``).

Golden files live in ``tests/golden/<format>/<case>/``: a hand-written ``input.json(l)`` and the
canonical output ``expected.json`` (traces without ``Message.raw``). Regenerate them with
``UPDATE_GOLDEN=1 pytest tests/test_formats_golden.py`` and review the diff by eye.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from formats_helpers import (
    GOLDEN,
    GOLDEN_CASES,
    accounted,
    golden_dump,
    only_trace,
    parse,
    records_of,
    recs,
    rejections,
)

from ingest import formats
from ingest.model import Rejected, Trace

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
    assert getattr(module, "name", None) == case.parent.name
    assert [f.name for f in formats.fitting(head)][:1] == [case.parent.name]


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
    trace = only_trace(list(formats.claude_code.FORMAT.parse(records_of(source), source.name)))
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
    assert stamps == ["2024-06-10T06:13:20.123000+00:00", "2024-06-10T04:13:20+00:00", None]
    assert trace.started_at == trace.messages[0].timestamp
