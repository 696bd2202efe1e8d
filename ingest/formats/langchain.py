"""LangChain messages: ``messages_to_dict``, ``dumpd`` and plain ``model_dump`` forms.

A message may look like any of

* ``{"type": "ai", "data": {...}}`` (``messages_to_dict``; chunk types like ``AIMessageChunk``),
* ``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`` (``dumpd``),
* ``{"type": "ai", "content": ..., "tool_calls": [...], ...}`` (``model_dump``, as LangGraph
  state dumps and Langfuse write them).

Accepted containers (each record is one JSONL line, one top-level array item or one document):
a state object holding the messages under ``messages`` (or a snapshot's ``values.messages`` or a
checkpoint's ``channel_values.messages``): one trace per object, ``tools`` bound there become tool
definitions; message objects (a JSON array of messages): all of a file's message records are ONE
trace; an array of messages on one JSONL line: one trace.

Calls are ``AIMessage.tool_calls`` (``args`` object) and ``invalid_tool_calls`` (always
``args_valid=False``, with LangChain's ``error``), listed valid first since LangChain keeps them
apart; an AI message from before ``tool_calls`` existed is read from its provider-form
``additional_kwargs``. ``ToolMessage.status`` is the explicit error flag. A message of a type
this parser does not know (``remove`` …) becomes an opaque message, counted as an unknown item.
"""

from __future__ import annotations

from typing import Any

from db.contract.vocabulary import Role
from ingest.formats import _openai_messages
from ingest.formats._common import (
    ShapeError,
    canonical_role,
    conversation_trace,
    expect_list,
    expect_object,
    first_assistant_model,
    json_call,
    json_type,
    opaque_message,
    opaque_role,
    optional_str,
    parse_arguments,
    parse_timestamp,
    required_str,
    small_metadata,
    text_of,
    tool_defs,
)
from ingest.formats._record_loop import MessageListFormat, message_list_format
from ingest.formats._shapes import (
    Fit,
    Misfit,
    combine,
    langchain_message,
    message_list,
)
from ingest.input.records import Record
from ingest.model import Message, ToolCall, ToolResult, Trace

NAME = "langchain"

_TYPE_ROLES: dict[str, Role] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
_CLASS_TYPES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
}
#: Where a state object may hold its messages: a state, a StateSnapshot, a checkpoint.
_HOLDERS = (None, "values", "channel_values")
_STATUS_ERROR = {"error": True, "success": False}


def _is_message(value: dict[str, Any]) -> bool:
    return ("type" in value or "lc" in value) and not any(
        key in value for key in ("messages", "values", "channel_values")
    )


def _unwrap(item: dict[str, Any], path: str) -> tuple[str, dict[str, Any], str]:
    """The message type, its fields, and the path of those fields."""
    if item.get("type") == "constructor" or "kwargs" in item:
        ident = expect_list(item.get("id"), f"{path}.id")
        kind = ident[-1] if ident and isinstance(ident[-1], str) else None
        if kind is None:
            raise ShapeError(f"{path}.id: no message class name")
        return kind, expect_object(item.get("kwargs"), f"{path}.kwargs"), f"{path}.kwargs"
    kind = required_str(item.get("type"), f"{path}.type")
    if isinstance(item.get("data"), dict):
        return kind, item["data"], f"{path}.data"
    return kind, item, path


def _role(kind: str, data: dict[str, Any], data_path: str) -> Role | None:
    """The canonical role of a message type; ``None`` for a type this parser does not know."""
    name = kind.removesuffix("Chunk")
    name = _CLASS_TYPES.get(name, name)
    if name == "chat":
        return canonical_role(data.get("role"), f"{data_path}.role")
    return _TYPE_ROLES.get(name)


def _convert(item: dict[str, Any], path: str, line: int | None) -> list[Message]:
    kind, data, data_path = _unwrap(item, path)
    role = _role(kind, data, data_path)
    if role is None:
        # A newer message type (``RemoveMessage`` …): kept as an opaque message, counted.
        return [opaque_message(item, kind, opaque_role(data.get("role")), line)]
    usage = data.get("usage_metadata")
    message = Message(
        seq=0,
        role=role,
        content=text_of(data.get("content")),
        # LangChain messages have no time; loggers that add a ``timestamp`` key keep theirs.
        timestamp=parse_timestamp(data.get("timestamp")),
        usage=usage if isinstance(usage, dict) else None,
        source_id=optional_str(data.get("id"), f"{data_path}.id"),
        source_line=line,
        raw=item,
    )
    if role == "tool":
        status = data.get("status")
        flag = _STATUS_ERROR.get(status) if isinstance(status, str) else None
        message.tool_result = ToolResult(
            tool_call_id=optional_str(data.get("tool_call_id"), f"{data_path}.tool_call_id"),
            name=optional_str(data.get("name"), f"{data_path}.name"),
            explicit_error=flag,
            explicit_source="status" if flag is not None else None,
        )
    else:
        message.tool_calls = _tool_calls(data, data_path)
    return [message]


#: One LangChain message (any of the forms above) as canonical messages (LangSmith runs hold them).
convert_message = _convert


def _tool_calls(data: dict[str, Any], path: str) -> list[ToolCall]:
    if "tool_calls" not in data and "invalid_tool_calls" not in data:
        extra = data.get("additional_kwargs")
        if isinstance(extra, dict):
            return _openai_messages.tool_calls(extra, f"{path}.additional_kwargs")
        return []
    calls: list[ToolCall] = []
    for index, call in enumerate(expect_list(data.get("tool_calls") or [], f"{path}.tool_calls")):
        call_path = f"{path}.tool_calls[{index}]"
        spec = expect_object(call, call_path)
        calls.append(
            json_call(
                len(calls),
                optional_str(spec.get("id"), f"{call_path}.id"),
                required_str(spec.get("name"), f"{call_path}.name"),
                spec.get("args"),
            )
        )
    invalid = expect_list(data.get("invalid_tool_calls") or [], f"{path}.invalid_tool_calls")
    for index, call in enumerate(invalid):
        call_path = f"{path}.invalid_tool_calls[{index}]"
        spec = expect_object(call, call_path)
        args = parse_arguments(spec.get("args"))
        reason = optional_str(spec.get("error"), f"{call_path}.error")
        calls.append(
            ToolCall(
                call_index=len(calls),
                tool_call_id=optional_str(spec.get("id"), f"{call_path}.id"),
                # LangChain allows an invalid call without a name.
                name=optional_str(spec.get("name"), f"{call_path}.name") or "",
                arguments_raw=args.raw,
                arguments=args.parsed,
                args_valid=False,
                args_error=reason or args.error or "listed in invalid_tool_calls",
            )
        )
    return calls


def _container_trace(record: Record) -> Trace:
    obj: dict[str, Any] = record.value
    for holder_key in _HOLDERS:
        holder = obj if holder_key is None else obj.get(holder_key)
        if isinstance(holder, dict) and "messages" in holder:
            break
    else:
        raise ShapeError('no message list (expected "messages")')
    path = "messages" if holder_key is None else f"{holder_key}.messages"
    messages = _READER.convert_list(holder["messages"], path, record.line)
    fields = {k: v for k, v in obj.items() if k != holder_key} | holder
    return conversation_trace(
        messages,
        record,
        obj,
        format=NAME,
        model=_model_hint(messages),
        tools=tool_defs(fields.get("tools"), "tools"),
        metadata=small_metadata(fields, {"messages", "tools", "id"}),
    )


def _response_model(raw: dict[str, Any]) -> Any:
    # The provider names the model in each AI message's response_metadata.
    data = raw.get("kwargs") or raw.get("data") or raw
    meta = data.get("response_metadata") if isinstance(data, dict) else None
    return meta.get("model_name") or meta.get("model") if isinstance(meta, dict) else None


def _model_hint(messages: list[Message]) -> str | None:
    return first_assistant_model(messages, _response_model)


_READER: MessageListFormat[Message] = MessageListFormat(
    name=NAME,
    is_message=_is_message,
    convert_item=_convert,
    container_trace=_container_trace,
    model_hint=_model_hint,
)


def shape(record: Any) -> Fit:
    """LangChain messages: a message in one of LangChain's serialized forms, an array of them,
    or a state holding them under ``messages`` (``values`` / ``channel_values`` of a snapshot or
    checkpoint)."""
    if isinstance(record, list):
        return combine(langchain_message(item) for item in record)
    if not isinstance(record, dict):
        return Misfit(f"a record is a JSON {json_type(record)}, not an object")
    for holder in (record, record.get("values"), record.get("channel_values")):
        if isinstance(holder, dict) and "messages" in holder:
            return message_list(holder, "messages", langchain_message)
    return langchain_message(record)


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = message_list_format(
    _READER,
    description="LangChain / LangGraph messages (messages_to_dict, dumpd, state dumps)",
    shape=shape,
    # AIMessages carry OpenAI ``tool_calls`` and, as content blocks, Anthropic and Responses items.
    embeds=("openai_chat", "anthropic", "openai_responses"),
)

__all__ = ["FORMAT", "NAME", "convert_message"]
