"""What changed in a trace file since the last import read it: nothing, lines appended, or
anything else; no database (the registry entries come from :mod:`db.writes.source_files`).

A file is *unchanged* when its size, mtime, head hash (its first 64 KiB, or fewer up to where
the last import stopped reading) and tail hash (the 64 KiB ending there) are what they were
(or, under
``--full-hash``, when the SHA-256 of the whole file is). It has *grown* when it was read as
JSONL, is not compressed, and its head and the tail of the range read last time still hash the
same: only what follows needs reading. Anything else is *changed* and read whole again.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from pathlib import Path

from db.contract.rows import SourceFileRecord
from ingest.input.bytestream import GZIP_MAGIC, NON_WHITESPACE
from ingest.input.jsonrecord import nesting

#: Bytes hashed at the head and at the tail of a file.
HASH_WINDOW = 64 * 1024
#: Bytes read per step when hashing or counting lines.
READ_STEP = 1 << 20
_UTF8_BOM = b"\xef\xbb\xbf"


class Change(enum.Enum):
    """How a file stands against its registry entry."""

    NEW = "new"
    UNCHANGED = "unchanged"
    GROWN = "grown"
    CHANGED = "changed"


@dataclasses.dataclass(frozen=True, slots=True)
class FileLook:
    """A file as it is now, and how it stands against its registry entry."""

    path: str
    size: int
    mtime_ns: int
    full_hash: str | None
    compressed: bool
    change: Change


def look_at(path: Path, previous: SourceFileRecord | None, *, full_hash: bool) -> FileLook:
    """Compare ``path`` with ``previous``, its registry entry (hashing its whole content too
    with ``full_hash``); ``path`` is the resolved path the entry is stored under."""
    stat = path.stat()
    with open(path, "rb") as stream:
        compressed = stream.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    whole = _hash_range(path, 0, stat.st_size) if full_hash else None
    look = FileLook(
        path=str(path),
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        full_hash=whole,
        compressed=compressed,
        change=Change.CHANGED,
    )
    if previous is None:
        return _with(look, Change.NEW)
    # Both hashes cover only what the last import read: a short file's head grows with it.
    end = _read_end(previous)
    same_ends = (
        look.size >= end
        and head_hash(path, end) == previous.head_hash
        and tail_hash(path, end) == previous.tail_hash
    )
    if whole is not None and previous.full_hash is not None:
        if whole == previous.full_hash:
            return _with(look, Change.UNCHANGED)
    elif look.size == previous.size and look.mtime_ns == previous.mtime_ns and same_ends:
        return _with(look, Change.UNCHANGED)
    if previous.read_bytes is not None and not compressed and same_ends:
        return _with(look, Change.GROWN)
    return look


def _with(look: FileLook, change: Change) -> FileLook:
    return dataclasses.replace(look, change=change)


def _read_end(entry: SourceFileRecord) -> int:
    return entry.size if entry.read_bytes is None else entry.read_bytes


def head_hash(path: Path, end: int) -> str:
    """SHA-256 of the first :data:`HASH_WINDOW` bytes of ``path`` that come before ``end``."""
    return _hash_range(path, 0, min(HASH_WINDOW, end))


def tail_hash(path: Path, end: int) -> str:
    """SHA-256 of the :data:`HASH_WINDOW` bytes of ``path`` ending at byte ``end``."""
    return _hash_range(path, max(0, end - HASH_WINDOW), end)


def _hash_range(path: Path, start: int, stop: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        stream.seek(start)
        left = stop - start
        while left > 0 and (chunk := stream.read(min(READ_STEP, left))):
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def resume_point(path: Path, look: FileLook) -> int | None:
    """Where a later import can go on reading ``path``: the end of its last complete
    (newline-terminated) line when it is uncompressed JSONL, else ``None`` (read whole again).

    A last line without its newline may still be being written: it is read now, and again
    next time.
    """
    if look.compressed:
        return None
    with open(path, "rb") as stream:
        head = stream.read(HASH_WINDOW)
    if not _is_jsonl(head):
        return None
    return _after_last_newline(path, look.size)


def _is_jsonl(head: bytes) -> bool:
    """Whether a file starting with ``head`` is JSONL: its first record is an object whose
    line closes every bracket it opens (as :func:`ingest.input.jsonstream.iter_records` decides)."""
    body = head.removeprefix(_UTF8_BOM)
    first = NON_WHITESPACE.search(body)
    if first is None or body[first.start()] != ord("{"):
        return False
    newline = body.find(b"\n", first.start())
    if newline < 0:
        return False  # the first line does not fit the head: no way to tell cheaply
    return nesting(body[first.start() : newline])[1] <= 0


def _after_last_newline(path: Path, size: int) -> int:
    with open(path, "rb") as stream:
        stop = size
        while stop > 0:
            start = max(0, stop - READ_STEP)
            stream.seek(start)
            found = stream.read(stop - start).rfind(b"\n")
            if found >= 0:
                return start + found + 1
            stop = start
    return 0


def count_lines(path: Path, start: int, stop: int) -> int:
    """Newlines in bytes ``start`` to ``stop`` of ``path``: where line numbering goes on."""
    count = 0
    with open(path, "rb") as stream:
        stream.seek(start)
        left = stop - start
        while left > 0 and (chunk := stream.read(min(READ_STEP, left))):
            count += chunk.count(b"\n")
            left -= len(chunk)
    return count


def entry_for(
    look: FileLook,
    path: Path,
    *,
    format_name: str | None,
    previous: SourceFileRecord | None,
    records: int,
    traces: int,
    import_id: int,
) -> SourceFileRecord:
    """The registry entry of ``path`` after an import read it (``records`` and ``traces``:
    everything the file holds up to where reading stopped, including what earlier imports read)."""
    end = resume_point(path, look)
    if end is None:
        lines = 0
    elif look.change is Change.GROWN and previous is not None and previous.read_bytes is not None:
        lines = previous.read_lines + count_lines(path, previous.read_bytes, end)
    else:
        lines = count_lines(path, 0, end)
    read_end = look.size if end is None else end
    return SourceFileRecord(
        path=look.path,
        size=look.size,
        mtime_ns=look.mtime_ns,
        head_hash=head_hash(path, read_end),
        tail_hash=tail_hash(path, read_end),
        full_hash=look.full_hash,
        format=format_name,
        read_bytes=end,
        read_lines=lines,
        records=records,
        traces=traces,
        last_import_id=import_id,
    )
