"""Trace input as bytes: files opened (gunzipped by magic bytes), heads peeked, and the buffer
the streaming reader scans.

:class:`InputBuffer` keeps only the part of the stream a record still needs, knows the absolute
offset of its first byte, and counts line numbers lazily with ``bytes.count``.
"""

from __future__ import annotations

import gzip
import io
import re
import sys
import zlib
from pathlib import Path
from typing import BinaryIO, cast

GZIP_MAGIC = b"\x1f\x8b"
#: Bytes read per step; memory stays near this plus the largest record kept.
CHUNK_SIZE = 1 << 20

#: Decompressed bytes read before the compression ratio is checked: a small file may compress
#: far better than any bomb-free trace file of size does, and costs nothing to read.
RATIO_CHECK_BYTES = 64 << 20

#: The first byte that is not JSON whitespace (space, tab, CR, LF).
NON_WHITESPACE = re.compile(rb"[^ \t\r\n]")


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


class InputBuffer:
    """The part of the stream still needed, its absolute offset, and lazy line counting."""

    def __init__(
        self, stream: BinaryIO, max_bytes: int | None = None, max_ratio: float | None = None
    ) -> None:
        self.stream = stream
        #: Decompressed bytes read at most; past it reading stops with ``error`` set.
        self.max_bytes = max_bytes
        #: Decompressed bytes per compressed byte read at most (past the first
        #: :data:`RATIO_CHECK_BYTES`); past it reading stops with ``error`` set. A gzip bomb
        #: is stopped after megabytes, not after ``max_bytes`` of decompression.
        self.max_ratio = max_ratio
        #: The compressed file under a gzip stream: where its position says how much of it
        #: was read (``None``: not compressed, or its position cannot be told).
        self.compressed: BinaryIO | None = getattr(stream, "fileobj", None)
        self.buf = bytearray()
        #: Absolute offset of ``buf[0]`` in the stream.
        self.base = 0
        #: Line number at absolute offset ``counted`` (newlines before it are counted).
        self.line = 1
        self.counted = 0
        self.eof = False
        #: Why reading stopped early (a damaged compressed stream, the size limit), if it did.
        self.error: str | None = None
        #: The rejection reason of ``error``.
        self.error_reason = "unreadable_input"
        # Reused for every read: a fresh 1 MiB bytes per read costs page faults each time.
        self.chunk = bytearray(CHUNK_SIZE)
        # readinto1 where there is one: a damaged gzip still hands over what it decompressed
        # before the damage (readinto would lose it all).
        self.readinto = getattr(stream, "readinto1", None) or getattr(stream, "readinto", None)

    def fill(self) -> bool:
        """Append the next chunk to ``buf``; False at the end of the input."""
        if self.eof:
            return False
        if self.max_bytes is not None and self.base + len(self.buf) >= self.max_bytes:
            # A decompression bomb (or a runaway log) stops here instead of filling the disk
            # and memory; what was read so far is still imported.
            self.error = f"the input is over the limit of {self.max_bytes} decompressed bytes"
            self.error_reason = "input_too_large"
            self.eof = True
            return False
        if self._over_ratio():
            self.eof = True
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

    def _over_ratio(self) -> bool:
        """Whether the input decompressed past :attr:`max_ratio` times its compressed bytes
        read (``error`` then says so)."""
        read = self.base + len(self.buf)
        if self.max_ratio is None or self.compressed is None or read < RATIO_CHECK_BYTES:
            return False
        try:
            compressed = self.compressed.tell()
        except (OSError, ValueError):  # a pipe, or closed: the size cap still holds
            self.compressed = None
            return False
        if read <= self.max_ratio * max(compressed, 1):
            return False
        self.error = (
            f"the input decompresses to over {self.max_ratio:g} times its compressed size"
            f" ({read} bytes from {compressed}): a compression bomb"
        )
        self.error_reason = "input_too_large"
        return True

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
            found = NON_WHITESPACE.search(self.buf, pos)
            if found is not None:
                return found.start()
            self.drop(len(self.buf))
            pos = 0
            if not self.fill():
                return -1
