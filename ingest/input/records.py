"""Input records: the unit of accounting between a trace file and the import pipeline.

A *record* is one line of a JSONL file, one item of a top-level JSON array, or a whole JSON
document. The streaming reader (``ingest.input.jsonstream``) yields a :class:`Record` for every
record it could decode and a :class:`ingest.model.Rejected` for every one it could not; format
parsers turn records into traces (or reject them with a reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingest.model import Rejected


@dataclass(slots=True)
class Record:
    """One decoded input record and where it came from."""

    source_file: str
    #: 1-based line where the record starts.
    line: int
    #: Byte offset of the record's first byte in the (decompressed) stream.
    byte_offset: int
    #: The record's bytes exactly as read (kept for rejection and for re-analysis).
    raw: bytes
    #: The parsed JSON value.
    value: Any

    def reject(self, reason: str, message: str) -> Rejected:
        """A rejection of this record, keeping its raw bytes and position.

        >>> Record("a.jsonl", 3, 120, b"{}", {}).reject("wrong_shape", "no messages").location()
        'a.jsonl:3'
        """
        return Rejected(
            source_file=self.source_file,
            line=self.line,
            byte_offset=self.byte_offset,
            reason=reason,
            message=message,
            raw=self.raw,
        )
