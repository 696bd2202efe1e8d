"""The import door on a ClickHouse store: :class:`ClickHouseImportSession`.

The same door as SQLite's and PostgreSQL's (:class:`db.session.ImportSession`), so the importer
does not know which store it writes: :func:`db.door.start_session` opens this one for a
ClickHouse engine. A batch of traces is judged exactly as on the other engines (the writer's
own :func:`db.writes.traces.decide_batch`: new, unchanged, an older copy, another conversation kept
apart, or an update), then written as one insert per table: a trace's rows go first, its
``traces`` row last, so a reader (which takes each trace's rows at its latest ``traces``
version, :mod:`db.clickhouse.schema`) sees a new version whole or not at all. An update is the
same trace id written again at a higher ``version``; nothing is deleted or mutated. The rollups
follow each batch as signed rows (``db.clickhouse.rollups.changing``).

One writer per store at a time: new trace ids follow the largest stored one (ClickHouse has
no sequences), a child row's included, and a new version follows the largest a child row of
the trace holds, so the rows of a write cut short (a failed insert, a killed process) are never
read as a later trace's or version's. Not on ClickHouse yet: the registry of files read (every
import reads its files whole; an unchanged trace is still found unchanged by its content
hash), extending a stored trace in place (a grown file's trace is read whole and stored as an
update), the carry-over of notes and corrections to a new version, the kept versions
(``trace_versions``) and the update log (``trace_updates``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from db.clickhouse import rollups
from db.clickhouse.client import ClickHouseError, literal
from db.clickhouse.dialect import client_of, layout_of
from db.clickhouse.rows import StoredRows
from db.clickhouse.schema import IMPORT_MONTH, REVISION
from db.contract import exact_json
from db.contract.rows import CHILD_COLUMNS, SourceFileRecord
from db.session import AppendBase, ImportSession, WorkerConnection
from db.writes import processes
from db.writes.traces import (
    StoredTrace,
    TraceRows,
    WriteResult,
    apart_rows,
    decide_batch,
    rejected_key,
    storable_trace,
)

#: Messages per batch of traces written: one insert per table, one part per partition per shard
#: each; ClickHouse wants few, large inserts (a part per small insert is what makes merges
#: fall behind), so the importer gathers ten times its usual batch (``BATCH_MESSAGES``).
MIN_BATCH_MESSAGES = 50_000
#: Keys per ``IN (…)`` list of a look-up.
_IN_CHUNK = 1000


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), _IN_CHUNK):
        yield items[i : i + _IN_CHUNK]


def _month(moment: datetime) -> int:
    return moment.year * 100 + moment.month


class ClickHouseImportSession(ImportSession):
    """One import run on a ClickHouse store (see the module's docstring)."""

    def __init__(self, engine: Engine, import_id: int) -> None:
        super().__init__(engine, import_id)
        self.client = client_of(engine)
        self.layout = layout_of(engine)
        self._import_row: dict[str, Any] = {}
        self._next_id: int | None = None

    # ---- reading the store ----------------------------------------------------------------

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self.client.query(sql)[1]

    def _max(self, table: str, column: str = "id") -> int:
        found = self._rows(f"SELECT max({column}) FROM {self.layout.every_row(table)}")
        return int(found[0][0] or 0) if found else 0

    def _first_free_trace_id(self) -> int:
        """One past the largest trace id any row holds, its ``traces`` row or a child row of
        a write cut short (a trace's rows inserted, its ``traces`` row not: the receiver
        retries such a round): a new trace never takes such an id, which would make those
        rows its own. The child tables are read above the largest ``traces`` id only (their
        key's first column: a range of the index, not a scan); one query, one round trip."""
        top = f"(SELECT max(id) FROM {self.layout.every_row('traces')})"
        above = " UNION ALL ".join(
            f"SELECT max(trace_id) AS m FROM {self.layout.every_row(table)} WHERE trace_id > {top}"
            for table in CHILD_COLUMNS
        )
        found = self._rows(f"SELECT max(m) FROM (SELECT {top} AS m UNION ALL {above})")
        return (int(found[0][0] or 0) if found else 0) + 1

    def _highest_versions(self, trace_ids: Iterable[int]) -> dict[int, int]:
        """The highest ``version`` any child row of these traces holds: above the stored
        version where a write of a new version was cut short before its ``traces`` row, whose
        rows the next version must not share (they would be read twice)."""
        ids = sorted(set(trace_ids))
        out: dict[int, int] = {}
        for table in CHILD_COLUMNS:
            for chunk in _chunks(ids):
                for trace_id, version in self._rows(
                    f"SELECT trace_id, max(version) FROM {self.layout.every_row(table)} "
                    f"WHERE trace_id IN {literal(list(chunk))} GROUP BY trace_id"
                ):
                    out[int(trace_id)] = max(out.get(int(trace_id), 0), int(version))
        return out

    # ---- the run ------------------------------------------------------------------------------

    @classmethod
    def start(
        cls, engine: Engine, *, origin: str, paths: Sequence[str], encoding: str
    ) -> ImportSession:
        started = time.perf_counter()
        client, layout = client_of(engine), layout_of(engine)
        found = client.query(f"SELECT max(id) FROM {layout.every_row('imports')}")[1]
        import_id = int(found[0][0] or 0) + 1 if found else 1
        session = cls(engine, import_id)
        session._started = started
        process = processes.current()
        session._import_row = {
            "id": import_id,
            "started_at": datetime.now(UTC),
            "origin": origin,
            "paths": list(paths),
            "encoding": encoding,
            "state": "running",
            "host": process.host,
            "pid": process.pid,
            "process_start": process.start,
            "seconds": 0.0,
            REVISION: 1,
        }
        session._write_import()
        return session

    def _write_import(self) -> None:
        rows = StoredRows("imports")
        rows.add_mapping(self._import_row)
        rows.write(self.client, self.layout)

    @property
    def workers_can_write(self) -> bool:
        """Batches are written by the importing process (one writer per store)."""
        return False

    @property
    def concurrent_writers(self) -> bool:
        return False

    @property
    def min_batch_messages(self) -> int:
        return MIN_BATCH_MESSAGES

    def worker_connection(self) -> WorkerConnection:
        raise ClickHouseError("worker processes do not write to a ClickHouse store")

    def reserve_trace_ids(self, count: int) -> list[int] | None:
        return None

    # ---- writing ------------------------------------------------------------------------------

    def _stored(self, keys: Iterable[str]) -> dict[str, StoredTrace]:
        out: dict[str, StoredTrace] = {}
        for chunk in _chunks(sorted(set(keys))):
            for key, trace_id, digest, messages, version in self._rows(
                "SELECT dedupe_key, id, content_hash, message_count, version FROM "
                f"{self.layout.view('traces')} WHERE dedupe_key IN {literal(list(chunk))}"
            ):
                out[key] = StoredTrace(int(trace_id), digest, int(messages), int(version))
        return out

    def _known(self, hashes: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for chunk in _chunks(sorted(set(hashes))):
            out.update(
                row[0]
                for row in self._rows(
                    f"SELECT DISTINCT content_hash FROM {self.layout.view('traces')} "
                    f"WHERE content_hash IN {literal(list(chunk))}"
                )
            )
        return out

    def _messages(self, trace_ids: Iterable[int]) -> dict[int, list[Any]]:
        ids = sorted(set(trace_ids))
        out: dict[int, list[Any]] = {trace_id: [] for trace_id in ids}
        for chunk in _chunks(ids):
            for trace_id, role, content, raw in self._rows(
                f"SELECT trace_id, role, content, raw FROM {self.layout.view('messages')} "
                f"WHERE trace_id IN {literal(list(chunk))} ORDER BY trace_id, seq"
            ):
                out[trace_id].append(
                    (role, content, None if raw is None else exact_json.loads(raw))
                )
        return out

    def write(self, rows: Sequence[TraceRows], ids: Sequence[int] | None = None) -> WriteResult:
        result = WriteResult()
        if not rows:
            return result
        batch = [storable_trace(r) for r in rows]
        candidates = {
            r.trace.content_hash
            for r in batch
            if r.trace.external_id is None and r.trace.content_hash is not None
        }
        keys = {r.trace.dedupe_key for r in batch}
        apart = {apart_rows(r).trace.dedupe_key for r in batch if r.trace.content_hash}
        stored = self._stored(keys | apart)
        differing = {
            stored[key].id
            for r in batch
            if (key := r.trace.dedupe_key) in stored
            and (
                stored[key].content_hash is None or stored[key].content_hash != r.trace.content_hash
            )
        }
        plans = decide_batch(
            batch, stored, self._known(candidates), result, self._messages(differing)
        )
        now = datetime.now(UTC)
        month = _month(now)
        if self._next_id is None:
            self._next_id = self._first_free_trace_id()
        highest = self._highest_versions(
            plan.stored.id for plan in plans.values() if plan.stored is not None and plan.updates
        )
        traces = StoredRows("traces")
        children = {
            table: StoredRows(table, (*columns, "trace_id", "version", IMPORT_MONTH))
            for table, columns in CHILD_COLUMNS.items()
        }
        written: list[int] = []
        replaced: list[int] = []
        for plan in plans.values():
            if plan.stored is None:
                trace_id, version = self._next_id, 1 + len(plan.updates)
                self._next_id += 1
            elif plan.updates:
                trace_id = plan.stored.id
                version = max(plan.stored.version, highest.get(trace_id, 0)) + len(plan.updates)
            else:
                continue
            written.append(trace_id)
            if plan.stored is not None:
                replaced.append(trace_id)
            traces.add_mapping(
                {
                    **plan.rows.trace._asdict(),
                    "id": trace_id,
                    "import_id": self.import_id,
                    "imported_at": now,
                    "version": version,
                    IMPORT_MONTH: month,
                }
            )
            own = (trace_id, version, month)
            for table, out in children.items():
                for record in plan.rows.children(table):
                    out.add((*record, *own))
        if not written:
            return result
        # The replaced versions out of the rollups, the rows, the traces last (a reader takes a
        # trace's rows at its latest version), then the new versions into the rollups.
        with rollups.changing(self.engine, replaced) as counted:
            for out in children.values():
                out.write(self.client, self.layout)
            traces.write(self.client, self.layout)
            counted.extend(written)
        return result

    def reject(self, rejected: Sequence[dict[str, Any]]) -> int:
        if not rejected:
            return 0
        fresh: dict[str, dict[str, Any]] = {}
        for r in rejected:
            key = rejected_key(r["source_file"], r["byte_offset"], r["raw"])
            fresh.setdefault(key, {**r, "import_id": self.import_id, "record_key": key})
        for chunk in _chunks(sorted(fresh)):
            for (key,) in self._rows(
                f"SELECT record_key FROM {self.layout.view('rejected_records')} "
                f"WHERE record_key IN {literal(list(chunk))}"
            ):
                fresh.pop(key, None)
        out = StoredRows("rejected_records")
        first = self._max("rejected_records") + 1
        for i, values in enumerate(fresh.values()):
            out.add_mapping({**values, "id": first + i, REVISION: 1})
        out.write(self.client, self.layout)
        return len(fresh)

    # ---- extending a stored trace, the files read: not kept on ClickHouse ----------------------

    def append_base(self, format_name: str, source_file: str) -> AppendBase | None:
        """None: a grown file's trace is read whole and stored as an update."""
        return None

    def raw_members(
        self, trace_id: int, key: str, seqs: Sequence[int] | None = None
    ) -> dict[int, str]:
        raise ClickHouseError("a ClickHouse store does not extend a stored trace in place")

    def append(
        self, base: AppendBase, rows: TraceRows, first_new_seq: int, tool_contents: dict[int, str]
    ) -> bool:
        raise ClickHouseError("a ClickHouse store does not extend a stored trace in place")

    def known_files(self, paths: Iterable[str]) -> dict[str, SourceFileRecord]:
        """None known: every import reads its files whole."""
        return {}

    def stored_hashes(self, keys: Iterable[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for chunk in _chunks(sorted(set(keys))):
            for key, digest in self._rows(
                f"SELECT dedupe_key, content_hash FROM {self.layout.view('traces')} "
                f"WHERE dedupe_key IN {literal(list(chunk))}"
            ):
                out[key] = digest
        return out

    def remember_files(self, entries: Sequence[SourceFileRecord]) -> None:
        """Nothing kept (see :meth:`known_files`)."""

    # ---- the end --------------------------------------------------------------------------

    def finish(
        self,
        by_file: Sequence[Mapping[str, Any]],
        /,
        *,
        state: str = "done",
        error: str | None = None,
        **counts: Any,
    ) -> float:
        seconds = time.perf_counter() - self._started
        files = StoredRows("import_files")
        first = self._max("import_files") + 1
        for i, f in enumerate(by_file):
            files.add_mapping({**f, "id": first + i, "import_id": self.import_id, REVISION: 1})
        files.write(self.client, self.layout)
        self._end(state=state, error=error, seconds=seconds, **counts)
        return seconds

    def fail(self, error: str) -> None:
        self._end(state="failed", error=error)

    def _end(self, **values: Any) -> None:
        if not self._import_row:
            found = self.client.query(
                f"SELECT * FROM {self.layout.view('imports')} WHERE id = {self.import_id}"
            )
            names, rows = found
            self._import_row = dict(zip(names, rows[0], strict=True)) if rows else {}
            self._import_row["paths"] = json.loads(self._import_row.get("paths") or "[]")
        self._import_row.update(values, finished_at=datetime.now(UTC))
        self._import_row[REVISION] = int(self._import_row.get(REVISION, 1)) + 1
        self._write_import()
