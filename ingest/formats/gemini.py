"""Google Gemini ``contents`` (``generateContent`` requests, and request–response pairs).

Accepted records (each record is one JSONL line, one top-level array item or one document):

* a ``GenerateContentRequest``: ``{"contents": [...], "systemInstruction", "tools", ...}``
  (REST camelCase, or the Python SDK's ``system_instruction`` / ``function_declarations``);
* a logged pair ``{"request": {…request…}, "response": {"candidates": [...], "usageMetadata",
  "modelVersion"}}``: the request's contents, then the first candidate's content.

Each record is one trace. A ``Content`` is ``{"role": "user" | "model", "parts": [...]}``;
``text`` parts are its text, ``functionCall`` parts (``{"id"?, "name", "args"}``) the calls of a
``model`` content, and every ``functionResponse`` part (``{"id"?, "name", "response"}``) its own
tool message. Results pair with calls by ``id`` when Gemini gives one (the Live API and newer
models do), else by position and name. A ``response`` holding an ``error`` key is an explicit
error (source ``response.error``: the convention the Gemini docs give for reporting a failed
function). ``systemInstruction`` becomes the first, system, message; ``functionDeclarations``
the tool definitions; the response's ``usageMetadata`` the usage of its message. Other parts
(``inlineData``, ``executableCode`` …) stay in the raw payload; a part with none of ``Part``'s
fields is kept as an opaque message.
"""

from __future__ import annotations

from typing import Any

from db.contract.vocabulary import Role
from ingest.formats._common import (
    ShapeError,
    expect_list,
    expect_object,
    json_call,
    json_type,
    make_trace,
    opaque_message,
    opaque_role,
    optional_str,
    required_str,
    small_metadata,
    text_of,
    tool_defs,
    type_name,
)
from ingest.formats._record_loop import trace_per_record_format
from ingest.formats._shapes import (
    SIGN,
    Fit,
    Misfit,
    object_list,
)
from ingest.input.records import Record
from ingest.model import Message, ToolCall, ToolDef, ToolResult, Trace

NAME = "gemini"

#: Gemini content roles and the canonical role of each.
_ROLES: dict[str, Role] = {
    "user": "user",
    "model": "assistant",
    "function": "user",
    "system": "system",
}

#: The fields of a Gemini ``Part`` (REST camelCase and the Python SDK's snake_case).
_PART_FIELDS = frozenset(
    {
        "text", "thought", "thoughtSignature", "thought_signature", "inlineData", "inline_data",
        "fileData", "file_data", "functionCall", "function_call", "functionResponse",
        "function_response", "executableCode", "executable_code", "codeExecutionResult",
        "code_execution_result", "videoMetadata", "video_metadata", "partMetadata",
    }
)  # fmt: skip

_REQUEST_FIELDS = {"contents", "systemInstruction", "system_instruction", "tools", "model"}


def _field(obj: dict[str, Any], camel: str, snake: str) -> Any:
    return obj[camel] if camel in obj else obj.get(snake)


def _read(record: Record) -> Trace:
    obj = expect_object(record.value, "record")
    request, response = obj, None
    if "request" in obj and "contents" not in obj:
        request = expect_object(obj["request"], "request")
        response = expect_object(obj["response"], "response") if "response" in obj else None
    if "contents" not in request:
        raise ShapeError('no contents (expected "contents" or "request.contents")')
    messages = _system(request, record.line)
    for index, content in enumerate(expect_list(request["contents"], "contents")):
        path = f"contents[{index}]"
        messages += _content(expect_object(content, path), path, record.line)
    model = request.get("model")
    if response is not None:
        candidates = expect_list(response.get("candidates", []), "response.candidates")
        if candidates:
            first = expect_object(candidates[0], "response.candidates[0]")
            content = expect_object(first.get("content"), "response.candidates[0].content")
            answer = _content(content, "response.candidates[0].content", record.line)
            usage = _field(response, "usageMetadata", "usage_metadata")
            if answer and isinstance(usage, dict):
                answer[0].usage = usage
            messages += answer
        version = _field(response, "modelVersion", "model_version")
        model = version if isinstance(version, str) else model
    consumed = _REQUEST_FIELDS | {"request", "response", "generationConfig"}
    return make_trace(
        messages,
        format=NAME,
        source_file=record.source_file,
        source_line=record.line,
        model=model if isinstance(model, str) else None,
        tools=_declarations(request.get("tools")),
        metadata=small_metadata(obj if response is None else request, consumed),
    )


def _system(request: dict[str, Any], line: int) -> list[Message]:
    instruction = _field(request, "systemInstruction", "system_instruction")
    if instruction is None:
        return []
    if isinstance(instruction, str):
        text = instruction
    else:
        parts = expect_object(instruction, "systemInstruction").get("parts", [])
        text = text_of(expect_list(parts, "systemInstruction.parts"))
    return [Message(seq=0, role="system", content=text, source_line=line, raw=instruction)]


def _content(content: dict[str, Any], path: str, line: int) -> list[Message]:
    """One Gemini ``Content``: a message with its text and calls, then one tool message per
    ``functionResponse`` part, then opaque messages for unknown parts."""
    role_name = content.get("role", "user")
    if not (isinstance(role_name, str) and role_name in _ROLES):
        raise ShapeError(f"{path}.role: unknown role {role_name!r}")
    role = _ROLES[role_name]
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    unknown: list[Message] = []
    for index, part in enumerate(expect_list(content.get("parts"), f"{path}.parts")):
        part_path = f"{path}.parts[{index}]"
        part = expect_object(part, part_path)
        call = _field(part, "functionCall", "function_call")
        response = _field(part, "functionResponse", "function_response")
        if call is not None:
            calls.append(_call(expect_object(call, f"{part_path}.functionCall"), part_path, calls))
        elif response is not None:
            spec = expect_object(response, f"{part_path}.functionResponse")
            results.append(_result(spec, part, f"{part_path}.functionResponse", line))
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        elif not any(key in part for key in _PART_FIELDS):
            unknown.append(
                opaque_message(part, type_name(next(iter(part), None)), opaque_role(role), line)
            )
    messages: list[Message] = []
    if texts or calls or not (results or unknown):
        messages.append(
            Message(
                seq=0,
                role="assistant" if calls else role,
                content="\n".join(texts),
                tool_calls=calls,
                source_line=line,
                raw=content,
            )
        )
    return messages + results + unknown


def _call(spec: dict[str, Any], path: str, earlier: list[ToolCall]) -> ToolCall:
    return json_call(
        len(earlier),
        optional_str(spec.get("id"), f"{path}.functionCall.id"),
        required_str(spec.get("name"), f"{path}.functionCall.name"),
        spec.get("args"),
    )


def _result(spec: dict[str, Any], part: dict[str, Any], path: str, line: int) -> Message:
    body = spec.get("response")
    if body is not None and not isinstance(body, dict):
        raise ShapeError(f"{path}.response: expected an object, got {json_type(body)}")
    failed = isinstance(body, dict) and "error" in body and body["error"] not in (None, False, "")
    return Message(
        seq=0,
        role="tool",
        content=text_of(body) if body is not None else "",
        tool_result=ToolResult(
            tool_call_id=optional_str(spec.get("id"), f"{path}.id"),
            name=required_str(spec.get("name"), f"{path}.name"),
            explicit_error=True if failed else None,
            explicit_source="response.error" if failed else None,
        ),
        source_line=line,
        raw=part,
    )


def _declarations(tools: Any) -> list[ToolDef]:
    """``tools[].functionDeclarations`` (or ``function_declarations``); other tools (Google
    Search, code execution) declare no function and are left out."""
    defs: list[ToolDef] = []
    for index, tool in enumerate(expect_list(tools, "tools") if tools is not None else []):
        tool = expect_object(tool, f"tools[{index}]")
        declared = _field(tool, "functionDeclarations", "function_declarations")
        if declared is not None:
            defs += tool_defs(declared, f"tools[{index}].functionDeclarations")
    return defs


def shape(record: Any) -> Fit:
    """A Gemini request: an object holding a ``contents`` array of objects, directly or in its
    ``request`` object."""
    if not isinstance(record, dict):
        return Misfit(f"a record is a JSON {json_type(record)}, not an object")
    request = record.get("request") if isinstance(record.get("request"), dict) else record
    contents = object_list(request, "contents")
    return contents if isinstance(contents, Misfit) else SIGN


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = trace_per_record_format(
    NAME,
    _read,
    description="Gemini contents / generateContent requests and responses (functionCall parts)",
    shape=shape,
    # Logged {"request", "response"} pairs of Gemini calls carry request_log's `"request"` key;
    # request_log reads only OpenAI and Anthropic requests: one holding `contents` is Gemini's.
    embeds=("request_log",),
)

__all__ = ["FORMAT", "NAME"]
