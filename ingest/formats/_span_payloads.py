"""The prompt and the answer of an LLM span, from its fields or from its attributes.

An LLM span records what it sent and what came back twice over: in the observation's own ``input`` /
``output`` (a message list, or a whole request or response object of the provider) and in its
attributes (OTel ``gen_ai.input.messages``, OpenInference ``llm.input_messages.N.message.*``,
OpenLLMetry ``gen_ai.prompt.N.*``, the Vercel AI SDK's ``ai.prompt.messages``), or in span events
(the deprecated GenAI ``gen_ai.user.message`` … events). The readers here find the messages in each;
:func:`weight` says which reading holds more, so the caller keeps the richer one. Inputs are read by
position (see ``_span_threads``), answers as a list.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from db.contract.vocabulary import Role
from ingest.formats._span_messages import (
    ROLES,
    Memo,
    Positioned,
    SourceMessage,
    definitions,
    is_definition,
    maybe_json,
    read_message,
    result_message,
)
from ingest.model import Message, ToolDef

_TRANSCRIPT_ROLE = re.compile(r"^(system|developer|user|assistant|tool|human|ai):[ \t]?", re.M)


def read_input(value: Any, memo: Memo | None = None) -> Positioned:
    """The prompt of an LLM span: a message list, a request object, or a transcript."""
    value = maybe_json(value)
    if isinstance(value, str):
        return dict(enumerate(transcript(value, "user")))
    if isinstance(value, list):
        return read_list(value, 0, memo)
    if not isinstance(value, dict):
        return {}
    prefix: list[SourceMessage] = []
    if isinstance(value.get("messages"), list):  # OpenAI / Anthropic requests, graph states
        prefix, items = _system(value.get("system")), value["messages"]
    elif "contents" in value:  # Gemini requests
        config = value.get("config")
        instruction = config.get("system_instruction") if isinstance(config, dict) else None
        prefix, items = _system(instruction or value.get("system_instruction")), value["contents"]
        items = [{"role": "user", "parts": [items]}] if isinstance(items, str) else items
    elif isinstance(value.get("input"), list | str) and "instructions" in value:  # Responses
        prefix, items = _system(value.get("instructions")), value["input"]
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
    else:
        single = read_message(value)
        return {0: single} if single is not None and single.messages else {}
    if isinstance(items, dict):
        items = [items]
    return read_list(items if isinstance(items, list) else [], len(prefix), memo) | dict(
        enumerate(prefix)
    )


def _system(value: Any) -> list[SourceMessage]:
    """A system prompt given apart from the messages: text, text parts (OTel ``content``,
    OpenAI ``text``) or a Gemini content."""
    parts = value.get("parts") if isinstance(value, dict) else value
    text = value if isinstance(value, str) else None
    if isinstance(parts, list):
        texts = [p if isinstance(p, str) else _part_text(p) for p in parts]
        text = "\n".join(t for t in texts if t)
    if text:
        return [SourceMessage([Message(seq=0, role="system", content=text, raw=value)])]
    return []


def _part_text(part: Any) -> str | None:
    if not isinstance(part, dict):
        return None
    text = part.get("content", part.get("text"))
    return text if isinstance(text, str) else None


def read_output(value: Any) -> list[SourceMessage]:
    """The answer of an LLM span: messages, a response object (OpenAI chat, Responses,
    Gemini, ADK), a LangChain message, or plain text."""
    value = maybe_json(value)
    if value is None:
        return []
    if isinstance(value, str):
        return [SourceMessage([Message(seq=0, role="assistant", content=value, raw=value)])]
    if isinstance(value, list):
        items = [{"role": "assistant", "content": v} if isinstance(v, str) else v for v in value]
        return list(read_list(items).values())
    if not isinstance(value, dict):
        return []
    choices, candidates = value.get("choices"), value.get("candidates")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return read_output(choices[0].get("message"))
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        return read_output(candidates[0].get("content"))
    if isinstance(value.get("output"), list) and value.get("object") == "response":
        return list(read_list(value["output"]).values())
    if isinstance(value.get("content"), dict):  # ADK LlmResponse
        return read_output(value["content"])
    if isinstance(value.get("messages"), list):
        return read_output(value["messages"])
    single = read_message(value)
    return [single] if single is not None and single.messages else []


# ---------------------------------------------------------------------------------------------
# Flattened attributes


def _flattened(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            index, _, suffix = key[len(prefix) :].partition(".")
            if index.isdigit() and suffix:
                groups.setdefault(int(index), {})[suffix.removeprefix("message.")] = value
    return groups


def _nested(fields: dict[str, Any], prefix: str, strip: str) -> list[dict[str, Any]]:
    """``tool_calls.0.tool_call.function.name`` style fields as a list of nested objects."""
    items: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if index.isdigit():
                node = items.setdefault(int(index), {})
                parts = rest.removeprefix(strip).split(".")
                for part in parts[:-1]:
                    node = node.setdefault(part, {})
                node[parts[-1]] = value
    return [items[i] for i in sorted(items)]


def _attribute_message(fields: dict[str, Any]) -> dict[str, Any]:
    message = {k: v for k, v in fields.items() if "." not in k}
    contents = _nested(fields, "contents.", "message_content.")
    if contents and "content" not in message:
        message["content"] = [{"type": c.get("type", "text"), **c} for c in contents]
    calls = _nested(fields, "tool_calls.", "tool_call.")
    if calls:
        message["tool_calls"] = calls
    if "function_call_name" in message:  # OpenInference's legacy function call
        arguments = message.get("function_call_arguments_json")
        message["function_call"] = {"name": message["function_call_name"], "arguments": arguments}
    return message


def _attribute_list(
    attrs: dict[str, Any], prefix: str, memo: Memo | None = None, role: str | None = None
) -> Positioned:
    """Flattened messages by position; ``role`` is the role of one that names none (an
    answer whose ``role`` attribute was not written is still the model's)."""
    out: Positioned = {}
    for index, fields in sorted(_flattened(attrs, prefix).items()):
        message = _attribute_message(fields)
        if role is not None:
            message.setdefault("role", role)
        read = read_list([message], index, memo).get(index)
        if read is not None and read.messages:
            out[index] = read
    return out


def attribute_input(attrs: dict[str, Any], memo: Memo | None = None) -> Positioned:
    """The prompt in a span's attributes: OTel ``gen_ai.input.messages`` (with
    ``gen_ai.system_instructions``), OpenInference ``llm.input_messages.N``, legacy
    ``gen_ai.prompt.N``, or OpenInference completion ``llm.prompts``."""
    messages = maybe_json(attrs.get("gen_ai.input.messages"))
    if isinstance(messages, list):
        prefix = _system(maybe_json(attrs.get("gen_ai.system_instructions")))
        return read_list(messages, len(prefix), memo) | dict(enumerate(prefix))
    messages = maybe_json(attrs.get("ai.prompt.messages"))
    if isinstance(messages, list):
        return read_list(messages, 0, memo)
    for prefix_key in ("llm.input_messages.", "gen_ai.prompt."):
        found = _attribute_list(attrs, prefix_key, memo)
        if found:
            return found
    prompts = maybe_json(attrs.get("llm.prompts"))
    if isinstance(prompts, list):
        return read_list([{"role": "user", "content": p} for p in prompts if isinstance(p, str)])
    return {}


def attribute_output(attrs: dict[str, Any]) -> list[SourceMessage]:
    """The answer in a span's attributes (``gen_ai.output.messages``,
    ``llm.output_messages.N``, legacy ``gen_ai.completion.N``, the Vercel AI SDK's
    ``ai.response.text`` and ``ai.response.toolCalls``)."""
    messages = maybe_json(attrs.get("gen_ai.output.messages"))
    if isinstance(messages, list):
        return list(read_list(messages).values())
    if "ai.response.toolCalls" in attrs or "ai.response.text" in attrs:
        return _vercel_answer(attrs)
    for prefix_key in ("llm.output_messages.", "gen_ai.completion."):
        found = _attribute_list(attrs, prefix_key, role="assistant")
        if found:
            return [found[i] for i in sorted(found)]
    return []


def _vercel_answer(attrs: dict[str, Any]) -> list[SourceMessage]:
    """``ai.response.toolCalls`` is ``[{toolCallId, toolName, args | input}]`` (``args`` a
    JSON string before AI SDK 5, ``input`` after)."""
    listed = maybe_json(attrs.get("ai.response.toolCalls"))
    calls = [
        {
            "id": c.get("toolCallId"),
            "name": c.get("toolName"),
            "arguments": c.get("args", c.get("input")),
        }
        for c in (listed if isinstance(listed, list) else [])
        if isinstance(c, dict)
    ]
    text = attrs.get("ai.response.text")
    message = {"role": "assistant", "content": text if isinstance(text, str) else ""}
    read = read_message({**message, "tool_calls": calls})
    return [read] if read is not None and read.messages else []


# ---------------------------------------------------------------------------------------------
# Deprecated GenAI events

#: Event name to message role; ``gen_ai.choice`` is an answer.
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_BODY_FIELDS = ("content", "role", "tool_calls", "id", "message", "index", "finish_reason")


def _event_body(attributes: dict[str, Any]) -> dict[str, Any]:
    """An event's body: a JSON ``gen_ai.event.content`` or ``event_body`` attribute, else the
    body's fields as attributes (nested ones JSON strings, as span events cannot nest)."""
    for key in ("gen_ai.event.content", "event_body", "body"):
        body = maybe_json(attributes.get(key))
        if isinstance(body, dict):
            return body
    return {k: maybe_json(attributes[k]) for k in _BODY_FIELDS if k in attributes}


def _event_message(role: str, body: dict[str, Any]) -> dict[str, Any]:
    message = {"role": body.get("role") or role, **{k: v for k, v in body.items() if k != "role"}}
    if role == "tool" and "tool_call_id" not in message:
        message["tool_call_id"] = body.get("id")
    return message


def event_input(events: list[tuple[str, dict[str, Any]]], memo: Memo | None = None) -> Positioned:
    """The prompt as deprecated GenAI message events: ``gen_ai.{system,user,assistant,tool}
    .message``, one event per message, in order."""
    items = [
        _event_message(_EVENT_ROLES[name], _event_body(attributes))
        for name, attributes in events
        if name in _EVENT_ROLES
    ]
    return read_list(items, 0, memo) if items else {}


def event_output(events: list[tuple[str, dict[str, Any]]]) -> list[SourceMessage]:
    """The answer as ``gen_ai.choice`` events (body ``{index, finish_reason, message}``)."""
    out: list[SourceMessage] = []
    for name, attributes in events:
        if name != "gen_ai.choice":
            continue
        body = _event_body(attributes)
        message = body.get("message")
        message = message if isinstance(message, dict) else body
        read = read_message(_event_message("assistant", message))
        if read is not None and read.messages:
            out.append(read)
    return out


def weight(messages: Positioned | list[SourceMessage]) -> int:
    """How much a reading holds: canonical messages plus calls (the richer reading wins)."""
    values = messages.values() if isinstance(messages, dict) else messages
    return sum(len(m.messages) + sum(len(c.tool_calls) for c in m.messages) for m in values)


# ---------------------------------------------------------------------------------------------
# Lists and transcripts


def read_list(items: list[Any], first: int = 0, memo: Memo | None = None) -> Positioned:
    """Messages of a list by position; tool definitions sent as messages take no position.

    With ``memo``, an item already read at the same position is the same
    :class:`SourceMessage` object.
    """
    out: Positioned = {}
    position = first
    for item in items:
        raw = _raw_bytes(item) if memo is not None else None
        if memo is not None and raw is not None and (position, raw) in memo:
            read = memo[(position, raw)]
        else:
            read = read_message(item)
            if memo is not None and raw is not None:
                memo[(position, raw)] = read
        if read is not None and read.tools and not read.messages:
            continue
        if read is not None:
            out[position] = read
        position += 1
    return out


def _raw_bytes(item: Any) -> bytes | None:
    try:
        return orjson.dumps(item)
    except TypeError:
        return None


def definition_message(item: Any) -> list[ToolDef]:
    """The tools a ``role: "tool"`` definition message declares (none for other messages)."""
    if isinstance(item, dict) and item.get("role") == "tool" and is_definition(item.get("content")):
        content = item["content"]
        return definitions(content if isinstance(content, list) else [content])
    return []


def transcript(text: str, default: Role) -> list[SourceMessage]:
    """A ``role: text`` transcript (one line starts each message), else one message.

    >>> [m.messages[0].role for m in transcript("system: Be brief.\\nuser: Hi", "user")]
    ['system', 'user']
    """
    marks = list(_TRANSCRIPT_ROLE.finditer(text))
    if not marks or marks[0].start() != 0:
        return [SourceMessage([Message(seq=0, role=default, content=text, raw=text)])]
    out = []
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        body = text[mark.end() : following.start() if following else len(text)].rstrip("\n")
        role = ROLES[mark.group(1)]
        if role == "tool":
            out.append(SourceMessage([result_message(body, None, None, body)]))
        else:
            out.append(SourceMessage([Message(seq=0, role=role, content=body, raw=body)]))
    return out
