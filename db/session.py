"""The door every import goes through: :class:`ImportSession`.

An import run (files, an upload, the OTLP receiver's round, traces built in memory, lines
appended to a stored session) writes only through a session: it starts one (the run is
recorded as ``running``), reserves trace ids, writes batches of :class:`TraceRows`, extends a
stored trace, keeps rejected records, remembers the files it read, and finishes (its counts, its
state). What is storage policy rather than importing is decided here, not by the importer:

* after a large import, which tables get fresh planner statistics (:data:`ANALYZED_TABLES`,
  from :data:`ANALYZE_MIN_MESSAGES` messages on), so the dashboard's queries pick the right
  indexes on a freshly loaded database;
* how many messages a batch written at once should at least hold
  (:attr:`ImportSession.min_batch_messages`: ClickHouse wants big blocks);
* whether worker processes may write at all (:attr:`ImportSession.workers_can_write`: the
  store can be opened from another process) and whether their writes may run concurrently
  (:attr:`ImportSession.concurrent_writers`: PostgreSQL yes, SQLite one writer at a time);
* how a worker process connects: :meth:`ImportSession.worker_connection`, a picklable
  :class:`WorkerConnection` holding the engine's URL object (password included), handed to the
  pool's initializer, never rendered into a string or a command line.

The store's upkeep outside an import run goes through the same door, :class:`Maintenance`:
re-analysis (stored traces read back, their derived rows rewritten), deletion, giving the space
of deleted rows back, recounting the rollups; and a whole store copied into another,
:func:`copy_store`. ``tests/test_import_graph.py`` fails on a write
of ``db`` imported past the door.

A second storage engine implements this door (and compiles the figure catalogue); the importer
does not change: it opens a run with :func:`db.door.start_session`, which picks the engine's
door (ClickHouse: :class:`db.clickhouse.session.ClickHouseImportSession`). The dashboard's
one-row writes (notes, corrections, review marks) are not import runs (no run, no batches, no
statistics, no workers): they stay single-transaction functions of their ``db`` modules, called
from the dashboard's one gateway (:mod:`dashboard.writes`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import URL, Engine

from db import dialect
from db.bulk.copy import BATCH_ROWS, CopyResult
from db.bulk.stored import StoredTrace, iter_trace_id_batches, load_traces, replace_derived
from db.contract.rows import SourceFileRecord
from db.engine import make_engine, other_processes_can_open
from db.rollups import upkeep as rollups
from db.writes.append import AppendBase, load_append_base, raw_members, write_append
from db.writes.deletion import Selection, count_rows, delete_rows, vacuum
from db.writes.source_files import load_source_files, save_source_files, stored_content_hashes
from db.writes.traces import (
    TraceRows,
    WriteResult,
    finish_import,
    mark_gone_imports,
    reserve_trace_ids,
    start_import,
    write_import_files,
    write_rejected,
    write_traces,
)
from db.writes.transaction import writing

if TYPE_CHECKING:
    from db.clickhouse.vacuum import VacuumReport

__all__ = [
    "ANALYZED_TABLES",
    "ANALYZE_MIN_MESSAGES",
    "AppendBase",
    "ImportSession",
    "Maintenance",
    "TraceRows",
    "WorkerConnection",
    "WriteResult",
    "copy_store",
    "mark_gone_imports",
]

#: After an import of at least this many messages the planner's statistics are refreshed.
ANALYZE_MIN_MESSAGES = 10_000
#: The tables whose statistics the dashboard's plans depend on.
ANALYZED_TABLES = ("traces", "messages", "tool_calls", "tool_results", "findings")


@dataclass(frozen=True, slots=True)
class WorkerConnection:
    """How a worker process opens the store its parent imports into: picklable, password kept.

    It holds SQLAlchemy's :class:`~sqlalchemy.engine.URL` object, not a rendered string. It
    travels to a worker as an argument of the pool's initializer (``initargs``), and those are
    never part of any process's command line: with the ``fork`` start method the worker is a
    copy of the parent's memory and its ``/proc/<pid>/cmdline`` (what ``ps`` shows) is the
    parent's own, unchanged; with ``spawn`` or ``forkserver`` the arguments are pickled down a
    pipe after the process started. The URL's ``repr`` masks the password, so a traceback or
    log line that prints the spec does not show it either.
    """

    url: URL

    @classmethod
    def of(cls, engine: Engine) -> WorkerConnection:
        """How a worker process opens ``engine``'s store."""
        return cls(engine.url)

    @staticmethod
    def reaches(engine: Engine) -> bool:
        """Whether another process can open ``engine``'s store at all (a SQLite file or
        PostgreSQL; not an in-memory database, which lives in this process only, nor a
        ClickHouse store, whose engine's URL names a client of this process)."""
        return engine.dialect.name != "clickhouse" and other_processes_can_open(engine.url)

    def engine(self) -> Engine:
        """An engine of its own for this process (the schema is the parent's: no migration)."""
        return make_engine(self.url, migrate=False)

    def session(self, import_id: int) -> ImportSession:
        """The parent's import run, opened in this process (a writing worker's side). Its
        SQLite file is not memory-mapped: a worker writes, and the pages a map touches would
        stay in its resident set, growing with the store (see :func:`db.engine.make_engine`)."""
        return ImportSession(make_engine(self.url, migrate=False, map_file=False), import_id)


class ImportSession:
    """One import run and every write it makes (see the module's docstring).

    :meth:`start` records the run; a worker process joins a running one through
    :meth:`WorkerConnection.session`.
    """

    def __init__(self, engine: Engine, import_id: int) -> None:
        self.engine = engine
        self.import_id = import_id
        self._started = time.perf_counter()

    @classmethod
    def start(
        cls, engine: Engine, *, origin: str, paths: Sequence[str], encoding: str
    ) -> ImportSession:
        """Record a new import run (``running``, with this process) and open it. Runs this
        host's dead processes left ``running`` are marked ``interrupted`` first."""
        started = time.perf_counter()
        session = cls(engine, start_import(engine, origin=origin, paths=paths, encoding=encoding))
        session._started = started
        return session

    # ---- storage policy ------------------------------------------------------------------

    @property
    def workers_can_write(self) -> bool:
        """Whether worker processes can open the store and write their batches themselves (a
        SQLite file or PostgreSQL; not an in-memory database)."""
        return WorkerConnection.reaches(self.engine)

    @property
    def min_batch_messages(self) -> int:
        """The fewest messages a batch of traces should hold when it is written (0: the
        importer's own batch size stands)."""
        return 0

    @property
    def concurrent_writers(self) -> bool:
        """Whether batches may be written by several writers at once (PostgreSQL); where not
        (SQLite) they write one at a time, in submission order."""
        return dialect.concurrent_writers(self.engine)

    def worker_connection(self) -> WorkerConnection:
        """What a worker process connects with (see :class:`WorkerConnection`)."""
        return WorkerConnection.of(self.engine)

    # ---- writing ------------------------------------------------------------------------

    def reserve_trace_ids(self, count: int) -> list[int] | None:
        """Ids for the next ``count`` traces in input order where writers run concurrently
        (else ``None``: the ids follow commit order, which is input order)."""
        return reserve_trace_ids(self.engine, count)

    def write(self, rows: Sequence[TraceRows], ids: Sequence[int] | None = None) -> WriteResult:
        """Write one batch of traces in one transaction (:func:`db.writes.traces.write_traces`)."""
        return write_traces(self.engine, self.import_id, rows, ids)

    def reject(self, rejected: Sequence[dict[str, Any]]) -> int:
        """Keep rejected records (file, line, byte offset, reason, message, raw bytes) not kept
        yet; how many were new (:func:`db.writes.traces.write_rejected`)."""
        return write_rejected(self.engine, self.import_id, rejected)

    # ---- extending a stored trace --------------------------------------------------------

    def append_base(self, format_name: str, source_file: str) -> AppendBase | None:
        """The one stored trace of ``format_name`` read from ``source_file``, as extending it
        needs it (:func:`db.writes.append.load_append_base`)."""
        return load_append_base(self.engine, format_name, source_file)

    def raw_members(
        self, trace_id: int, key: str, seqs: Sequence[int] | None = None
    ) -> dict[int, str]:
        """String members ``key`` of a stored trace's raw payloads by seq
        (:func:`db.writes.append.raw_members`)."""
        return raw_members(self.engine, trace_id, key, seqs)

    def append(
        self,
        base: AppendBase,
        rows: TraceRows,
        first_new_seq: int,
        tool_contents: dict[int, str],
    ) -> bool:
        """Store ``rows`` as the new version of ``base``'s trace; False when the stored trace
        changed since ``base`` was read (:func:`db.writes.append.write_append`)."""
        return write_append(self.engine, self.import_id, base, rows, first_new_seq, tool_contents)

    # ---- the files read ------------------------------------------------------------------

    def known_files(self, paths: Iterable[str]) -> dict[str, SourceFileRecord]:
        """The registry entries of ``paths`` (files read by earlier imports)."""
        return load_source_files(self.engine, paths)

    def stored_hashes(self, keys: Iterable[str]) -> dict[str, str | None]:
        """The content hash of the stored trace of each identity in ``keys``."""
        return stored_content_hashes(self.engine, keys)

    def remember_files(self, entries: Sequence[SourceFileRecord]) -> None:
        """Save the registry entries of the files this import read (once every trace of them
        is written: an entry saved earlier could mark as read what an interruption lost)."""
        save_source_files(self.engine, entries)

    # ---- the end ------------------------------------------------------------------------

    def finish(
        self,
        by_file: Sequence[Mapping[str, Any]],
        /,
        *,
        state: str = "done",
        error: str | None = None,
        **counts: Any,
    ) -> float:
        """End the run: refresh the planner's statistics after a large completed load, store
        what it did with each file (``by_file``), its counts (``messages``,
        ``traces_imported`` …), ``state`` and ``error``; the run's seconds, stored with it."""
        if state == "done" and counts.get("messages", 0) >= ANALYZE_MIN_MESSAGES:
            with writing(self.engine) as conn:
                dialect.analyze(conn, ANALYZED_TABLES)
        seconds = time.perf_counter() - self._started
        write_import_files(self.engine, self.import_id, [dict(f) for f in by_file])
        finish_import(
            self.engine, self.import_id, **counts, seconds=seconds, state=state, error=error
        )
        return seconds

    def fail(self, error: str) -> None:
        """End the run as ``failed`` with ``error`` (the import raised)."""
        finish_import(self.engine, self.import_id, state="failed", error=error)


class Maintenance:
    """The store's upkeep outside an import run (``toollens reanalyze``, ``delete``, ``prune``,
    ``vacuum``, ``rebuild-rollups``, the dashboard's deletions): every write it makes, each in
    one transaction that keeps the rollups exact."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # ---- re-analysis ---------------------------------------------------------------------

    def trace_id_batches(self) -> Iterator[list[int]]:
        """The stored traces' ids, a batch at a time
        (:func:`db.bulk.stored.iter_trace_id_batches`)."""
        return iter_trace_id_batches(self.engine)

    def stored_traces(self, ids: Sequence[int]) -> list[StoredTrace]:
        """The stored traces ``ids`` as the analysis rebuilds them
        (:func:`db.bulk.stored.load_traces`)."""
        return load_traces(self.engine, ids)

    def replace_derived(self, batch: Sequence[tuple[int, TraceRows]]) -> None:
        """Rewrite the calls, results, findings and aggregates of stored traces, keeping the
        reviewers' corrections (:func:`db.bulk.stored.replace_derived`); on ClickHouse, write
        each changed trace as a new version (:func:`db.clickhouse.reanalysis.replace_derived`)."""
        if self.engine.dialect.name == "clickhouse":
            # Imported here: the ClickHouse writer is loaded only for a ClickHouse store.
            from db.clickhouse import reanalysis

            reanalysis.replace_derived(self.engine, batch)
            return
        replace_derived(self.engine, batch)

    # ---- deletion ------------------------------------------------------------------------

    def count(self, selection: Selection) -> dict[str, int]:
        """The rows :meth:`delete` would remove, per table
        (:func:`db.writes.deletion.count_rows`)."""
        return count_rows(self.engine, selection)

    def delete(self, selection: Selection) -> dict[str, int]:
        """Delete ``selection`` and every row that points at it; the rows per table."""
        return delete_rows(self.engine, selection)

    def vacuum(self) -> VacuumReport | None:
        """Give the space of deleted rows back to the disk (:func:`db.writes.deletion.vacuum`);
        on ClickHouse, what it took off the disk."""
        return vacuum(self.engine)

    # ---- rollups -------------------------------------------------------------------------

    def rebuild_rollups(self) -> int:
        """Recount every rollup from the base tables (:func:`db.rollups.upkeep.rebuild`); the
        traces counted."""
        return rollups.rebuild(self.engine)


def copy_store(
    source_url: str,
    target_url: str,
    *,
    batch_rows: int = BATCH_ROWS,
    progress: Callable[[str, int], None] | None = None,
    leave_out: frozenset[str] = frozenset(),
) -> CopyResult:
    """Copy the store at ``source_url`` into the one at ``target_url`` (``toollens copy``:
    empty, or holding an unfinished copy of the same source, which continues), in batches of
    ``batch_rows`` rows, calling ``progress(table, rows)``; between any two engines, ClickHouse
    included (:func:`db.bulk.copy_across.copy_store`; ``leave_out``: the tables a ClickHouse
    store has no place for that the caller agrees to leave behind)."""
    # Imported here: the copy opens ClickHouse's own session, which subclasses this module's.
    from db.bulk.copy_across import copy_store as copy_across

    return copy_across(
        source_url, target_url, batch_rows=batch_rows, progress=progress, leave_out=leave_out
    )
