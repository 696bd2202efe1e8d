"""Degrade, don't drop: an item or block of a type no parser knows is kept as an opaque message
and counted (per trace in the metadata, per import in the summary and on the imports row)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from formats_helpers import only_trace, parse, recs

from db.engine import make_engine
from db.schema import ImportRun
from ingest.formats._span_messages import read_message
from ingest.importing.batches import ImportSummary
from ingest.importing.pipeline import import_paths
from ingest.model import OpaqueMessage

HOLOGRAM = {"type": "hologram_call", "id": "h1", "status": "completed"}


def roles_and_contents(fmt: str, value: Any) -> list[tuple[str, str, str | None]]:
    trace = only_trace(parse(fmt, recs(value)))
    return [
        (m.role, m.content, m.unknown_type if isinstance(m, OpaqueMessage) else None)
        for m in trace.messages
    ]


def import_twice(
    db_url: str, path: Path, conversation: dict[str, Any], second_id: str
) -> tuple[ImportSummary, Any]:
    """Import ``conversation`` and a copy of it with the id ``second_id`` (one JSONL file at
    ``path``): the import's summary and the unknown items stored on its imports row."""
    path.write_text(json.dumps(conversation) + "\n" + json.dumps({**conversation, "id": second_id}))
    engine = make_engine(db_url)
    summary = import_paths(engine, [path])
    with engine.connect() as conn:
        stored = conn.execute(sa.select(ImportRun.unknown_items)).scalar_one()
    engine.dispose()
    return summary, stored


def test_a_responses_item_of_an_unknown_type_becomes_an_opaque_message() -> None:
    value = {
        "id": "resp_1",
        "input": [{"role": "user", "content": "hi"}, {**HOLOGRAM, "role": "user"}],
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            HOLOGRAM,
            {"type": "function_call", "call_id": "c1", "name": "get", "arguments": "{}"},
        ],
    }
    trace = only_trace(parse("openai_responses", recs(value)))
    hologram = 'hologram_call: {"type":"hologram_call","id":"h1","status":"completed"'
    assert [(m.role, m.content, len(m.tool_calls)) for m in trace.messages] == [
        ("user", "hi", 0),
        ("user", hologram + ',"role":"user"}', 0),
        ("assistant", "", 0),
        ("assistant", hologram + "}", 0),
        ("assistant", "", 1),
    ]
    assert trace.messages[3].raw == HOLOGRAM
    assert trace.metadata == {"unknown_items": {"hologram_call": 2}}


def test_an_anthropic_block_of_an_unknown_type_follows_its_message_as_an_opaque_one() -> None:
    block = {"type": "sticker", "name": "wave"}
    value = {
        "id": "run-1",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}, block,
                                         {"type": "document", "source": {}}]},
        ],
    }  # fmt: skip
    assert roles_and_contents("anthropic", value) == [
        ("user", "hi", None),
        ("user", 'sticker: {"type":"sticker","name":"wave"}', "sticker"),
    ]


def test_a_claude_code_block_of_an_unknown_type_keeps_its_line_as_raw() -> None:
    line = {"type": "assistant", "sessionId": "s1", "uuid": "u1",
            "message": {"role": "assistant", "content": [{"type": "sticker"}]}}  # fmt: skip
    trace = only_trace(parse("claude_code", recs(line)))
    assert [(m.content, m.raw) for m in trace.messages] == [('sticker: {"type":"sticker"}', line)]


def test_a_langchain_message_of_an_unknown_type_becomes_an_opaque_message() -> None:
    value = {"messages": [{"type": "human", "content": "hi"}, {"type": "remove", "id": "m1"}]}
    assert roles_and_contents("langchain", value) == [
        ("user", "hi", None),
        ("assistant", 'remove: {"type":"remove","id":"m1"}', "remove"),
    ]


def test_a_gemini_part_of_an_unknown_type_becomes_an_opaque_message() -> None:
    content = {"role": "model", "parts": [{"text": "hi"}, {"holo_data": {"x": 1}}]}
    read = read_message(content)
    assert read is not None
    messages = read.messages
    assert [(m.role, m.content, isinstance(m, OpaqueMessage)) for m in messages] == [
        ("assistant", "hi", False),
        ("assistant", '(no type): {"holo_data":{"x":1}}', True),
    ]


def test_an_import_counts_unknown_items_in_its_summary_and_its_row(
    db_url: str, tmp_path: Path
) -> None:
    conversation = {
        "id": "resp_1",
        "output": [HOLOGRAM, HOLOGRAM, {"type": "future_thing"}, {"type": "message",
                   "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}],
    }  # fmt: skip
    summary, stored = import_twice(db_url, tmp_path / "r.jsonl", conversation, "r2")
    assert (summary.traces, summary.rejected, summary.unknown_item) == (2, 0, 6)
    assert summary.unknown_items == {"future_thing": 2, "hologram_call": 4}
    assert stored == {"future_thing": 2, "hologram_call": 4}
    assert ", 6 unknown items kept (future_thing ×2, hologram_call ×4) in " in summary.line()


def test_a_conversation_without_tool_calls_imports_with_zero_calls(
    db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "chat.jsonl"
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path.write_text(json.dumps({"id": "plain", "messages": messages}) + "\n")
    engine = make_engine(db_url)
    summary = import_paths(engine, [path])
    engine.dispose()
    assert (summary.traces, summary.messages, summary.rejected) == (1, 2, 0)


def test_worker_processes_count_unknown_items_too(sqlite_url: str, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    lines = [json.dumps({"id": f"r{n}", "output": [HOLOGRAM]}) for n in range(3)]
    path.write_text("\n".join(lines) + "\n")
    engine = make_engine(sqlite_url)
    summary = import_paths(engine, [path], format_name="openai_responses", workers=2)
    engine.dispose()
    assert (summary.traces, summary.unknown_items) == (3, {"hologram_call": 3})


# ---- unknown roles, parts and fields ---------------------------------------------------------

USER = {"role": "user", "content": "hi"}


def test_an_openai_chat_message_of_an_unknown_role_or_part_is_kept_as_opaque() -> None:
    bot = {"role": "bot", "content": "beep"}
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "see"}, {"type": "hologram", "data": "x"}],
    }
    trace = only_trace(parse("openai_chat", recs({"messages": [USER, bot, parts]})))
    assert [
        (m.role, m.content, m.unknown_type if isinstance(m, OpaqueMessage) else None)
        for m in trace.messages
    ] == [
        ("user", "hi", None),
        ("assistant", 'role:bot: {"role":"bot","content":"beep"}', "role:bot"),
        ("user", "see", None),
        ("user", 'hologram: {"type":"hologram","data":"x"}', "hologram"),
    ]
    assert trace.metadata == {"unknown_items": {"hologram": 1, "role:bot": 1}}


def test_unknown_fields_that_carry_content_are_counted_and_kept_in_the_raw() -> None:
    said = {
        "role": "assistant",
        "content": "4",
        "reasoning_content": "2 + 2 is 4",
        "logprobs": {"tokens": [], "n": 3},  # no text: bookkeeping
        "cached": True,
        "note": "  ",
    }
    trace = only_trace(parse("openai_chat", recs({"messages": [USER, said]})))
    assert trace.metadata == {"unknown_items": {"field:message.reasoning_content": 1}}
    assert trace.messages[1].raw["reasoning_content"] == "2 + 2 is 4"


def test_unknown_fields_in_anthropic_claude_code_and_responses_are_counted() -> None:
    block = {"type": "text", "text": "hi", "provenance": {"source": "web"}, "weight": 2}
    anthropic = {"messages": [{"role": "user", "content": [block], "persona": "tester"}]}
    trace = only_trace(parse("anthropic", recs(anthropic)))
    assert trace.metadata == {
        "unknown_items": {"field:message.persona": 1, "field:text.provenance": 1}
    }
    line = {
        "type": "user",
        "sessionId": "s1",
        "uuid": "u1",
        "mood": "curious",
        "message": {"role": "user", "content": "hi"},
    }
    trace = only_trace(parse("claude_code", recs(line)))
    assert trace.metadata["unknown_items"] == {"field:line.mood": 1}
    call = {"type": "function_call", "call_id": "c1", "name": "get", "arguments": "{}",
            "rationale": "need the weather"}  # fmt: skip
    trace = only_trace(parse("openai_responses", recs({"id": "r1", "output": [call]})))
    assert trace.metadata == {"unknown_items": {"field:function_call.rationale": 1}}


def test_an_import_counts_unknown_fields_and_roles(db_url: str, tmp_path: Path) -> None:
    said = {"role": "assistant", "content": "4", "reasoning_content": "2 + 2"}
    conversation = {"messages": [USER, said, {"role": "critic", "content": "ok"}]}
    summary, stored = import_twice(db_url, tmp_path / "c.jsonl", conversation, "c2")
    expected = {"field:message.reasoning_content": 2, "role:critic": 2}
    assert (summary.traces, summary.rejected, summary.unknown_items, stored) == (
        2, 0, expected, expected,
    )  # fmt: skip
