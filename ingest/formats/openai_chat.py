"""OpenAI Chat Completions message lists (also tau-bench, tau2, SWE-agent and fine-tuning JSONL).

Accepted containers (each record is one JSONL line, one top-level array item or one document):

* an object holding the message list under ``messages``, ``traj`` (tau-bench) or ``history``
  (SWE-agent ``.traj``): one trace per object. ``id`` becomes the external id, ``model`` and
  ``agent`` the trace's, ``tools``/``functions`` its tool definitions; the other fields
  (tau-bench ``task_id``, ``trial``, ``reward``, ``info`` …) go to the metadata;
* a message object (a JSON array of messages, or JSONL with one message per line): all such
  records of a file together are ONE trace;
* an array of messages on one JSONL line: one trace.

Calls come from ``tool_calls`` (``function`` and ``custom``) and legacy ``function_call``;
results are ``role: "tool"`` (``tool_call_id``; SWE-agent ``tool_call_ids``; tau2 message ``id``
and ``error: true``) and legacy ``role: "function"`` messages (a name, no id).
"""

from __future__ import annotations

from typing import Any

from ingest.formats import _openai_messages
from ingest.formats._common import (
    ShapeError,
    conversation_trace,
    json_type,
    parse_timestamp,
    small_metadata,
    tool_defs,
)
from ingest.formats._record_loop import MessageListFormat, message_list_format
from ingest.formats._shapes import (
    Fit,
    Misfit,
    chat_message,
    combine,
    message_list,
)
from ingest.input.records import Record
from ingest.model import Message, Trace

NAME = "openai_chat"

#: Keys that may hold the message list of a conversation object, in the order tried.
MESSAGE_KEYS = ("messages", "traj", "history")

#: Conversation fields that become Trace fields rather than metadata.
_TRACE_FIELDS = {"id", "model", "agent", "tools", "functions"}

_TIMESTAMP_KEYS = ("created", "created_at", "timestamp")


def _is_message(value: dict[str, Any]) -> bool:
    return "role" in value and not any(key in value for key in MESSAGE_KEYS)


def _container_trace(record: Record) -> Trace:
    obj: dict[str, Any] = record.value
    key = next((k for k in MESSAGE_KEYS if k in obj), None)
    if key is None:
        raise ShapeError('no message list (expected "messages", "traj" or "history")')
    messages = _READER.convert_list(obj[key], key, record.line)
    stamp_key = next((k for k in _TIMESTAMP_KEYS if k in obj), None)
    return conversation_trace(
        messages,
        record,
        obj,
        format=NAME,
        agent=_text_field(obj, "agent"),
        model=_text_field(obj, "model"),
        started_at=parse_timestamp(obj.get(stamp_key)) if stamp_key else None,
        tools=tool_defs(obj.get("tools"), "tools") + tool_defs(obj.get("functions"), "functions"),
        metadata=small_metadata(obj, _TRACE_FIELDS | {key}),
    )


def _text_field(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


_READER: MessageListFormat[Message] = MessageListFormat(
    name=NAME,
    is_message=_is_message,
    convert_item=_openai_messages.convert_message,
    container_trace=_container_trace,
)


def shape(record: Any) -> Fit:
    """OpenAI chat messages: a message (``role``), an array of them, or a conversation object
    holding them under ``messages``, ``traj`` (tau-bench) or ``history`` (SWE-agent)."""
    if isinstance(record, list):
        return combine(chat_message(item) for item in record)
    if not isinstance(record, dict):
        return Misfit(f"a record is a JSON {json_type(record)}, not an object")
    key = next((k for k in MESSAGE_KEYS if k in record), None)
    if key is not None:
        return message_list(record, key, chat_message)
    if "role" in record:
        return chat_message(record)
    return Misfit('no "messages" / "traj" / "history" array and no "role"')


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = message_list_format(
    _READER,
    description="OpenAI Chat Completions messages (tool_calls / role tool; tau-bench, SWE-agent)",
    shape=shape,
)

__all__ = ["FORMAT", "NAME"]
