"""The import pipeline: files -> records -> canonical traces -> tokens -> analysis -> rows.

Every input record ends up exactly once as imported, updated, unchanged or rejected (kept once
with ``file:line``, byte offset, reason and raw bytes), counted per import and per file. The
parent reads files and splits them into records (:mod:`ingest.input.reading`, which knows no
database); parsing, token counting, analysis and writing happen a batch at a time in
:mod:`ingest.importing.batches` (worker processes for large inputs). Files unchanged since the last
import are skipped unread, and a JSONL file that only grew is read from where the last import
stopped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from db.contract.rows import SourceFileRecord
from db.contract.vocabulary import DEFAULT_ENCODING, DEFAULT_TOKEN_BUDGET
from db.door import start_session
from db.session import ImportSession
from ingest.formats.base import Deferred, TraceFormat
from ingest.importing.appending import extend_stored
from ingest.importing.batches import BATCH_MESSAGES, BatchWriter, ImportSummary
from ingest.importing.file_changes import Change, FileLook, entry_for, look_at
from ingest.importing.gc_pause import cyclic_gc_paused
from ingest.input.reading import (
    Detection,
    ReadLimits,
    RecordHook,
    detect_file,
    resolve_format,
    split_file,
)
from ingest.input.records import Record
from ingest.model import Rejected, Trace, content_hash
from ingest.redaction.secrets import Redactor
from ingest.redaction.traces import RedactionSettings

__all__ = ["BATCH_MESSAGES", "ImportSummary", "import_paths", "import_traces"]

#: Inputs smaller than this are imported in-process: starting workers costs more than it saves.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024

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
    incremental: bool = True,
    full_hash: bool = False,
    limits: ReadLimits | None = None,
    redaction: RedactionSettings | None = None,
) -> ImportSummary:
    """Import trace files into ``engine``'s database; the library form of ``toollens import``.

    ``workers``: tokenizing processes (``None``: one per core for large inputs, none for small).
    ``display_names``: the names stored as ``source_file`` (default: the paths as given).
    ``incremental``: skip files unchanged since the last import and read only what was appended
    to a grown JSONL file (:mod:`ingest.importing.file_changes`); ``full_hash`` compares files by
    the SHA-256 of their whole content instead of size, mtime and head and tail hashes.

    Interrupted (Ctrl-C, or SIGTERM where the caller turns it into ``KeyboardInterrupt``), the
    import stops its workers, is stored as ``interrupted`` with its counts so far, and the
    exception goes on; the same import run again completes it.

    ``limits``: record and input size limits (default: :meth:`ReadLimits.of`).
    ``redaction``: how secrets are redacted before anything is stored (``None``: from
    ``TOOLLENS_REDACT`` / ``TOOLLENS_REDACT_RULES``, on by default).
    """
    fmt_override = resolve_format(format_name)
    redaction = redaction or RedactionSettings.from_env()
    # A bad rules file fails here, before the import run is recorded. File names are stored
    # (the import's paths, each trace's source_file): redacted, kept apart, from the start.
    redactor = redaction.redactor()
    names = [str(redactor.redact_name(str(p))) for p in (display_names or paths)]
    session = start_session(engine, origin=origin, paths=names, encoding=encoding)
    summary = ImportSummary(import_id=session.import_id)
    if workers is None:
        total = sum(_size(p) for p in paths)
        workers = (os.cpu_count() or 1) if total >= PARALLEL_MIN_BYTES else 0
    writer = BatchWriter(session, summary, encoding, budget, workers, redaction)
    files = _IncrementalFiles(writer, fmt_override, full_hash, progress, limits, redactor)
    try:
        with writer, cyclic_gc_paused():
            for path, name in zip(paths, names, strict=True):
                summary.files += 1
                counts = summary.file(name)
                counts.size = _size(path) if os.path.exists(path) else None
                detection = detect_file(Path(path), fmt_override)
                counts.format = detection.format.name if detection.format else None
                if incremental:
                    files.read(Path(path), name, detection)
                    continue
                summary.note_format(name, detection.note)
                items = split_file(
                    Path(path),
                    name,
                    detection.format,
                    _counter(summary, name, progress),
                    defer=writer.parallel,
                    limits=limits,
                )
                for item in items:
                    writer.add(item)
        if incremental:
            # Only now is every trace of every file written: an entry saved earlier could
            # mark as read a file whose last batches an interruption lost.
            session.remember_files(
                [e._replace(path=str(redactor.redact_name(e.path))) for e in files.entries]
            )
        _finish(session, summary)
    except KeyboardInterrupt:
        _finish(session, summary, "interrupted", error="interrupted (Ctrl-C or SIGTERM)")
        raise
    except BaseException as exc:
        session.fail(repr(exc)[:2000])
        raise
    return summary


def _finish(
    session: ImportSession,
    summary: ImportSummary,
    state: str = "done",
    error: str | None = None,
) -> None:
    """End the import run with its counts, per file too (the session refreshes the planner's
    statistics after a large load)."""
    summary.seconds = session.finish(
        [asdict(f) for f in summary.by_file.values()],
        files=summary.files,
        records=summary.records,
        traces_imported=summary.traces,
        updated=summary.updated,
        unchanged=summary.unchanged,
        older_copies=summary.older_copies,
        kept_apart=summary.kept_apart,
        messages_added=summary.messages_added,
        messages_removed=summary.messages_removed,
        records_imported=summary.records_imported,
        records_updated=summary.records_updated,
        records_unchanged=summary.records_unchanged,
        rejected=summary.rejected,
        rejected_new=summary.rejected_new,
        rejected_known=summary.rejected_known,
        messages=summary.messages,
        unknown_items=summary.unknown_items,
        redactions=summary.redactions,
        state=state,
        error=error,
    )


class _IncrementalFiles:
    """Reads each file as far as it changed since the last import (its registry entry), feeds
    what needs writing to the writer, counts the rest as unchanged, and collects the files'
    new registry entries (:attr:`entries`)."""

    def __init__(
        self,
        writer: BatchWriter,
        fmt: TraceFormat | None,
        full_hash: bool,
        progress: ProgressFn | None,
        limits: ReadLimits | None,
        redactor: Redactor,
    ) -> None:
        self.session = writer.session
        self.limits = limits
        self.redactor = redactor
        self.writer = writer
        self.summary = writer.summary
        self.fmt = fmt
        self.full_hash = full_hash
        self.progress = progress
        self.entries: list[SourceFileRecord] = []
        #: The registry entry of the file being read.
        self.previous: SourceFileRecord | None = None

    def read(self, path: Path, name: str, detection: Detection) -> None:
        """Read (or skip) one file; ``name`` is what its traces and rejections carry,
        ``detection`` the format it is to be read with (``--format``'s, else detected)."""
        resolved = path.resolve()
        # The registry holds the path as every stored name is: redacted (the same way each
        # time, so the file is found again).
        key = str(self.redactor.redact_name(str(resolved)))
        previous = self.session.known_files([key]).get(key)
        self.previous = previous
        try:
            look = look_at(resolved, previous, full_hash=self.full_hash)
        except OSError:
            # Unreadable: the reader turns that into a rejection naming the file.
            tally = _Tally()
            items = split_file(path, name, self.fmt, self._hook(tally, name), limits=self.limits)
            self._add_all(items, tally)
            return
        fmt = detection.format
        if look.change is Change.UNCHANGED and previous is not None and _settled(previous, fmt):
            self._skip(previous, look, name)
            return
        self.summary.note_format(name, detection.note)
        tally = _Tally()
        resume = _resume_at(look, previous, fmt)
        if resume is not None and previous is not None and fmt is not None and fmt.trace_per_record:
            # The appended lines are traces of their own: read only those.
            self._unchanged(previous.records, previous.traces, tally, name)
            items = split_file(path, name, fmt, self._hook(tally, name), **self._defer(resume))
            self._add_all(items, tally)
        elif resume is None or fmt is None or not self._add_touched(path, name, fmt, resume, tally):
            items = split_file(path, name, fmt, self._hook(tally, name), **self._defer(None))
            self._add_all(items, tally)
        self.entries.append(
            entry_for(
                look,
                resolved,
                format_name=fmt.name if fmt is not None else None,
                previous=previous,
                records=tally.records,
                traces=tally.traces,
                import_id=self.summary.import_id,
            )
        )

    def _skip(self, previous: SourceFileRecord, look: FileLook, name: str) -> None:
        self.summary.files_unchanged += 1
        self._unchanged(previous.records, previous.traces, _Tally(), name)
        if self.progress is not None:
            self.progress(look.size)
        self.entries.append(
            previous._replace(
                mtime_ns=look.mtime_ns,
                full_hash=look.full_hash or previous.full_hash,
                last_import_id=self.summary.import_id,
            )
        )

    def _unchanged(self, records: int, traces: int, tally: _Tally, name: str) -> None:
        """Count ``records`` input records of the file ``name`` holding ``traces`` traces as
        read and unchanged."""
        self.summary.records += records
        self.summary.records_unchanged += records
        self.summary.unchanged += traces
        counts = self.summary.file(name)
        counts.records += records
        counts.unchanged += records
        tally.records += records
        tally.traces += traces

    def _defer(self, resume: tuple[int, int] | None) -> dict[str, Any]:
        return {"defer": self.writer.parallel, "resume": resume, "limits": self.limits}

    def _hook(self, tally: _Tally, name: str) -> RecordHook:
        count = _counter(self.summary, name, self.progress)

        def hook(item: Record | Rejected) -> None:
            tally.records += 1
            count(item)

        return hook

    def _add_all(self, items: Iterable[Trace | Rejected | Deferred], tally: _Tally) -> None:
        for item in items:
            if not isinstance(item, Rejected):
                tally.traces += 1
            self.writer.add(item)

    def _add_touched(
        self,
        path: Path,
        name: str,
        fmt: TraceFormat,
        resume: tuple[int, int],
        tally: _Tally,
    ) -> bool:
        """Re-read a grown file whose traces span many lines (a Claude Code session), passing
        on only the traces the appended lines belong to, and only where they are not stored
        as they are; False (nothing read) when an appended line's trace has no identity of
        its own (no external id) to recognize it by in the whole file."""
        if self.previous is not None and extend_stored(
            self.writer, path, name, fmt, resume,
            records_before=self.previous.records, on_record=self._hook(tally, name),
            limits=self.limits,
        ):  # fmt: skip
            # Only the appended lines were read, on top of the stored version.
            tally.records += self.previous.records
            tally.traces += 1
            return True
        touched: set[str] = set()
        appended = _Tally()

        def count_appended(_item: Record | Rejected) -> None:
            appended.records += 1

        appended_items = split_file(
            path, name, fmt, count_appended, defer=False, resume=resume, limits=self.limits
        )
        for item in appended_items:
            if isinstance(item, Trace):
                if not item.external_id:
                    return False
                touched.add(item.dedupe_key())
        # Looked up before anything is parsed again: only touched traces whose content changed
        # go on to tokens, analysis and writing (a new version of the stored trace).
        stored = self.session.stored_hashes(touched)
        # Read whole again: every record counts as read; those left alone count as unchanged.
        counts = self.summary.file(name)
        whole = split_file(
            path, name, fmt, self._hook(tally, name), defer=False, limits=self.limits
        )
        for item in whole:
            if isinstance(item, Rejected):
                if item.byte_offset < resume[0]:
                    self.summary.records_unchanged += 1  # rejected and stored before
                    counts.unchanged += 1
                else:
                    self.writer.add(item)
                continue
            assert isinstance(item, Trace)
            tally.traces += 1
            key = item.dedupe_key()
            if key not in touched or (
                stored.get(key) is not None and stored[key] == content_hash(item)
            ):
                self.summary.unchanged += 1
                self.summary.records_unchanged += item.record_count
                counts.unchanged += item.record_count
            else:
                self.writer.add(item)
        return True


def _settled(previous: SourceFileRecord, fmt: TraceFormat | None) -> bool:
    """Whether an unchanged file's last import stands: it was read with the format it is to be
    read with now (a file read with another ``--format``, or detected otherwise, is read
    again) and did not fail (a file whose every record was rejected is read again: its
    rejections may have come from a wrong format, a bug since fixed, or a limit since raised).
    """
    if fmt is None or previous.format != fmt.name:
        return False
    return previous.traces > 0 or previous.records == 0


def _resume_at(
    look: FileLook, previous: SourceFileRecord | None, fmt: TraceFormat | None
) -> tuple[int, int] | None:
    """Where to go on reading a grown file, (byte offset, line), if it grew; the format must be
    the one its first part was read with."""
    if look.change is not Change.GROWN or previous is None or previous.read_bytes is None:
        return None
    if fmt is None or fmt.name != previous.format:
        return None
    return previous.read_bytes, previous.read_lines + 1


@dataclass(slots=True)
class _Tally:
    """What one file holds, as far as read: its registry entry's ``records`` and ``traces``."""

    records: int = 0
    traces: int = 0


def _size(path: str | Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


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


def import_traces(
    engine: Engine,
    traces: Iterable[Trace],
    *,
    origin: str = "api",
    source: str | None = None,
    encoding: str = DEFAULT_ENCODING,
    budget: int = DEFAULT_TOKEN_BUDGET,
    redaction: RedactionSettings | None = None,
) -> ImportSummary:
    """Import traces built in memory (a receiver, a test) rather than read from files.

    ``source`` names where they came from in the import's ``paths`` (the OTLP receiver's spool).

    They are judged like traces from files: a new identity is imported, a stored one with the
    same content unchanged, with other content updated (the stored version replaced, notes and
    corrections carried over). Each trace counts its ``record_count`` records, per
    ``source_file``.
    ``redaction`` as for :func:`import_paths`: the traces are redacted before they are stored.
    """
    redaction = redaction or RedactionSettings.from_env()
    redactor = redaction.redactor()
    paths = [str(redactor.redact_name(source))] if source else []
    session = start_session(engine, origin=origin, paths=paths, encoding=encoding)
    summary = ImportSummary(import_id=session.import_id)
    try:
        with BatchWriter(session, summary, encoding, budget, 0, redaction) as writer:
            for trace in traces:
                summary.records += trace.record_count
                name = str(redactor.redact_name(trace.source_file))
                summary.file(name).records += trace.record_count
                writer.add(trace)
        summary.files = len(summary.by_file)
        _finish(session, summary)
    except BaseException as exc:
        session.fail(repr(exc)[:2000])
        raise
    return summary
