"""The import pipeline: files -> records -> canonical traces -> tokens -> analysis -> rows.

Every input record ends up exactly once as imported, duplicate or rejected (kept with
``file:line``, byte offset, reason and raw bytes). The parent reads files and splits them into
records (:mod:`ingest.reading`, which knows no database); parsing, token counting, analysis and
writing happen a batch at a time in :mod:`ingest.batches` (worker processes for large inputs).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine

from db import dialect
from db.engine import writing
from db.vocabulary import DEFAULT_ENCODING, DEFAULT_TOKEN_BUDGET
from db.write import finish_import, start_import
from ingest.batches import BATCH_MESSAGES, BatchWriter, ImportSummary
from ingest.model import Rejected, Trace
from ingest.reading import RecordHook, resolve_format, split_file
from ingest.records import Record
from ingest.trace_redaction import RedactionSettings

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
    redaction: RedactionSettings | None = None,
) -> ImportSummary:
    """Import trace files into ``engine``'s database; the library form of ``toollens import``.

    ``workers``: tokenizing processes (``None``: one per core for large inputs, none for small).
    ``display_names``: the names stored as ``source_file`` (default: the paths as given).
    ``redaction``: how secrets are redacted before anything is stored (``None``: from
    ``TOOLLENS_REDACT`` / ``TOOLLENS_REDACT_RULES``, on by default).
    """
    fmt_override = resolve_format(format_name)
    redaction = redaction or RedactionSettings.from_env()
    redaction.redactor()  # a bad rules file fails here, before the import run is recorded
    names = [str(p) for p in (display_names or paths)]
    started = time.perf_counter()
    import_id = start_import(engine, origin=origin, paths=names, encoding=encoding)
    summary = ImportSummary(import_id=import_id)
    if workers is None:
        total = sum(_size(p) for p in paths)
        workers = (os.cpu_count() or 1) if total >= PARALLEL_MIN_BYTES else 0
    writer = BatchWriter(engine, import_id, summary, encoding, budget, workers, redaction)
    try:
        with writer, _bulk_gc():
            for path, name in zip(paths, names, strict=True):
                summary.files += 1
                items = split_file(
                    Path(path),
                    name,
                    fmt_override,
                    _counter(summary, progress),
                    defer=writer.pool is not None,
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
            redactions=summary.redactions,
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


def _counter(summary: ImportSummary, progress: ProgressFn | None) -> RecordHook:
    """Counts every record read into ``summary`` and reports its bytes to ``progress``."""

    def count(item: Record | Rejected) -> None:
        summary.records += 1
        if progress is not None:
            progress(len(item.raw))

    return count


def import_traces(
    engine: Engine,
    traces: Sequence[Trace],
    *,
    origin: str,
    source: str,
    encoding: str = DEFAULT_ENCODING,
    budget: int = DEFAULT_TOKEN_BUDGET,
    redaction: RedactionSettings | None = None,
) -> ImportSummary:
    """Import traces already built in memory (the OTLP receiver's) as one import run.

    A trace already stored under the same identity (format + external id) is recognized as
    such by the writer, exactly as when a file holding it is imported again. ``redaction``
    as for :func:`import_paths`: the traces are redacted before they are stored.
    """
    redaction = redaction or RedactionSettings.from_env()
    started = time.perf_counter()
    import_id = start_import(engine, origin=origin, paths=[source], encoding=encoding)
    summary = ImportSummary(import_id=import_id)
    try:
        with BatchWriter(engine, import_id, summary, encoding, budget, 0, redaction) as writer:
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
            redactions=summary.redactions,
            state="done",
        )
    except BaseException as exc:
        finish_import(engine, import_id, state="failed", error=repr(exc)[:2000])
        raise
    return summary
