"""Building blocks shared by the format parsers.

Every parser turns a source message into canonical :class:`~ingest.model.Message` objects with
the same rules: roles are mapped the same way, text parts are joined the same way, arguments keep
their raw text beside the parsed JSON, timestamps are read the same way. Shape problems raise
:class:`ShapeError` deep inside a conversion; the per-record loop turns it into a ``wrong_shape``
rejection of exactly that record, so no parser ever raises on bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

from db.contract import exact_json
from db.contract.vocabulary import CallKind, Role
from ingest.input.records import Record
from ingest.model import Message, OpaqueMessage, ToolCall, ToolDef, Trace, count_unknown

#: Source roles and the canonical role each one maps to; anything else is rejected.
ROLE_MAP: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
}

#: Part types whose ``text`` is what the model reads (OpenAI, Anthropic, Responses).
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})

#: Container fields larger than this (as compact JSON) stay out of ``Trace.metadata``: metadata
#: is stored per trace and shown in tables, and the big fields (trajectories, search trees) are
#: either already turned into messages or not about Tool Messages. Sized so that a tau-bench
#: ``info`` object (task, actions, reward details: up to 5.3 KB) is kept whole.
METADATA_VALUE_MAX_BYTES = 8192

#: Longest item type name counted as such (see :func:`type_name`).
TYPE_NAME_MAX = 60

#: Above this a number is read as unix *milliseconds* (1e11 s is the year 5138).
_MILLISECONDS_FROM = 1e11


class ShapeError(Exception):
    """A record does not have the shape its format promises; the message names the path."""


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for error messages.

    >>> json_type({}), json_type([]), json_type("x"), json_type(None)
    ('object', 'array', 'string', 'null')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def expect_object(value: Any, path: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else a :class:`ShapeError` naming ``path``."""
    if not isinstance(value, dict):
        raise ShapeError(f"{path}: expected an object, got {json_type(value)}")
    return value


def expect_list(value: Any, path: str) -> list[Any]:
    """``value`` if it is a JSON array, else a :class:`ShapeError` naming ``path``."""
    if not isinstance(value, list):
        raise ShapeError(f"{path}: expected an array, got {json_type(value)}")
    return value


def expect_text_or_list(value: Any, path: str) -> str | list[Any] | None:
    """``value`` if it is absent (``None``), a string or a JSON array (text, or content blocks),
    else a :class:`ShapeError` naming ``path``."""
    if value is not None and not isinstance(value, str | list):
        raise ShapeError(f"{path}: expected a string or an array, got {json_type(value)}")
    return value


def optional_str(value: Any, path: str) -> str | None:
    """A string field that may be absent; integer ids are accepted and kept as text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ShapeError(f"{path}: expected a string, got {json_type(value)}")


def required_str(value: Any, path: str) -> str:
    """A string field that must be present (tool names)."""
    if value is None:
        raise ShapeError(f"{path}: missing")
    text = optional_str(value, path)
    assert text is not None
    return text


def canonical_role(value: Any, path: str) -> Role:
    """Map a source role onto system | user | assistant | tool.

    >>> canonical_role("developer", "messages[0].role")
    'system'
    """
    if value is None:
        raise ShapeError(f"{path}: missing")
    if isinstance(value, str) and value in ROLE_MAP:
        return ROLE_MAP[value]
    raise ShapeError(f"{path}: unknown role {value!r}")


M = TypeVar("M", bound=BaseModel)


def construct(cls: type[M], **fields: Any) -> M:
    """A model built from values the caller already checked, without validation.

    ``fields`` must name every field, in declaration order (what ``model_construct`` would
    produce); this is several times faster than ``model_construct``, which matters in the
    per-message loop of the import.
    """
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", fields)
    object.__setattr__(obj, "__pydantic_fields_set__", set(fields))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


def text_of(content: Any) -> str:
    """Content as the model reads it: strings as they are, text parts joined with newlines.

    ``null`` is ``""``; parts that carry no text (images, files, thinking, tool blocks) are left
    out (they stay in the raw payload); any other JSON value is shown as compact JSON.

    >>> text_of([{"type": "text", "text": "a"}, {"type": "image"}, "b"])
    'a\\nb'
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [text for part in content if (text := _part_text(part)) is not None]
        return "\n".join(texts)
    return exact_json.dumps_bytes(content).decode()


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return str(part["refusal"])
    text_kind = kind is None or (isinstance(kind, str) and kind in TEXT_PART_TYPES)
    if text_kind and isinstance(part.get("text"), str):
        return str(part["text"])
    return None


@dataclass(frozen=True, slots=True)
class Arguments:
    """Tool-call arguments as provided (``raw``) and as parsed."""

    raw: str | None
    parsed: Any
    valid: bool = True
    error: str | None = None


def parse_arguments(value: Any) -> Arguments:
    """Read tool-call arguments: a JSON string is parsed, an object is dumped compactly.

    >>> parse_arguments('{"city": "Paris"}').parsed
    {'city': 'Paris'}
    >>> parse_arguments({"city": "Paris"}).raw
    '{"city":"Paris"}'
    >>> parse_arguments("{'city'").valid
    False
    """
    if value is None:
        return Arguments(raw=None, parsed=None)
    if isinstance(value, str):
        try:
            return Arguments(raw=value, parsed=exact_json.loads(value))
        except orjson.JSONDecodeError as exc:
            return Arguments(raw=value, parsed=None, valid=False, error=f"not valid JSON: {exc}")
    return Arguments(raw=exact_json.dumps_bytes(value).decode(), parsed=value)


def json_call(
    call_index: int, call_id: str | None, name: str, arguments: Any, kind: CallKind = "client"
) -> ToolCall:
    """A tool call whose ``arguments`` are JSON, read by :func:`parse_arguments` (a string is
    parsed, any other value dumped); the caller checked the id and the name."""
    args = parse_arguments(arguments)
    # The call's place and identity, its arguments as read, who runs it.
    return construct(
        ToolCall,
        call_index=call_index, tool_call_id=call_id, name=name,
        arguments_raw=args.raw, arguments=args.parsed, args_valid=args.valid, args_error=args.error,
        kind=kind,
    )  # fmt: skip


def first_assistant_model(
    messages: list[Message], model_of: Callable[[dict[str, Any]], Any]
) -> str | None:
    """The model named by the first assistant message whose raw object names one (as a string:
    ``model_of(raw)``), for formats whose logged responses name their model."""
    for message in messages:
        if message.role == "assistant" and isinstance(message.raw, dict):
            model = model_of(message.raw)
            if isinstance(model, str):
                return model
    return None


def parse_timestamp(value: Any) -> datetime | None:
    """An ISO 8601 string or unix seconds (milliseconds above 1e11) as a UTC datetime.

    Unreadable values give ``None``: a bad timestamp is not a reason to lose a message. Other
    zones are converted to UTC, as the store keeps them, so that a stored trace is the parsed
    one (the source's own text stays in the raw payload).

    >>> parse_timestamp("2025-07-17T16:49:29.595Z").isoformat()
    '2025-07-17T16:49:29.595000+00:00'
    >>> parse_timestamp("2024-06-10T06:13:20+02:00").isoformat()
    '2024-06-10T04:13:20+00:00'
    >>> parse_timestamp(0).isoformat()
    '1970-01-01T00:00:00+00:00'
    """
    try:
        if isinstance(value, str) and value:
            stamp = datetime.fromisoformat(value)
            return stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > _MILLISECONDS_FROM else value
            return datetime.fromtimestamp(seconds, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def tool_defs(value: Any, path: str) -> list[ToolDef]:
    """Declared tools in any common shape.

    OpenAI ``{"type": "function", "function": {name, description, parameters}}`` (and
    ``custom``), flat ``{name, description, parameters}`` (legacy ``functions``, Responses),
    Anthropic ``{name, description, input_schema}``; a built-in tool without a name (Responses
    ``{"type": "web_search"}``) is named after its type.
    """
    if value is None:
        return []
    defs = []
    for index, item in enumerate(expect_list(value, path)):
        item_path = f"{path}[{index}]"
        spec = expect_object(item, item_path)
        kind = spec.get("type")
        name = spec.get("name", kind if isinstance(kind, str) else None)
        if isinstance(kind, str) and isinstance(spec.get(kind), dict):
            spec, item_path = spec[kind], f"{item_path}.{kind}"
            name = spec.get("name")
        description = spec.get("description")
        parameters = next(
            (spec[key] for key in ("parameters", "input_schema", "args_schema") if key in spec),
            None,
        )
        defs.append(
            construct(
                ToolDef,
                name=required_str(name, f"{item_path}.name"),
                description=description if isinstance(description, str) else None,
                parameters=parameters,
            )
        )
    return defs


def small_metadata(container: dict[str, Any], consumed: Collection[str]) -> dict[str, Any]:
    """The container's other fields, minus any larger than ``METADATA_VALUE_MAX_BYTES``.

    A ``metadata`` object of the container (OpenAI, Anthropic) is merged in rather than nested;
    the container's own fields win a name clash. Names of fields left out for size are listed
    under ``omitted_fields`` so a reader knows they existed.

    >>> small_metadata({"messages": [], "metadata": {"user": "u1"}, "trial": 2}, {"messages"})
    {'user': 'u1', 'trial': 2}
    """
    nested = container.get("metadata")
    fields = container
    if isinstance(nested, dict) and "metadata" not in consumed:
        fields = nested | {k: v for k, v in container.items() if k != "metadata"}
    metadata: dict[str, Any] = {}
    omitted = []
    for key, value in fields.items():
        if key in consumed:
            continue
        size = len(exact_json.dumps_bytes(value, orjson.OPT_NON_STR_KEYS))
        if size > METADATA_VALUE_MAX_BYTES:
            omitted.append(key)
        else:
            metadata[key] = value
    if omitted:
        metadata["omitted_fields"] = omitted
    return metadata


def carries_content(value: Any) -> bool:
    """Whether a field's value is content worth keeping apart from bookkeeping: a string with
    non-blank text, or an array or object holding one. Numbers, booleans, nulls, blank strings
    and empty containers are bookkeeping (counters, flags, ids' absence).

    >>> carries_content("why"), carries_content({"a": [" ", {"b": "x"}]}), carries_content(3)
    (True, True, False)
    >>> carries_content({"n": 1, "ok": True, "s": ""})
    False
    """
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, dict):
        return any(carries_content(v) for v in value.values())
    if isinstance(value, list):
        return any(carries_content(v) for v in value)
    return False


def unknown_fields(item: dict[str, Any], known: frozenset[str], where: str) -> list[str]:
    """The fields of ``item`` outside ``known`` (those the parser reads or knows to be
    bookkeeping) that carry content (:func:`carries_content`), named ``<where>.<field>``.

    >>> unknown_fields({"role": "user", "thought": "hmm", "n": 2}, frozenset({"role"}), "message")
    ['message.thought']
    """
    return [
        f"{where}.{key}"
        for key, value in item.items()
        if key not in known and carries_content(value)
    ]


def opaque_message(
    item: Any, kind: str, role: Role, line: int | None, raw: Any = None
) -> OpaqueMessage:
    """The stand-in for an item or block of a type the parser does not know: kept, not dropped.

    Its content is the type and the item's JSON (so search and the Trace page show it), its raw
    is the item (or ``raw``: the item in its envelope), and ``unknown_type`` names the type,
    counted per trace and per import.

    >>> opaque_message({"type": "hologram", "id": 7}, "hologram", "assistant", 3).content
    'hologram: {"type":"hologram","id":7}'
    """
    text = exact_json.dumps_bytes(item, orjson.OPT_NON_STR_KEYS).decode()
    return OpaqueMessage(
        seq=0,
        role=role,
        content=f"{kind}: {text}",
        source_line=line,
        raw=item if raw is None else raw,
        unknown_type=kind,
    )


def opaque_role(value: Any) -> Role:
    """The role of an opaque message: the item's own role where it names one, else
    ``assistant`` (a tool role too: a result needs the call it answers, which this is not).

    >>> opaque_role("user"), opaque_role("tool"), opaque_role(None)
    ('user', 'assistant', 'assistant')
    """
    role = ROLE_MAP.get(value) if isinstance(value, str) else None
    return "assistant" if role is None or role == "tool" else role


def type_name(value: Any) -> str:
    """An item's ``type`` as a name to count: the string itself, else its JSON type's name.

    A name longer than :data:`TYPE_NAME_MAX` is cut: it is a count's key, not the payload (the
    item keeps it whole).

    >>> type_name("hologram"), type_name(None), type_name(["x"])
    ('hologram', '(no type)', '(array type)')
    """
    if isinstance(value, str):
        return value if len(value) <= TYPE_NAME_MAX else value[: TYPE_NAME_MAX - 1] + "…"
    return "(no type)" if value is None else f"({json_type(value)} type)"


#: Metadata keys that name the session of a trace whose format says nothing of one, first
#: found wins (``metadata: {"session_id": …}`` of an OpenAI or Anthropic request, a log line).
SESSION_METADATA_KEYS = ("session_id", "thread_id", "conversation_id")


def make_trace(messages: list[Message], **fields: Any) -> Trace:
    """A trace with ``seq`` renumbered 0, 1, … and ``started_at`` defaulting to the first
    message timestamp; opaque messages are counted in ``metadata["unknown_items"]``. Without
    a ``session_id`` given (a format that names none), the session is the metadata's
    ``session_id``, ``thread_id`` or ``conversation_id`` text, if any."""
    for seq, message in enumerate(messages):
        message.seq = seq
    if fields.get("started_at") is None:
        fields["started_at"] = next((m.timestamp for m in messages if m.timestamp), None)
    if "session_id" not in fields:
        named = fields.get("metadata") or {}
        fields["session_id"] = next(
            (named[k] for k in SESSION_METADATA_KEYS if isinstance(named.get(k), str) and named[k]),
            None,
        )
    unknown = count_unknown(messages)
    if unknown:
        fields["metadata"] = {**fields.get("metadata", {}), "unknown_items": unknown}
    return Trace(messages=messages, **fields)


def conversation_trace(
    messages: list[Message], record: Record, obj: dict[str, Any], **fields: Any
) -> Trace:
    """:func:`make_trace` of a record holding one conversation object ``obj``: from the
    record's file and line, with ``obj``'s ``id`` (a string, if any) as the external id."""
    return make_trace(
        messages,
        source_file=record.source_file,
        source_line=record.line,
        external_id=optional_str(obj.get("id"), "id"),
        **fields,
    )
