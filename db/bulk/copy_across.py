"""``toollens copy`` between any two stores (:func:`copy_store`); when either is ClickHouse,
trace by trace, what both engines hold.

A ClickHouse store holds the imports, their files and rejected records, and the traces with
their messages, calls, results, findings and streaks (:data:`CARRIED`); its rollups are figures
of those, counted its own way (``db.clickhouse.rollups``). The copy therefore:

* carries the tables both hold, with the same ids (child rows read from ClickHouse have none
  there: the target gives them fresh ids, in their trace's order);
* rebuilds the target's rollups from the copied rows at the end (:data:`REBUILT`: they are
  figures of the base tables, not data of their own; a ClickHouse target's read the base tables
  until then);
* refuses, before writing anything, a source whose notes and history a ClickHouse store has no
  table for (:data:`NOT_HELD`: annotations, the kept versions of updated traces, the update
  log), naming the tables and their rows, unless the user names them in ``leave_out``: nothing
  is lost without being asked;
* leaves out the registry of files read (``source_files``), said in the result's notes: it only
  lets the next import skip unchanged files (without it the next import reads them whole, and
  finds their traces unchanged by their content hash).

**Streamed.** The small tables go in keyset batches by id, as in :mod:`db.bulk.copy`. The
trace-scoped tables go in *units*: the next traces by id until their messages reach the batch
size (at least one trace), with every row of every trace-scoped table belonging to them; one
unit is in memory at a time, and is one insert per table into ClickHouse.

**Resumable** by the highest trace id of the last unit written whole, kept in the target's copy
state with the rows per table. Into SQLite or PostgreSQL a unit and its state are one
transaction. Into ClickHouse the state is written after the unit's inserts; on resume the unit
after the recorded trace id may be partly in (an insert done, the next not; one shard's part
written, the other's not), so the first unit of a resumed copy leaves out the traces whose rows
of a table are in already: a trace's rows of one table are one insert, on one shard in one
partition, so they are in whole or not at all. No row is written twice, and no mutation runs.
The source must not change during the copy (the counts and the summary at the end would show it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from db.bulk.copy import (
    BATCH_ROWS,
    CopyInterrupted,
    CopyRefused,
    CopyResult,
    SqlStore,
    _prepare_target,
    _refuse_source,
    copy_relational,
    differences,
)
from db.clickhouse.copy import ClickHouseCopyStore
from db.clickhouse.schema import SMALL_TABLES, TRACE_TABLES
from db.clickhouse.url import is_clickhouse
from db.engine import missing_sqlite_file, resolve_url
from db.schema import Base

#: The tables both engines hold, copied.
CARRIED: tuple[str, ...] = (*SMALL_TABLES, *TRACE_TABLES)
#: Tables a ClickHouse store has nothing for: a source holding rows in them is refused unless
#: they are named in ``leave_out``.
NOT_HELD: tuple[str, ...] = ("annotations", "trace_versions", "trace_updates")
#: The registry of files read: not carried (see the module's docstring).
REGISTRY = "source_files"


def open_store(url: str) -> SqlStore | ClickHouseCopyStore:
    """The store at ``url`` (a SQLite path, a SQLAlchemy URL or a ClickHouse URL) for copying."""
    resolved = resolve_url(url)
    return ClickHouseCopyStore(resolved) if is_clickhouse(resolved) else SqlStore(url)


def copy_store(
    source_url: str,
    target_url: str,
    *,
    batch_rows: int = BATCH_ROWS,
    stop_after_batches: int | None = None,
    progress: Callable[[str, int], None] | None = None,
    leave_out: frozenset[str] = frozenset(),
) -> CopyResult:
    """Copy the store at ``source_url`` into the one at ``target_url`` (empty, or holding an
    unfinished copy of the same source, which continues): table by table with the same ids
    between SQLite and PostgreSQL (:func:`db.bulk.copy.copy_relational`), trace by trace when
    either is ClickHouse (this module's docstring; ``leave_out``: the tables a ClickHouse store
    has no place for that may be left behind).

    ``stop_after_batches``: raise :class:`CopyInterrupted` after writing that many batches
    (what an interruption leaves behind, for tests). ``progress(table, rows)`` is called as
    each table is done. Raises :class:`CopyRefused` before writing anything when the stores do
    not fit.
    """
    resolved = [resolve_url(url) for url in (source_url, target_url)]
    if not any(is_clickhouse(url) for url in resolved):
        return copy_relational(
            source_url,
            target_url,
            batch_rows=batch_rows,
            stop_after_batches=stop_after_batches,
            progress=progress,
        )
    if resolved[0] == resolved[1]:
        raise CopyRefused("--from and --to name the same store")
    missing = missing_sqlite_file(source_url)
    if missing is not None:
        raise CopyRefused(f"no database at {missing} (check --from)")
    return _copy_across(
        source_url,
        target_url,
        batch_rows=batch_rows,
        stop_after_batches=stop_after_batches,
        progress=progress,
        leave_out=leave_out,
    )


def _rebuilt(name: str) -> bool:
    return name.startswith("rollup_")


def _check_tables() -> None:
    known = set(CARRIED) | set(NOT_HELD) | {REGISTRY}
    unplanned = [n for n in Base.metadata.tables if n not in known and not _rebuilt(n)]
    if unplanned:
        raise TypeError(f"no copy plan for table(s) {', '.join(unplanned)} with ClickHouse")


def _units(source: Any, after: int, budget: int) -> Iterator[tuple[int, int]]:
    """``(first, last)`` trace ids of the next unit: traces after ``after`` until their
    messages reach ``budget`` (at least one)."""
    while sizes := source.trace_sizes(after, budget):
        total, last = 0, sizes[0][0]
        for trace_id, messages in sizes:
            if total and total + messages > budget:
                break
            total, last = total + messages, trace_id
        yield after + 1, last
        after = last


def _copy_across(
    source_url: str,
    target_url: str,
    *,
    batch_rows: int,
    stop_after_batches: int | None,
    progress: Callable[[str, int], None] | None,
    leave_out: frozenset[str] = frozenset(),
) -> CopyResult:
    """:func:`copy_store` when either store is ClickHouse (the module's docstring)."""
    _check_tables()
    source = open_store(source_url)
    target = open_store(target_url)
    tables = [Base.metadata.tables[name] for name in CARRIED]
    try:
        _refuse_source(source_url, source)
        held = {n: source.count(Base.metadata.tables[n]) for n in (*NOT_HELD, REGISTRY)}
        refused = [f"{n} ({held[n]:,} rows)" for n in NOT_HELD if held[n] and n not in leave_out]
        if refused:
            raise CopyRefused(
                f"the source holds {', '.join(refused)}, which a ClickHouse store has no table "
                "for: copy without them with --leave-out " + ",".join(n.split()[0] for n in refused)
            )
        states = _prepare_target(source, target, tables)
        result = CopyResult(resumed_rows=sum(s.rows for s in states.values()))
        result.notes += [f"left out: {n} ({held[n]:,} rows)" for n in NOT_HELD if held[n]]
        if held[REGISTRY]:
            result.notes.append(
                f"not copied: {REGISTRY} ({held[REGISTRY]:,} files; the registry of files read:"
                " the next import reads them whole)"
            )
        written = 0

        def tick() -> None:
            nonlocal written
            if stop_after_batches is not None and written >= stop_after_batches:
                raise CopyInterrupted(f"stopped after {written} batches")
            written += 1

        for table in tables[: len(SMALL_TABLES)]:
            state = states[table.name]
            if not state.done:
                while rows := source.batch(table, state.last_key, batch_rows):
                    tick()
                    state.last_key, state.rows = rows[-1][0], state.rows + len(rows)
                    target.write(table, rows, state)
                    result.copied_rows += len(rows)
                state.done = True
                target.write(table, [], state)
            if progress is not None:
                progress(table.name, state.rows)
        traced = tables[len(SMALL_TABLES) :]
        first = states["traces"]
        if not first.done:
            maybe_present = result.resumed_rows > 0 and not isinstance(target, SqlStore)
            for low, high in _units(source, first.last_key or 0, batch_rows):
                tick()
                unit = {t.name: source.trace_rows(t, low, high) for t in traced}
                for name, rows in unit.items():
                    states[name].rows += len(rows)
                    result.copied_rows += len(rows)
                first.last_key = high
                target.write_unit(unit, states, maybe_present=maybe_present)
                maybe_present = False
            for table in traced:
                states[table.name].done = True
            target.write_unit({t.name: [] for t in traced}, states, maybe_present=False)
        if progress is not None:
            for table in traced:
                progress(table.name, states[table.name].rows)
        target.finish(tables)
        from db.rollups.upkeep import rebuild

        rebuild(target.engine)
        for table in tables:
            result.counts[table.name] = (source.count(table), target.count(table))
        result.summary_differences = differences(source.summary(), target.summary())
        return result
    finally:
        source.dispose()
        target.dispose()
