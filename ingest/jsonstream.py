"""Streaming record reader: any trace file becomes a stream of records, never loaded whole.

:func:`iter_records` yields one :class:`~ingest.records.Record` per decodable record and one
:class:`~ingest.model.Rejected` per undecodable one, so every input byte that belongs to a record
is accounted for. The container is detected from the first bytes: a JSON array (each top-level
element is a record), JSONL (each non-blank line), or a single JSON document (the whole input).

A JSON array is split into its elements by a scanner that tracks only nesting depth: compiled
regexes skip strings and plain bytes in C, so Python sees one match per bracket (and per comma
between elements). Line numbers are counted lazily with ``bytes.count``.

Rejection reasons and their messages are a contract (tests assert them exactly):
``invalid_utf8``, ``malformed_json``, ``lone_surrogate``, ``record_too_large``, ``too_deep``,
``truncated``, ``not_a_record`` and, when a compressed input cannot be decompressed to its end,
``unreadable_input``.
"""

from __future__ import annotations

import codecs
import gzip
import io
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

from ingest.model import Rejected
from ingest.records import Record

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
#: Bytes read per step; memory stays near this plus the largest record kept.
CHUNK_SIZE = 1 << 20

# A JSON string, matched fast: ``[^"]`` runs in sre's single-byte loop, several times faster
# than a character class. Whether a quote is escaped depends on the parity of the backslashes
# before it: runs of up to 7 (JSON nested three deep in JSON strings) are told apart here by
# fixed-width lookbehinds; longer runs make the match fail and `_skip_string` counts them.
_ODD_BACKSLASHES = rb"(?:(?<=[^\\]\\)|(?<=[^\\]\\{3})|(?<=[^\\]\\{5})|(?<=[^\\]\\{7}))"
_EVEN_BACKSLASHES = rb"(?:(?<!\\)|(?<=[^\\]\\{2})|(?<=[^\\]\\{4})|(?<=[^\\]\\{6}))"
# (`(?<=\\)` first: most quotes have no backslash before them and fail it at once.)
_ESCAPED_QUOTE = rb"(?<=\\)" + _ODD_BACKSLASHES + rb'"'
_STRING = rb'"(?:[^"]*+' + _ESCAPED_QUOTE + rb')*+[^"]*+' + _EVEN_BACKSLASHES + rb'"'
# Skip strings and plain bytes up to the next byte that matters. A lone `"` in the group is a
# string the pattern could not finish: it continues in the next chunk or needs exact counting.
_NEXT_TOP = re.compile(rb"(?:" + _STRING + rb'|[^"\[\]{},]++)*+([\[\]{},"])')
# Inside an element a container without nested containers is skipped whole, so Python sees
# only the brackets of containers that hold containers.
_FLAT = rb"(?:" + _STRING + rb'|[^"\[\]{}]++)*+'
_NEXT_DEEP = re.compile(
    rb"(?:" + _STRING + rb'|[^"\[\]{}]++|[\[{]' + _FLAT + rb'[\]}])*+([\[\]{}"])'
)
_STRING_FAST = re.compile(_STRING)
_STRING_REST = re.compile(rb'(?:[^"]*+' + _ESCAPED_QUOTE + rb')*+[^"]*+')
_STRING_EXACT = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_OPENERS = bytes(b for b in range(256) if b not in b"[{")
_DEPTH_STEP = [1 if b in b"[{" else -1 for b in range(256)]
_NON_WS = re.compile(rb"[^ \t\r\n]")
_WHITESPACE = b" \t\r\n"
_TRUNCATED = "input ends inside a JSON value (unclosed array or object)"
_BLANK = re.compile(rb"[ \t\r]*")

_OPENERS = b"[{"
_CONTAINERS = frozenset((dict, list))
_JSON_TYPES = {int: "number", float: "number", str: "string", bool: "boolean", type(None): "null"}
_OPEN_SQUARE, _CLOSE_SQUARE, _CLOSE_CURLY = ord("["), ord("]"), ord("}")
_COMMA, _QUOTE, _BACKSLASH, _CR = ord(","), ord('"'), ord("\\"), ord("\r")


def open_input(path: str | Path) -> BinaryIO:
    """Open a trace file for binary reading, gunzipping it when it starts with ``1f 8b``.

    The gzip magic bytes decide, not the extension. ``"-"`` reads standard input (also
    gunzipped when compressed). The caller closes the stream (``with open_input(p) as f``).
    """
    if str(path) == "-":
        stdin = cast(io.BufferedReader, sys.stdin.buffer)
        # peek does not consume: the magic bytes stay in the stream for whoever reads it.
        if stdin.peek(2)[:2] == GZIP_MAGIC:
            return cast(BinaryIO, gzip.GzipFile(fileobj=stdin, mode="rb"))
        return stdin
    with open(path, "rb") as probe:
        compressed = probe.read(2) == GZIP_MAGIC
    if compressed:
        return cast(BinaryIO, gzip.open(path, "rb"))
    return open(path, "rb")


def read_head(path: str | Path, size: int = 65536) -> bytes:
    """The first ``size`` decompressed bytes of a file (fewer if it is shorter), for sniffing.

    A compressed file cut short yields the bytes that could be decompressed. For ``"-"`` the
    head is peeked from standard input without consuming it, so it holds at most what stdin
    has buffered (8 KiB by default) before decompression.
    """
    if str(path) == "-":
        peeked = cast(io.BufferedReader, sys.stdin.buffer).peek(size)
        if peeked[:2] != GZIP_MAGIC:
            return peeked[:size]
        try:
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(peeked, size)
        except zlib.error:
            return b""
    parts: list[bytes] = []
    have = 0
    with open_input(path) as stream:
        while have < size:
            try:
                # read1: a cut-off gzip keeps what was decompressed before the damage.
                part = cast(io.BufferedIOBase, stream).read1(size - have)
            except (EOFError, zlib.error, gzip.BadGzipFile):
                break
            if not part:
                break
            parts.append(part)
            have += len(part)
    return b"".join(parts)


def iter_records(
    stream: BinaryIO,
    source_file: str,
    *,
    max_record_bytes: int = 256 * 1024 * 1024,
    max_depth: int = 512,
) -> Iterator[Record | Rejected]:
    """Every record of a binary stream, decoded, or rejected with a reason; never raises on data.

    The container is detected after an optional UTF-8 BOM and leading whitespace: ``[`` starts
    a JSON array (one record per top-level element, at the line where the element starts); a
    first line that closes every bracket it opens starts JSONL (one record per non-blank line,
    CRLF accepted); anything else is a single JSON document (one record). Empty input yields
    nothing. ``raw`` holds the record's bytes (an element without the whitespace around it, a
    line without its line end, the document without trailing whitespace) and ``byte_offset``
    is where they start in the decompressed stream; ``line`` counts ``\n`` before them.

    Records must be objects or arrays (``not_a_record`` otherwise). A string containing U+0000
    (``"\\u0000"``, which PostgreSQL refuses) is not rejected: every NUL in keys and values is
    replaced by U+FFFD and the record is yielded with its original ``raw`` bytes.

    A JSON array whose element fails to decode goes on with the next element. If the array's
    own structure breaks (a ``}`` closes it, or data follows its ``]``), the rest of the input is
    one ``malformed_json`` rejection (its first ``max_record_bytes`` bytes) and reading stops.
    An array cut off after a complete element yields that element, then a ``truncated``
    rejection with empty ``raw`` at the end of the input.

    >>> import io
    >>> [r.value for r in iter_records(io.BytesIO(b'[{"a": 1},\\n {"b": 2}]'), "x.json")]
    [{'a': 1}, {'b': 2}]
    """
    src = _Input(stream)
    limits = _Limits(source_file, max_record_bytes, max_depth)
    while len(src.buf) < len(UTF8_BOM) and src.fill():
        pass
    begin = len(UTF8_BOM) if src.buf.startswith(UTF8_BOM) else 0
    first = src.find_content(begin)
    if first >= 0:
        if src.buf[first] == _OPEN_SQUARE:
            yield from _iter_array(src, first, limits)
        elif src.first_line_is_complete(first, max_record_bytes):
            begin = 0 if src.base else begin
            yield from _iter_lines(src, max(src.buf.rfind(b"\n", begin, first) + 1, begin), limits)
        else:
            yield from _iter_document(src, first, limits)
    if src.error is not None:
        end = len(src.buf)
        yield Rejected(
            source_file=source_file,
            line=src.line_at(end),
            byte_offset=src.base + end,
            reason="unreadable_input",
            message=f"cannot read the rest of the input: {src.error}",
        )


class _Input:
    """The part of the stream still needed, its absolute offset, and lazy line counting."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.buf = bytearray()
        #: Absolute offset of ``buf[0]`` in the stream.
        self.base = 0
        #: Line number at absolute offset ``counted`` (newlines before it are counted).
        self.line = 1
        self.counted = 0
        self.eof = False
        #: Why reading stopped early (a damaged compressed stream), if it did.
        self.error: str | None = None
        # Reused for every read: a fresh 1 MiB bytes per read costs page faults each time.
        self.chunk = bytearray(CHUNK_SIZE)
        # readinto1 where there is one: a damaged gzip still hands over what it decompressed
        # before the damage (readinto would lose it all).
        self.readinto = getattr(stream, "readinto1", None) or getattr(stream, "readinto", None)

    def fill(self) -> bool:
        """Append the next chunk to ``buf``; False at the end of the input."""
        if self.eof:
            return False
        try:
            if self.readinto is None:
                data: bytes | memoryview = self.stream.read(CHUNK_SIZE)
            else:
                data = memoryview(self.chunk)[: self.readinto(self.chunk) or 0]
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            self.error = str(exc)
            data = b""
        with memoryview(data) as view:
            self.buf += view
            self.eof = not view
        return not self.eof

    def line_at(self, rel: int) -> int:
        """1-based line of ``buf[rel]``; positions are asked for in increasing order."""
        start = self.counted - self.base
        if rel > start:
            self.line += self.buf.count(b"\n", start, rel)
            self.counted = self.base + rel
        return self.line

    def drop(self, rel: int) -> None:
        """Forget ``buf[:rel]`` (its newlines stay counted)."""
        if rel > 0:
            self.line_at(rel)
            del self.buf[:rel]
            self.base += rel

    def take(self, start: int, stop: int) -> bytes:
        """``bytes(buf[start:stop])`` with a single copy."""
        with memoryview(self.buf) as view:
            return view[start:stop].tobytes()

    def find_content(self, pos: int) -> int:
        """Index of the first non-whitespace byte at or after ``pos`` (-1 at end of input)."""
        while True:
            found = _NON_WS.search(self.buf, pos)
            if found is not None:
                return found.start()
            self.drop(len(self.buf))
            pos = 0
            if not self.fill():
                return -1

    def first_line_is_complete(self, first: int, limit: int) -> bool:
        """Whether the line holding ``buf[first]`` closes every bracket it opens (JSONL).

        A line longer than ``limit`` counts as complete: it is a record to reject, not the start
        of a pretty-printed document.
        """
        searched = first
        while (newline := self.buf.find(b"\n", searched)) < 0:
            if len(self.buf) - first > limit:
                return True
            searched = len(self.buf)
            if not self.fill():
                newline = len(self.buf)
                break
        return _nesting(self.take(first, newline))[1] <= 0


def _iter_lines(src: _Input, pos: int, limits: _Limits) -> Iterator[Record | Rejected]:
    """JSONL from ``buf[pos]`` (a line start): one record per non-blank line."""
    buf = src.buf
    line = src.line_at(pos)
    searched = pos  # no newline in buf[pos:searched]
    while True:
        last_newline = buf.rfind(b"\n", searched)
        if last_newline >= 0:
            with memoryview(buf) as view:
                while pos <= last_newline:
                    newline = buf.find(b"\n", pos, last_newline + 1)
                    stop = newline - 1 if newline and buf[newline - 1] == _CR else newline
                    if not _BLANK.fullmatch(buf, pos, stop):
                        yield _decode_record(view[pos:stop].tobytes(), line, src.base + pos, limits)
                    pos = newline + 1
                    line += 1
            src.line, src.counted = line, src.base + pos  # so `drop` need not count again
        if len(buf) - pos > limits.max_record_bytes + 1:
            # No newline within the limit (+1 for a CR): skip the line without keeping it.
            yield _skip_long_line(src, pos, line, limits)
            line += 1
            pos = searched = 0
            continue
        src.drop(pos)
        pos, searched = 0, len(buf)
        if not src.fill():
            break
    text = src.take(0, len(buf))
    if not _BLANK.fullmatch(text):
        yield _decode_record(text, line, src.base, limits)


def _skip_long_line(src: _Input, pos: int, line: int, limits: _Limits) -> Rejected:
    """Reject the over-long line starting at ``buf[pos]``; ``buf`` then starts after it."""
    buf = src.buf
    offset = src.base + pos
    prefix = src.take(pos, pos + limits.max_record_bytes)
    size = len(buf) - pos
    previous = buf[-1]
    src.drop(len(buf))
    while src.fill():
        newline = buf.find(b"\n")
        if newline >= 0:
            ends_with_cr = (buf[newline - 1] if newline else previous) == _CR
            size += newline - ends_with_cr
            src.drop(newline + 1)
            break
        size += len(buf)
        previous = buf[-1]
        src.drop(len(buf))
    return _too_large(prefix, size, line, offset, limits)


def _iter_document(src: _Input, first: int, limits: _Limits) -> Iterator[Record | Rejected]:
    """The whole input from ``buf[first]`` as one record."""
    buf = src.buf
    line = src.line_at(first)
    offset = src.base + first
    while len(buf) - first <= limits.max_record_bytes and src.fill():
        pass
    if len(buf) - first <= limits.max_record_bytes:
        raw = src.take(first, _content_end(buf, first, len(buf)))
        yield _decode_record(raw, line, offset, limits, unclosed_is_truncated=True)
        return
    prefix = src.take(first, first + limits.max_record_bytes)
    end = src.base + _content_end(buf, first, len(buf))
    src.drop(len(buf))
    while src.fill():
        stop = _content_end(buf, 0, len(buf))
        if stop:
            end = src.base + stop
        src.drop(len(buf))
    yield _too_large(prefix, end - offset, line, offset, limits)


def _iter_array(src: _Input, first: int, limits: _Limits) -> Iterator[Record | Rejected]:
    """The elements of the top-level JSON array whose ``[`` is ``buf[first]``."""
    buf = src.buf
    pos = last = first + 1  # `last`: where the current depth-1 stretch starts
    depth = 1
    in_string = escape = False
    start = -1  # absolute offset of the current element; -1 until it starts
    line = deepest = 0
    prefix: bytes | None = None  # the kept head of an element over the size limit
    tail = 0  # for such an element: the absolute end of its content dropped so far
    after_comma = False
    next_top, next_deep = _NEXT_TOP.match, _NEXT_DEEP.match
    while True:
        if in_string:
            pos, in_string, escape = _skip_string(buf, pos, escape)
            if not in_string:
                continue
            found = None
        elif depth > 1:
            # Inside an element only the depth matters: the hot loop, kept minimal.
            found = next_deep(buf, pos)
            if found is not None:
                pos = found.end()
                byte = buf[pos - 1]
                if byte == _QUOTE:
                    in_string = True
                elif byte in _OPENERS:
                    depth += 1
                    if depth > deepest:
                        deepest = depth
                else:
                    depth -= 1
                    if depth == 1:
                        last = pos
                continue
        else:
            found = next_top(buf, pos)
        if found is None:
            # Nothing more to scan in the buffer: keep only what a record still needs.
            pos = len(buf)
            if start < 0 and (content := _NON_WS.search(buf, last)) is not None:
                start, line, deepest = src.base + content.start(), src.line_at(content.start()), 1
            if start >= 0 and prefix is None and src.base + pos - start > limits.max_record_bytes:
                prefix = src.take(start - src.base, start - src.base + limits.max_record_bytes)
            keep = start - src.base if start >= 0 and prefix is None else pos
            if prefix is not None and (stop := _content_end(buf, 0, pos)):
                tail = src.base + stop
            src.drop(keep)
            pos, last = pos - keep, max(last - keep, 0)
            if src.fill():
                continue
            # The input ended before the array's `]`: a whole last element still counts.
            end = len(buf)
            if start >= 0 and depth == 1 and not in_string:
                yield _element(src, start, line, deepest, (prefix, tail), end, limits)
            elif start >= 0:
                kept = src.take(start - src.base, _content_end(buf, 0, end))
                raw = kept if prefix is None else prefix
                yield _reject(limits, "truncated", _TRUNCATED, line, start, raw)
                return
            yield _reject(limits, "truncated", _TRUNCATED, src.line_at(end), src.base + end)
            return
        token = found.end() - 1
        byte = buf[token]
        pos = token + 1
        if start < 0:
            content = _NON_WS.search(buf, last, token)
            if content is not None:
                start, line, deepest = src.base + content.start(), src.line_at(content.start()), 1
            elif byte not in b",]}":
                start, line, deepest = src.base + token, src.line_at(token), 1
        if byte == _QUOTE:
            in_string = True
        elif byte in _OPENERS:
            depth = deepest = 2
        elif byte == _CLOSE_CURLY:
            rest = token
            if start >= 0 and prefix is None:
                rest = start - src.base
            elif start >= 0:
                yield _element(src, start, line, deepest, (prefix, tail), token, limits)
            yield _reject_rest(
                src, rest, "malformed JSON: unmatched '}' in the top-level array", limits
            )
            return
        else:
            if start >= 0:
                yield _element(src, start, line, deepest, (prefix, tail), token, limits)
            elif byte == _COMMA or after_comma:
                yield _reject(
                    limits,
                    "malformed_json",
                    f"malformed JSON: missing array element before '{chr(byte)}'",
                    src.line_at(token),
                    src.base + token,
                )
            start, prefix, last = -1, None, pos
            if byte == _CLOSE_SQUARE:
                rest = src.find_content(pos)
                if rest >= 0:
                    message = "malformed JSON: unexpected data after the top-level array"
                    yield _reject_rest(src, rest, message, limits)
                return
            after_comma = True


def _element(
    src: _Input,
    start: int,
    line: int,
    deepest: int,
    oversize: tuple[bytes | None, int],
    stop: int,
    limits: _Limits,
) -> Record | Rejected:
    """The array element from absolute ``start`` to ``buf[stop]`` (its separator).

    ``oversize`` is the kept head of an element over the limit (or None) and where its content
    ended in the bytes already dropped.
    """
    end = _content_end(src.buf, 0, stop)
    prefix, tail = oversize
    if prefix is not None:
        size = (src.base + end if end else tail) - start
        return _too_large(prefix, size, line, start, limits)
    raw = src.take(start - src.base, end)
    return _decode_record(raw, line, start, limits, nesting=deepest - 1)


def _reject_rest(src: _Input, rel: int, message: str, limits: _Limits) -> Rejected:
    """The input from ``buf[rel]`` to its end as one ``malformed_json`` record (head kept)."""
    while len(src.buf) - rel < limits.max_record_bytes and src.fill():
        pass
    stop = _content_end(src.buf, rel, min(len(src.buf), rel + limits.max_record_bytes))
    return _reject(
        limits, "malformed_json", message, src.line_at(rel), src.base + rel, src.take(rel, stop)
    )


def _skip_string(buf: bytearray, pos: int, escape: bool) -> tuple[int, bool, bool]:
    """Continue a string at ``buf[pos]``: (new position, still in the string, escape pending).

    Backslashes before ``pos`` come in complete pairs, so parity is counted from ``pos``.
    """
    end = len(buf)
    if escape:
        if pos == end:
            return pos, True, True
        pos += 1
    while True:
        stop = _STRING_REST.match(buf, pos).end()  # type: ignore[union-attr]  # always matches
        backslash = stop
        while backslash > pos and buf[backslash - 1] == _BACKSLASH:
            backslash -= 1
        odd = (stop - backslash) % 2 == 1
        if stop == end:
            return stop, True, odd
        if not odd:
            return stop + 1, False, False
        pos = stop + 1


def _content_end(buf: bytearray, lo: int, hi: int) -> int:
    """``hi`` moved back over trailing JSON whitespace, not below ``lo``."""
    while hi > lo and buf[hi - 1] in _WHITESPACE:
        hi -= 1
    return hi


# --- decoding one record ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Limits:
    source_file: str
    max_record_bytes: int
    max_depth: int


def _decode_record(
    raw: bytes,
    line: int,
    offset: int,
    limits: _Limits,
    *,
    nesting: int | None = None,
    unclosed_is_truncated: bool = False,
) -> Record | Rejected:
    """One record's bytes as a :class:`Record`, or the first reason they cannot be one.

    ``nesting`` is what the array scanner saw: the record nests that deep, or one level deeper
    (flat containers are skipped unseen).
    """
    if len(raw) > limits.max_record_bytes:
        return _too_large(raw[: limits.max_record_bytes], len(raw), line, offset, limits)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        reason, message = _diagnose(raw, str(exc), unclosed_is_truncated, limits)
        return _reject(limits, reason, message, line, offset, raw)
    # A record cannot nest deeper than it has opening brackets: only bracket-heavy ones are
    # measured (one translate pass counts both kinds).
    if nesting is None:
        unsure = len(raw.translate(None, _NOT_OPENERS)) > limits.max_depth
    else:
        unsure = nesting == limits.max_depth
    if (nesting or 0) > limits.max_depth or (unsure and _deeper_than(value, limits.max_depth)):
        return _reject(
            limits, "too_deep", f"nesting deeper than {limits.max_depth} levels", line, offset, raw
        )
    if not isinstance(value, dict | list):
        message = f"expected a JSON object or array, got {_JSON_TYPES[type(value)]}"
        return _reject(limits, "not_a_record", message, line, offset, raw)
    if b"\\u0000" in raw:
        _replace_nul(value)
    return Record(limits.source_file, line, offset, raw, value)


def _diagnose(
    raw: bytes, error: str, unclosed_is_truncated: bool, limits: _Limits
) -> tuple[str, str]:
    """(reason, message) for bytes orjson refused."""
    deepest, final, in_string = _nesting(raw)
    if unclosed_is_truncated and (final > 0 or in_string):
        return "truncated", _TRUNCATED
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


def _nesting(data: bytes) -> tuple[int, int, bool]:
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


def _too_large(prefix: bytes, size: int, line: int, offset: int, limits: _Limits) -> Rejected:
    message = f"record is {size} bytes, over the limit of {limits.max_record_bytes}"
    return _reject(limits, "record_too_large", message, line, offset, prefix)


def _reject(
    limits: _Limits, reason: str, message: str, line: int, offset: int, raw: bytes = b""
) -> Rejected:
    return Rejected(
        source_file=limits.source_file,
        line=line,
        byte_offset=offset,
        reason=reason,
        message=message,
        raw=raw,
    )
