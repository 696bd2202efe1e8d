"""Reading trace files: files in, canonical traces and rejections out; no database.

Resolves ``--format NAME`` or detects each file's format from its head (:func:`detect`: the
structure of its first records, and a trial parse of them), streams its records
(``ingest.input.jsonstream``) and parses them with the format. Every record ends up in a trace or a
rejection with ``file:line``. ``toollens import`` (``ingest.importing.pipeline``), ``toollens lint``
(``ingest.outputs.lint``) and the dashboard's upload (through the pipeline) all read files here;
only the import goes on to write what it read.

Records that make a whole trace on their own may be left unparsed (:func:`split_file` with
``defer``), as :class:`~ingest.formats.base.Deferred` items holding only their raw bytes: a
worker process finishes them with :func:`finish_deferred`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ingest import formats
from ingest.formats._shapes import HeadRecords, head_records
from ingest.formats.base import Deferred, TraceFormat
from ingest.input.bytestream import open_input, read_head
from ingest.input.jsonrecord import decode_value
from ingest.input.jsonstream import iter_records
from ingest.input.records import Record
from ingest.model import Rejected, Trace

#: Raw bytes kept for a file whose format is not recognized.
UNKNOWN_FORMAT_KEEP = 1024 * 1024
#: Deepest JSON nesting accepted. Raw payloads are stored (and hashed) as JSON again, and
#: orjson refuses to serialize more than 254 levels; the margin covers the wrapping we add.
MAX_NESTING = 200

#: How many of a head's first complete records the detected format's parser is tried on.
TRIAL_RECORDS = 8

#: Called with every record (or reader rejection) of a file as it is read (for counts, progress).
RecordHook = Callable[[Record | Rejected], None]


#: Defaults of :class:`ReadLimits`, sized for the smallest supported machine (2 cores, 24 GiB):
#: a record is held whole (twice, raw and parsed, in the parent and again in a worker), so
#: 256 MiB records with two workers stay under ~3 GiB; 8 GiB of decompressed input is far past
#: any real trace file and stops a decompression bomb long before the disk or the hours run out.
DEFAULT_MAX_RECORD_MB = 256
DEFAULT_MAX_DECOMPRESSED_GB = 8.0
#: Decompressed bytes per compressed byte at most (past the first 64 MiB): trace files gzip
#: 5-20 times, the most repetitive a few tens; a gzip bomb ~1,000.
DEFAULT_MAX_RATIO = 200.0
#: Environment variables that override the defaults (the CLI options override both).
MAX_RECORD_MB_ENV = "TOOLLENS_MAX_RECORD_MB"
MAX_DECOMPRESSED_GB_ENV = "TOOLLENS_MAX_DECOMPRESSED_GB"
MAX_RATIO_ENV = "TOOLLENS_MAX_COMPRESSION_RATIO"


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """How much one input may hold: a record over ``max_record_bytes`` is rejected
    ``record_too_large`` (without being held whole); past ``max_decompressed_bytes`` of one
    input reading stops with an ``input_too_large`` rejection, and so it does once a compressed
    input decompresses to more than ``max_ratio`` times the compressed bytes read.

    >>> ReadLimits.of(max_record_mb=1, max_decompressed_gb=0.5, max_ratio=100)
    ReadLimits(max_record_bytes=1048576, max_decompressed_bytes=536870912, max_ratio=100.0)
    """

    max_record_bytes: int
    max_decompressed_bytes: int
    max_ratio: float = DEFAULT_MAX_RATIO

    @classmethod
    def of(
        cls,
        max_record_mb: float | None = None,
        max_decompressed_gb: float | None = None,
        max_ratio: float | None = None,
    ) -> ReadLimits:
        """Limits in MiB / GiB; a value left ``None`` comes from its environment variable
        (:data:`MAX_RECORD_MB_ENV`, :data:`MAX_DECOMPRESSED_GB_ENV`, :data:`MAX_RATIO_ENV`),
        else the default."""
        record_mb = max_record_mb
        if record_mb is None:
            record_mb = float(os.environ.get(MAX_RECORD_MB_ENV, DEFAULT_MAX_RECORD_MB))
        input_gb = max_decompressed_gb
        if input_gb is None:
            input_gb = float(os.environ.get(MAX_DECOMPRESSED_GB_ENV, DEFAULT_MAX_DECOMPRESSED_GB))
        ratio = max_ratio
        if ratio is None:
            ratio = float(os.environ.get(MAX_RATIO_ENV, DEFAULT_MAX_RATIO))
        if record_mb <= 0 or input_gb <= 0 or ratio <= 0:
            raise ValueError("read limits must be positive")
        return cls(int(record_mb * 1024**2), int(input_gb * 1024**3), float(ratio))


class UnknownFormatError(ValueError):
    """Raised for ``--format NAME`` when NAME is not a known format (a usage error)."""


def resolve_format(name: str | None) -> TraceFormat | None:
    """The format for ``--format NAME`` (``None`` means sniff per file).

    >>> resolve_format("anthropic").name, resolve_format(None)
    ('anthropic', None)
    """
    if name is None:
        return None
    try:
        return formats.get_format(name)
    except KeyError as exc:
        raise UnknownFormatError(str(exc.args[0]) if exc.args else str(exc)) from exc


def read_file(
    path: Path,
    name: str | None = None,
    fmt: TraceFormat | None = None,
    on_record: RecordHook | None = None,
    limits: ReadLimits | None = None,
) -> Iterator[Trace | Rejected]:
    """Canonical traces and rejections of one file (format sniffed unless ``fmt`` is given).

    ``name`` is the file name the traces and rejections carry (default: ``path``); ``limits``
    default to :meth:`ReadLimits.of` (environment, else the defaults).
    """
    items = split_file(path, name, fmt, on_record, defer=False, limits=limits)
    return cast(Iterator[Trace | Rejected], items)


def split_file(
    path: Path,
    name: str | None = None,
    fmt: TraceFormat | None = None,
    on_record: RecordHook | None = None,
    *,
    defer: bool = True,
    resume: tuple[int, int] | None = None,
    limits: ReadLimits | None = None,
) -> Iterator[Trace | Rejected | Deferred]:
    """:func:`read_file`, except that (with ``defer``) formats that can (``split``) leave the
    records that make a trace on their own unparsed, as :class:`Deferred` items holding only
    the raw bytes, for :func:`finish_deferred` in a worker process.

    ``resume=(byte_offset, line)`` reads only the lines of an uncompressed JSONL file from that
    line start on (what was appended since an import read up to there); ``fmt`` is then needed.
    """
    name = name or str(path)
    limits = limits or ReadLimits.of()
    if resume is not None:
        assert fmt is not None, "resuming a file needs the format it was read with"
        records = _resumed_records(path, name, resume, limits)
        yield from _parse(fmt, records, name, on_record, defer)
        return
    # A file rejected whole counts as one record read (``on_record``), so that records read
    # always equal imported + updated + unchanged + rejected.
    try:
        head = read_head(path)
    except OSError as exc:
        whole = Rejected(
            source_file=name, line=0, byte_offset=0, reason="unreadable_file", message=str(exc)
        )
        if on_record is not None:
            on_record(whole)
        yield whole
        return
    chosen = fmt or detect(head).format
    if chosen is None:
        if not head.strip():
            return  # an empty file holds no records: nothing to import, nothing lost
        whole = Rejected(
            source_file=name,
            line=1,
            byte_offset=0,
            reason="unknown_format",
            message=unknown_format_message(head),
            raw=head[:UNKNOWN_FORMAT_KEEP],
        )
        if on_record is not None:
            on_record(whole)
        yield whole
        return
    with open_input(path) as stream:
        records = iter_records(
            stream,
            name,
            max_depth=MAX_NESTING,
            max_record_bytes=limits.max_record_bytes,
            max_input_bytes=limits.max_decompressed_bytes,
            max_ratio=limits.max_ratio,
        )
        yield from _parse(chosen, records, name, on_record, defer)


def _parse(
    fmt: TraceFormat,
    records: Iterable[Record | Rejected],
    name: str,
    on_record: RecordHook | None,
    defer: bool,
) -> Iterator[Trace | Rejected | Deferred]:
    if on_record is not None:
        records = _watched(records, on_record)
    if defer and fmt.split is not None:
        yield from _stripped(fmt.split(records, name))
    else:
        yield from fmt.parse(records, name)


def appended_records(
    path: Path, name: str, resume: tuple[int, int], limits: ReadLimits | None = None
) -> Iterator[Record | Rejected]:
    """The records of the lines of an uncompressed JSONL file from ``resume=(byte_offset,
    line)`` on, unparsed (for a format's ``extend``)."""
    return _resumed_records(path, name, resume, limits or ReadLimits.of())


def _resumed_records(
    path: Path, name: str, resume: tuple[int, int], limits: ReadLimits
) -> Iterator[Record | Rejected]:
    with open(path, "rb") as stream:
        stream.seek(resume[0])
        yield from iter_records(
            stream,
            name,
            max_depth=MAX_NESTING,
            max_record_bytes=limits.max_record_bytes,
            resume=resume,
        )


@dataclass(frozen=True, slots=True)
class Detection:
    """The format a head is read with, and what the summary says about it.

    ``note`` is set when the format whose shape the first records fit rejected most of them
    and another format parsed them: the file is read with that one, and the note says so.
    """

    format: TraceFormat | None
    note: str | None = None


def detect(head: bytes) -> Detection:
    """The format to read a file whose head is ``head`` with.

    The format its first records fit (``formats.sniff_format``); then that format's parser is
    tried on the first :data:`TRIAL_RECORDS` complete records: when it rejects most of them
    and another format whose shape they fit parses most of them into traces (tried in the
    order of :func:`_fallbacks`), that one is used, with a note naming both.

    >>> detect(b'{"messages": [{"role": "user", "content": "hi"}]}').format.name
    'openai_chat'
    """
    found = head_records(head)
    chosen = formats.sniff_format(found)
    if chosen is None or found.complete == 0:
        return Detection(chosen)
    records = _trial_records(head, found.complete)
    if not records:
        return Detection(chosen)
    rejected, reason = _trial(chosen, records)
    if rejected * 2 <= len(records):
        return Detection(chosen)
    for other in _fallbacks(found, chosen):
        other_rejected, _ = _trial(other, records)
        if other_rejected * 2 < len(records):
            note = (
                f"read as {other.name}: {chosen.name}, which the first records' structure "
                f"suggested, rejected {rejected} of the first {len(records)} ({reason})"
            )
            return Detection(other, note)
    return Detection(chosen)


def _fallbacks(found: HeadRecords, chosen: TraceFormat) -> list[TraceFormat]:
    """The formats to try when ``chosen`` rejected the first records: the others whose shape
    the records fit, those showing their sign first, then the generic format, then the rest
    (each group in precedence order). A format whose shape they do not fit is never tried: a
    lenient parser may make traces of records that are not its format's."""
    verdicts = [v for v in formats.verdicts(found) if v.fitting and v.format is not chosen]
    signed = [v.format for v in verdicts if v.signs]
    generic = [v.format for v in verdicts if v.format.name == formats.GENERIC]
    return list(dict.fromkeys([*signed, *generic, *(v.format for v in verdicts)]))


def _trial_records(head: bytes, complete: int) -> list[Record]:
    """The first complete records of ``head`` as the reader makes them (at most
    :data:`TRIAL_RECORDS`; a record the head cuts is left out)."""
    limit = min(complete, TRIAL_RECORDS)
    records: list[Record] = []
    for item in iter_records(io.BytesIO(head), "head", max_depth=MAX_NESTING):
        if isinstance(item, Record):
            records.append(item)
            if len(records) == limit:
                break
    return records


def _trial(fmt: TraceFormat, records: list[Record]) -> tuple[int, str]:
    """How many of ``records`` ``fmt``'s parser rejects, and the first rejection's message;
    a parser that yields no trace at all rejects them all."""
    copies = [Record(r.source_file, r.line, r.byte_offset, r.raw, r.value) for r in records]
    rejected: set[int] = set()
    first = ""
    traces = 0
    try:
        for item in fmt.parse(iter(copies), "head"):
            if isinstance(item, Rejected):
                rejected.add(item.line)
                first = first or item.message
            else:
                traces += 1
    except Exception as exc:
        return len(records), f"{type(exc).__name__}: {exc}"
    if traces == 0:
        return len(records), first or "no trace"
    return len(rejected), first


def detect_file(path: Path, fmt: TraceFormat | None = None) -> Detection:
    """:func:`detect` on the head of ``path`` (``fmt`` itself when given); no format when the
    file cannot be read."""
    if fmt is not None:
        return Detection(fmt)
    try:
        return detect(read_head(path))
    except OSError:
        return Detection(None)


def unknown_format_message(head: bytes) -> str:
    """Why no format fits a head: the formats its first records come closest to, each with
    its first reason, and how to force one.

    >>> print(unknown_format_message(b'{"hello": "world"}').split(" (")[0])
    could not recognize the trace format
    """
    closest = formats.candidates(head)
    if not head_records(head).records:
        seen = "the head is not JSON records"
    else:
        seen = "; ".join(f"{v.format.name}: {v.first_reason()}" for v in closest)
    return (
        f"could not recognize the trace format ({seen}); pass --format NAME to read it as "
        f"one (one of: {', '.join(formats.format_names())})"
    )


def finish_deferred(item: Deferred) -> Trace | Rejected:
    """The trace (or rejection) of a deferred record, decoded again from its raw bytes exactly
    as the reader decoded it (:func:`ingest.input.jsonrecord.decode_value`)."""
    record = item.record
    record.value = decode_value(record.raw)
    parse_one = formats.get_format(item.format).parse_one
    # Only formats with ``split`` defer records, and those have ``parse_one`` (TraceFormat checks).
    assert parse_one is not None, f"format {item.format} defers records it cannot finish"
    return parse_one(record, item.source_file)


def _stripped(
    items: Iterable[Trace | Rejected | Deferred],
) -> Iterator[Trace | Rejected | Deferred]:
    # The worker decodes the raw bytes again: far cheaper for the parent than pickling the value.
    for item in items:
        if isinstance(item, Deferred):
            r = item.record
            item.record = Record(r.source_file, r.line, r.byte_offset, r.raw, None)
        yield item


def _watched(
    items: Iterable[Record | Rejected], on_record: RecordHook
) -> Iterator[Record | Rejected]:
    for item in items:
        on_record(item)
        yield item


__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_GB",
    "DEFAULT_MAX_RECORD_MB",
    "MAX_DECOMPRESSED_GB_ENV",
    "MAX_NESTING",
    "MAX_RECORD_MB_ENV",
    "TRIAL_RECORDS",
    "UNKNOWN_FORMAT_KEEP",
    "Detection",
    "ReadLimits",
    "RecordHook",
    "UnknownFormatError",
    "appended_records",
    "detect",
    "detect_file",
    "finish_deferred",
    "read_file",
    "resolve_format",
    "split_file",
    "unknown_format_message",
]
