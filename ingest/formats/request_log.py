"""Logs of model requests (with or without their responses), rebuilt into conversations.

A proxy or an SDK wrapper logs every model request, and each request repeats the history so
far. Each record (JSONL line, array item or document) is one request; the file's requests are
grouped into conversations by ``_request_history`` (an explicit conversation id shared by
several requests, a ``previous_response_id`` chain, else a prompt extending an earlier
request's prompt; branches kept as ``Message.branch``): one trace per conversation, each
message, call and result once, the response's calls completing it.

A record is one of:

* a **request/response pair** ``{"request": {...}, "response": {...}, ...}`` as SDK wrappers
  and gateways log them (``request.body`` / ``response.body`` are read too, a JSON string body
  is parsed); the response may be missing or ``null`` (a failed or unlogged call);
* a **LiteLLM** ``StandardLoggingPayload`` (what its GCS, S3 and custom loggers write): the
  prompt is ``messages``, the answer ``response``, tool definitions
  ``model_parameters.tools``; ``status: "failure"`` counts as a failed request;
* a **request body** alone (``{"model", "messages" | "input", ...}``): sniffed when it holds a
  parameter only requests have (``max_tokens``, ``max_completion_tokens``,
  ``stream_options``); without one it looks like a conversation of the conversation formats,
  and is read this way only with ``--format request_log``; the same for a Responses
  **response object** (``"object": "response"``).

The dialect of each request: a Responses request (``input``, a response with ``output``, a
LiteLLM ``responses`` call), an Anthropic Messages request (``system``, an answer of
``"type": "message"``, Anthropic content blocks, a LiteLLM ``anthropic_messages`` call), else
OpenAI Chat Completions (``messages``; the answer is ``choices[0].message``). The messages are
read by those formats' own decoders (``_openai_messages``, ``_anthropic_blocks``,
``openai_responses``). The response's ``usage`` goes to its first assistant message.

Conversation ids read (the record, its request, then their ``metadata``): ``conversation_id``,
``session_id``, ``thread_id``, ``trace_id``, ``litellm_session_id``, ``litellm_trace_id``
(also camelCase), a Responses ``conversation``, and the session in a Claude Code request's
``metadata.user_id`` (``user_…_account_…_session_<uuid>``, or the JSON form's ``session_id``).
Times: ``startTime`` / ``start_time`` / ``timestamp`` / ``created_at`` / ``created`` (the
request), ``endTime`` / ``end_time`` (the answer; else the start).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from ingest.formats import _anthropic_blocks, _common, _openai_messages, openai_responses
from ingest.formats._request_history import Conversation, Interner, Request, conversations
from ingest.formats._shapes import (
    SIGN,
    Fit,
    Misfit,
)
from ingest.formats.base import TraceFormat
from ingest.input.records import Record
from ingest.model import Message, Rejected, ToolDef, Trace

NAME = "request_log"

#: Keys naming the conversation a request belongs to, in the order tried.
CONVERSATION_KEYS = (
    "conversation_id",
    "conversationId",
    "session_id",
    "sessionId",
    "litellm_session_id",
    "thread_id",
    "threadId",
    "trace_id",
    "traceId",
    "litellm_trace_id",
)
_START_KEYS = ("startTime", "start_time", "timestamp", "created_at", "created")
_END_KEYS = ("endTime", "end_time")


@dataclass(slots=True)
class _Logged:
    """What a record says beyond its messages: where it is, and the trace fields it gives."""

    line: int
    model: str | None
    tools: list[ToolDef] = field(default_factory=list)
    failed: bool = False


def parse(records: Iterable[Record | Rejected], source_file: str) -> Iterator[Trace | Rejected]:
    """One trace per conversation of the file's requests; a record that is not a request is
    rejected alone (``wrong_shape``, naming the path and the problem)."""
    requests: list[Request] = []
    logged: list[_Logged] = []
    interner = Interner()
    for record in records:
        if isinstance(record, Rejected):
            yield record
            continue
        try:
            request, info = _read(record, len(requests))
        except _common.ShapeError as exc:
            yield record.reject("wrong_shape", str(exc))
            continue
        interner.intern(request)
        requests.append(request)
        logged.append(info)
    for conversation in conversations(requests):
        yield _trace(conversation, [logged[r.index] for r in conversation.requests], source_file)


def _trace(conversation: Conversation, logged: list[_Logged], source_file: str) -> Trace:
    tools: dict[str, ToolDef] = {}
    for info in logged:
        for tool in info.tools:
            tools.setdefault(tool.name, tool)
    metadata: dict[str, Any] = {"requests": len(logged)}
    if conversation.branches:
        metadata["branches"] = conversation.branches
    failed = sum(1 for info in logged if info.failed)
    if failed:
        metadata["failed_requests"] = failed
    return _common.make_trace(
        conversation.messages,
        format=NAME,
        source_file=source_file,
        source_line=logged[0].line,
        external_id=conversation.conversation_id,
        model=next((info.model for info in logged if info.model), None),
        tools=list(tools.values()),
        metadata=metadata,
        record_count=len(logged),
    )


# ---------------------------------------------------------------------------------------------
# One record -> one request


def _read(record: Record, index: int) -> tuple[Request, _Logged]:
    obj = record.value
    if not isinstance(obj, dict):
        raise _common.ShapeError(
            f"expected an object (a logged request), got {_common.json_type(obj)}"
        )
    line = record.line
    text_answer: list[Message] = []
    body: dict[str, Any] | None
    response: dict[str, Any] | None
    if obj.get("object") == "response":
        body, response = obj, obj  # a Responses response object: it repeats its request
    else:
        body = _body(obj["request"], "request") if "request" in obj else obj
        if isinstance(obj.get("response"), str) and not _looks_like_json(obj["response"]):
            # A text answer (LiteLLM logs text completions, and redacted answers, so).
            text = obj["response"]
            text_answer = [
                Message(seq=0, role="assistant", content=text, source_line=line, raw=text)
            ]
            response = None
        else:
            response = _body(obj.get("response"), "response")
    if body is None:
        raise _common.ShapeError("request: missing (null)")
    dialect = _dialect(obj, body, response)
    if dialect == "responses":
        prompt, answer = _responses(body, response, line)
    elif dialect == "anthropic":
        prompt, answer = _anthropic(body, response, line)
    else:
        prompt, answer = _chat(body, response, line)
    started = _time((obj, body, response or {}), _START_KEYS)
    ended = _time((obj,), _END_KEYS) or started
    response_id = _common.optional_str(response.get("id"), "response.id") if response else None
    request = Request(
        index=index,
        prompt=prompt,
        answer=answer or text_answer,
        conversation_id=_conversation_id(obj, body),
        response_id=response_id,
        previous_response_id=_common.optional_str(
            body.get("previous_response_id") or (response or {}).get("previous_response_id"),
            "previous_response_id",
        ),
        label=response_id or _common.optional_str(obj.get("id"), "id") or f"line {line}",
        started=started,
        ended=ended,
        source_line=line,
    )
    info = _Logged(
        line=line,
        model=_model(obj, body, response),
        tools=_tools(obj, body),
        failed=_failed(obj, response),
    )
    return request, info


def _body(value: Any, path: str) -> dict[str, Any] | None:
    """A request or response object (``body`` unwrapped, a JSON string body parsed)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = _json_string(value, path)
    obj = _common.expect_object(value, path)
    inner = obj.get("body")
    if isinstance(inner, str):
        inner = _json_string(inner, f"{path}.body")
    if isinstance(inner, dict) and not ({"messages", "input", "choices", "output"} & obj.keys()):
        return inner
    return obj


def _looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _failed(obj: dict[str, Any], response: dict[str, Any] | None) -> bool:
    """Whether the log says the call failed: LiteLLM ``status: "failure"`` / ``error_str``, an
    ``error`` beside or instead of the response."""
    if obj.get("status") == "failure" or obj.get("error_str") or obj.get("error"):
        return True
    return response is not None and bool(response.get("error")) and "choices" not in response


def _json_string(text: str, path: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise _common.ShapeError(f"{path}: a string that is not JSON") from None


def _dialect(obj: dict[str, Any], body: dict[str, Any], response: dict[str, Any] | None) -> str:
    call_type = obj.get("call_type")
    if isinstance(call_type, str) and "responses" in call_type:
        return "responses"
    if isinstance(call_type, str) and "anthropic" in call_type:
        return "anthropic"
    if "input" in body or (response is not None and "output" in response):
        return "responses"
    if "messages" not in body:
        raise _common.ShapeError(
            'no prompt (expected "messages" or "input", in the record or its "request")'
        )
    if response is not None and response.get("type") == "message":
        return "anthropic"
    if "system" in body or _has_anthropic_blocks(body["messages"]):
        return "anthropic"
    return "chat"


_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def _has_anthropic_blocks(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
        ):
            return True
    return False


def _chat(
    body: dict[str, Any], response: dict[str, Any] | None, line: int
) -> tuple[list[Message], list[Message]]:
    messages = body.get("messages")
    if isinstance(messages, str):  # a text prompt (LiteLLM logs text completions so)
        prompt = [Message(seq=0, role="user", content=messages, source_line=line, raw=messages)]
    else:
        prompt = _openai_messages.convert_messages(messages, "messages", line)
    choices = response.get("choices") if response is not None else None
    if response is None or choices is None:
        return prompt, []  # no response logged, or an error body
    listed = _common.expect_list(choices, "response.choices")
    if not listed:
        return prompt, []
    choice = _common.expect_object(listed[0], "response.choices[0]")
    message = _common.expect_object(choice.get("message"), "response.choices[0].message")
    answer = _openai_messages.convert_message(
        {"role": "assistant", **message}, "response.choices[0].message", line
    )
    _response_facts(answer, response)
    return prompt, answer


def _anthropic(
    body: dict[str, Any], response: dict[str, Any] | None, line: int
) -> tuple[list[Message], list[Message]]:
    prompt: list[Message] = []
    system = body.get("system")
    if _common.expect_text_or_list(system, "system") is not None:
        prompt.append(
            Message(
                seq=0, role="system", content=_common.text_of(system), source_line=line, raw=system
            )
        )
    for index, item in enumerate(_common.expect_list(body.get("messages"), "messages")):
        path = f"messages[{index}]"
        prompt += _anthropic_blocks.convert_message(_common.expect_object(item, path), path, line)
    if response is None or "content" not in response:
        return prompt, []  # no response logged, or an error body
    answer = _anthropic_blocks.convert_message({"role": "assistant", **response}, "response", line)
    return prompt, answer


def _responses(
    body: dict[str, Any], response: dict[str, Any] | None, line: int
) -> tuple[list[Message], list[Message]]:
    prompt_items = body.get("input", body.get("messages"))
    prompt = openai_responses.convert_instructions(body.get("instructions"), line)
    prompt += openai_responses.convert_items(prompt_items, "input", line)
    if response is None or "output" not in response:
        return prompt, []  # no response logged, or an error body
    answer = openai_responses.convert_items(response.get("output"), "response.output", line)
    _response_facts(answer, response)
    return prompt, answer


def _response_facts(answer: list[Message], response: dict[str, Any]) -> None:
    """The response's usage on its first assistant message, its id where the message has none."""
    first = next((m for m in answer if m.role == "assistant"), None)
    if first is None:
        return
    usage = response.get("usage")
    if isinstance(usage, dict) and first.usage is None:
        first.usage = usage
    if first.source_id is None and isinstance(response.get("id"), str):
        first.source_id = response["id"]


def _conversation_id(obj: dict[str, Any], body: dict[str, Any]) -> str | None:
    places = [obj, body, obj.get("metadata"), body.get("metadata")]
    for place in places:
        if not isinstance(place, dict):
            continue
        for key in CONVERSATION_KEYS:
            value = place.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, int) and not isinstance(value, bool):
                return str(value)
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
    if isinstance(conversation, str) and conversation:
        return conversation
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    return _claude_code_session(user_id) if isinstance(user_id, str) else None


#: Claude Code's ``metadata.user_id``: ``user_<hash>_account_<uuid>_session_<uuid>``.
_SESSION_IN_USER_ID = re.compile(r"_session_([0-9A-Za-z-]+)$")


def _claude_code_session(user_id: str) -> str | None:
    """The session in a Claude Code request's ``metadata.user_id``: the end of the legacy
    ``user_…_account_…_session_<uuid>`` form, or ``session_id`` of the newer JSON form."""
    match = _SESSION_IN_USER_ID.search(user_id)
    if match:
        return match.group(1)
    if user_id.startswith("{"):
        try:
            value = orjson.loads(user_id)
        except orjson.JSONDecodeError:
            return None
        session = value.get("session_id") if isinstance(value, dict) else None
        return session if isinstance(session, str) and session else None
    return None


def _time(places: tuple[dict[str, Any], ...], keys: tuple[str, ...]) -> datetime | None:
    for place in places:
        for key in keys:
            stamp = _common.parse_timestamp(place.get(key))
            if stamp is not None:
                return stamp
    return None


def _model(
    obj: dict[str, Any], body: dict[str, Any], response: dict[str, Any] | None
) -> str | None:
    for place in (response or {}, body, obj):
        model = place.get("model")
        if isinstance(model, str) and model:
            return model
    return None


def _tools(obj: dict[str, Any], body: dict[str, Any]) -> list[ToolDef]:
    parameters = obj.get("model_parameters")
    if body.get("tools") is not None:
        return _common.tool_defs(body["tools"], "tools")
    if isinstance(parameters, dict) and parameters.get("tools") is not None:
        return _common.tool_defs(parameters["tools"], "model_parameters.tools")
    return []


#: Parameters only a request body has (not a conversation, not a response object).
_REQUEST_PARAMETERS = ("max_tokens", "max_completion_tokens", "stream_options")
#: Fields of a LiteLLM ``StandardLoggingPayload``.
_LITELLM_FIELDS = ("call_type", "hidden_params", "model_parameters")


def shape(record: Any) -> Fit:
    """A request log record: an object holding a ``request`` object (not a Gemini one), a
    LiteLLM payload (``call_type`` …), or a request body with ``messages`` / ``input`` and a
    parameter only requests have (``max_tokens`` …)."""
    if not isinstance(record, dict):
        return Misfit(f"a record is a JSON {_common.json_type(record)}, not an object")
    request = record.get("request")
    if isinstance(request, dict):
        if "contents" in request:
            return Misfit("the request is a Gemini request (contents)")
        return SIGN
    if any(key in record for key in _LITELLM_FIELDS):
        return SIGN
    if ("messages" in record or "input" in record) and any(
        key in record for key in _REQUEST_PARAMETERS
    ):
        return SIGN
    return Misfit('no "request" object, LiteLLM fields or request parameters (max_tokens …)')


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = TraceFormat(
    name=NAME,
    description="Model request logs (request/response pairs, LiteLLM) rebuilt into conversations",
    # Requests and responses hold the messages of the three API formats.
    shape=shape,
    embeds=frozenset({"openai_chat", "anthropic", "openai_responses"}),
    parse=parse,
)

__all__ = ["CONVERSATION_KEYS", "FORMAT", "NAME"]
