"""The OTLP receiver's durable spool: spans on disk before an export is acknowledged.

An exporter that gets ``200`` forgets its spans, so the receiver answers only once they are
on disk: :meth:`Spool.append` writes one JSON line per span to ``spans.jsonl`` in the spool
directory and returns once an ``fsync`` begun after its write has ended. Appends made at the
same time share their ``fsync`` (group commit): one that finds an ``fsync`` running waits for
it, then the first of the waiting appends syncs everything written so far, the others' lines
with its own, so concurrent exports cost one ``fsync`` per round, not one each in turn.
:meth:`Spool.replay` reads every span back when the receiver starts, so what was acknowledged
before a crash (``kill -9``, power loss) is assembled and stored after it.

A crash in the middle of an append can leave a torn last line; that batch was never
acknowledged, so :meth:`Spool.open` cuts the file back to its last complete line (else the next
append would be glued onto the torn one).

The receiver keeps no span in memory: :meth:`Spool.append` answers where each span's line is
(a :class:`SpanRef`), the assembler holds those, and the store workers read the lines back
themselves (:func:`read_spans`), so spans are neither pickled to the workers nor held by the
receiver. A trace the assembler has forgotten (evicted once stored and idle) is found again by
scanning the spool for its id (:func:`scan_trace`) when a late span of it arrives.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import orjson
from sqlalchemy.engine import make_url

from db.clickhouse.url import is_clickhouse, parse
from ingest.input.otlp_spans import OtlpSpan

SPOOL_FILE = "spans.jsonl"
#: How every spool line starts (:meth:`OtlpSpan.to_json` writes ``trace_id`` first).
_LINE_HEAD = b'{"trace_id":"'


class SpanRef(NamedTuple):
    """Where one spooled span's line is, with what the assembler needs to know of the span."""

    trace_id: str
    span_id: str
    #: The span has no parent: the trace's root, which (children ending first) usually
    #: arrives last.
    root: bool
    offset: int
    length: int

    @classmethod
    def of(cls, span: OtlpSpan, offset: int, length: int) -> SpanRef:
        """The reference of ``span``, written at ``offset`` in ``length`` bytes."""
        return cls(span.trace_id, span.span_id, span.parent_span_id is None, offset, length)


def default_spool_dir(db_url: str) -> Path:
    """The spool next to the store: ``<file>.otlp-spool`` for a SQLite file (``<folder>…`` for
    a chdb one), else ``toollens.otlp-spool`` in the working directory (a server database has
    no folder).

    >>> default_spool_dir("sqlite:///data/t.db")
    PosixPath('data/t.db.otlp-spool')
    >>> default_spool_dir("chdb:///var/ch?database=team")
    PosixPath('/var/ch.otlp-spool')
    >>> default_spool_dir("clickhouse://ch1:9000,ch2:9000/toollens?cluster=c")
    PosixPath('toollens.otlp-spool')
    """
    if is_clickhouse(db_url):
        folder = parse(db_url).path
        return Path(f"{folder.rstrip('/')}.otlp-spool" if folder else "toollens.otlp-spool")
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return Path(f"{url.database}.otlp-spool")
    return Path("toollens.otlp-spool")


class TraceGroup(NamedTuple):
    """One trace to store: its spans in the spool file ``spool`` (see :meth:`spans`)."""

    trace_id: str
    spool: str
    refs: tuple[SpanRef, ...]
    #: The trace was evicted and got late spans: ``refs`` holds only those, its earlier
    #: spans are found by scanning the spool.
    reload: bool = False

    def spans(self) -> list[OtlpSpan]:
        """The trace's spans, read from the spool (what a store worker does)."""
        if self.reload:
            return scan_trace(self.spool, self.trace_id)
        return read_spans(self.spool, self.refs)


class Spool:
    """Append-only span log in ``directory`` (safe to call from several threads)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / SPOOL_FILE
        #: Held while writing (lines are never interleaved); ``_size`` is what was written.
        self._lock = threading.Lock()
        #: Held while syncing; ``_synced`` is the size the last finished ``fsync`` covered.
        self._sync_lock = threading.Lock()
        self._file: int | None = None
        self._size = 0
        self._synced = 0
        #: ``fsync`` calls made (appends that shared one count once).
        self.syncs = 0

    def open(self) -> None:
        """Create the directory and file if needed, and cut a torn last line."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        size = os.fstat(fd).st_size
        if size:
            with open(self.path, "rb") as stream:
                data = stream.read()
            keep = data.rfind(b"\n") + 1
            if keep != size:
                os.ftruncate(fd, keep)
                os.fsync(fd)
            size = keep
        self._file, self._size, self._synced = fd, size, size
        # The file's directory entry must be durable too, or a fresh spool can vanish.
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        """Close the file (appending after this raises)."""
        with self._sync_lock, self._lock:
            if self._file is not None:
                os.close(self._file)
                self._file = None

    def append(self, spans: Sequence[OtlpSpan]) -> list[SpanRef]:
        """Write ``spans`` and wait until they are on disk; where each one's line is."""
        if not spans:
            return []
        lines = [span.to_json() + b"\n" for span in spans]
        data = b"".join(lines)
        with self._lock:
            if self._file is None:
                raise RuntimeError("the spool is not open")
            view = memoryview(data)
            while view:
                view = view[os.write(self._file, view) :]
            offset = self._size
            self._size += len(data)
        self._sync(offset + len(data))
        refs = []
        for span, line in zip(spans, lines, strict=True):
            refs.append(SpanRef.of(span, offset, len(line)))
            offset += len(line)
        return refs

    def _sync(self, end: int) -> None:
        """Return once the file is durable up to ``end`` (bytes written before this call): a
        running ``fsync`` may have begun before those bytes were written, so it is waited for,
        and the first append to get the lock after it syncs for all that were written."""
        with self._sync_lock:
            if self._synced >= end:
                return  # an fsync begun after this append's write covered it
            with self._lock:
                if self._file is None:
                    raise RuntimeError("the spool is not open")
                fd, size = self._file, self._size
            os.fsync(fd)
            self._synced = size
            self.syncs += 1

    def replay(self) -> Iterator[tuple[OtlpSpan, SpanRef]]:
        """Every span the spool holds and where it is, in the order written (complete lines
        only)."""
        if not self.path.exists():
            return
        offset = 0
        with open(self.path, "rb") as stream:
            for line in stream:
                if not line.endswith(b"\n"):
                    break
                start, offset = offset, offset + len(line)
                span = _span(line)
                if span is not None:
                    yield span, SpanRef.of(span, start, len(line))


def _span(line: bytes) -> OtlpSpan | None:
    try:
        return OtlpSpan.from_json(line)
    except (orjson.JSONDecodeError, TypeError, KeyError):
        # Only a line written by another version could fail here: skip it.
        return None


def read_spans(path: Path | str, refs: Sequence[SpanRef]) -> list[OtlpSpan]:
    """The spans at ``refs`` in the spool file ``path`` (what a store worker reads)."""
    spans = []
    with open(path, "rb", buffering=0) as stream:
        fd = stream.fileno()
        for ref in refs:
            span = _span(os.pread(fd, ref.length, ref.offset))
            if span is not None:
                spans.append(span)
    return spans


def scan_trace(path: Path | str, trace_id: str) -> list[OtlpSpan]:
    """Every span of ``trace_id`` in the spool file ``path``, one per span id (the first
    written), in the order written: a forgotten trace found again. A scan of the file at
    memory speed (``mmap``, ``bytes.find``), for the rare late span of an evicted trace."""
    needle = b"\n" + _LINE_HEAD + trace_id.encode() + b'"'
    spans: dict[str, OtlpSpan] = {}
    with open(path, "rb") as stream:
        if os.fstat(stream.fileno()).st_size == 0:
            return []
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
            # A line starts after a newline, or at the start of the file.
            at: int | None = 0 if data[: len(needle) - 1] == needle[1:] else _after(data, needle, 0)
            while at is not None:
                end = data.find(b"\n", at)
                if end == -1:
                    break  # a torn last line: never acknowledged
                span = _span(data[at : end + 1])
                if span is not None:
                    spans.setdefault(span.span_id, span)
                at = _after(data, needle, end)
    return list(spans.values())


def _after(data: mmap.mmap, needle: bytes, start: int) -> int | None:
    """Where the line after the next ``needle`` (newline + line head) at or after ``start``
    begins."""
    found = data.find(needle, start)
    return None if found == -1 else found + 1


__all__ = [
    "SPOOL_FILE",
    "SpanRef",
    "Spool",
    "TraceGroup",
    "default_spool_dir",
    "read_spans",
    "scan_trace",
]
