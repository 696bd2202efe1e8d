"""The OTLP receiver's durable spool: spans on disk before an export is acknowledged.

An exporter that gets ``200`` forgets its spans, so the receiver answers only once they are
on disk: :meth:`Spool.append` writes one JSON line per span to ``spans.jsonl`` in the spool
directory and ``fsync``\\ s it. :meth:`Spool.replay` reads every span back when the receiver
starts, so what was acknowledged before a crash (``kill -9``, power loss) is assembled and
stored after it.

A crash in the middle of an append can leave a torn last line; that batch was never
acknowledged, so :meth:`Spool.open` cuts the file back to its last complete line (else the next
append would be glued onto the torn one).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson
from sqlalchemy.engine import make_url

from ingest.otlp_decode import OtlpSpan

SPOOL_FILE = "spans.jsonl"


def default_spool_dir(db_url: str) -> Path:
    """The spool next to the store: ``<file>.otlp-spool`` for a SQLite file, else
    ``toollens.otlp-spool`` in the working directory (a server database has no folder).

    >>> default_spool_dir("sqlite:///data/t.db")
    PosixPath('data/t.db.otlp-spool')
    """
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return Path(f"{url.database}.otlp-spool")
    return Path("toollens.otlp-spool")


class Spool:
    """Append-only span log in ``directory`` (safe to call from several threads)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / SPOOL_FILE
        self._lock = threading.Lock()
        self._file: int | None = None

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
        self._file = fd
        # The file's directory entry must be durable too, or a fresh spool can vanish.
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        """Close the file (appending after this raises)."""
        with self._lock:
            if self._file is not None:
                os.close(self._file)
                self._file = None

    def append(self, spans: Sequence[OtlpSpan]) -> int:
        """Write ``spans`` and wait until they are on disk; the bytes written."""
        if not spans:
            return 0
        data = b"".join(span.to_json() + b"\n" for span in spans)
        with self._lock:
            if self._file is None:
                raise RuntimeError("the spool is not open")
            view = memoryview(data)
            while view:
                view = view[os.write(self._file, view) :]
            os.fsync(self._file)
        return len(data)

    def replay(self) -> Iterator[OtlpSpan]:
        """Every span the spool holds, in the order written (complete lines only)."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as stream:
            for line in stream:
                if not line.endswith(b"\n"):
                    break
                try:
                    yield OtlpSpan.from_json(line)
                except (orjson.JSONDecodeError, TypeError, KeyError):
                    # Only a line written by another version could fail here: skip it.
                    continue


__all__ = ["SPOOL_FILE", "Spool", "default_spool_dir"]
