"""Anthropic Messages API conversations (``tool_use`` / ``tool_result`` content blocks).

Accepted containers (each record is one JSONL line, one top-level array item or one document):

* ``{"messages": [...], "system", "tools", "model", "id", ...}``: one trace per object; a
  ``system`` prompt (string or text blocks) becomes the first, system, message; ``tools`` in
  Anthropic form (``name``, ``description``, ``input_schema``) become the tool definitions; the
  other fields go to the metadata;
* message objects (a JSON array of messages, or JSONL with one per line): all of a file's
  message records together are ONE trace; its model is the first assistant message's ``model``;
* an array of messages on one JSONL line: one trace.

Each ``tool_result`` block becomes its own tool message (``is_error`` is the explicit error
flag); see ``_anthropic_blocks`` for the exact split.
"""

from __future__ import annotations

from typing import Any

from ingest.formats import _anthropic_blocks
from ingest.formats._common import (
    ShapeError,
    conversation_trace,
    expect_text_or_list,
    first_assistant_model,
    json_type,
    small_metadata,
    text_of,
    tool_defs,
)
from ingest.formats._record_loop import MessageListFormat, message_list_format
from ingest.formats._shapes import (
    SIGN,
    Fit,
    Misfit,
    anthropic_message,
    combine,
    message_list,
)
from ingest.input.records import Record
from ingest.model import Message, Trace

NAME = "anthropic"

_TRACE_FIELDS = {"messages", "system", "tools", "id", "model", "agent"}


def _is_message(value: dict[str, Any]) -> bool:
    return "role" in value and "messages" not in value


def _container_trace(record: Record) -> Trace:
    obj: dict[str, Any] = record.value
    if "messages" not in obj:
        raise ShapeError('no message list (expected "messages")')
    messages = _READER.convert_list(obj["messages"], "messages", record.line)
    system = obj.get("system")
    if expect_text_or_list(system, "system") is not None:
        prompt = Message(
            seq=0, role="system", content=text_of(system), source_line=record.line, raw=system
        )
        messages.insert(0, prompt)
    model = obj.get("model")
    agent = obj.get("agent")
    return conversation_trace(
        messages,
        record,
        obj,
        format=NAME,
        agent=agent if isinstance(agent, str) else None,
        model=model if isinstance(model, str) else _model_hint(messages),
        tools=tool_defs(obj.get("tools"), "tools"),
        metadata=small_metadata(obj, _TRACE_FIELDS),
    )


def _model_hint(messages: list[Message]) -> str | None:
    # API responses logged as messages name their model; the first assistant one wins.
    return first_assistant_model(messages, lambda raw: raw.get("model"))


_READER: MessageListFormat[Message] = MessageListFormat(
    name=NAME,
    is_message=_is_message,
    convert_item=_anthropic_blocks.convert_message,
    container_trace=_container_trace,
    model_hint=_model_hint,
)


def shape(record: Any) -> Fit:
    """Anthropic messages: a message, an array of them, or a conversation object holding them
    under ``messages`` (``SIGN`` too with a ``system`` prompt, tools with ``input_schema``, or a
    response's ``stop_reason``)."""
    if isinstance(record, list):
        return combine(anthropic_message(item) for item in record)
    if not isinstance(record, dict):
        return Misfit(f"a record is a JSON {json_type(record)}, not an object")
    if "messages" not in record:
        if "role" in record or record.get("type") == "message":
            return anthropic_message(record)
        return Misfit('no "messages" array and no "role"')
    fit = message_list(record, "messages", anthropic_message)
    if isinstance(fit, Misfit):
        return fit
    tools = record.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return SIGN
    return SIGN if "system" in record or "stop_reason" in record else fit


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = message_list_format(
    _READER,
    description="Anthropic Messages conversations (tool_use / tool_result blocks, is_error)",
    shape=shape,
    # Anthropic messages share the chat shape (role, content): a chat message list is read by
    # either, and the Anthropic reading wins only on what Anthropic alone has (blocks, system).
    embeds=("openai_chat",),
)

__all__ = ["FORMAT", "NAME"]
