"""Streaming record reader: any trace file becomes a stream of records, never loaded whole.

:func:`iter_records` yields one :class:`~ingest.input.records.Record` per decodable record and one
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

import re
from collections.abc import Iterator
from typing import BinaryIO

from ingest.input.bytestream import (
    NON_WHITESPACE,
    InputBuffer,
)
from ingest.input.jsonrecord import (
    ESCAPED_QUOTE,
    JSON_STRING,
    TRUNCATED,
    Limits,
    decode_record,
    kept_bytes,
    nesting,
    reject,
    too_large,
)
from ingest.input.records import Record
from ingest.model import Rejected

UTF8_BOM = b"\xef\xbb\xbf"

# Skip strings and plain bytes up to the next byte that matters. A lone `"` in the group is a
# string the pattern could not finish: it continues in the next chunk or needs exact counting.
_NEXT_TOP = re.compile(rb"(?:" + JSON_STRING + rb'|[^"\[\]{},]++)*+([\[\]{},"])')
# Inside an element a container without nested containers is skipped whole, so Python sees
# only the brackets of containers that hold containers.
_FLAT = rb"(?:" + JSON_STRING + rb'|[^"\[\]{}]++)*+'
_NEXT_DEEP = re.compile(
    rb"(?:" + JSON_STRING + rb'|[^"\[\]{}]++|[\[{]' + _FLAT + rb'[\]}])*+([\[\]{}"])'
)
_STRING_REST = re.compile(rb'(?:[^"]*+' + ESCAPED_QUOTE + rb')*+[^"]*+')
_WHITESPACE = b" \t\r\n"
_BLANK = re.compile(rb"[ \t\r]*")

_OPENERS = b"[{"
_OPEN_SQUARE, _CLOSE_SQUARE, _CLOSE_CURLY = ord("["), ord("]"), ord("}")
_COMMA, _QUOTE, _BACKSLASH, _CR = ord(","), ord('"'), ord("\\"), ord("\r")


def iter_records(
    stream: BinaryIO,
    source_file: str,
    *,
    max_record_bytes: int = 256 * 1024 * 1024,
    max_depth: int = 512,
    resume: tuple[int, int] | None = None,
    max_input_bytes: int | None = None,
    max_ratio: float | None = None,
) -> Iterator[Record | Rejected]:
    """Every record of a binary stream, decoded, or rejected with a reason; never raises on data.

    The container is detected after an optional UTF-8 BOM and leading whitespace: ``[`` starts
    a JSON array (one record per top-level element, at the line where the element starts); a
    first line that closes every bracket it opens starts JSONL (one record per non-blank line,
    CRLF accepted); anything else is a single JSON document (one record). Empty input yields
    nothing. ``raw`` holds the record's bytes (an element without the whitespace around it, a
    line without its line end, the document without trailing whitespace) and ``byte_offset``
    is where they start in the decompressed stream; ``line`` counts ``\n`` before them.

    Past ``max_input_bytes`` decompressed bytes, or once a compressed input decompresses to
    more than ``max_ratio`` times the compressed bytes read, reading stops: what was read is
    yielded, then one ``input_too_large`` rejection.

    Records must be objects or arrays (``not_a_record`` otherwise). A string containing U+0000
    (``"\\u0000"``, which PostgreSQL refuses) is not rejected: every NUL in keys and values is
    replaced by U+FFFD and the record is yielded with its original ``raw`` bytes.

    A JSON array whose element fails to decode goes on with the next element. If the array's
    own structure breaks (a ``}`` closes it, or data follows its ``]``), the rest of the input is
    one ``malformed_json`` rejection and reading stops. A rejection keeps the head of its
    record (``REJECTED_RAW_BYTES``, 1 MiB, or the record limit if lower), never more.
    An array cut off after a complete element yields that element, then a ``truncated``
    rejection with empty ``raw`` at the end of the input.

    ``resume=(byte_offset, line)`` goes on reading a JSONL input whose stream stands at that
    line start (an import reading only what was appended to a file read before).

    >>> import io
    >>> [r.value for r in iter_records(io.BytesIO(b'[{"a": 1},\\n {"b": 2}]'), "x.json")]
    [{'a': 1}, {'b': 2}]
    """
    src = InputBuffer(stream, max_input_bytes, max_ratio)
    limits = Limits(source_file, max_record_bytes, max_depth)
    if resume is not None:
        # Going on with a JSONL file read before: the stream stands at a line start.
        src.base, src.line = resume
        src.counted = src.base
        yield from _iter_lines(src, 0, limits)
    else:
        yield from _iter_container(src, limits)
    if src.error is not None:
        end = len(src.buf)
        yield Rejected(
            source_file=source_file,
            line=src.line_at(end),
            byte_offset=src.base + end,
            reason=src.error_reason,
            message=f"cannot read the rest of the input: {src.error}",
        )


def _iter_container(src: InputBuffer, limits: Limits) -> Iterator[Record | Rejected]:
    """The records of an input read from its start, by the container its first bytes show."""
    while len(src.buf) < len(UTF8_BOM) and src.fill():
        pass
    begin = len(UTF8_BOM) if src.buf.startswith(UTF8_BOM) else 0
    first = src.find_content(begin)
    if first >= 0:
        if src.buf[first] == _OPEN_SQUARE:
            yield from _iter_array(src, first, limits)
        elif _first_line_is_complete(src, first, limits.max_record_bytes):
            begin = 0 if src.base else begin
            yield from _iter_lines(src, max(src.buf.rfind(b"\n", begin, first) + 1, begin), limits)
        else:
            yield from _iter_document(src, first, limits)


def _first_line_is_complete(src: InputBuffer, first: int, limit: int) -> bool:
    """Whether the line holding ``buf[first]`` closes every bracket it opens (JSONL).

    A line longer than ``limit`` counts as complete: it is a record to reject, not the start
    of a pretty-printed document.
    """
    searched = first
    while (newline := src.buf.find(b"\n", searched)) < 0:
        if len(src.buf) - first > limit:
            return True
        searched = len(src.buf)
        if not src.fill():
            newline = len(src.buf)
            break
    return nesting(src.take(first, newline))[1] <= 0


def _iter_lines(src: InputBuffer, pos: int, limits: Limits) -> Iterator[Record | Rejected]:
    """JSONL from ``buf[pos]`` (a line start): one record per non-blank line."""
    buf = src.buf
    line = src.line_at(pos)
    searched = pos  # no newline in buf[pos:searched]
    while True:
        last_newline = buf.rfind(b"\n", searched)
        if last_newline >= 0:
            with memoryview(buf) as view:
                while pos <= last_newline:
                    if buf[pos] in _WHITESPACE:
                        # Blank lines by the million (a padded or hostile input) are skipped
                        # in C: to the line of the next content byte, counting the newlines.
                        content = NON_WHITESPACE.search(buf, pos, last_newline + 1)
                        skip_to = (
                            last_newline + 1
                            if content is None
                            else (buf.rfind(b"\n", pos, content.start()) + 1)
                        )
                        if skip_to > pos:
                            line += buf.count(b"\n", pos, skip_to)
                            pos = skip_to
                            continue
                    newline = buf.find(b"\n", pos, last_newline + 1)
                    stop = newline - 1 if newline and buf[newline - 1] == _CR else newline
                    if not _BLANK.fullmatch(buf, pos, stop):
                        yield decode_record(view[pos:stop].tobytes(), line, src.base + pos, limits)
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
        yield decode_record(text, line, src.base, limits)


def _skip_long_line(src: InputBuffer, pos: int, line: int, limits: Limits) -> Rejected:
    """Reject the over-long line starting at ``buf[pos]``; ``buf`` then starts after it."""
    buf = src.buf
    offset = src.base + pos
    prefix = src.take(pos, pos + kept_bytes(limits))
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
    return too_large(prefix, size, line, offset, limits)


def _iter_document(src: InputBuffer, first: int, limits: Limits) -> Iterator[Record | Rejected]:
    """The whole input from ``buf[first]`` as one record."""
    buf = src.buf
    line = src.line_at(first)
    offset = src.base + first
    while len(buf) - first <= limits.max_record_bytes and src.fill():
        pass
    if src.error_reason == "input_too_large":
        # Reading stopped at a limit (or damage) inside the document: it is cut, and decoding
        # (or diagnosing) up to hundreds of MB of it would tell nothing more.
        yield reject(
            limits,
            "truncated",
            TRUNCATED,
            line,
            offset,
            src.take(first, first + kept_bytes(limits)),
        )
        return
    if len(buf) - first <= limits.max_record_bytes:
        raw = src.take(first, _content_end(buf, first, len(buf)))
        yield decode_record(raw, line, offset, limits, unclosed_is_truncated=True)
        return
    prefix = src.take(first, first + kept_bytes(limits))
    end = src.base + _content_end(buf, first, len(buf))
    src.drop(len(buf))
    while src.fill():
        stop = _content_end(buf, 0, len(buf))
        if stop:
            end = src.base + stop
        src.drop(len(buf))
    yield too_large(prefix, end - offset, line, offset, limits)


def _iter_array(src: InputBuffer, first: int, limits: Limits) -> Iterator[Record | Rejected]:
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
            if start < 0 and (content := NON_WHITESPACE.search(buf, last)) is not None:
                start, line, deepest = src.base + content.start(), src.line_at(content.start()), 1
            if start >= 0 and prefix is None and src.base + pos - start > limits.max_record_bytes:
                prefix = src.take(start - src.base, start - src.base + kept_bytes(limits))
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
                yield reject(limits, "truncated", TRUNCATED, line, start, raw)
                return
            yield reject(limits, "truncated", TRUNCATED, src.line_at(end), src.base + end)
            return
        token = found.end() - 1
        byte = buf[token]
        pos = token + 1
        if start < 0:
            content = NON_WHITESPACE.search(buf, last, token)
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
                yield reject(
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
    src: InputBuffer,
    start: int,
    line: int,
    deepest: int,
    oversize: tuple[bytes | None, int],
    stop: int,
    limits: Limits,
) -> Record | Rejected:
    """The array element from absolute ``start`` to ``buf[stop]`` (its separator).

    ``oversize`` is the kept head of an element over the limit (or None) and where its content
    ended in the bytes already dropped.
    """
    end = _content_end(src.buf, 0, stop)
    prefix, tail = oversize
    if prefix is not None:
        size = (src.base + end if end else tail) - start
        return too_large(prefix, size, line, start, limits)
    raw = src.take(start - src.base, end)
    return decode_record(raw, line, start, limits, nesting=deepest - 1)


def _reject_rest(src: InputBuffer, rel: int, message: str, limits: Limits) -> Rejected:
    """The input from ``buf[rel]`` to its end as one ``malformed_json`` record (head kept)."""
    keep = kept_bytes(limits)
    while len(src.buf) - rel < keep and src.fill():
        pass
    stop = _content_end(src.buf, rel, min(len(src.buf), rel + keep))
    return reject(
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
