"""Anthropic Messages content blocks -> canonical messages (shared by ``anthropic`` and
``claude_code``).

A message whose content is a string is one canonical message. A block list splits: every
``tool_result`` block becomes its own ``role: "tool"`` message, in block order, and the other
blocks (text, images, ``tool_use`` …) one message of the source role after them, when there are
any (or when there was no ``tool_result`` at all). ``tool_use`` blocks become the calls of that
message. Text is what the model reads: ``thinking`` and image blocks add none (they stay in the
raw payload).

Server and MCP tools run inside the API call and are answered in the same assistant message:
``server_tool_use`` (web search, web fetch, code execution, tool search …) is a call of kind
``server`` and ``mcp_tool_use`` one of kind ``mcp`` (``ToolCall.kind``), numbered with the
``tool_use`` calls of their message; their results (``web_search_tool_result``,
``web_fetch_tool_result``, ``code_execution_tool_result`` …, :data:`SERVER_RESULT_TYPES`, and
``mcp_tool_result``) become tool messages *after* the message holding the calls, in block order.
``mcp_tool_result.is_error`` is the explicit error flag; a server result whose content is an
error object (``{"type": "web_search_tool_result_error", "error_code": …}``, a type ending in
``_error``) is an explicit error (source ``error_code``); other server results carry no flag.
A block of a type outside :data:`KNOWN_BLOCK_TYPES`
(one newer than this parser) becomes an opaque message (``_common.opaque_message``) of the
message's role after the message, counted as an unknown item.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from db.contract import exact_json
from db.contract.vocabulary import CallKind
from ingest.formats import _common
from ingest.model import Message, ToolCall, ToolResult

#: Result blocks of Anthropic's server tools (anthropic-sdk-python ``ContentBlock`` union).
SERVER_RESULT_TYPES = frozenset(
    {
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
    }
)

#: The block types of the anthropic-sdk-python ``ContentBlock`` / ``ContentBlockParam`` unions
#: (and the beta MCP blocks): read, or kept in the raw payload as described above.
KNOWN_BLOCK_TYPES = SERVER_RESULT_TYPES | {
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "container_upload",
    "mcp_tool_use",
    "mcp_tool_result",
}

#: Call blocks and the kind of call each one is (``tool_use``: the agent's own tools).
CALL_BLOCK_KINDS: dict[str, CallKind] = {
    "tool_use": "client",
    "server_tool_use": "server",
    "mcp_tool_use": "mcp",
}
#: Message fields read here or known to be bookkeeping (others carrying content are counted as
#: unknown fields ``message.<name>``; their values stay in the raw payload).
KNOWN_MESSAGE_FIELDS = frozenset(
    {
        "role", "content", "id", "type", "model", "stop_reason", "stop_sequence", "usage",
        "container", "timestamp", "context_management", "name", "tool_call_id",
    }
)  # fmt: skip
#: Block fields of the known block types (others carrying content: ``<block type>.<name>``).
KNOWN_BLOCK_FIELDS = frozenset(
    {
        "type", "text", "citations", "cache_control", "id", "name", "input", "tool_use_id",
        "content", "is_error", "thinking", "signature", "data", "source", "title", "context",
        "caller", "server_name",
    }
)  # fmt: skip


def _block_fields(blocks: list[Any]) -> list[str]:
    """The unknown fields carrying content of ``blocks`` (see :data:`KNOWN_BLOCK_FIELDS`)."""
    found: list[str] = []
    for block in blocks:
        if isinstance(block, dict):
            where = _common.type_name(block.get("type")) if "type" in block else "text"
            found.extend(_common.unknown_fields(block, KNOWN_BLOCK_FIELDS, where))
    return found


def _is_known(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    if kind is None:
        return isinstance(block.get("text"), str)  # a bare text part, as text_of reads it
    return isinstance(kind, str) and kind in KNOWN_BLOCK_TYPES


def _unchanged(msg: dict[str, Any]) -> Any:
    return msg


def convert_message(
    msg: dict[str, Any],
    path: str,
    line: int | None,
    *,
    wrap: Callable[[dict[str, Any]], Any] = _unchanged,
    first_call_index: int = 0,
    timestamp: datetime | None = None,
    keep_usage: bool = True,
) -> list[Message]:
    """Canonical messages of one Anthropic message (see the module docstring).

    ``wrap`` builds each message's raw payload from the (possibly split) source message, so
    Claude Code can keep its line envelope; ``first_call_index`` continues the call numbering
    of an API message split over several lines; ``keep_usage=False`` drops usage repeated on
    such lines.
    """
    role = _common.canonical_role(msg.get("role"), f"{path}.role")
    usage = msg.get("usage") if keep_usage and isinstance(msg.get("usage"), dict) else None
    common: dict[str, Any] = {
        "seq": 0,
        "timestamp": timestamp or _common.parse_timestamp(msg.get("timestamp")),
        "source_id": _common.optional_str(msg.get("id"), f"{path}.id"),
        "source_line": line,
    }
    content = msg.get("content")
    if not isinstance(content, list):
        _common.expect_text_or_list(content, f"{path}.content")
        message = Message(
            role=role, content=_common.text_of(content), usage=usage, raw=wrap(msg), **common
        )
        message.unknown_fields = _common.unknown_fields(msg, KNOWN_MESSAGE_FIELDS, "message")
        if role == "tool":
            message.tool_result = ToolResult(
                tool_call_id=_common.optional_str(msg.get("tool_call_id"), f"{path}.tool_call_id"),
                name=_common.optional_str(msg.get("name"), f"{path}.name"),
            )
        return [message]
    results: list[tuple[int, dict[str, Any]]] = []
    answered: list[tuple[int, dict[str, Any]]] = []  # server / MCP results, after the calls
    rest: list[Any] = []
    unknown: list[dict[str, Any]] = []
    for index, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            results.append((index, block))
        elif isinstance(block, dict) and _is_server_result(block):
            answered.append((index, block))
        elif isinstance(block, dict) and not _is_known(block):
            unknown.append(block)
        elif isinstance(block, dict | str):
            rest.append(block)
        else:
            raise _common.ShapeError(
                f"{path}.content[{index}]: expected an object, got {_common.json_type(block)}"
            )
    split = len(results) + len(answered) + (1 if rest else 0) + len(unknown) > 1
    messages = [
        Message(
            role="tool",
            content=_common.text_of(block.get("content")),
            tool_result=_tool_result(block, f"{path}.content[{index}]"),
            raw=wrap({**msg, "content": [block]}) if split else wrap(msg),
            unknown_fields=_block_fields([block]),
            **common,
        )
        for index, block in results
    ]
    if rest or not (results or answered or unknown):
        messages.append(
            Message(
                role=role,
                content=_common.text_of(rest),
                tool_calls=_tool_calls(content, path, first_call_index),
                raw=wrap({**msg, "content": rest}) if split else wrap(msg),
                unknown_fields=_block_fields(rest),
                **common,
            )
        )
    messages += [
        Message(
            role="tool",
            content=_server_result_text(block.get("content")),
            tool_result=_server_result(block, f"{path}.content[{index}]"),
            raw=wrap({**msg, "content": [block]}) if split else wrap(msg),
            **common,
        )
        for index, block in answered
    ]
    for block in unknown:
        opaque = _common.opaque_message(
            block,
            _common.type_name(block.get("type")),
            _common.opaque_role(role),
            line,
            raw=wrap({**msg, "content": [block]}) if split else wrap(msg),
        )
        opaque.timestamp, opaque.source_id = common["timestamp"], common["source_id"]
        messages.append(opaque)
    if usage is not None:
        messages[0].usage = usage
    fields = _common.unknown_fields(msg, KNOWN_MESSAGE_FIELDS, "message")
    if fields:
        messages[0].unknown_fields = [*fields, *messages[0].unknown_fields]
    return messages


def tool_use_count(msg: dict[str, Any]) -> int:
    """How many ``tool_use`` blocks a message holds (call numbering across split lines)."""
    content = msg.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for b in content if isinstance(b, dict) and _call_kind(b) is not None)


def _call_kind(block: dict[str, Any]) -> CallKind | None:
    kind = block.get("type")
    return CALL_BLOCK_KINDS.get(kind) if isinstance(kind, str) else None


def _is_server_result(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    return kind == "mcp_tool_result" or (isinstance(kind, str) and kind in SERVER_RESULT_TYPES)


def _tool_calls(content: list[Any], path: str, first_call_index: int) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if not (isinstance(kind, str) and kind in CALL_BLOCK_KINDS):
            continue
        block_path = f"{path}.content[{index}]"
        calls.append(
            _common.json_call(
                first_call_index + len(calls),
                _common.optional_str(block.get("id"), f"{block_path}.id"),
                _common.required_str(block.get("name"), f"{block_path}.name"),
                block.get("input"),
                CALL_BLOCK_KINDS[kind],
            )
        )
    return calls


def _tool_result(block: dict[str, Any], path: str) -> ToolResult:
    return _flagged_result(
        block,
        path,
        _common.optional_str(block.get("tool_use_id"), f"{path}.tool_use_id"),
        name=_common.optional_str(block.get("name"), f"{path}.name"),
    )


def _flagged_result(
    block: dict[str, Any], path: str, call_id: str | None, name: str | None = None
) -> ToolResult:
    """A result whose content is a string or an array of blocks and whose error flag, when
    present, is the boolean ``is_error``."""
    _common.expect_text_or_list(block.get("content"), f"{path}.content")
    is_error = block.get("is_error")
    flagged = isinstance(is_error, bool)
    return ToolResult(
        tool_call_id=call_id,
        name=name,
        explicit_error=is_error if flagged else None,
        explicit_source="is_error" if flagged else None,
    )


def _server_result(block: dict[str, Any], path: str) -> ToolResult:
    """A server tool's or MCP server's result: its call id, and its error flag (``is_error`` on
    MCP results; an error object as the content of a server result)."""
    content = block.get("content")
    call_id = _common.optional_str(block.get("tool_use_id"), f"{path}.tool_use_id")
    if block.get("type") == "mcp_tool_result":
        return _flagged_result(block, path, call_id)
    kind = content.get("type") if isinstance(content, dict) else None
    failed = isinstance(kind, str) and kind.endswith("_error")
    return ToolResult(
        tool_call_id=call_id,
        explicit_error=True if failed else None,
        explicit_source="error_code" if failed else None,
    )


def _server_result_text(content: Any) -> str:
    """What a server or MCP result says: its text parts, else its content as compact JSON
    (search hits, fetched documents, stdout / stderr, an error code)."""
    text = _common.text_of(content)
    if text or content is None or isinstance(content, str):
        return text
    return exact_json.dumps_bytes(content, orjson.OPT_NON_STR_KEYS).decode()
