"""Bulk writes: whole traces with their messages, calls, results and findings, in batches.

Child rows bypass the ORM (``add_all`` is ~8x slower than raw ``executemany``): on SQLite they go
through the DBAPI cursor's ``executemany``, on PostgreSQL through ``COPY … FROM STDIN``
(see :mod:`db.dialect`). Every batch is one transaction, so a trace is never half written.
A trace already stored under its identity (``dedupe_key``) is unchanged (same content hash:
importing twice changes nothing), an older copy (its messages a strict prefix of the stored
version's: unchanged, the longer version stays), another conversation (see :func:`decide_batch`:
stored apart under ``<identity>~<hash>``) or updated (its stored version replaced in the same
transaction, and kept in ``trace_versions``: :mod:`db.writes.versions`); no content is ever dropped.
A rejected record is kept once however often it is imported.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast

import psycopg
from sqlalchemy import Connection, Engine, Table, delete, insert, select, update
from sqlalchemy import exc as sa_exc

from db import dialect, schema
from db.contract import rows as contract
from db.rollups import upkeep as rollups
from db.writes import processes, versions
from db.writes import search_index as search
from db.writes.carry_over import Reviews, carry_over, new_pair_map, read_reviews
from db.writes.transaction import writing

TRACES = cast(Table, schema.TraceRow.__table__)


@dataclass(slots=True)
class TraceRows:
    """Everything stored for one trace, as row contracts (built by ``ingest``)."""

    trace: contract.TraceRecord
    messages: list[contract.MessageRecord] = field(default_factory=list)
    tool_calls: list[contract.ToolCallRecord] = field(default_factory=list)
    tool_results: list[contract.ToolResultRecord] = field(default_factory=list)
    findings: list[contract.FindingRecord] = field(default_factory=list)
    error_streaks: list[contract.ErrorStreakRecord] = field(default_factory=list)

    def children(self, table: str) -> list[tuple[Any, ...]]:
        """The child rows for ``table`` (one of :data:`db.contract.rows.CHILD_COLUMNS`)."""
        rows: list[tuple[Any, ...]] = getattr(self, table)
        return rows


def start_import(engine: Engine, *, origin: str, paths: Sequence[str], encoding: str) -> int:
    """Record the start of an import, with the process running it, and return its id.

    Imports this host's processes left ``running`` when they died are marked ``interrupted``
    first (:func:`mark_gone_imports`)."""
    mark_gone_imports(engine)
    process = processes.current()
    with writing(engine) as conn:
        result = conn.execute(
            insert(schema.ImportRun)
            .values(
                started_at=datetime.now(UTC),
                origin=origin,
                paths=list(paths),
                encoding=encoding,
                state="running",
                host=process.host,
                pid=process.pid,
                process_start=process.start,
            )
            .returning(schema.ImportRun.id)
        )
        return int(result.scalar_one())


#: What an import whose process is gone records as its error.
GONE_ERROR = "interrupted: its process ended without finishing it (killed, or the host stopped)"


def mark_gone_imports(engine: Engine) -> list[int]:
    """Mark ``interrupted`` every import still ``running`` whose process (on this host) is
    gone; the ids marked. What such an import wrote is kept; importing its files again
    completes it."""
    run = schema.ImportRun
    running = select(run.id, run.host, run.pid, run.process_start).where(
        run.state == "running", run.pid.is_not(None)
    )
    with engine.connect() as conn:
        rows = conn.execute(running).all()
    gone = [
        row.id
        for row in rows
        if processes.is_gone(processes.ProcessIdentity(row.host, row.pid, row.process_start))
    ]
    if gone:
        with writing(engine) as conn:
            conn.execute(
                update(run)
                .where(run.id.in_(gone), run.state == "running")
                .values(finished_at=datetime.now(UTC), state="interrupted", error=GONE_ERROR)
            )
    return gone


def finish_import(engine: Engine, import_id: int, **counts: Any) -> None:
    """Store the final counts of an import (``files``, ``traces_imported``, ``state`` …)."""
    with writing(engine) as conn:
        conn.execute(
            update(schema.ImportRun)
            .where(schema.ImportRun.id == import_id)
            .values(finished_at=datetime.now(UTC), **counts)
        )


#: How a trace of an import ended: new, a new version of a stored one, or already stored.
Outcome = Literal["imported", "updated", "unchanged"]


@dataclass(slots=True)
class WriteResult:
    """What one batch did: traces and their input records imported, updated or unchanged."""

    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    messages: int = 0
    records_imported: int = 0
    records_updated: int = 0
    records_unchanged: int = 0
    #: Input records per (source file, outcome), for the per-file accounting.
    by_file: Counter[tuple[str, Outcome]] = field(default_factory=Counter)
    #: Traces the database refused to store, each with the database's reason: written alone
    #: after their batch failed, they cost only themselves (the caller records them rejected).
    refused: list[tuple[TraceRows, str]] = field(default_factory=list)
    #: Of ``unchanged``: older copies (messages a strict prefix of the stored version's).
    older_copies: int = 0
    #: Of ``imported``: other conversations under a stored identity, stored apart.
    kept_apart: int = 0
    #: Over the updates: messages added and dropped against the versions they replace.
    messages_added: int = 0
    messages_removed: int = 0

    def count(self, rows: TraceRows, outcome: Outcome, change: int = 1) -> None:
        """Count ``rows`` as ``outcome`` (``change=-1`` takes a count back)."""
        records = rows.trace.record_count * change
        setattr(self, outcome, getattr(self, outcome) + change)
        setattr(self, f"records_{outcome}", getattr(self, f"records_{outcome}") + records)
        self.by_file[(rows.trace.source_file, outcome)] += records
        if outcome != "unchanged":
            self.messages += len(rows.messages) * change

    def add(self, other: WriteResult) -> None:
        """Count ``other``'s traces (another part of the same batch) into this result."""
        for name in (
            "imported", "updated", "unchanged", "messages",
            "records_imported", "records_updated", "records_unchanged",
            "older_copies", "kept_apart", "messages_added", "messages_removed",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.by_file.update(other.by_file)
        self.refused.extend(other.refused)


def reserve_trace_ids(engine: Engine, count: int) -> list[int] | None:
    """Ids for the next ``count`` traces, in input order, where concurrent writers would
    otherwise number them in commit order (see :func:`db.dialect.reserve_ids`)."""
    if count == 0 or not dialect.concurrent_writers(engine):
        return None
    with engine.begin() as conn:
        return dialect.reserve_ids(conn, TRACES, count)


@dataclass(slots=True)
class StoredTrace:
    """A stored trace as the writer needs it to decide."""

    id: int
    content_hash: str | None
    message_count: int
    version: int


#: A message as versions are compared: role, text and raw payload, as stored.
MessageKey = tuple[str, str, Any]


def _message_keys(messages: Sequence[contract.MessageRecord]) -> list[MessageKey]:
    """``messages`` as :data:`MessageKey` (their text as every engine stores it)."""
    return [
        (m.role, dialect.storable_text(m.content), dialect.storable_json(m.raw)) for m in messages
    ]


def _shared(old: Sequence[MessageKey], new: Sequence[MessageKey]) -> int:
    """How many messages ``old`` and ``new`` start with alike."""
    n = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        n += 1
    return n


#: Roles of the instructions a conversation starts with: two conversations of one agent
#: share them, so sharing only them does not make two traces versions of one conversation.
_INSTRUCTION_ROLES = frozenset({"system", "developer"})


def _instructions(messages: Sequence[MessageKey]) -> int:
    n = 0
    for role, _, _ in messages:
        if role not in _INSTRUCTION_ROLES:
            break
        n += 1
    return n


@dataclass(slots=True)
class _Update:
    """One update of an identity in a batch: the new rows and what they replace."""

    rows: TraceRows
    old_hash: str | None
    old_messages: int
    #: Messages both versions start with alike.
    shared: int

    @property
    def added(self) -> int:
        return len(self.rows.messages) - self.shared

    @property
    def removed(self) -> int:
        return self.old_messages - self.shared


@dataclass(slots=True)
class _Plan:
    """What happens to one identity of a batch: its final rows, and the updates leading there."""

    rows: TraceRows
    #: The first occurrence in the batch, and its index there (for its reserved id).
    first: TraceRows
    index: int
    #: Where :attr:`rows` is in the batch.
    at: int
    stored: StoredTrace | None
    #: Every update of this identity in the batch.
    updates: list[_Update] = field(default_factory=list)
    #: The version the next occurrence is judged against: its hash and its messages (``None``:
    #: not read, only needed when the hashes differ).
    current_hash: str | None = None
    current_messages: list[MessageKey] | None = None


#: Keys per ``IN (…)`` list: far below every driver's limit on bound parameters.
_IN_CHUNK = 500


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), _IN_CHUNK):
        yield items[i : i + _IN_CHUNK]


def _lock_stored(conn: Connection, keys: Iterable[str]) -> dict[str, StoredTrace]:
    """The stored traces with these identities, locked (``FOR UPDATE``) in key order, so that
    two concurrent batches updating the same traces take their locks in the same order."""
    t = TRACES.c
    out: dict[str, StoredTrace] = {}
    for chunk in _chunks(sorted(set(keys))):
        stmt = (
            select(t.dedupe_key, t.id, t.content_hash, t.message_count, t.version)
            .where(t.dedupe_key.in_(chunk))
            .order_by(t.dedupe_key)
            .with_for_update()
        )
        for key, trace_id, digest, messages, version in conn.execute(stmt):
            out[key] = StoredTrace(trace_id, digest, messages, version)
    return out


def _stored_messages(conn: Connection, trace_ids: Iterable[int]) -> dict[int, list[MessageKey]]:
    """The messages of stored traces as :data:`MessageKey`, in order."""
    m = cast(Table, schema.MessageRow.__table__).c
    ids = sorted(set(trace_ids))
    out: dict[int, list[MessageKey]] = {trace_id: [] for trace_id in ids}
    for start in range(0, len(ids), _IN_CHUNK):
        stmt = (
            select(m.trace_id, m.role, m.content, m.raw)
            .where(m.trace_id.in_(ids[start : start + _IN_CHUNK]))
            .order_by(m.trace_id, m.seq)
        )
        for trace_id, role, content, raw in conn.execute(stmt):
            out[trace_id].append((role, content, raw))
    return out


#: Hex digits of the content hash that tell apart a conversation stored under its own identity.
APART_DIGITS = 12


def apart_rows(rows: TraceRows) -> TraceRows:
    """``rows`` under an identity of their own, ``<identity>~<12 hex digits of the content
    hash>`` (its display id ``<display id>~<8 digits>``): another conversation under an identity
    that is stored. The same content gets the same identity at every import."""
    trace = rows.trace
    digest = trace.content_hash or ""
    suffix = f"~{digest[:APART_DIGITS]}"
    key = trace.dedupe_key[: 200 - len(suffix)] + suffix
    shown = f"~{digest[:8]}"
    display = trace.display_id[: 400 - len(shown)] + shown
    return dataclasses.replace(rows, trace=trace._replace(dedupe_key=key, display_id=display))


def _stored_hashes(conn: Connection, hashes: Iterable[str]) -> set[str]:
    """Which of ``hashes`` are the content of some stored trace."""
    t = TRACES.c
    out: set[str] = set()
    for chunk in _chunks(sorted(set(hashes))):
        stmt = select(t.content_hash).where(t.content_hash.in_(chunk)).distinct()
        out.update(conn.execute(stmt).scalars())
    return out


def decide_batch(
    batch: Sequence[TraceRows],
    stored: dict[str, StoredTrace],
    known: set[str],
    result: WriteResult,
    stored_messages: dict[int, list[MessageKey]],
) -> dict[str, _Plan]:
    """Each trace of ``batch`` in input order, as a single process importing one at a time
    would judge it against the current version of its identity (``dedupe_key``) — on every
    engine (the ClickHouse writer, ``db.clickhouse.session``, judges by it too):

    * new identity -> imported; without an external id, content already stored under another
      identity -> unchanged;
    * same hash -> unchanged;
    * its messages a strict prefix of the current version's -> unchanged (an older copy: the
      longer version stays);
    * another conversation -> imported apart (:func:`apart_rows`), unchanged when stored apart
      already. Another conversation shares no more than its instructions (system messages)
      with the current version, which has more (a user message it does not start with);
    * else (other hash, or a stored NULL hash from before hashes were kept) -> updated: the
      version it replaces is kept (:mod:`db.writes.versions`), whether stored or met earlier in
      the batch.
    """
    plans: dict[str, _Plan] = {}
    for index, rows in enumerate(batch):
        record = rows.trace
        key = record.dedupe_key
        plan = plans.get(key)
        if plan is None and key in stored:
            found = stored[key]
            plan = plans[key] = _Plan(rows, rows, index, index, found)
            plan.current_hash = found.content_hash
            plan.current_messages = stored_messages.get(found.id)
        elif plan is None:
            if record.external_id is None and record.content_hash in known:
                result.count(rows, "unchanged")
                continue
            plans[key] = _Plan(rows, rows, index, index, None, current_hash=record.content_hash)
            if record.external_id is None and record.content_hash is not None:
                known.add(record.content_hash)
            result.count(rows, "imported")
            continue
        if plan.current_hash is not None and plan.current_hash == record.content_hash:
            result.count(rows, "unchanged")
            continue
        if plan.current_messages is None:
            plan.current_messages = _message_keys(plan.rows.messages)
        old = plan.current_messages
        new = _message_keys(rows.messages)
        shared = _shared(old, new)
        if shared == len(new) < len(old):
            result.count(rows, "unchanged")
            result.older_copies += 1
            continue
        if (
            shared < len(old)
            and record.content_hash is not None
            and shared <= min(_instructions(old), _instructions(new))
        ):
            apart = apart_rows(rows)
            apart_key = apart.trace.dedupe_key
            if apart_key in stored or apart_key in plans:
                result.count(rows, "unchanged")
                continue
            plans[apart_key] = _Plan(
                apart, apart, index, index, None, current_hash=record.content_hash
            )
            result.count(apart, "imported")
            result.kept_apart += 1
            continue
        plan.updates.append(_Update(rows, plan.current_hash, len(old), shared))
        plan.rows, plan.at = rows, index
        plan.current_hash, plan.current_messages = record.content_hash, new
        result.count(rows, "updated")
        result.messages_added += len(new) - shared
        result.messages_removed += len(old) - shared
    return plans


#: Errors that say the database refused a value of the statement (a number out of range, a
#: byte sequence it cannot hold, a broken constraint): the data's fault, not the connection's.
#: (Python's sqlite3 raises ``OverflowError`` itself for an integer beyond 64 bits.)
_REFUSED: tuple[type[BaseException], ...] = (
    OverflowError,
    sa_exc.DataError,
    sa_exc.IntegrityError,
    psycopg.DataError,
    psycopg.IntegrityError,
    sqlite3.DataError,
    sqlite3.IntegrityError,
)


def write_traces(
    engine: Engine,
    import_id: int,
    batch: Sequence[TraceRows],
    ids: Sequence[int] | None = None,
) -> WriteResult:
    """Write a batch of traces (``ids``: reserved ids, one per trace of ``batch``), each
    trace atomically: see :func:`_write_batch`.

    A batch the database refuses (:data:`_REFUSED`) is written again in halves, down to the
    single traces, so a value no engine can store costs only its own trace: it comes back in
    :attr:`WriteResult.refused` with the database's reason, and the rest of the batch is stored.
    """
    try:
        return _write_batch(engine, import_id, batch, ids)
    except _REFUSED as exc:
        if len(batch) == 1:
            result = WriteResult()
            result.refused.append((batch[0], _refusal(exc)))
            return result
    half = len(batch) // 2
    result = write_traces(engine, import_id, batch[:half], None if ids is None else ids[:half])
    result.add(write_traces(engine, import_id, batch[half:], None if ids is None else ids[half:]))
    return result


def storable_trace(rows: TraceRows) -> TraceRows:
    """``rows`` with its trace row's text as every engine stores it (its identity is compared
    with what the database gives back); child rows are made storable by the bulk writer."""
    trace = rows.trace
    if not any(v.__class__ is str and "\x00" in v for v in trace):
        return rows
    fixed: dict[str, Any] = {
        name: dialect.storable_text(value)
        for name, value in trace._asdict().items()
        if value.__class__ is str
    }
    return dataclasses.replace(rows, trace=trace._replace(**fixed))


def _refusal(exc: BaseException) -> str:
    """The first line of the database's own message for ``exc``, without the statement."""
    origin = getattr(exc, "orig", None) or exc
    text = str(origin).strip().splitlines()
    return f"{type(origin).__name__}: {text[0] if text else 'refused'}"


def _write_batch(
    engine: Engine,
    import_id: int,
    batch: Sequence[TraceRows],
    ids: Sequence[int] | None = None,
) -> WriteResult:
    """Write a batch of traces atomically (``ids``: reserved ids, one per trace of ``batch``).

    A trace whose identity (``dedupe_key``) is stored with the same content hash is unchanged;
    with another hash it is updated: its stored version is replaced in this transaction (same
    trace id, ``version`` + 1, the latest ``import_id``; messages, calls, results and findings
    rewritten; notes and corrections carried over by :mod:`db.writes.carry_over`) and logged in
    ``trace_updates``. A reader never sees half of one version and half of another.

    On PostgreSQL concurrent batches lock the content hashes of the traces without an external
    id (:func:`db.dialect.lock_hashes`), then the stored identities in key order, before deciding;
    a new identity that a concurrent batch inserted first (found at insert time) is judged
    against what that batch stored, like any stored identity.
    """
    result = WriteResult()
    if not batch:
        return result
    batch = [storable_trace(rows) for rows in batch]
    now = datetime.now(UTC)
    children = _driver_children(dialect.name_of(engine), batch)
    candidates = {
        rows.trace.content_hash
        for rows in batch
        if rows.trace.external_id is None and rows.trace.content_hash is not None
    }
    with writing(engine) as conn:
        # Content without an identity of its own is judged by its hash, which a concurrent
        # batch may be storing under another identity: take turns per hash.
        dialect.lock_hashes(conn, sorted(candidates))
        keys = {rows.trace.dedupe_key for rows in batch}
        apart = {apart_rows(rows).trace.dedupe_key for rows in batch if rows.trace.content_hash}
        stored = _lock_stored(conn, keys | apart)
        known = _stored_hashes(conn, candidates)
        differing = {
            stored[key].id
            for rows in batch
            if (key := rows.trace.dedupe_key) in stored
            and (
                stored[key].content_hash is None
                or stored[key].content_hash != rows.trace.content_hash
            )
        }
        plans = decide_batch(batch, stored, known, result, _stored_messages(conn, differing))
        new = {key: plan for key, plan in plans.items() if plan.stored is None}
        values = []
        for plan in new.values():
            values.append(
                {
                    **plan.rows.trace._asdict(),
                    "import_id": import_id,
                    "imported_at": now,
                    "version": 1 + len(plan.updates),
                }
            )
            if ids is not None:
                values[-1]["id"] = ids[plan.index]
        inserted = dialect.insert_new(conn, TRACES, "dedupe_key", values)
        lost = [key for key in new if key not in inserted]
        if lost:
            _rejudge(conn, plans, lost, result)
        versions.keep_versions(
            conn, import_id, now,
            [(plan.stored.id, plan.updates[0].shared)
             for plan in plans.values() if plan.stored is not None and plan.updates],
        )  # fmt: skip
        fresh = {key: (inserted[key], plans[key].rows) for key in inserted}
        replaced: dict[str, tuple[int, TraceRows]] = {}
        reviews: dict[int, Reviews] = {}
        for key, plan in plans.items():
            if plan.stored is None or not plan.updates:
                continue
            trace_id = plan.stored.id
            replaced[key] = (trace_id, plan.rows)
            reviews[trace_id] = read_reviews(conn, trace_id)
        rollups.subtract(conn, [trace_id for trace_id, _ in replaced.values()])
        _replace_traces(conn, import_id, now, plans, replaced)
        _keep_batch_versions(conn, import_id, now, plans, inserted)
        _log_updates(
            conn, import_id, now,
            [(inserted[key], plans[key]) for key in inserted if plans[key].updates]
            + [(trace_id, plans[key]) for key, (trace_id, _) in replaced.items()],
        )  # fmt: skip
        written = [*fresh.values(), *replaced.values()]
        positions = [(tid, plans[key].at) for key, (tid, _) in [*fresh.items(), *replaced.items()]]
        for table, (ready, starts) in children.items():
            rows_out = [
                (tid, *row) for tid, i in positions for row in ready[starts[i] : starts[i + 1]]
            ]
            if rows_out:
                dialect.bulk_insert(
                    conn,
                    table,
                    ("trace_id", *contract.CHILD_COLUMNS[table]),
                    rows_out,
                    converted=True,
                )
        for trace_id, rows in replaced.values():
            new_map = new_pair_map(rows.messages, rows.tool_calls, rows.tool_results)
            carry_over(conn, trace_id, reviews[trace_id], new_map, now)
        search.index_traces(conn, [trace_id for trace_id, _ in written])
        rollups.add(conn, [trace_id for trace_id, _ in written])
    return result


def _driver_children(
    kind: dialect.DialectName, batch: Sequence[TraceRows]
) -> dict[str, tuple[Sequence[Sequence[Any]], list[int]]]:
    """Per child table, the rows of every trace of ``batch`` as the driver takes them
    (:func:`db.dialect.driver_rows`), and where each trace's rows start (trace ``i``:
    ``rows[starts[i] : starts[i + 1]]``).

    Converted before the write transaction: on SQLite the batches write in turn and the turn is
    the import's critical path, which converting inside it would lengthen. The rows of a trace
    found unchanged are converted for nothing."""
    out: dict[str, tuple[Sequence[Sequence[Any]], list[int]]] = {}
    for table, columns in contract.CHILD_COLUMNS.items():
        flat: list[tuple[Any, ...]] = []
        starts = []
        for rows in batch:
            starts.append(len(flat))
            flat.extend(rows.children(table))
        starts.append(len(flat))
        out[table] = (
            dialect.driver_rows(kind, columns, flat, contract.JSON_COLUMNS[table]),
            starts,
        )
    return out


def _rejudge(
    conn: Connection, plans: dict[str, _Plan], lost: Sequence[str], result: WriteResult
) -> None:
    """Identities a concurrent batch stored between our look-up and our insert: the first
    occurrence, counted as imported, is now unchanged (same content, or an older copy) or an
    update of what that batch stored (which is kept, as every replaced version)."""
    stored = _lock_stored(conn, lost)
    messages = _stored_messages(conn, [stored[key].id for key in lost])
    for key in lost:
        plan = plans[key]
        found = plan.stored = stored[key]
        first = plan.first
        result.count(first, "imported", -1)
        if found.content_hash == first.trace.content_hash:
            result.count(first, "unchanged")
            continue
        old, new = messages[found.id], _message_keys(first.messages)
        shared = _shared(old, new)
        if shared == len(new) < len(old):
            result.count(first, "unchanged")
            result.older_copies += 1
            continue
        result.count(first, "updated")
        result.messages_added += len(new) - shared
        result.messages_removed += len(old) - shared
        plan.updates.insert(0, _Update(first, found.content_hash, len(old), shared))


def _replace_traces(
    conn: Connection,
    import_id: int,
    now: datetime,
    plans: dict[str, _Plan],
    replaced: dict[str, tuple[int, TraceRows]],
) -> None:
    """Drop the children of the replaced traces, give their rows the new values and log the
    updates; the new children are written with the batch's."""
    if not replaced:
        return
    ids = [trace_id for trace_id, _ in replaced.values()]
    # Out of the content search first: SQLite's index reads the text from the rows.
    search.unindex_traces(conn, ids)
    for model in (
        schema.ErrorStreakRow,
        schema.FindingRow,
        schema.ToolResultRow,
        schema.ToolCallRow,
        schema.MessageRow,
    ):
        conn.execute(delete(model).where(model.trace_id.in_(ids)))
    for key, (trace_id, rows) in replaced.items():
        renew_trace(conn, trace_id, rows.trace, import_id, now, len(plans[key].updates))


def renew_trace(
    conn: Connection,
    trace_id: int,
    trace: contract.TraceRecord,
    import_id: int,
    now: datetime,
    updates: int,
) -> None:
    """Give the stored trace ``trace_id`` the values of ``trace``, as imported by ``import_id``
    at ``now``, its version ``updates`` past the stored one."""
    t = schema.TraceRow
    conn.execute(
        update(t)
        .where(t.id == trace_id)
        .values(
            **trace._asdict(), import_id=import_id, imported_at=now, version=t.version + updates
        )
    )


def _keep_batch_versions(
    conn: Connection,
    import_id: int,
    now: datetime,
    plans: dict[str, _Plan],
    inserted: dict[str, int],
) -> None:
    """Keep the versions of this batch that a later one of the batch replaced: never stored,
    they are kept from their rows (the stored versions replaced are kept from the store)."""
    kept = []
    for key, plan in plans.items():
        if not plan.updates:
            continue
        if plan.stored is not None:
            trace_id, base = plan.stored.id, plan.stored.version
            replaced = [u.rows for u in plan.updates[:-1]]
            updates = plan.updates[1:]
        elif key in inserted:
            trace_id, base = inserted[key], 0
            replaced = [plan.first, *(u.rows for u in plan.updates[:-1])]
            updates = plan.updates
        else:
            continue
        for i, (rows, step) in enumerate(zip(replaced, updates, strict=True)):
            kept.append((trace_id, base + 1 + i, rows.trace, rows.messages[step.shared :]))
    versions.keep_rows(conn, import_id, now, kept)


def _log_updates(
    conn: Connection,
    import_id: int,
    now: datetime,
    updated: Sequence[tuple[int, _Plan]],
) -> None:
    """One ``trace_updates`` row per update: which import and file replaced which version, the
    messages added and dropped, and the replaced version, kept in ``trace_versions``."""
    log = [
        {
            "import_id": import_id,
            "trace_id": trace_id,
            "source_file": step.rows.trace.source_file,
            "old_hash": step.old_hash,
            "new_hash": step.rows.trace.content_hash,
            "old_messages": step.old_messages,
            "new_messages": len(step.rows.messages),
            "messages_added": step.added,
            "messages_removed": step.removed,
            "kept_version": (plan.stored.version if plan.stored is not None else 1) + i,
            "at": now,
        }
        for trace_id, plan in updated
        for i, step in enumerate(plan.updates)
    ]
    if log:
        conn.execute(insert(schema.TraceUpdate), log)


REJECTED = cast(Table, schema.RejectedRecord.__table__)


def rejected_key(source_file: str, byte_offset: int, raw: bytes) -> str:
    """Identity of a rejected record: its file, its byte offset and a hash of its raw bytes.

    >>> rejected_key("a.jsonl", 0, b"{") == rejected_key("a.jsonl", 0, b"{")
    True
    """
    raw_hash = hashlib.sha256(raw).hexdigest()
    return hashlib.sha256(f"{source_file}\0{byte_offset}\0{raw_hash}".encode()).hexdigest()


def write_rejected(engine: Engine, import_id: int, rejected: Sequence[dict[str, Any]]) -> int:
    """Keep rejected records (file, line, byte offset, reason, message, raw bytes) that are
    not kept yet; returns how many were new. A record kept by an earlier import (same file,
    offset and raw bytes) is not stored again: the import counts it as known."""
    if not rejected:
        return 0
    rows: dict[str, dict[str, Any]] = {}
    for r in rejected:
        key = rejected_key(r["source_file"], r["byte_offset"], r["raw"])
        rows.setdefault(key, {**r, "import_id": import_id, "record_key": key})
    with writing(engine) as conn:
        return len(dialect.insert_new(conn, REJECTED, "record_key", list(rows.values())))


def write_import_files(engine: Engine, import_id: int, files: Sequence[dict[str, Any]]) -> None:
    """Store what an import did with each file (``import_files``: records and their outcomes)."""
    if not files:
        return
    with writing(engine) as conn:
        conn.execute(insert(schema.ImportFile), [{**f, "import_id": import_id} for f in files])
