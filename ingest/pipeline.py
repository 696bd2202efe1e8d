"""The import pipeline: files -> records -> canonical traces -> tokens -> analysis -> rows.

Every input record ends up exactly once as imported, duplicate or rejected (kept with
``file:line``, byte offset, reason and raw bytes). Token counting, analysis and row building run
in worker processes, a batch of traces at a time, while the parent reads, parses and writes.
"""

from __future__ import annotations

import gc
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
from sqlalchemy import Engine

from db.write import TraceRows, finish_import, start_import, write_rejected, write_traces
from ingest import formats
from ingest.analysis import analyze_trace
from ingest.facts import DEFAULT_TOKEN_BUDGET
from ingest.formats._common import Deferred
from ingest.jsonrecord import _replace_nul
from ingest.jsonstream import iter_records, open_input, read_head
from ingest.model import Rejected, Trace
from ingest.records import Record
from ingest.rows import build_rows
from ingest.tokens import DEFAULT_ENCODING, count_many, count_tokens

#: Messages per write batch: large enough to amortize a transaction, small enough for memory.
BATCH_MESSAGES = 5000
#: Typical bytes per message of a trace file: how a deferred (unparsed) record counts toward
#: the batch size.
DEFERRED_BYTES_PER_MESSAGE = 1000
#: Inputs smaller than this are imported in-process: starting workers costs more than it saves.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
#: Raw bytes kept for a file whose format is not recognized.
UNKNOWN_FORMAT_KEEP = 1024 * 1024
#: Deepest JSON nesting accepted. Raw payloads are stored (and hashed) as JSON again, and
#: orjson refuses to serialize more than 254 levels; the margin covers the wrapping we add.
MAX_NESTING = 200

ProgressFn = Callable[[int], None]


@dataclass(slots=True)
class ImportSummary:
    """What an import did; ``line()`` is the one-line summary the CLI prints."""

    import_id: int
    files: int = 0
    #: Input records read, and how each ended: imported + duplicate + rejected == records.
    records: int = 0
    records_imported: int = 0
    records_duplicate: int = 0
    traces: int = 0
    duplicates: int = 0
    rejected: int = 0
    messages: int = 0
    seconds: float = 0.0
    rejections: list[Rejected] = field(default_factory=list)

    def line(self) -> str:
        """``3 files, 215 traces imported, 0 duplicates, 1 rejected in 1.42 s``."""
        files = "file" if self.files == 1 else "files"
        return (
            f"{self.files} {files}, {self.traces} traces imported, {self.duplicates} duplicates, "
            f"{self.rejected} rejected in {self.seconds:.2f} s"
        )


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
    writer = _BatchWriter(engine, import_id, summary, encoding, budget, workers)
    try:
        with writer, _bulk_gc():
            for path, name in zip(paths, names, strict=True):
                summary.files += 1
                items = split_file(
                    Path(path), name, fmt_override, summary, progress, defer=writer.pool is not None
                )
                for item in items:
                    writer.add(item)
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


def _parse_deferred(item: Deferred) -> Trace | Rejected:
    """What the format's parser makes of a deferred record (decoded again from its raw bytes,
    exactly as ``ingest.jsonrecord.decode_record`` did)."""
    record = item.record
    value = orjson.loads(record.raw)
    if b"\\u0000" in record.raw:
        _replace_nul(value)
    record.value = value
    module: Any = formats.get_format(item.format)
    result: Trace | Rejected = module.parse_one(record, item.source_file)
    return result


def _counted(
    items: Iterable[Record | Rejected], summary: ImportSummary, progress: ProgressFn | None
) -> Iterator[Record | Rejected]:
    for item in items:
        summary.records += 1
        if progress is not None:
            progress(len(item.raw))
        yield item


def analyze_batch(
    batch: Sequence[Trace | Deferred], encoding: str, budget: int
) -> list[TraceRows | Rejected]:
    """Parsing of deferred records, token counts, analysis and rows of a batch of traces: the
    unit of work of a worker.

    Everything per trace that does not need the database happens here, so that with N workers
    the parent is left with only reading, splitting records and writing. A trace the analysis
    trips over becomes a rejection (``analysis_failed``) instead of stopping the import.
    Results come back in batch order.
    """
    parsed = [_parse_deferred(t) if isinstance(t, Deferred) else t for t in batch]
    traces = [t for t in parsed if isinstance(t, Trace)]
    counts = count_many([m.content for t in traces for m in t.messages], encoding)
    rows: list[TraceRows | Rejected] = []
    pos = 0
    for trace in parsed:
        if isinstance(trace, Rejected):
            rows.append(trace)
            continue
        tokens = counts[pos : pos + len(trace.messages)]
        pos += len(trace.messages)
        try:
            facts = analyze_trace(trace, tokens, budget=budget)
            rows.append(build_rows(trace, facts, tokens))
        except Exception as exc:  # odd data must never stop an import; the trace is kept
            rows.append(_analysis_failure(trace, exc))
    return rows


def _analysis_failure(trace: Trace, exc: Exception) -> Rejected:
    """A trace the analysis could not handle, as a rejection holding its messages' payloads."""
    raw = orjson.dumps([m.raw for m in trace.messages], default=str, option=orjson.OPT_NON_STR_KEYS)
    return Rejected(
        source_file=trace.source_file,
        line=trace.source_line or 0,
        byte_offset=0,
        reason="analysis_failed",
        message=f"could not analyze this trace: {exc.__class__.__name__}: {exc}",
        raw=raw,
    )


class _BatchWriter:
    """Batches traces; workers count tokens and analyze batches while the parent parses and
    writes, so the parent's share (reading, parsing, writing) sets the pace."""

    def __init__(
        self,
        engine: Engine,
        import_id: int,
        summary: ImportSummary,
        encoding: str,
        budget: int,
        workers: int,
    ) -> None:
        self.engine = engine
        self.import_id = import_id
        self.summary = summary
        self.encoding = encoding
        self.budget = budget
        if workers > 0:
            # Loading the BPE ranks costs ~1.4 CPU s; loaded once here, the forked workers
            # inherit it instead of each loading their own.
            count_tokens("warm up", encoding)
        self.pool = ProcessPoolExecutor(workers) if workers > 0 else None
        # One batch per worker plus one queued, so no worker idles while the parent writes;
        # batches are written in submission order, so de-duplication sees the input order.
        self.max_pending = workers + 1
        self.batch: list[Trace | Deferred] = []
        self.batch_messages = 0
        self.rejected: list[Rejected] = []
        self.pending: deque[Future[list[TraceRows | Rejected]]] = deque()

    def __enter__(self) -> _BatchWriter:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        try:
            if exc_type is None:
                self._submit()
                self._drain()
                self._flush_rejected()
        finally:
            if self.pool is not None:
                self.pool.shutdown(cancel_futures=True)

    def add(self, item: Trace | Rejected | Deferred) -> None:
        if isinstance(item, Rejected):
            self.summary.rejected += 1
            if len(self.summary.rejections) < 1000:
                self.summary.rejections.append(item)
            self.rejected.append(item)
            if len(self.rejected) >= 500:
                self._flush_rejected()
            return
        self.batch.append(item)
        if isinstance(item, Deferred):
            self.batch_messages += len(item.record.raw) // DEFERRED_BYTES_PER_MESSAGE + 1
        else:
            self.batch_messages += len(item.messages)
        if self.batch_messages >= BATCH_MESSAGES:
            self._submit()

    def _submit(self) -> None:
        if not self.batch:
            return
        batch, self.batch, self.batch_messages = self.batch, [], 0
        if self.pool is None:
            self._write(analyze_batch(batch, self.encoding, self.budget))
            return
        self.pending.append(self.pool.submit(analyze_batch, batch, self.encoding, self.budget))
        while len(self.pending) > self.max_pending:
            self._write(self.pending.popleft().result())

    def _drain(self) -> None:
        while self.pending:
            self._write(self.pending.popleft().result())

    def _write(self, items: list[TraceRows | Rejected]) -> None:
        rows: list[TraceRows] = []
        for item in items:
            if isinstance(item, Rejected):
                self.add(item)
            else:
                rows.append(item)
        result = write_traces(self.engine, self.import_id, rows)
        self.summary.traces += result.imported
        self.summary.duplicates += result.duplicates
        self.summary.messages += result.messages
        self.summary.records_imported += result.records_imported
        self.summary.records_duplicate += result.records_duplicate

    def _flush_rejected(self) -> None:
        if not self.rejected:
            return
        write_rejected(
            self.engine,
            self.import_id,
            [
                {
                    "source_file": r.source_file,
                    "line": r.line,
                    "byte_offset": r.byte_offset,
                    "reason": r.reason,
                    "message": r.message,
                    "raw": r.raw,
                }
                for r in self.rejected
            ],
        )
        self.rejected = []
