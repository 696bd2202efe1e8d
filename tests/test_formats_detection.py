"""Format detection by structure: every golden and real file is detected as its format, and
stays so when every other format's keys and words are planted inside its metadata, contents and
arguments; a format that rejects a file's first records gives way to one that reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from formats_helpers import GOLDEN_CASES, chat_call, chat_result, records_of

from db.engine import make_engine
from db.queries.summary import summarize
from ingest import formats
from ingest.importing.pipeline import import_paths
from ingest.input.reading import detect
from ingest.input.records import Record

#: The keys (and key-value pairs) that show each format somewhere in its records: what a
#: detection by words would have looked for. Planted where only values live, none may count.
MARKER_KEYS: dict[str, Any] = {
    "resourceSpans": [{"scopeSpans": [{"spans": []}]}],
    "scopeSpans": [],
    "observations": [{"id": "o", "parentObservationId": None}],
    "projectId": "p",
    "parentObservationId": None,
    "run_type": "llm",
    "dotted_order": "20250101T000000000000Z",
    "parent_run_id": None,
    "simulations": [{"id": "s", "task_id": "1", "termination_reason": "user_stop"}],
    "task_id": "1",
    "termination_reason": "user_stop",
    "global_simulation_guidelines": "g",
    "user_scenario": {},
    "parentUuid": None,
    "leafUuid": "l",
    "sessionId": "s",
    "answer_generation": {"train_messages": [[]]},
    "train_messages": [],
    "observation_code": None,
    "lc": 1,
    "additional_kwargs": {},
    "response_metadata": {},
    "type": "constructor",
    "request": {"messages": [{"role": "user", "content": "x"}]},
    "choices": [{"message": {"role": "assistant"}}],
    "call_type": "acompletion",
    "hidden_params": {},
    "model_parameters": {},
    "max_tokens": 10,
    "contents": [{"role": "model", "parts": [{"functionCall": {"name": "f"}}]}],
    "systemInstruction": {},
    "functionDeclarations": [],
    "object": "response",
    "call_id": "c",
    "output": [{"type": "function_call_output", "call_id": "c"}],
    "tool_use_id": "t",
    "input_schema": {},
    "stop_reason": "tool_use",
    "tool_call_id": "c",
    "tool_calls": [{"id": "c", "function": {"name": "f"}}],
    "function_call": {"name": "f"},
    "messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}],
}
#: The same, as words inside a string value.
MARKER_TEXT = json.dumps(MARKER_KEYS)
#: Keys whose values are metadata (an object: every marker key is planted in it).
METADATA_KEYS = {"metadata", "extra", "info", "additional_kwargs", "response_metadata"}
#: Keys whose string values are content or arguments (the marker text is appended).
TEXT_KEYS = {
    "content",
    "arguments",
    "text",
    "output",
    "input",
    "observation",
    "query",
    "summary",
    "stringValue",
}


def planted(value: Any, key: str | None = None) -> Any:
    """``value`` with every marker planted inside its metadata objects and its content and
    argument strings (the record's own keys, and its messages' and blocks', stay as they are).
    """
    if isinstance(value, dict):
        copy = {k: planted(v, k) for k, v in value.items()}
        if key in METADATA_KEYS:
            copy.update({k: v for k, v in MARKER_KEYS.items() if k not in copy})
        return copy
    if isinstance(value, list):
        return [planted(item, key) for item in value]
    if isinstance(value, str) and key in TEXT_KEYS | METADATA_KEYS:
        return value + MARKER_TEXT
    return value


def planted_head(path: Path) -> bytes:
    """The first 64 KiB of ``path`` with markers planted in every record, written back in the
    file's own container (JSONL, array or document)."""
    values = [r.value for r in records_of(path) if isinstance(r, Record)]
    body = path.read_bytes().lstrip()
    if path.suffix == ".jsonl":
        data = b"\n".join(orjson.dumps(planted(v)) for v in values) + b"\n"
    elif body.startswith(b"["):
        data = orjson.dumps([planted(v) for v in values], option=orjson.OPT_INDENT_2)
    else:
        data = orjson.dumps(planted(values[0]), option=orjson.OPT_INDENT_2)
    return data[:65536]


def detected(head: bytes) -> str | None:
    fmt = detect(head).format
    return fmt.name if fmt else None


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_golden_file_is_detected_as_its_format_with_every_marker_planted_in_it(
    case: Path,
) -> None:
    source = next(case.glob("input.json*"))
    head = planted_head(source)
    assert b'\\"resourceSpans\\": [{' in head  # the markers are there, in a string at least
    assert detected(source.read_bytes()[:65536]) == case.parent.name
    assert detected(head) == case.parent.name
    assert detect(head).note is None


#: Real folders (../shared/realdata) and the format every file in them is read with.
REAL_FOLDERS = [
    ("openai-chat", "openai_chat"),
    ("claude-code", "claude_code"),
    ("openai-legacy", "toolbench"),
    ("langfuse-export", "langfuse"),
]


@pytest.mark.realdata
@pytest.mark.parametrize(("folder", "fmt"), REAL_FOLDERS)
def test_every_real_file_is_detected_as_its_format_with_every_marker_planted_in_it(
    realdata: Path, folder: str, fmt: str
) -> None:
    for path in sorted((realdata / folder).iterdir()):
        assert detected(path.read_bytes()[:65536]) == fmt, path.name
        assert detected(planted_head(path)) == fmt, path.name


def tau2_like_chat_lines(count: int) -> list[dict[str, Any]]:
    """OpenAI chat conversations as a benchmark harness logs them: ``{"id", "metadata",
    "messages"}`` with tau2's task id and termination reason in the metadata."""
    return [
        {
            "id": f"conv-{i}",
            "metadata": {
                "task_id": str(i),
                "trial": 0,
                "termination_reason": "user_stop",
                "reward": 1.0,
                "simulations": None,
            },
            "messages": [
                {"role": "system", "content": "You are an airline agent."},
                {"role": "user", "content": "Cancel my booking."},
                chat_call(f"call_{i}", "cancel_reservation", '{"reservation_id": "R1"}'),
                chat_result(f"call_{i}", '{"status": "ok"}'),
                {"role": "assistant", "content": "Done."},
            ],
        }
        for i in range(count)
    ]


def test_chat_conversations_with_tau2_fields_in_their_metadata_are_openai_chat() -> None:
    head = b"".join(orjson.dumps(line) + b"\n" for line in tau2_like_chat_lines(5))
    assert detect(head).format is formats.get_format("openai_chat")
    assert detect(head).note is None


def test_chat_conversations_with_tau2_fields_import_whole(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "harness.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in tau2_like_chat_lines(30)))
    engine = make_engine(db_url)
    try:
        summary = import_paths(engine, [path], workers=0)
        data = summarize(engine)
    finally:
        engine.dispose()
    assert (summary.traces, summary.rejected) == (30, 0)
    assert (data["tool_calls"], data["tool_results"]) == (30, 30)
    assert summary.by_file[str(path)].format == "openai_chat"


def chat_lines_with_request_metadata(count: int) -> bytes:
    """Chat conversations whose top level carries a ``request`` object of client details: the
    shape of a request log, which the request log reader then rejects."""
    lines = [
        {
            "id": f"c{i}",
            "request": {"client": "web", "ip": "10.0.0.1"},
            "messages": [
                {"role": "user", "content": "hi"},
                chat_call("c1", "lookup", "{}"),
                chat_result("c1", "ok"),
            ],
        }
        for i in range(count)
    ]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


REQUEST_LOG_NOTE = (
    "read as openai_chat: request_log, which the first records' structure suggested, rejected "
    '3 of the first 3 (no prompt (expected "messages" or "input", in the record or its '
    '"request"))'
)


def test_a_format_that_rejects_the_first_records_gives_way_to_one_that_reads_them() -> None:
    head = chat_lines_with_request_metadata(3)
    assert formats.sniff_format(head) is formats.get_format("request_log")
    detection = detect(head)
    assert detection.format is formats.get_format("openai_chat")
    assert detection.note == REQUEST_LOG_NOTE


def test_the_import_says_on_its_summary_line_which_format_it_read_instead(
    db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_bytes(chat_lines_with_request_metadata(3))
    engine = make_engine(db_url)
    try:
        summary = import_paths(engine, [path], workers=0)
    finally:
        engine.dispose()
    assert (summary.traces, summary.rejected) == (3, 0)
    assert summary.line().endswith(f" s; {path} {REQUEST_LOG_NOTE}")


def test_a_format_whose_parser_reads_the_first_records_keeps_them_without_a_note() -> None:
    head = b'{"messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}]}\n' * 3
    detection = detect(head)
    assert detection.format is formats.get_format("openai_chat")
    assert detection.note is None
