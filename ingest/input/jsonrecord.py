"""One record's bytes decoded to a value, or diagnosed: why they cannot be a record.

:func:`decode_record` turns the bytes the streaming reader cut out into a
:class:`~ingest.input.records.Record`, or a :class:`~ingest.model.Rejected` whose reason names the
first problem found: ``record_too_large``, ``invalid_utf8``, ``too_deep``, ``lone_surrogate``,
``truncated``, ``malformed_json`` or ``not_a_record``. U+0000 in strings is replaced, not
rejected; an integer past 64 bits becomes its digits as a string (see :func:`decode_value`).
The JSON string patterns and :func:`nesting` are shared with the reader's scanner.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import orjson

from ingest.input.bytestream import CHUNK_SIZE
from ingest.input.records import Record
from ingest.model import Rejected

# A JSON string, matched fast: ``[^"]`` runs in sre's single-byte loop, several times faster
# than a character class. Whether a quote is escaped depends on the parity of the backslashes
# before it: runs of up to 7 (JSON nested three deep in JSON strings) are told apart here by
# fixed-width lookbehinds; longer runs fail the match, and the reader (`_skip_string`) counts them.
_ODD_BACKSLASHES = rb"(?:(?<=[^\\]\\)|(?<=[^\\]\\{3})|(?<=[^\\]\\{5})|(?<=[^\\]\\{7}))"
_EVEN_BACKSLASHES = rb"(?:(?<!\\)|(?<=[^\\]\\{2})|(?<=[^\\]\\{4})|(?<=[^\\]\\{6}))"
# (`(?<=\\)` first: most quotes have no backslash before them and fail it at once.)
ESCAPED_QUOTE = rb"(?<=\\)" + _ODD_BACKSLASHES + rb'"'
JSON_STRING = rb'"(?:[^"]*+' + ESCAPED_QUOTE + rb')*+[^"]*+' + _EVEN_BACKSLASHES + rb'"'
_STRING_FAST = re.compile(JSON_STRING)
_STRING_EXACT = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_OPENERS = bytes(b for b in range(256) if b not in b"[{")
_DEPTH_STEP = [1 if b in b"[{" else -1 for b in range(256)]
#: The message of a ``truncated`` rejection.
TRUNCATED = "input ends inside a JSON value (unclosed array or object)"

_CONTAINERS = frozenset((dict, list))
#: A number of 20+ digits, or of 19 starting with 9 (2**63 is 9223372036854775808): only these
#: can leave the 64-bit range. Nanosecond times (19 digits, 1.7e18) do not match.
_LONG_DIGITS = re.compile(rb"[:\[,]\s*-?(?:\d{20,}|9\d{18})\s*[,\]}]")
#: The head of a rejected record that is kept (its ``raw``; 1 MiB): enough to see what it is,
#: while a record of hundreds of MB (or a decompression bomb) costs neither memory nor the
#: store its size. The rejection's message gives the whole record's size.
REJECTED_RAW_BYTES = 1 << 20
_JSON_TYPES = {int: "number", float: "number", str: "string", bool: "boolean", type(None): "null"}


@dataclass(frozen=True, slots=True)
class Limits:
    """What every record of one input is held to, and the file its rejections name."""

    source_file: str
    max_record_bytes: int
    max_depth: int


def decode_record(
    raw: bytes,
    line: int,
    offset: int,
    limits: Limits,
    *,
    nesting: int | None = None,
    unclosed_is_truncated: bool = False,
) -> Record | Rejected:
    """One record's bytes as a :class:`Record`, or the first reason they cannot be one.

    ``nesting`` is what the array scanner saw: the record nests that deep, or one level deeper
    (flat containers are skipped unseen).
    """
    if len(raw) > limits.max_record_bytes:
        return too_large(raw[: kept_bytes(limits)], len(raw), line, offset, limits)
    try:
        value = decode_value(raw)
    except orjson.JSONDecodeError as exc:
        reason, message = _diagnose(raw, str(exc), unclosed_is_truncated, limits)
        return reject(limits, reason, message, line, offset, raw)
    # A record cannot nest deeper than it has opening brackets: only bracket-heavy ones are
    # measured (one translate pass counts both kinds).
    if nesting is None:
        unsure = len(raw.translate(None, _NOT_OPENERS)) > limits.max_depth
    else:
        unsure = nesting == limits.max_depth
    if (nesting or 0) > limits.max_depth or (unsure and _deeper_than(value, limits.max_depth)):
        return reject(
            limits, "too_deep", f"nesting deeper than {limits.max_depth} levels", line, offset, raw
        )
    if not isinstance(value, dict | list):
        message = f"expected a JSON object or array, got {_JSON_TYPES[type(value)]}"
        return reject(limits, "not_a_record", message, line, offset, raw)
    return Record(limits.source_file, line, offset, raw, value)


def decode_value(raw: bytes) -> Any:
    """The JSON value of a record's bytes, U+0000 in its keys and strings replaced by U+FFFD
    (``orjson.JSONDecodeError`` if they are not JSON). The one decoding of record bytes: the
    reader's, and a worker's for a record the parent left undecoded (a deferred record).

    An integer outside the signed 64-bit range stays exact (a Python ``int``; orjson would round
    it to a float): the JSON writers (``db.contract.exact_json``) write it back as it was written.

    >>> decode_value(b'{"a\\u0000": ["x\\u0000y", 1]}')
    {'a\ufffd': ['x\ufffdy', 1]}
    >>> decode_value(b'{"n": 123456789012345678901234567890, "m": -9223372036854775808}')
    {'n': 123456789012345678901234567890, 'm': -9223372036854775808}
    """
    value = orjson.loads(raw)
    # Only a long number can be such an integer: one bytes scan spares the (slower) re-parse.
    if _LONG_DIGITS.search(raw) is not None and isinstance(value, dict | list):
        value = json.loads(raw)
    # Only an escaped NUL can put one in a decoded string: one bytes scan saves the walk.
    if b"\\u0000" in raw and isinstance(value, dict | list):
        _replace_nul(value)
    return value


def _diagnose(
    raw: bytes, error: str, unclosed_is_truncated: bool, limits: Limits
) -> tuple[str, str]:
    """(reason, message) for bytes orjson refused."""
    deepest, final, in_string = nesting(raw)
    if unclosed_is_truncated and (final > 0 or in_string):
        return "truncated", TRUNCATED
    bad = _first_invalid_utf8(raw)
    if bad >= 0:
        return "invalid_utf8", f"invalid UTF-8 at byte {bad} of the record"
    if deepest > limits.max_depth:
        return "too_deep", f"nesting deeper than {limits.max_depth} levels"
    # orjson names the problem "no low surrogate" / "invalid high surrogate" … "in string";
    # its invalid-UTF-8 message also says "surrogates", so match on the string wording.
    if "surrogate in string" in error:
        return "lone_surrogate", "unpaired UTF-16 surrogate escape in a string"
    return "malformed_json", f"malformed JSON: {error}"


def _first_invalid_utf8(raw: bytes) -> int:
    """Index of the first byte that is not valid UTF-8, or -1 (decoded piecewise: no big str)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    for start in range(0, len(raw), CHUNK_SIZE):
        pending = len(decoder.getstate()[0])
        try:
            decoder.decode(raw[start : start + CHUNK_SIZE], start + CHUNK_SIZE >= len(raw))
        except UnicodeDecodeError as exc:
            return start - pending + exc.start
    return -1


def nesting(data: bytes) -> tuple[int, int, bool]:
    """(deepest nesting, nesting at the end, ends inside a string) outside JSON strings."""
    bare = _STRING_FAST.sub(b"", data)
    if b'"' in bare:  # an open string, or one ending in an escaped backslash: count exactly
        bare = _STRING_EXACT.sub(b"", data)
    quote = bare.find(b'"')
    if quote >= 0:
        bare = bare[:quote]
    brackets = bare.translate(None, _NOT_BRACKETS)
    opened = brackets.count(b"[") + brackets.count(b"{")
    deepest = max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)
    return max(deepest, 0), 2 * opened - len(brackets), quote >= 0


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests more than ``limit`` containers deep (visited level by level)."""
    level, nodes = 1, [value]
    while nodes:
        if level > limit:
            return True
        children: list[Any] = []
        for node in nodes:
            items = node.values() if node.__class__ is dict else node
            children += [item for item in items if item.__class__ in _CONTAINERS]
        level, nodes = level + 1, children
    return False


def _replace_nul(value: dict[str, Any] | list[Any]) -> None:
    """Replace U+0000 by U+FFFD in every key and string of ``value``, in place."""
    stack: list[dict[str, Any] | list[Any]] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any("\x00" in key for key in node):
                items = [(key.replace("\x00", "\ufffd"), item) for key, item in node.items()]
                node.clear()
                node.update(items)
            pairs: Iterable[tuple[Any, Any]] = node.items()
        else:
            pairs = enumerate(node)
        for key, item in pairs:
            if isinstance(item, str):
                if "\x00" in item:
                    node[key] = item.replace("\x00", "\ufffd")
            elif isinstance(item, dict | list):
                stack.append(item)


def kept_bytes(limits: Limits) -> int:
    """How much of a record over the limit is kept: :data:`REJECTED_RAW_BYTES`, never more
    than the limit."""
    return min(limits.max_record_bytes, REJECTED_RAW_BYTES)


def too_large(prefix: bytes, size: int, line: int, offset: int, limits: Limits) -> Rejected:
    """A ``record_too_large`` rejection of a ``size``-byte record; ``prefix`` is its kept head."""
    message = f"record is {size} bytes, over the limit of {limits.max_record_bytes}"
    return reject(limits, "record_too_large", message, line, offset, prefix)


def reject(
    limits: Limits, reason: str, message: str, line: int, offset: int, raw: bytes = b""
) -> Rejected:
    """A rejection of the record at ``line`` / byte ``offset`` of the input, keeping the head of
    ``raw`` (:data:`REJECTED_RAW_BYTES`)."""
    if len(raw) > REJECTED_RAW_BYTES:
        raw = raw[:REJECTED_RAW_BYTES]
    return Rejected(
        source_file=limits.source_file,
        line=line,
        byte_offset=offset,
        reason=reason,
        message=message,
        raw=raw,
    )
