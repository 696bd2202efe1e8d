"""The import pipeline: files -> records -> canonical traces -> tokens -> analysis -> rows.

Every input record ends up exactly once as imported, duplicate or rejected (kept with
``file:line``, byte offset, reason and raw bytes). The parent reads files and splits them into
records; parsing, token counting, analysis and writing happen a batch at a time in
:mod:`ingest.batches` (worker processes for large inputs).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Engine

from db import dialect
from db.engine import writing
from db.write import finish_import, start_import
from ingest import formats
from ingest.batches import BATCH_MESSAGES, BatchWriter, ImportSummary
from ingest.facts import DEFAULT_TOKEN_BUDGET
from ingest.formats._record_loop import (
    Deferred,
)
from ingest.jsonstream import iter_records, open_input, read_head
from ingest.model import Rejected, Trace
from ingest.records import Record
from ingest.tokens import DEFAULT_ENCODING

__all__ = [
    "BATCH_MESSAGES",
    "ImportSummary",
    "import_paths",
    "import_traces",
    "parse_file",
    "split_file",
]

#: Inputs smaller than this are imported in-process: starting workers costs more than it saves.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
#: After an import of at least this many messages the planner's statistics are refreshed, so
#: the dashboard's queries pick the right indexes on a freshly loaded database.
ANALYZE_MIN_MESSAGES = 10_000
ANALYZED_TABLES = ("traces", "messages", "tool_calls", "tool_results", "findings")
#: Raw bytes kept for a file whose format is not recognized.
UNKNOWN_FORMAT_KEEP = 1024 * 1024
#: Deepest JSON nesting accepted. Raw payloads are stored (and hashed) as JSON again, and
#: orjson refuses to serialize more than 254 levels; the margin covers the wrapping we add.
MAX_NESTING = 200

ProgressFn = Callable[[int], None]


class UnknownFormatError(ValueError):
    """Raised for ``--format NAME`` when NAME is not a known format (a usage error)."""


def resolve_format(name: str | None) -> Any:
    """The format module for ``--format NAME`` (``None`` means sniff per file)."""
    if name is None:
        return None
    try:
        return formats.get_format(name)
    except KeyError as exc:
        raise UnknownFormatError(str(exc.args[0]) if exc.args else str(exc)) from exc


def import_paths(
    engine: Engine,
    paths: Sequence[str | Path],
    *,
    format_name: str | None = None,
    encoding: str = DEFAULT_ENCODING,
    origin: str = "cli",
    budget: int = DEFAULT_TOKEN_BUDGET,
    workers: int | None = None,
    progress: ProgressFn | None = None,
    display_names: Sequence[str] | None = None,
) -> ImportSummary:
    """Import trace files into ``engine``'s database; the library form of ``toollens import``.

    ``workers``: tokenizing processes (``None``: one per core for large inputs, none for small).
    ``display_names``: the names stored as ``source_file`` (default: the paths as given).
    """
    fmt_override = resolve_format(format_name)
    names = [str(p) for p in (display_names or paths)]
    started = time.perf_counter()
    import_id = start_import(engine, origin=origin, paths=names, encoding=encoding)
    summary = ImportSummary(import_id=import_id)
    if workers is None:
        total = sum(_size(p) for p in paths)
        workers = (os.cpu_count() or 1) if total >= PARALLEL_MIN_BYTES else 0
    writer = BatchWriter(engine, import_id, summary, encoding, budget, workers)
    try:
        with writer, _bulk_gc():
            for path, name in zip(paths, names, strict=True):
                summary.files += 1
                items = split_file(
                    Path(path), name, fmt_override, summary, progress, defer=writer.pool is not None
                )
                for item in items:
                    writer.add(item)
        if summary.messages >= ANALYZE_MIN_MESSAGES:
            with writing(engine) as conn:
                dialect.analyze(conn, ANALYZED_TABLES)
        summary.seconds = time.perf_counter() - started
        finish_import(
            engine,
            import_id,
            files=summary.files,
            records=summary.records,
            traces_imported=summary.traces,
            duplicates=summary.duplicates,
            rejected=summary.rejected,
            messages=summary.messages,
            seconds=summary.seconds,
            state="done",
        )
    except BaseException as exc:
        finish_import(engine, import_id, state="failed", error=repr(exc)[:2000])
        raise
    return summary


def _size(path: str | Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@contextmanager
def _bulk_gc() -> Iterator[None]:
    # Millions of live parsed objects make the cyclic GC rescan them over and over (halving
    # parse speed); nothing we build has cycles that need collecting during the import.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_file(
    path: Path,
    name: str | None = None,
    fmt: Any = None,
    summary: ImportSummary | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[Trace | Rejected]:
    """Canonical traces and rejections of one file (format sniffed unless ``fmt`` is given)."""
    items = split_file(path, name, fmt, summary, progress, defer=False)
    return cast(Iterator[Trace | Rejected], items)


def split_file(
    path: Path,
    name: str | None = None,
    fmt: Any = None,
    summary: ImportSummary | None = None,
    progress: ProgressFn | None = None,
    *,
    defer: bool = True,
) -> Iterator[Trace | Rejected | Deferred]:
    """:func:`parse_file`, except that (with ``defer``) formats that can (``parse_deferred``)
    leave the records that make a trace on their own unparsed, as :class:`Deferred` items
    holding only the raw bytes, for the worker processes to parse."""
    name = name or str(path)
    try:
        head = read_head(path)
    except OSError as exc:
        yield Rejected(
            source_file=name, line=0, byte_offset=0, reason="unreadable_file", message=str(exc)
        )
        return
    module = fmt or formats.sniff_format(head)
    if module is None:
        if not head.strip():
            return  # an empty file holds no records: nothing to import, nothing lost
        yield Rejected(
            source_file=name,
            line=1,
            byte_offset=0,
            reason="unknown_format",
            message="could not recognize the trace format; pass --format NAME "
            f"(one of: {', '.join(formats.format_names())})",
            raw=head[:UNKNOWN_FORMAT_KEEP],
        )
        return
    with open_input(path) as stream:
        records: Iterable[Record | Rejected] = iter_records(stream, name, max_depth=MAX_NESTING)
        if summary is not None:
            records = _counted(records, summary, progress)
        if defer and hasattr(module, "parse_deferred"):
            yield from _stripped(module.parse_deferred(records, name))
        else:
            yield from module.parse(records, name)


def _stripped(
    items: Iterable[Trace | Rejected | Deferred],
) -> Iterator[Trace | Rejected | Deferred]:
    # The worker decodes the raw bytes again: far cheaper for the parent than pickling the value.
    for item in items:
        if isinstance(item, Deferred):
            r = item.record
            item.record = Record(r.source_file, r.line, r.byte_offset, r.raw, None)
        yield item


def _counted(
    items: Iterable[Record | Rejected], summary: ImportSummary, progress: ProgressFn | None
) -> Iterator[Record | Rejected]:
    for item in items:
        summary.records += 1
        if progress is not None:
            progress(len(item.raw))
        yield item


def import_traces(
    engine: Engine,
    traces: Sequence[Trace],
    *,
    origin: str,
    source: str,
    encoding: str = DEFAULT_ENCODING,
    budget: int = DEFAULT_TOKEN_BUDGET,
) -> ImportSummary:
    """Import traces already built in memory (the OTLP receiver's) as one import run.

    A trace already stored under the same identity (format + external id) is recognized as
    such by the writer, exactly as when a file holding it is imported again.
    """
    started = time.perf_counter()
    import_id = start_import(engine, origin=origin, paths=[source], encoding=encoding)
    summary = ImportSummary(import_id=import_id)
    try:
        with BatchWriter(engine, import_id, summary, encoding, budget, 0) as writer:
            for trace in traces:
                summary.records += trace.record_count
                writer.add(trace)
        summary.seconds = time.perf_counter() - started
        finish_import(
            engine,
            import_id,
            files=0,
            records=summary.records,
            traces_imported=summary.traces,
            duplicates=summary.duplicates,
            rejected=summary.rejected,
            messages=summary.messages,
            seconds=summary.seconds,
            state="done",
        )
    except BaseException as exc:
        finish_import(engine, import_id, state="failed", error=repr(exc)[:2000])
        raise
    return summary
