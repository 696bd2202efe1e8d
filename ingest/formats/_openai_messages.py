"""OpenAI Chat Completions messages -> canonical messages.

Shared by ``openai_chat`` (conversations, tau-bench, tau2, SWE-agent), ``toolbench`` (legacy
``function_call`` lists) and ``langchain`` (provider-form ``additional_kwargs.tool_calls``).
"""

from __future__ import annotations

from typing import Any

from db.contract.vocabulary import Role
from ingest.formats import _common
from ingest.model import Message, ToolCall, ToolResult

#: Message fields this module reads, or knows to be bookkeeping; another field carrying content
#: is counted as an unknown field (its value stays in the raw message). SWE-agent's
#: ``thought`` and ``action`` repeat what its ``content`` says; ``agent``, ``message_type`` and
#: ``is_demo`` say who spoke and why. tau2-bench's ``requestor`` (agent or user simulator),
#: ``turn_idx``, ``cost`` and ``raw_data`` (the provider's response the message came from) are
#: its bookkeeping.
KNOWN_MESSAGE_FIELDS = frozenset(
    {
        "role", "content", "name", "tool_calls", "function_call", "tool_call_id",
        "tool_call_ids", "id", "usage", "timestamp", "refusal", "error", "audio",
        "annotations", "type", "status", "thought", "action", "agent", "message_type", "is_demo",
        "requestor", "turn_idx", "cost", "raw_data",
    }
)  # fmt: skip
#: Content part types of Chat Completions (text read; images, audio and files kept in raw).
KNOWN_PART_TYPES = frozenset(
    {
        *_common.TEXT_PART_TYPES,
        "refusal",
        "image_url",
        "input_audio",
        "file",
        "image",
        "input_image",
    }
)


def convert_message(msg: dict[str, Any], path: str, line: int | None) -> list[Message]:
    """One OpenAI chat message as canonical messages (one, plus an opaque message for each
    content part of an unknown type).

    Tool calls are read on every non-tool message: tau2's user simulator makes calls too. A
    message of an unknown role (one newer than this parser) is kept as an opaque message,
    counted as the unknown item ``role:<role>``; a missing role is still an error.
    """
    given = msg.get("role")
    if given is not None and not (isinstance(given, str) and given in _common.ROLE_MAP):
        return [_common.opaque_message(msg, f"role:{_common.type_name(given)}", "assistant", line)]
    role = _common.canonical_role(given, f"{path}.role")
    usage = msg.get("usage")
    is_tool = role == "tool"
    # Read in the order the checks report errors: content, id, then the calls or the result.
    content = _common.text_of(msg.get("content"))
    source_id = _common.optional_str(msg.get("id"), f"{path}.id")
    # Every value below is already checked by the readers above (role, strings, timestamp), so
    # the models are built without re-validation: this is the hottest loop of the import.
    message = _common.construct(
        Message,
        seq=0,
        role=role,
        content=content,
        timestamp=_common.parse_timestamp(msg.get("timestamp")),
        tool_calls=[] if is_tool else tool_calls(msg, path),
        tool_result=_tool_result(msg, path) if is_tool else None,
        usage=dict(usage) if isinstance(usage, dict) else None,
        source_id=source_id,
        source_line=line,
        branch=None,
        branch_parent=None,
        raw=msg,
        unknown_fields=_common.unknown_fields(msg, KNOWN_MESSAGE_FIELDS, "message"),
    )
    return [message, *_unknown_parts(msg, role, line)]


def _unknown_parts(msg: dict[str, Any], role: Role, line: int | None) -> list[Message]:
    """An opaque message for each content part of a type outside :data:`KNOWN_PART_TYPES`."""
    content = msg.get("content")
    if not isinstance(content, list):
        return []
    return [
        _common.opaque_message(
            part, _common.type_name(part["type"]), _common.opaque_role(role), line
        )
        for part in content
        if isinstance(part, dict)
        and "type" in part
        and not (isinstance(part["type"], str) and part["type"] in KNOWN_PART_TYPES)
    ]


def convert_messages(items: Any, path: str, line: int | None) -> list[Message]:
    """Every message of an OpenAI message list at ``path`` (seq still to be numbered)."""
    messages: list[Message] = []
    for index, item in enumerate(_common.expect_list(items, path)):
        item_path = f"{path}[{index}]"
        messages.extend(convert_message(_common.expect_object(item, item_path), item_path, line))
    return messages


def tool_calls(msg: dict[str, Any], path: str) -> list[ToolCall]:
    """A message's calls: its ``tool_calls`` entries, then a legacy ``function_call``."""
    calls: list[ToolCall] = []
    listed = msg.get("tool_calls")
    if listed is not None:
        for index, call in enumerate(_common.expect_list(listed, f"{path}.tool_calls")):
            call_path = f"{path}.tool_calls[{index}]"
            calls.append(tool_call(_common.expect_object(call, call_path), call_path, index))
    legacy = msg.get("function_call")
    if legacy is not None:
        spec = _common.expect_object(legacy, f"{path}.function_call")
        calls.append(_function_call(spec, f"{path}.function_call", len(calls), call_id=None))
    return calls


def tool_call(call: dict[str, Any], path: str, call_index: int) -> ToolCall:
    """One ``tool_calls`` entry: ``function`` (JSON-string or object arguments), ``custom``, or
    tau2's flat ``{"id", "name", "arguments", "requestor"}`` (no ``function`` object)."""
    call_id = _common.optional_str(call.get("id"), f"{path}.id")
    kind = call.get("type", "function")
    if kind == "function" and "function" not in call and "name" in call:
        # tau2-bench's ToolCall model: the name and arguments sit on the call itself.
        return _function_call(call, path, call_index, call_id)
    if kind == "function":
        spec = _common.expect_object(call.get("function"), f"{path}.function")
        return _function_call(spec, f"{path}.function", call_index, call_id)
    if kind == "custom":
        # Custom tools take free text, not JSON: the text is the arguments, always valid.
        spec = _common.expect_object(call.get("custom"), f"{path}.custom")
        text = _common.optional_str(spec.get("input"), f"{path}.custom.input")
        return _common.construct(
            ToolCall,
            call_index=call_index,
            tool_call_id=call_id,
            name=_common.required_str(spec.get("name"), f"{path}.custom.name"),
            arguments_raw=text,
            arguments=text,
            args_valid=True,
            args_error=None,
            kind="client",
        )
    raise _common.ShapeError(f"{path}.type: unknown tool call type {kind!r}")


def _function_call(
    spec: dict[str, Any], path: str, call_index: int, call_id: str | None
) -> ToolCall:
    name = _common.required_str(spec.get("name"), f"{path}.name")
    return _common.json_call(call_index, call_id, name, spec.get("arguments"))


def _tool_result(msg: dict[str, Any], path: str) -> ToolResult:
    call_id = _common.optional_str(msg.get("tool_call_id"), f"{path}.tool_call_id")
    if call_id is None and msg.get("tool_call_ids") is not None:
        # SWE-agent lists the ids; one observation answers one call, the first one.
        ids = _common.expect_list(msg["tool_call_ids"], f"{path}.tool_call_ids")
        call_id = _common.optional_str(ids[0], f"{path}.tool_call_ids[0]") if ids else None
    if call_id is None and msg.get("role") == "tool":
        # tau2 puts the id of the answered call in the tool message's own ``id``.
        call_id = _common.optional_str(msg.get("id"), f"{path}.id")
    error = msg.get("error")
    flagged = isinstance(error, bool)
    return _common.construct(
        ToolResult,
        tool_call_id=call_id,
        name=_common.optional_str(msg.get("name"), f"{path}.name"),
        explicit_error=error if flagged else None,
        explicit_source="error" if flagged else None,
        duration_ms=None,
    )
