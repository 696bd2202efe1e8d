"""Chat messages as tracing spans carry them, in every dialect, read leniently.

An LLM span (a Langfuse GENERATION, an OTel inference span) holds its prompt and its answer as
messages in whatever shape the instrumentation chose: OpenAI chat messages, OTel GenAI
``parts``, Gemini contents, Responses items, LangChain dumps (``dumpd``, ``messages_to_dict``,
``model_dump``, and the ``{role, content, additional_kwargs}`` form of Langfuse's LangChain
integration) or pydantic-ai events. :func:`read_message` turns one
of them into a :class:`SourceMessage`: the canonical messages it became, and a key to recognize
the same message when a later span sends it again. (``_span_payloads`` finds the messages in a
span's fields and attributes.)

Reading is lenient on purpose: a span export mixes many instrumentations, and one odd message
must not lose the whole trace. What is not understood gives no message (its input position
stays empty) instead of raising.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from db.contract import exact_json
from db.contract.vocabulary import Role
from ingest.formats._common import (
    ROLE_MAP,
    ShapeError,
    json_call,
    opaque_message,
    opaque_role,
    text_of,
    tool_defs,
    type_name,
)
from ingest.model import Message, ToolCall, ToolDef, ToolResult

#: Message roles and LangChain message types, with Gemini's ``model``.
ROLES: dict[str, Role] = {**ROLE_MAP, "model": "assistant", "ai": "assistant", "human": "user"}
_LANGCHAIN_CLASSES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
}
_RESPONSES_CALLS = ("function_call", "custom_tool_call")
_RESPONSES_OUTPUTS = ("function_call_output", "custom_tool_call_output")
#: Part types of OTel GenAI messages (and the content parts of the chat APIs) that carry no
#: call or result: their text is read or they stay in the raw payload.
_KNOWN_PART_TYPES = frozenset(
    {"text", "tool_call", "tool_call_response", "blob", "uri", "file", "reasoning", "thinking",
     "image", "image_url", "input_text", "output_text", "input_image", "input_audio", "refusal"}
)  # fmt: skip
#: The fields of a Gemini ``Part`` (both naming conventions), which has no ``type``.
_GEMINI_PART_FIELDS = frozenset(
    {"text", "inline_data", "inlineData", "file_data", "fileData", "function_call",
     "functionCall", "function_response", "functionResponse", "executable_code",
     "executableCode", "code_execution_result", "codeExecutionResult", "thought",
     "thought_signature", "thoughtSignature", "video_metadata", "videoMetadata"}
)  # fmt: skip

#: A source message's identity: per canonical message, its role, text, calls and answered id.
Key = tuple[tuple[str, str, tuple[tuple[str, str | None], ...], str | None], ...]
#: Input messages by position (OpenInference attributes may skip positions).
Positioned = dict[int, "SourceMessage"]


@dataclass(slots=True)
class SourceMessage:
    """One message as a span carried it: the canonical messages it became (an OTel ``user``
    message with three ``tool_call_response`` parts becomes three tool messages)."""

    messages: list[Message]
    #: Tool definitions sent as a message (Langfuse's LangChain integration): not a message.
    tools: list[ToolDef] = field(default_factory=list)
    _key: Key | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> Key:
        """What identifies the message when a later span sends it again (computed once: a
        conversation is aligned before anything changes its messages)."""
        if self._key is None:
            self._key = tuple(
                (
                    m.role,
                    m.content.strip(),
                    tuple((c.name, c.tool_call_id) for c in m.tool_calls),
                    m.tool_result.tool_call_id if m.tool_result else None,
                )
                for m in self.messages
            )
        return self._key


#: Messages already read in one export, by position and raw bytes: every LLM call sends the
#: whole history again, and reading it once keeps a long run linear in practice.
Memo = dict[tuple[int, bytes], "SourceMessage | None"]


def maybe_json(value: Any) -> Any:
    """A JSON string attribute parsed (exporters serialize lists and objects), else as is."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def dump(value: Any) -> str:
    """Compact JSON text of a parsed value (integers beyond 64 bits as text)."""
    try:
        return exact_json.dumps_bytes(value, orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        import json

        return json.dumps(value, default=str, ensure_ascii=False)


def content_text(value: Any) -> str:
    """What a tool or the model reads: text as is, content parts joined, other JSON dumped.

    >>> content_text([{"type": "text", "text": "a"}]), content_text([{"title": "x"}])
    ('a', '[{"title":"x"}]')
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(_is_part(p) for p in value):
        return text_of(value)
    return dump(value)


def call_id(value: Any) -> str | None:
    """A call id; a list of ids (Microsoft Agent Framework sends ``[run_id, call_id]``) gives
    its last one, the call's own id."""
    if isinstance(value, list):
        ids = [v for v in value if isinstance(v, str | int) and not isinstance(v, bool)]
        value = ids[-1] if ids else None
    if isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def make_call(index: int, ident: Any, name: Any, arguments: Any) -> ToolCall:
    """A canonical call; a missing name is ``""`` (the call still counts)."""
    return json_call(index, call_id(ident), name if isinstance(name, str) else "", arguments)


def result_message(
    content: Any, ident: Any, name: Any, raw: Any, error: bool | None = None, source: str = ""
) -> Message:
    """A canonical Tool Message."""
    result = ToolResult(
        tool_call_id=call_id(ident),
        name=name if isinstance(name, str) else None,
        explicit_error=error,
        explicit_source=source if error is not None else None,
    )
    return Message(seq=0, role="tool", content=content_text(content), tool_result=result, raw=raw)


# ---------------------------------------------------------------------------------------------
# One message object


def read_message(item: Any) -> SourceMessage | None:
    """One message object in any dialect; ``None`` when it is not a message."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind in _RESPONSES_CALLS or kind in _RESPONSES_OUTPUTS:
        return _responses_item(item)
    data, role = _unwrap(item)
    if role is None:
        inner = data.get("message")
        return read_message(inner) if isinstance(inner, dict) else None
    if role == "tool" and is_definition(data.get("content")):
        content = data["content"]
        return SourceMessage(
            [], tools=definitions(content if isinstance(content, list) else [content])
        )
    parts = data.get("parts")
    if isinstance(parts, list):
        return SourceMessage(_parts_messages(role, parts, item))
    return SourceMessage(_chat_messages(role, data, item))


def _unwrap(item: dict[str, Any]) -> tuple[dict[str, Any], Role | None]:
    """The message fields and canonical role of OpenAI, LangChain (``dumpd``,
    ``messages_to_dict``, ``model_dump``), OTel and Gemini message objects."""
    data = item
    name: Any = None
    if isinstance(item.get("kwargs"), dict):
        data = item["kwargs"]
        ident = item.get("id")
        last = ident[-1] if isinstance(ident, list) and ident else None
        name = _LANGCHAIN_CLASSES.get(last) if isinstance(last, str) else None
    elif isinstance(item.get("data"), dict) and "type" in item:
        data = item["data"]
        name = item["type"]
    role = data.get("role", name if name is not None else data.get("type"))
    if isinstance(role, str):
        role = role.removesuffix("MessageChunk").removesuffix("Chunk").lower()
        role = {"aimessage": "ai", "humanmessage": "human", "toolmessage": "tool"}.get(role, role)
        return data, ROLES.get(role)
    return data, None


def _is_part(part: Any) -> bool:
    return isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("type"), str))


def is_definition(content: Any) -> bool:
    # {"type": "function", "function": {"name", "parameters"}} without an id: a declared tool.
    items = content if isinstance(content, list) and content else [content]
    return all(
        isinstance(c, dict)
        and c.get("type") == "function"
        and isinstance(c.get("function"), dict)
        and "id" not in c
        and ("parameters" in c["function"] or "description" in c["function"])
        for c in items
    )


def _chat_messages(role: Role, data: dict[str, Any], raw: Any) -> list[Message]:
    """An OpenAI / LangChain / Anthropic-content message (results split into tool messages)."""
    content = data.get("content")
    calls: list[ToolCall] = []
    results: list[Message] = []
    text: str
    if isinstance(content, list) and content and all(_is_part(p) for p in content):
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "tool_use":
                calls.append(
                    make_call(len(calls), part.get("id"), part.get("name"), part.get("input"))
                )
            elif kind == "tool_result":
                flag = part.get("is_error")
                error = flag if isinstance(flag, bool) else None
                ident, body = part.get("tool_use_id"), part.get("content")
                results.append(result_message(body, ident, None, part, error, "is_error"))
            elif kind == "tool-call":  # Vercel AI SDK (``input`` since AI SDK 5)
                arguments = part.get("args", part.get("input"))
                calls.append(
                    make_call(len(calls), part.get("toolCallId"), part.get("toolName"), arguments)
                )
            elif kind == "tool-result":
                results.append(_vercel_result(part))
            elif kind == "function" and isinstance(part.get("function"), dict):
                # Koog writes an assistant's calls as the content of the message.
                spec = part["function"]
                calls.append(
                    make_call(len(calls), part.get("id"), spec.get("name"), spec.get("arguments"))
                )
            else:
                texts.append(part)
        text = text_of(texts)
    else:
        text = content_text(content)
    calls += _listed_calls(data, len(calls))
    if results and not calls and not text:
        return results
    if role == "tool" and not calls:
        status = data.get("status")
        error = {"error": True, "success": False}.get(status) if isinstance(status, str) else None
        ident = data.get("tool_call_id", data.get("tool_use_id"))
        return [result_message(content, ident, data.get("name"), raw, error, "status")]
    if role == "tool":
        role = "assistant"  # Koog sends the assistant's calls back with role "tool"
    message = Message(seq=0, role=role, content=text, tool_calls=calls, raw=raw)
    return [message, *results]


def _vercel_result(part: dict[str, Any]) -> Message:
    """A Vercel AI SDK ``tool-result`` part: ``result`` (before AI SDK 5), or ``output`` as
    ``{type: "text" | "json" | "error-text" | "error-json", value}``; ``isError`` or an
    ``error-`` output type is an explicit error."""
    body = part.get("result", part.get("output"))
    flag = part.get("isError")
    error = flag if isinstance(flag, bool) else None
    if isinstance(body, dict) and isinstance(body.get("type"), str) and "value" in body:
        if error is None and body["type"].startswith("error"):
            error = True
        body = body["value"]
    ident, name = part.get("toolCallId"), part.get("toolName")
    return result_message(body, ident, name, part, error, "isError")


def _listed_calls(data: dict[str, Any], first: int) -> list[ToolCall]:
    """``tool_calls`` (OpenAI or LangChain form), else ``additional_kwargs.tool_calls``, then a
    legacy ``function_call`` and LangChain ``invalid_tool_calls``."""
    listed = data.get("tool_calls")
    extra = data.get("additional_kwargs")
    if not listed and isinstance(extra, dict):
        listed = extra.get("tool_calls")
    calls: list[ToolCall] = []
    for call in listed if isinstance(listed, list) else []:
        if isinstance(call, dict):
            spec = call.get("function")
            if not isinstance(spec, dict):
                spec = call
            arguments = spec.get("arguments", spec.get("args"))
            calls.append(make_call(first + len(calls), call.get("id"), spec.get("name"), arguments))
    legacy = data.get("function_call")
    if isinstance(legacy, dict):
        calls.append(
            make_call(first + len(calls), None, legacy.get("name"), legacy.get("arguments"))
        )
    invalid = data.get("invalid_tool_calls")
    for call in invalid if isinstance(invalid, list) else []:
        if isinstance(call, dict):
            bad = make_call(first + len(calls), call.get("id"), call.get("name"), call.get("args"))
            reason = call.get("error")
            bad.args_valid = False
            bad.args_error = reason if isinstance(reason, str) else "listed in invalid_tool_calls"
            calls.append(bad)
    return calls


def _parts_messages(role: Role, parts: list[Any], raw: Any) -> list[Message]:
    """An OTel GenAI ``parts`` message or a Gemini content (either naming convention)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    unknown: list[Message] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if _is_unknown_part(kind, part):
            # A part type newer than this parser: kept as an opaque message, counted.
            unknown.append(opaque_message(part, type_name(kind), opaque_role(role), None))
            continue
        gemini_call = part.get("function_call", part.get("functionCall"))
        gemini_result = part.get("function_response", part.get("functionResponse"))
        if kind == "text" or (kind is None and isinstance(part.get("text"), str)):
            body = part.get("content", part.get("text"))
            texts.append(body if isinstance(body, str) else content_text(body))
        elif kind == "tool_call":
            calls.append(
                make_call(len(calls), part.get("id"), part.get("name"), part.get("arguments"))
            )
        elif kind == "tool_call_response":
            body = part.get("response", part.get("result"))
            results.append(result_message(body, part.get("id"), part.get("name"), part))
        elif isinstance(gemini_call, dict):
            spec = gemini_call
            calls.append(make_call(len(calls), spec.get("id"), spec.get("name"), spec.get("args")))
        elif isinstance(gemini_result, dict):
            body = gemini_result.get("response")
            # Gemini's convention: an "error" key in the response reports a failure.
            failed = isinstance(body, dict) and bool(body.get("error"))
            error = True if failed else None
            ident, name = gemini_result.get("id"), gemini_result.get("name")
            results.append(result_message(body, ident, name, part, error, "response.error"))
    if role == "tool" and calls:
        role = "assistant"
    if (results or unknown) and not calls and not texts:
        return results + unknown
    return [
        Message(seq=0, role=role, content="\n".join(texts), tool_calls=calls, raw=raw),
        *results,
        *unknown,
    ]


def _is_unknown_part(kind: Any, part: dict[str, Any]) -> bool:
    if kind is None:
        return not any(key in part for key in _GEMINI_PART_FIELDS)
    return not (isinstance(kind, str) and kind in _KNOWN_PART_TYPES)


def _responses_item(item: dict[str, Any]) -> SourceMessage:
    kind = item.get("type")
    if kind in _RESPONSES_OUTPUTS:
        return SourceMessage([result_message(item.get("output"), item.get("call_id"), None, item)])
    arguments = item.get("arguments", item.get("input"))
    call = make_call(0, item.get("call_id"), item.get("name"), arguments)
    return SourceMessage([Message(seq=0, role="assistant", tool_calls=[call], raw=item)])


# ---------------------------------------------------------------------------------------------
# Tool definitions


def definitions(items: Any) -> list[ToolDef]:
    """Declared tools in the shapes spans use (OpenAI, flat, Gemini ``function_declarations``,
    pydantic-ai ``parameters_json_schema``, Vercel AI SDK 5 ``inputSchema``, BeeAI
    ``tool.name``); unreadable ones are skipped."""
    out: list[ToolDef] = []
    for item in maybe_json(items) if isinstance(maybe_json(items), list) else []:
        item = maybe_json(item)
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("function_declarations"), list):
            out += definitions(item["function_declarations"])
            continue
        if "tool.name" in item:
            item = {k.removeprefix("tool."): v for k, v in item.items()}
        for schema_key in ("parameters_json_schema", "inputSchema"):
            if schema_key in item and "parameters" not in item:
                item = {**item, "parameters": item[schema_key]}
        try:
            out += tool_defs([item], "tools")
        except ShapeError:
            continue
    return out
