"""The import pipeline: files -> records -> canonical traces -> tokens -> analysis -> rows.

Every input record ends up exactly once as imported, updated, unchanged or rejected (kept once
with ``file:line``, byte offset, reason and raw bytes), counted per import and per file. The
parent reads files and splits them into records (:mod:`ingest.reading`, which knows no
database); parsing, token counting, analysis and writing happen a batch at a time in
:mod:`ingest.batches` (worker processes for large inputs).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from sqlalchemy import Engine

from db import dialect
from db.engine import writing
from db.vocabulary import DEFAULT_ENCODING, DEFAULT_TOKEN_BUDGET
from db.write import finish_import, start_import, write_import_files
from ingest.batches import BATCH_MESSAGES, BatchWriter, ImportSummary
from ingest.model import Rejected, Trace
from ingest.reading import RecordHook, file_format, resolve_format, split_file
from ingest.records import Record

__all__ = ["BATCH_MESSAGES", "ImportSummary", "import_paths", "import_traces"]

#: Inputs smaller than this are imported in-process: starting workers costs more than it saves.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
#: After an import of at least this many messages the planner's statistics are refreshed, so
#: the dashboard's queries pick the right indexes on a freshly loaded database.
ANALYZE_MIN_MESSAGES = 10_000
ANALYZED_TABLES = ("traces", "messages", "tool_calls", "tool_results", "findings")

#: Told the bytes of every record read (the CLI's progress bar).
ProgressFn = Callable[[int], None]


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
                counts = summary.file(name)
                counts.size = _size(path) if os.path.exists(path) else None
                counts.format = file_format(Path(path), fmt_override)
                items = split_file(
                    Path(path),
                    name,
                    fmt_override,
                    _counter(summary, name, progress),
                    defer=writer.pool is not None,
                )
                for item in items:
                    writer.add(item)
        _finish(engine, summary, started)
    except BaseException as exc:
        finish_import(engine, import_id, state="failed", error=repr(exc)[:2000])
        raise
    return summary


def import_traces(
    engine: Engine,
    traces: Iterable[Trace],
    *,
    origin: str = "api",
    source: str | None = None,
    encoding: str = DEFAULT_ENCODING,
    budget: int = DEFAULT_TOKEN_BUDGET,
) -> ImportSummary:
    """Import traces built in memory (a receiver, a test) rather than read from files.

    ``source`` names where they came from in the import's ``paths`` (the OTLP receiver's spool).

    They are judged like traces from files: a new identity is imported, a stored one with the
    same content unchanged, with other content updated (the stored version replaced, notes and
    corrections carried over). Each trace counts its ``record_count`` records, per
    ``source_file``.
    """
    started = time.perf_counter()
    paths = [source] if source else []
    import_id = start_import(engine, origin=origin, paths=paths, encoding=encoding)
    summary = ImportSummary(import_id=import_id)
    try:
        with BatchWriter(engine, import_id, summary, encoding, budget, workers=0) as writer:
            for trace in traces:
                summary.records += trace.record_count
                summary.file(trace.source_file).records += trace.record_count
                writer.add(trace)
        summary.files = len(summary.by_file)
        _finish(engine, summary, started)
    except BaseException as exc:
        finish_import(engine, import_id, state="failed", error=repr(exc)[:2000])
        raise
    return summary


def _finish(engine: Engine, summary: ImportSummary, started: float) -> None:
    """Refresh statistics after a large load and store the import's counts, per file too."""
    if summary.messages >= ANALYZE_MIN_MESSAGES:
        with writing(engine) as conn:
            dialect.analyze(conn, ANALYZED_TABLES)
    summary.seconds = time.perf_counter() - started
    write_import_files(
        engine,
        summary.import_id,
        [asdict(f) for f in summary.by_file.values()],
    )
    finish_import(
        engine,
        summary.import_id,
        files=summary.files,
        records=summary.records,
        traces_imported=summary.traces,
        updated=summary.updated,
        unchanged=summary.unchanged,
        records_imported=summary.records_imported,
        records_updated=summary.records_updated,
        records_unchanged=summary.records_unchanged,
        rejected=summary.rejected,
        rejected_new=summary.rejected_new,
        rejected_known=summary.rejected_known,
        messages=summary.messages,
        seconds=summary.seconds,
        state="done",
    )


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


def _counter(summary: ImportSummary, name: str, progress: ProgressFn | None) -> RecordHook:
    """Counts every record read into ``summary`` (and its file ``name``) and reports its bytes
    to ``progress``."""
    counts = summary.file(name)

    def count(item: Record | Rejected) -> None:
        summary.records += 1
        counts.records += 1
        if progress is not None:
            progress(len(item.raw))

    return count
