"""OpenAI Responses API items (``function_call`` / ``function_call_output`` paired on ``call_id``).

Accepted containers (each record is one JSONL line, one top-level array item or one document):

* item objects (a JSON array of items, as the Agents SDK keeps its input list): all of a file's
  item records together are ONE trace;
* a response or logged conversation ``{"id", "input": [...], "output": [...], "instructions",
  "model", "created_at", "usage", "tools", ...}``: one trace per object; ``instructions`` become
  the first, system, message; a string ``input`` a user message; the response ``usage`` goes to
  the first assistant message built from ``output`` (the turn it paid for);
* an array of items on one JSONL line: one trace.

Items become messages like this: ``message`` items and plain ``{"role", "content"}`` inputs are
messages (``developer`` is system). Consecutive assistant-side items form ONE assistant turn,
like one Chat Completions assistant message: assistant ``message`` items give its text,
``function_call`` / ``custom_tool_call`` items its calls (in order), and the items ToolLens
does not model (``reasoning``; built-in tool calls such as ``web_search_call`` and their
outputs; ``mcp_*``, ``item_reference`` and ``compaction`` items: :data:`UNMODELLED_TYPES`, the
item types of the openai-python SDK's ``ResponseInputItemParam`` / ``ResponseOutputItem``) add
nothing but their raw. The turn's ``raw`` is the LIST of its items. So ``reasoning`` items are
kept in the raw of the turn they open; a turn of reasoning alone is a raw-only assistant
message with empty content. An item of any other type (one newer than this parser) becomes an
opaque message (``_common.opaque_message``) of its own role, else ``assistant``, and is counted
as an unknown item; the conversation still imports. ``function_call_output`` /
``custom_tool_call_output`` items are tool messages. Calls and results pair on ``call_id``,
never on the item ``id`` (``fc_…``), which stays in the raw items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingest.formats import _common
from ingest.formats._record_loop import MessageListFormat, message_list_format
from ingest.formats._shapes import (
    RESPONSES_UNMODELLED_TYPES,
    SIGN,
    Fit,
    Misfit,
    combine,
    message_list,
    responses_item,
)
from ingest.input.records import Record
from ingest.model import Message, OpaqueMessage, ToolCall, ToolResult, Trace

NAME = "openai_responses"

_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
#: Item types the API defines that carry no message ToolLens models (built-in tool calls and
#: their outputs, MCP items, bookkeeping): kept in the raw of the assistant turn they fall in.
UNMODELLED_TYPES = RESPONSES_UNMODELLED_TYPES | {
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
}
#: Fields of the item types read here (``message``, the calls and their outputs) that the parser
#: reads or knows to be bookkeeping; another field carrying content is counted as the unknown
#: field ``<item type>.<name>`` (its value stays in the raw item).
KNOWN_ITEM_FIELDS = frozenset(
    {"type", "id", "role", "content", "status", "call_id", "name", "arguments", "input", "output",
     "namespace"}
)  # fmt: skip
_TRACE_FIELDS = {"id", "input", "output", "instructions", "model", "created_at", "tools"}


@dataclass(slots=True)
class _TurnItem:
    """An assistant-side item, waiting to be grouped into its assistant turn."""

    item: dict[str, Any]
    line: int | None
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    source_id: str | None = None
    unknown: list[str] = field(default_factory=list)


_Draft = Message | _TurnItem


def _is_message(value: dict[str, Any]) -> bool:
    return "type" in value or "role" in value


def _convert(item: dict[str, Any], path: str, line: int | None) -> list[_Draft]:
    drafts = _convert_item(item, path, line)
    kind = item.get("type")
    if kind is None or (isinstance(kind, str) and kind not in UNMODELLED_TYPES):
        where = "message" if kind is None else _common.type_name(kind)
        fields = _common.unknown_fields(item, KNOWN_ITEM_FIELDS, where)
        for draft in drafts:
            if isinstance(draft, _TurnItem):
                draft.unknown = fields
            elif not isinstance(draft, OpaqueMessage):
                draft.unknown_fields = fields
    return drafts


def _convert_item(item: dict[str, Any], path: str, line: int | None) -> list[_Draft]:
    kind = item.get("type")
    if kind is None and "role" not in item:
        raise _common.ShapeError(f'{path}: item has neither "type" nor "role"')
    if kind is None or kind == "message":
        return [_message(item, path, line)]
    if kind == "function_call":
        call = _common.json_call(
            0,
            _common.optional_str(item.get("call_id"), f"{path}.call_id"),
            _common.required_str(item.get("name"), f"{path}.name"),
            item.get("arguments"),
        )
        return [_TurnItem(item, line, calls=[call])]
    if kind == "custom_tool_call":
        # Custom tools take free text, not JSON: the text is the arguments, always valid.
        text = _common.optional_str(item.get("input"), f"{path}.input")
        call = ToolCall(
            call_index=0,
            tool_call_id=_common.optional_str(item.get("call_id"), f"{path}.call_id"),
            name=_common.required_str(item.get("name"), f"{path}.name"),
            arguments_raw=text,
            arguments=text,
        )
        return [_TurnItem(item, line, calls=[call])]
    if kind in _OUTPUT_TYPES:
        result = ToolResult(
            tool_call_id=_common.optional_str(item.get("call_id"), f"{path}.call_id"),
            name=_common.optional_str(item.get("name"), f"{path}.name"),
        )
        return [
            Message(
                seq=0,
                role="tool",
                content=_common.text_of(item.get("output")),
                tool_result=result,
                source_id=_common.optional_str(item.get("id"), f"{path}.id"),
                source_line=line,
                raw=item,
            )
        ]
    if isinstance(kind, str) and kind in UNMODELLED_TYPES:
        return [_TurnItem(item, line)]
    return [
        _common.opaque_message(
            item, _common.type_name(kind), _common.opaque_role(item.get("role")), line
        )
    ]


def _message(item: dict[str, Any], path: str, line: int | None) -> _Draft:
    role = _common.canonical_role(item.get("role"), f"{path}.role")
    if role == "tool":
        raise _common.ShapeError(
            f"{path}.role: {item['role']!r} is not a Responses message role "
            "(results are function_call_output items)"
        )
    source_id = _common.optional_str(item.get("id"), f"{path}.id")
    text = _common.text_of(item.get("content"))
    if role == "assistant":
        return _TurnItem(item, line, text=text, source_id=source_id)
    return Message(seq=0, role=role, content=text, source_id=source_id, source_line=line, raw=item)


def _assemble(drafts: list[_Draft]) -> list[Message]:
    messages: list[Message] = []
    turn: list[_TurnItem] = []
    for draft in drafts:
        if isinstance(draft, _TurnItem):
            turn.append(draft)
            continue
        if turn:
            messages.append(_turn_message(turn))
            turn = []
        messages.append(draft)
    if turn:
        messages.append(_turn_message(turn))
    return messages


def _turn_message(turn: list[_TurnItem]) -> Message:
    calls = [call for part in turn for call in part.calls]
    for index, call in enumerate(calls):
        call.call_index = index
    return Message(
        seq=0,
        role="assistant",
        content="\n".join(part.text for part in turn if part.text),
        tool_calls=calls,
        source_id=next((part.source_id for part in turn if part.source_id), None),
        source_line=turn[0].line,
        raw=[part.item for part in turn],
        unknown_fields=[name for part in turn for name in part.unknown],
    )


def _container_trace(record: Record) -> Trace:
    obj: dict[str, Any] = record.value
    if "input" not in obj and "output" not in obj:
        raise _common.ShapeError('no item list (expected "input" or "output")')
    messages = _instructions(obj.get("instructions"), record.line)
    messages += _items(obj.get("input"), "input", record.line)
    output = _items(obj.get("output"), "output", record.line)
    consumed = set(_TRACE_FIELDS)
    usage = obj.get("usage")
    first_turn = next((m for m in output if m.role == "assistant"), None)
    if isinstance(usage, dict) and first_turn is not None:
        first_turn.usage = usage
        consumed.add("usage")
    model = obj.get("model")
    return _common.conversation_trace(
        messages + output,
        record,
        obj,
        format=NAME,
        model=model if isinstance(model, str) else None,
        started_at=_common.parse_timestamp(obj.get("created_at")),
        tools=_common.tool_defs(obj.get("tools"), "tools"),
        metadata=_common.small_metadata(obj, consumed),
    )


def _instructions(value: Any, line: int) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        raw = {"instructions": value}
        return [Message(seq=0, role="system", content=value, source_line=line, raw=raw)]
    return _items(value, "instructions", line)


def _items(value: Any, path: str, line: int) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message(seq=0, role="user", content=value, source_line=line, raw={path: value})]
    return _READER.convert_list(_common.expect_text_or_list(value, path), path, line)


def convert_items(value: Any, path: str, line: int) -> list[Message]:
    """Canonical messages of a Responses ``input`` or ``output`` at ``path`` (items grouped into
    assistant turns as described above; a string is one user message; ``None`` is none)."""
    return _items(value, path, line)


def convert_instructions(value: Any, line: int) -> list[Message]:
    """The system message(s) of a request's or response's ``instructions`` (none for ``None``)."""
    return _instructions(value, line)


_READER: MessageListFormat[_Draft] = MessageListFormat(
    name=NAME,
    is_message=_is_message,
    convert_item=_convert,
    assemble=_assemble,
    container_trace=_container_trace,
)


def shape(record: Any) -> Fit:
    """Responses items: an item (``function_call`` … or a ``{role, content}`` input), an
    array of them, or a response / logged conversation (``"object": "response"``, or ``input``
    / ``output`` arrays of items)."""
    if isinstance(record, list):
        return combine(responses_item(item) for item in record)
    if not isinstance(record, dict):
        return Misfit(f"a record is a JSON {_common.json_type(record)}, not an object")
    if record.get("object") == "response":
        return SIGN
    lists = [key for key in ("input", "output") if isinstance(record.get(key), list)]
    if lists:
        return combine(message_list(record, key, responses_item) for key in lists)
    if "messages" in record:
        return Misfit('no Responses "input" / "output" (a "messages" list instead)')
    return responses_item(record)


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = message_list_format(
    _READER,
    description="OpenAI Responses API items (function_call / function_call_output by call_id)",
    # Responses input lists hold chat-style messages too (``role: "system"``, ``"developer"``).
    shape=shape,
    embeds=("openai_chat",),
)

__all__ = ["FORMAT", "NAME", "UNMODELLED_TYPES", "convert_instructions", "convert_items"]
