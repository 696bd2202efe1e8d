"""What the records of a format look like, checked on the first records of a file.

Detection parses a file's head into its first records (:func:`head_records`: JSONL lines,
the items of a top-level array, or the one document, the last of them possibly cut where the
head ends) and asks every format whether each record has its shape. A format's shape is a
function of one parsed record giving a :class:`Fit`:

* ``SIGN``: the record has the format's shape and shows something only this format has (a
  ``resourceSpans`` array, a ``tool_use`` content block, a ``run_type``);
* ``PLAIN``: the record has the shape but nothing distinctive (a plain role/content message,
  readable by several conversation formats);
* a :class:`Misfit` with the reason (``no "simulations" array``).

Shapes look only at the record's own structure: its top-level keys and their types, the shape
of its messages, items or spans. Keys nested anywhere else (a conversation's ``metadata``, a
tool's arguments) and words inside strings never count. A record cut by the end of the head is
a :class:`CutDict` / :class:`CutList`: a key it lacks may lie past the cut, so a shape does not
hold its absence against it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ingest.formats._common import json_type

#: How many records of a head detection looks at (the first ones).
MAX_RECORDS = 40
#: Deepest nesting the head parser follows; deeper values are left out (as if cut).
_MAX_DEPTH = 64

_WS = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
#: A string (possibly unterminated) or a bracket: what skipping a deep value looks at.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|$)|[\[\]{}]')
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]


class CutDict(dict[str, Any]):
    """An object the end of the head cut: keys after the cut are unknown."""


class CutList(list[Any]):
    """An array the end of the head cut: items after the cut are unknown."""


@dataclass(frozen=True, slots=True)
class Misfit:
    """A record that does not have a format's shape, and why."""

    reason: str


class _Level:
    """A record that has a format's shape (``SIGN``: distinctively; ``PLAIN``: generically)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


SIGN = _Level("SIGN")
PLAIN = _Level("PLAIN")
Fit = _Level | Misfit
#: A format's shape: what it makes of one parsed record.
Shape = Callable[[Any], Fit]


@dataclass(frozen=True, slots=True)
class HeadRecords:
    """The first records of a head; ``complete`` of them are whole, the rest (at most one)
    is cut by the end of the head."""

    records: list[Any]
    complete: int


def head_records(head: bytes, limit: int = MAX_RECORDS) -> HeadRecords:
    """The first records of ``head`` as :mod:`ingest.input.jsonstream` would read them: the items
    of a top-level array, else each top-level value (JSONL lines, or the one document).

    >>> head_records(b'{"a": 1}\\n{"b": [2, 3').records
    [{'a': 1}, {'b': [2, 3]}]
    >>> head_records(b'[{"a": 1}, {"b"').complete
    1
    """
    whole = _whole(head, limit)
    return whole if whole is not None else head_records_partial(head, limit)


def _whole(head: bytes, limit: int) -> HeadRecords | None:
    """The records of a head that holds whole JSON (the file is shorter than the head, or its
    first lines are whole), read by orjson; ``None`` when the head is cut inside a value.
    A head cut after whole JSONL lines gives those lines and then its cut line, partly read."""
    body = head.removeprefix(b"\xef\xbb\xbf").strip()
    if not body:
        return HeadRecords([], 0)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    else:
        if body.startswith(b"["):
            items = list(value[:limit])
            return HeadRecords(items, len(items))
        return HeadRecords([value], 1)
    if body.startswith(b"["):
        return None
    records: list[Any] = []
    lines = body.split(b"\n")
    for index, line in enumerate(lines):
        if len(records) == limit:
            return HeadRecords(records, len(records))
        if not line.strip():
            continue
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            if index < len(lines) - 1 or not records:
                return None  # not JSONL (a pretty-printed document): parsed whole, cut
            cut = head_records_partial(line)
            return HeadRecords(records + cut.records[:1], len(records))
    return HeadRecords(records, len(records))


def head_records_partial(head: bytes, limit: int = MAX_RECORDS) -> HeadRecords:
    """:func:`head_records` by the cut-tolerant parser alone."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    parser = _Parser(text)
    records: list[Any] = []
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if pos < len(text) and text[pos] == "[":
        parser.pos = pos + 1
        return parser.array_items(limit)
    while pos < len(text) and len(records) < limit:
        parser.pos = pos
        if not parser.read_into(records):
            break
        pos = _WS.match(text, parser.pos).end()  # type: ignore[union-attr]
    return parser.head(records)


class _Bad(Exception):
    """The head is not JSON where it should be."""


class _Parser:
    """A JSON parser that stops at the end of its text, closing what is open (``cut``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.cut = False

    def skip(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def array_items(self, limit: int) -> HeadRecords:
        """The items of the top-level array whose ``[`` was just read."""
        items: list[Any] = []
        while len(items) < limit:
            self.skip()
            if self.pos >= len(self.text) or self.text[self.pos] == "]":
                break
            if not self.read_into(items):
                break
            self.skip()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1
        return self.head(items)

    def read_into(self, records: list[Any]) -> bool:
        """Read the next top-level value into ``records``; ``False`` when reading ends here:
        the value was cut short by the head's end, or is no JSON (nothing is read)."""
        try:
            records.append(self.value(0))
        except _Bad:
            return False
        return not self.cut

    def head(self, records: list[Any]) -> HeadRecords:
        """``records`` read so far, the last not complete where it was cut short."""
        return HeadRecords(records, len(records) - 1 if self.cut else len(records))

    def value(self, depth: int) -> Any:
        self.skip()
        if self.pos >= len(self.text):
            self.cut = True
            return None
        char = self.text[self.pos]
        if char == "{":
            return self.object(depth + 1)
        if char == "[":
            return self.array(depth + 1)
        if char == '"':
            return self.string()
        for word, meaning in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return meaning
            if word.startswith(self.text[self.pos :]):
                self.cut, self.pos = True, len(self.text)
                return meaning
        number = _NUMBER.match(self.text, self.pos)
        if number is None:
            raise _Bad(self.pos)
        self.pos = number.end()
        if self.pos >= len(self.text):
            self.cut = True
        text = number.group()
        return float(text) if any(c in text for c in ".eE") else int(text)

    def string(self) -> str:
        try:
            text, self.pos = _scan_string(self.text, self.pos + 1)
        except ValueError:
            # Unterminated (cut by the head's end): the part read is the value.
            rest = self.text[self.pos + 1 :]
            self.cut, self.pos = True, len(self.text)
            return rest
        return str(text)

    def at_member(self, close: str) -> bool:
        """Past white space and commas to the next member of the object or array being read:
        ``False`` at its ``close`` (read) or at the end of the text (``cut``)."""
        while True:
            self.skip()
            if self.pos >= len(self.text):
                self.cut = True
                return False
            if self.text[self.pos] == close:
                self.pos += 1
                return False
            if self.text[self.pos] != ",":
                return True
            self.pos += 1

    def object(self, depth: int) -> dict[str, Any]:
        self.pos += 1
        result: dict[str, Any] = {}
        while self.at_member("}"):
            if self.text[self.pos] != '"':
                raise _Bad(self.pos)
            key = self.string()
            if self.cut:
                return CutDict(result)
            self.skip()
            if self.pos >= len(self.text):
                self.cut = True
                return CutDict(result)
            if self.text[self.pos] != ":":
                raise _Bad(self.pos)
            self.pos += 1
            value = self.value(depth) if depth < _MAX_DEPTH else self.leave()
            if self.cut:
                # A value cut short is kept (a cut string is still a string), the rest unknown.
                result[key] = value
                return CutDict(result)
            result[key] = value
        return CutDict(result) if self.cut else result

    def array(self, depth: int) -> list[Any]:
        self.pos += 1
        result: list[Any] = []
        while self.at_member("]"):
            value = self.value(depth) if depth < _MAX_DEPTH else self.leave()
            result.append(value)
            if self.cut:
                return CutList(result)
        return CutList(result) if self.cut else result

    def leave(self) -> Any:
        """Skip a value nested too deep to matter for a shape (strings skipped whole,
        brackets counted); it reads as ``None``."""
        self.skip()
        level = 0
        for found in _TOKEN.finditer(self.text, self.pos):
            self.pos = found.end()
            token = found.group()
            if token in "[{":
                level += 1
            elif token in "]}":
                level -= 1
            if level <= 0 and (token in "]}" or token.startswith('"')):
                return None
        self.cut, self.pos = True, len(self.text)
        return None


# ---------------------------------------------------------------------------------------------
# The vocabulary shapes are written in


def is_cut(value: Any) -> bool:
    """Whether ``value`` is an object or array the end of the head cut."""
    return isinstance(value, CutDict | CutList)


def members(value: Any, *keys: str) -> Misfit | None:
    """``None`` when ``value`` is an object holding every key (a cut object may lack them),
    else why not."""
    if not isinstance(value, dict):
        return Misfit(f"a record is a JSON {json_type(value)}, not an object")
    missing = [key for key in keys if key not in value]
    if missing and not isinstance(value, CutDict):
        return Misfit(f"no {' / '.join(f'{k!r}'.replace(chr(39), chr(34)) for k in missing)} key")
    return None


def object_list(value: Any, key: str) -> list[dict[str, Any]] | Misfit:
    """The objects of the array ``value[key]``, or why it is not an array of objects."""
    items = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, dict) or key not in value:
        return Misfit(f'no "{key}" array')
    if not isinstance(items, list):
        return Misfit(f'"{key}" is {json_type(items)}, not an array')
    objects = [item for item in items if isinstance(item, dict)]
    if len(objects) < len(items):
        return Misfit(f'"{key}" holds a non-object item')
    return objects


def combine(fits: Iterable[Fit]) -> Fit:
    """The fit of a list from the fits of its items: the first misfit, else ``SIGN`` when any
    item shows one, else ``PLAIN`` (also for no items)."""
    found: Fit = PLAIN
    for fit in fits:
        if isinstance(fit, Misfit):
            return fit
        if fit is SIGN:
            found = SIGN
    return found


def best(*fits: Fit) -> Fit:
    """The best of alternative readings: ``SIGN``, else ``PLAIN``, else the first misfit."""
    if SIGN in fits:
        return SIGN
    if PLAIN in fits:
        return PLAIN
    return fits[0]


# ---------------------------------------------------------------------------------------------
# Message shapes several formats share (a container format reads its messages with these)

#: Anthropic content block types no other format's messages hold.
ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
#: Responses API item types that hold no message ToolLens models (built-in tool calls and
#: their outputs, MCP items, bookkeeping) and that no other format's messages hold.
RESPONSES_UNMODELLED_TYPES = frozenset(
    {
        "reasoning",
        "item_reference",
        "compaction",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
    }
)
#: Responses API item and content part types no other format's messages hold.
RESPONSES_TYPES = RESPONSES_UNMODELLED_TYPES | {
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "input_text",
    "output_text",
    "input_image",
    "input_file",
}
#: LangChain message types (``BaseMessage.type``, and the chunk classes' names).
LANGCHAIN_TYPES = frozenset(
    {"human", "ai", "tool", "system", "function", "chat", "remove", "developer"}
) | frozenset(
    f"{kind}MessageChunk" for kind in ("AI", "Human", "Tool", "System", "Function", "Chat")
)


def block_types(content: Any) -> set[str]:
    """The ``type`` of every block of a content list (none for string content)."""
    if not isinstance(content, list):
        return set()
    return {b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)}


def chat_message(message: Any) -> Fit:
    """An OpenAI Chat Completions message: ``role`` and ``content``; ``SIGN`` with
    ``tool_calls``, ``function_call``, a ``tool`` / ``function`` result or ``content: null``."""
    if not isinstance(message, dict):
        return Misfit(f"a message is a JSON {json_type(message)}, not an object")
    role = message.get("role")
    if not isinstance(role, str):
        return PLAIN if isinstance(message, CutDict) else Misfit('a message has no "role"')
    foreign = block_types(message.get("content")) & (ANTHROPIC_BLOCKS | RESPONSES_TYPES)
    if foreign:
        return Misfit(f"a message's content holds {sorted(foreign)[0]} blocks")
    if message.get("type") not in (None, "message"):
        return Misfit(f'a message has "type": {message["type"]!r}')
    signs = ("tool_calls", "function_call", "tool_call_id", "tool_call_ids")
    if any(key in message for key in signs) or role in ("tool", "function"):
        return SIGN
    if "content" in message and message["content"] is None:
        return SIGN
    return PLAIN


def anthropic_message(message: Any) -> Fit:
    """An Anthropic Messages message: ``role`` user / assistant, ``content`` a string or
    blocks; ``SIGN`` with a block only Anthropic has (``tool_use``, ``tool_result`` …) or the
    fields of a response (``stop_reason``)."""
    if not isinstance(message, dict):
        return Misfit(f"a message is a JSON {json_type(message)}, not an object")
    role = message.get("role")
    if not isinstance(role, str):
        return PLAIN if isinstance(message, CutDict) else Misfit('a message has no "role"')
    if role not in ("user", "assistant", "system"):
        return Misfit(f"role {role!r} is not an Anthropic role")
    if any(key in message for key in ("tool_calls", "function_call", "tool_call_id")):
        return Misfit("a message has OpenAI tool_calls / tool_call_id")
    content = message.get("content")
    if "content" in message and not isinstance(content, str | list):
        return Misfit(f"a message's content is {json_type(content)}")
    types = block_types(content)
    if types & RESPONSES_TYPES:
        return Misfit(f"a message's content holds {sorted(types & RESPONSES_TYPES)[0]} parts")
    if types & ANTHROPIC_BLOCKS or "stop_reason" in message:
        return SIGN
    return PLAIN


def langchain_message(message: Any) -> Fit:
    """A LangChain message in one of its serialized forms (``dumpd``, ``messages_to_dict``,
    ``model_dump``): ``SIGN`` always, since the forms are LangChain's own."""
    if not isinstance(message, dict):
        return Misfit(f"a message is a JSON {json_type(message)}, not an object")
    if message.get("lc") == 1 and message.get("type") == "constructor":
        return SIGN
    kind = message.get("type")
    if kind in LANGCHAIN_TYPES and ("data" in message or "content" in message):
        return SIGN
    if isinstance(message, CutDict) and (kind in LANGCHAIN_TYPES or not message):
        return PLAIN
    if "type" not in message:
        return Misfit('no LangChain message "type" (human, ai, tool …)')
    return Misfit(f'a message has "type" {kind!r}, not a LangChain message type')


def responses_item(item: Any) -> Fit:
    """A Responses API item: ``SIGN`` for a typed item (``function_call`` …) or a message of
    ``input_text`` / ``output_text`` parts, ``PLAIN`` for a plain ``{role, content}`` input."""
    if not isinstance(item, dict):
        return Misfit(f"an item is a JSON {json_type(item)}, not an object")
    kind = item.get("type")
    if kind in RESPONSES_TYPES:
        return SIGN
    types = block_types(item.get("content"))
    if types & ANTHROPIC_BLOCKS:
        return Misfit(f"an item's content holds {sorted(types & ANTHROPIC_BLOCKS)[0]} blocks")
    if any(key in item for key in ("tool_calls", "function_call", "tool_call_id")):
        return Misfit("an item has OpenAI chat tool_calls / tool_call_id")
    if kind == "message" or (kind is None and isinstance(item.get("role"), str)):
        return SIGN if types & RESPONSES_TYPES else PLAIN
    if isinstance(kind, str) or (isinstance(item, CutDict) and kind is None):
        return PLAIN  # an item of a type newer than ToolLens (kept as an opaque message)
    return Misfit('no Responses item "type" and no "role"')


def message_list(value: Any, key: str, message: Shape) -> Fit:
    """The fit of the messages under ``value[key]`` (an array), each read by ``message``."""
    items = value.get(key) if isinstance(value, dict) else None
    if not isinstance(items, list):
        return Misfit(f'"{key}" is {json_type(items)}, not an array')
    return combine(message(item) for item in items)


__all__ = [
    "ANTHROPIC_BLOCKS",
    "LANGCHAIN_TYPES",
    "MAX_RECORDS",
    "PLAIN",
    "RESPONSES_TYPES",
    "SIGN",
    "CutDict",
    "CutList",
    "Fit",
    "HeadRecords",
    "Misfit",
    "Shape",
    "anthropic_message",
    "best",
    "block_types",
    "chat_message",
    "combine",
    "head_records",
    "is_cut",
    "langchain_message",
    "members",
    "message_list",
    "object_list",
    "responses_item",
]
