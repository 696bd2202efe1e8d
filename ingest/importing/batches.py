"""Batches of traces: parsed, counted, analyzed and written by worker processes, in input order.

The parent reads files and splits them into records; everything per trace that follows
(parsing deferred records, token counts, analysis, row building) runs in worker processes, a
batch of traces at a time. When the database can be opened from another process (a SQLite file
or PostgreSQL), the worker also writes its batch: the parent then never handles the rows at all
and the write of one batch overlaps the analysis of the next. On SQLite, which has one writer
at a time anyway, batches write in submission order (a turn counter shared by the workers), so
traces seen before are judged exactly as a single process would: the first occurrence in the
input is imported, a later one with the same content unchanged, with other content an update.
On PostgreSQL batches write concurrently (each server process uses a core);
of two batches in flight at once holding the same trace, the one that commits first inserts it
and the other judges its own version against that one (unchanged or updated).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.util
import os
import signal
import sys
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from db.contract import exact_json
from db.contract.vocabulary import counted
from db.session import ImportSession, TraceRows, WorkerConnection, WriteResult
from ingest.analysis.images import countable_text
from ingest.analysis.tokens import count_many, count_tokens
from ingest.analysis.trace import analyze_trace
from ingest.formats.base import Deferred
from ingest.importing.rows import build_rows
from ingest.input.reading import finish_deferred
from ingest.model import Rejected, Trace, count_unknown
from ingest.redaction.traces import (
    RedactionSettings,
    add_counts,
    format_counts,
    redact_rejected,
    redact_trace,
)

#: ``prctl`` option: the signal a process gets when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1
#: Messages per write batch: large enough to amortize a transaction, small enough for memory.
BATCH_MESSAGES = 5000
#: Typical bytes per message of a trace file: how a deferred (unparsed) record counts toward
#: the batch size.
DEFERRED_BYTES_PER_MESSAGE = 1000
#: Rejections kept in memory before they are written.
REJECTED_FLUSH = 500
#: Rejections listed in the summary (all of them are stored).
SUMMARY_REJECTIONS = 1000


@dataclass(slots=True)
class FileCounts:
    """What an import did with one file: input records read and how each ended."""

    path: str
    size: int | None = None
    format: str | None = None
    records: int = 0
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0

    def balanced(self) -> bool:
        """Whether every record read is accounted for exactly once."""
        return self.records == self.imported + self.updated + self.unchanged + self.rejected


@dataclass(slots=True)
class ImportSummary:
    """What an import did; ``line()`` is the one-line summary the CLI prints."""

    import_id: int
    files: int = 0
    #: Files skipped unread: unchanged since the last import read them.
    files_unchanged: int = 0
    #: Input records read (or skipped as unchanged), and how each ended:
    #: ``records_imported + records_updated + records_unchanged + rejected == records``.
    records: int = 0
    records_imported: int = 0
    records_updated: int = 0
    records_unchanged: int = 0
    #: Traces new to the store, new versions of stored ones, and already stored as they are
    #: (unchanged files and untouched sessions included).
    traces: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    #: Of ``rejected``: first kept by this import, and already kept by an earlier one.
    rejected_new: int = 0
    rejected_known: int = 0
    #: Of ``unchanged``: older copies, whose messages are a strict prefix of the stored
    #: version's (left as it is).
    older_copies: int = 0
    #: Of ``traces``: other conversations under a stored identity, stored apart
    #: (``<identity>~<hash>``, :func:`db.writes.traces.apart_rows`).
    kept_apart: int = 0
    #: Over the updates: messages the new versions add and drop (the replaced versions are
    #: kept, ``trace_versions``).
    messages_added: int = 0
    messages_removed: int = 0
    messages: int = 0
    seconds: float = 0.0
    rejections: list[Rejected] = field(default_factory=list)
    #: Per file (by the name its traces carry), in the order read.
    by_file: dict[str, FileCounts] = field(default_factory=dict)
    #: Item / block type -> how many items of it no parser knew (each kept as an opaque
    #: message, ``unknown_item``), over every trace read, imported, updated or unchanged.
    unknown_items: dict[str, int] = field(default_factory=dict)

    @property
    def unknown_item(self) -> int:
        """How many items of unknown types were kept as opaque messages."""
        return sum(self.unknown_items.values())

    def add_unknown(self, counts: dict[str, int]) -> None:
        """Count the unknown items of one batch."""
        for kind, n in counts.items():
            self.unknown_items[kind] = self.unknown_items.get(kind, 0) + n

    #: Secrets replaced by ``[REDACTED:kind]``, per kind.
    redactions: dict[str, int] = field(default_factory=dict)
    #: Files read with another format than the one their first records' structure suggested,
    #: each with why (``x.jsonl read as openai_chat: tau2, … rejected 3 of the first 3 (…)``).
    format_notes: list[str] = field(default_factory=list)

    def note_format(self, name: str, note: str | None) -> None:
        """Keep ``note`` (a :class:`~ingest.input.reading.Detection` note) about the file
        ``name``."""
        if note:
            self.format_notes.append(f"{name} {note}")

    def line(self) -> str:
        """``3 files, 215 traces imported, 2 updated (+14 -0 messages), 0 unchanged, 1 rejected
        in 1.42 s``; with files skipped unread: ``3 files (2 unchanged), 4 traces imported, 0
        updated, 211 unchanged, 0 rejected in 0.31 s``; with older copies and conversations
        kept apart: ``… 3 traces imported (1 kept apart), 0 updated, 2 unchanged (1 older
        copy) …``; followed by ``; 12 secrets redacted (jwt 9, openai_key 3)`` when something
        was redacted, and by ``; x.jsonl read as openai_chat: tau2, which …`` for every file
        read with another format than its structure suggested."""
        skipped = f" ({self.files_unchanged} unchanged)" if self.files_unchanged else ""
        unknown = ""
        if self.unknown_items:
            kinds = ", ".join(f"{kind} ×{n}" for kind, n in sorted(self.unknown_items.items()))
            unknown = f", {counted(self.unknown_item, 'unknown item')} kept ({kinds})"
        apart = f" ({self.kept_apart} kept apart)" if self.kept_apart else ""
        diff = (
            f" (+{self.messages_added} -{self.messages_removed} messages)" if self.updated else ""
        )
        older = (
            f" ({counted(self.older_copies, 'older copy', 'older copies')})"
            if self.older_copies
            else ""
        )
        line = (
            f"{counted(self.files, 'file')}{skipped}, {counted(self.traces, 'trace')} imported"
            f"{apart}, {self.updated} updated{diff}, {self.unchanged} unchanged{older}, "
            f"{self.rejected} rejected{unknown} in {self.seconds:.2f} s"
        )
        redacted = format_counts(self.redactions)
        return "; ".join([line, *([redacted] if redacted else []), *self.format_notes])

    def file(self, name: str) -> FileCounts:
        """The counts of the file ``name`` (made on first use)."""
        found = self.by_file.get(name)
        if found is None:
            found = self.by_file[name] = FileCounts(name)
        return found

    def add_written(self, result: WriteResult) -> None:
        """Count what one written batch did."""
        self.traces += result.imported
        self.updated += result.updated
        self.unchanged += result.unchanged
        self.messages += result.messages
        self.records_imported += result.records_imported
        self.records_updated += result.records_updated
        self.records_unchanged += result.records_unchanged
        self.older_copies += result.older_copies
        self.kept_apart += result.kept_apart
        self.messages_added += result.messages_added
        self.messages_removed += result.messages_removed
        for (name, outcome), records in result.by_file.items():
            counts = self.file(name)
            setattr(counts, outcome, getattr(counts, outcome) + records)


class Analyzed(NamedTuple):
    """What a batch comes back as: its rows and rejections in batch order, the items of unknown
    types kept as opaque messages, and the secrets redacted (both by kind)."""

    items: list[TraceRows | Rejected]
    unknown: dict[str, int]
    redactions: dict[str, int]


def analyze_batch(
    batch: Sequence[Trace | Deferred],
    encoding: str,
    budget: int,
    redaction: RedactionSettings,
    positions: Mapping[int, int] | None = None,
) -> Analyzed:
    """Parsing of deferred records, token counts, redaction, analysis and rows of a batch.

    Token counts are those of the original text; everything after them (analysis, rows, the
    content hash that identifies a trace) sees only the redacted trace, so no secret reaches
    the store. ``positions``: the ``line_position`` of the items (by index in ``batch``) that
    are not the first trace of their file starting on their line. A trace the analysis trips
    over becomes a rejection (``analysis_failed``) instead of stopping the import. Results come
    back in batch order.
    """
    redactor = redaction.redactor()
    redactor.counts.reset()
    parsed = [finish_deferred(t) if isinstance(t, Deferred) else t for t in batch]
    for index, position in (positions or {}).items():
        item = parsed[index]
        if isinstance(item, Trace):
            item.line_position = position
    traces = [t for t in parsed if isinstance(t, Trace)]
    unknown: dict[str, int] = {}
    for read in traces:
        for kind, n in count_unknown(read.messages).items():
            unknown[kind] = unknown.get(kind, 0) + n
    counts = count_many([countable_text(m.content) for t in traces for m in t.messages], encoding)
    rows: list[TraceRows | Rejected] = []
    pos = 0
    for trace in parsed:
        if isinstance(trace, Rejected):
            rows.append(redact_rejected(trace, redactor))
            continue
        tokens = counts[pos : pos + len(trace.messages)]
        pos += len(trace.messages)
        trace = redact_trace(trace, redactor)
        try:
            facts = analyze_trace(trace, tokens, budget=budget, encoding=encoding)
            rows.append(build_rows(trace, facts, tokens))
        except Exception as exc:  # odd data must never stop an import; the trace is kept
            rows.append(_analysis_failure(trace, exc))
    return Analyzed(rows, unknown, dict(redactor.counts.reset()))


def _analysis_failure(trace: Trace, exc: Exception) -> Rejected:
    """A trace the analysis could not handle, as a rejection holding its (redacted) messages'
    payloads."""
    raw = exact_json.dumps_bytes([m.raw for m in trace.messages], orjson.OPT_NON_STR_KEYS)
    return Rejected(
        source_file=trace.source_file,
        line=trace.source_line or 0,
        byte_offset=0,
        reason="analysis_failed",
        message=f"could not analyze this trace: {exc.__class__.__name__}: {exc}",
        raw=raw,
    )


def _split(
    items: list[TraceRows | Rejected], ids: Sequence[int] | None
) -> tuple[list[TraceRows], list[int] | None, list[Rejected]]:
    """The rows of ``items`` with their reserved ids (one id per item), and the rejections."""
    rows = [i for i in items if isinstance(i, TraceRows)]
    rejected = [i for i in items if isinstance(i, Rejected)]
    if ids is None:
        return rows, None, rejected
    row_ids = [n for item, n in zip(items, ids, strict=True) if isinstance(item, TraceRows)]
    return rows, row_ids, rejected


#: The bytes of a refused trace kept with its rejection: its messages' payloads, up to this.
REFUSED_RAW_BYTES = 64 * 1024


def refused_rejections(result: WriteResult) -> list[Rejected]:
    """A ``store_refused`` rejection for each trace the database refused to store (see
    :func:`db.writes.traces.write_traces`), keeping the head of its messages' payloads."""
    return [
        Rejected(
            source_file=rows.trace.source_file,
            line=rows.trace.source_line or 0,
            byte_offset=0,
            reason="store_refused",
            message=f"trace {rows.trace.display_id}: the database refused it ({reason})",
            raw=exact_json.dumps_bytes([m.raw for m in rows.messages])[:REFUSED_RAW_BYTES],
        )
        for rows, reason in result.refused
    ]


# ---- worker processes -------------------------------------------------------------------------


@dataclass(slots=True)
class _WorkerState:
    session: ImportSession
    #: ``multiprocessing.Value("q")``: the sequence number of the batch allowed to write, or
    #: ``None`` where batches write concurrently (PostgreSQL).
    turn: Any
    turn_changed: Any  # multiprocessing.Condition guarding ``turn``


_worker: _WorkerState | None = None


def _die_with_parent(parent: int) -> None:
    """End this worker the moment ``parent`` (the importing process) dies, even by SIGKILL,
    which leaves it no chance to stop its pool: on Linux the kernel sends SIGKILL
    (``PR_SET_PDEATHSIG``); a parent already gone by then ends the worker at once."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _init_worker(
    parent: int,
    connection: WorkerConnection | None,
    import_id: int,
    turn: Any,
    turn_changed: Any,
) -> None:
    global _worker
    _die_with_parent(parent)
    # The parent stops the workers (it kills them when interrupted): Ctrl-C, which the
    # terminal sends to every process of the group, must not interrupt a worker mid-write,
    # and the parent's SIGTERM handler (``toollens import``) is not the worker's.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if connection is None:
        return  # an analyzing worker: the parent writes
    session = connection.session(import_id)
    # Close the connections when the worker exits (PostgreSQL logs abandoned ones).
    multiprocessing.util.Finalize(None, session.engine.dispose, exitpriority=10)
    _worker = _WorkerState(session, turn, turn_changed)


@contextmanager
def _turn(state: _WorkerState, seq: int) -> Iterator[None]:
    """Wait until batch ``seq`` may write; let the next one go afterwards, whatever happened."""
    if state.turn is None:
        yield
        return
    with state.turn_changed:
        state.turn_changed.wait_for(lambda: state.turn.value == seq)
    try:
        yield
    finally:
        with state.turn_changed:
            state.turn.value = seq + 1
            state.turn_changed.notify_all()


@dataclass(frozen=True, slots=True)
class _BatchJob:
    """A batch as it goes to a worker: its items, its turn to write (``seq``), the trace ids
    reserved for its items (``ids``) and how to analyze it (see :func:`analyze_batch`)."""

    batch: Sequence[Trace | Deferred]
    seq: int
    ids: Sequence[int] | None
    encoding: str
    budget: int
    redaction: RedactionSettings
    positions: Mapping[int, int] | None = None

    def analyze(self) -> Analyzed:
        return analyze_batch(self.batch, self.encoding, self.budget, self.redaction, self.positions)


def analyze_and_write(
    job: _BatchJob,
) -> tuple[WriteResult, list[Rejected], dict[str, int], dict[str, int]]:
    """The unit of work of a writing worker: analyze a batch, then write it in its turn
    (``ids``: the trace ids reserved for the batch's items, where writes run concurrently)."""
    state = _worker
    assert state is not None, "worker not initialized"
    failure: BaseException | None = None
    try:
        items, unknown, redactions = job.analyze()
        rows, row_ids, rejected = _split(items, job.ids)
    except BaseException as exc:  # still take (and pass on) the turn, or later batches hang
        failure = exc
    with _turn(state, job.seq):
        if failure is not None:
            raise failure
        written = state.session.write(rows, row_ids)
        return written, rejected + refused_rejections(written), unknown, redactions


def _analyze_only(
    job: _BatchJob,
) -> tuple[list[TraceRows | Rejected], Sequence[int] | None, dict[str, int], dict[str, int]]:
    items, unknown, redactions = job.analyze()
    return items, job.ids, unknown, redactions


# ---- the parent's side ------------------------------------------------------------------------

#: What a batch comes back as: what the worker wrote and rejected, or the analyzed items (with
#: their reserved ids) for this process to write.
_Done = (
    tuple[WriteResult, list[Rejected], dict[str, int], dict[str, int]]
    | tuple[list[TraceRows | Rejected], Sequence[int] | None, dict[str, int], dict[str, int]]
)


class BatchWriter:
    """Collects traces into batches and has them analyzed and written; collects rejections.

    With ``workers`` > 0 the batches go to a process pool (two batches per worker in flight,
    so no worker idles); with 0 everything happens in this process.
    """

    def __init__(
        self,
        session: ImportSession,
        summary: ImportSummary,
        encoding: str,
        budget: int,
        workers: int,
        redaction: RedactionSettings,
    ) -> None:
        self.session = session
        self.redaction = redaction
        self.import_id = session.import_id
        self.summary = summary
        self.encoding = encoding
        self.budget = budget
        self.workers = workers
        #: Started with the first batch: an import whose files turn out unchanged (or only
        #: grown, :mod:`ingest.importing.appending`) never pays for the workers and their tokenizer.
        self.pool: ProcessPoolExecutor | None = None
        self.workers_write = workers > 0 and session.workers_can_write
        # Two batches per worker in flight: when one is written, the next is already queued.
        self.max_pending = 2 * workers
        self.seq = 0
        self.batch: list[Trace | Deferred] = []
        #: ``line_position`` of the batch's items that are not the first trace on their line.
        self.positions: dict[int, int] = {}
        #: The file and starting line of the last trace, and how many traces started there
        #: (see ``Trace.line_position``): traces sharing a line come one after the other.
        self.last_start: tuple[str, int | None] | None = None
        self.on_line = 0
        self.batch_messages = 0
        self.rejected: list[Rejected] = []
        self.pending: deque[Future[Any]] = deque()

    @property
    def parallel(self) -> bool:
        """Whether batches go to worker processes (so records may be left for them to parse)."""
        return self.workers > 0

    def _start_pool(self) -> ProcessPoolExecutor:
        # Loading the BPE ranks costs over a CPU second; loaded once here, the forked workers
        # inherit it instead of each loading their own.
        count_tokens("warm up", self.encoding)
        context = multiprocessing.get_context("fork")
        connection: WorkerConnection | None = None
        turn, changed = None, None
        if self.workers_write:
            # The URL object goes to the workers through the initializer's arguments, never
            # through a command line (see WorkerConnection).
            connection = self.session.worker_connection()
            if not self.session.concurrent_writers:
                turn, changed = context.Value("q", 0, lock=False), context.Condition()
        self.pool = ProcessPoolExecutor(
            self.workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(), connection, self.import_id, turn, changed),
        )
        return self.pool

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        try:
            if exc_type is None:
                self._submit()
                while self.pending:
                    self._collect(self.pending.popleft().result())
                self._flush_rejected()
        finally:
            if self.pool is not None:
                if exc_type is not None:
                    self._stop_workers()
                self.pool.shutdown(cancel_futures=True)

    def _stop_workers(self) -> None:
        """Kill the worker processes at once: the import stops (Ctrl-C, SIGTERM or an error)
        and must not wait for batches nobody will collect. A batch a killed worker was writing
        rolls back with its transaction."""
        assert self.pool is not None
        processes = list(self.pool._processes.values())  # the executor offers no public way
        for process in processes:
            process.kill()
        for process in processes:
            process.join()

    def add(self, item: Trace | Rejected | Deferred) -> None:
        """Take one item of a file: a trace, a deferred record or a rejection."""
        if isinstance(item, Rejected):
            # Rejections the parent read never reach a worker: redact their bytes here.
            redactor = self.redaction.redactor()
            redactor.counts.reset()
            item = redact_rejected(item, redactor)
            add_counts(self.summary.redactions, redactor.counts.reset())
            self._reject(item)
            return
        self._place(item)
        self.batch.append(item)
        if isinstance(item, Deferred):
            self.batch_messages += len(item.record.raw) // DEFERRED_BYTES_PER_MESSAGE + 1
        else:
            self.batch_messages += len(item.messages)
        if self.batch_messages >= max(BATCH_MESSAGES, self.session.min_batch_messages):
            self._submit()

    def _place(self, item: Trace | Deferred) -> None:
        """Note which trace starting on its line ``item`` is: a file's traces come in order."""
        line = item.record.line if isinstance(item, Deferred) else item.source_line
        start = (item.source_file, line)
        if start != self.last_start or line is None:
            self.last_start, self.on_line = start, 0
            return
        self.on_line += 1
        self.positions[len(self.batch)] = self.on_line

    def _reject(self, item: Rejected) -> None:
        self.summary.rejected += 1
        self.summary.file(item.source_file).rejected += 1
        if len(self.summary.rejections) < SUMMARY_REJECTIONS:
            self.summary.rejections.append(item)
        self.rejected.append(item)
        if len(self.rejected) >= REJECTED_FLUSH:
            self._flush_rejected()

    def _submit(self) -> None:
        if not self.batch:
            return
        batch, self.batch, self.batch_messages = self.batch, [], 0
        positions, self.positions = self.positions, {}
        seq, self.seq = self.seq, self.seq + 1
        # Trace ids in input order, even where batches commit in another order.
        ids = self.session.reserve_trace_ids(len(batch))
        job = _BatchJob(batch, seq, ids, self.encoding, self.budget, self.redaction, positions)
        if not self.parallel:
            self._collect(_analyze_only(job))
            return
        work = analyze_and_write if self.workers_write else _analyze_only
        pool = self.pool or self._start_pool()
        self.pending.append(pool.submit(work, job))
        while len(self.pending) > self.max_pending:
            self._collect(self.pending.popleft().result())

    def _collect(self, done: _Done) -> None:
        if isinstance(done[0], WriteResult):
            result, rejected, unknown, redactions = done
        else:
            items, ids, unknown, redactions = done
            rows, row_ids, rejected = _split(items, ids)
            result = self.session.write(rows, row_ids)
            rejected += refused_rejections(result)
        add_counts(self.summary.redactions, redactions)
        self.summary.add_written(result)
        self.summary.add_unknown(unknown)
        for item in rejected:
            self._reject(item)

    def _flush_rejected(self) -> None:
        if not self.rejected:
            return
        new = self.session.reject(
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
        self.summary.rejected_new += new
        self.summary.rejected_known += len(self.rejected) - new
        self.rejected = []
