"""Every SQL statement the dashboard's page scripts run, timed, for ``make bench-ui``.

:class:`StatementLog` listens on every engine and times each statement from its execution until
its rows are fetched (SQLite does most of a query's work while the rows are fetched), labelled
with the bench's current phase and the ``db`` query function that ran it;
:func:`print_statements` prints the slowest and the query plans of the slowest few (SQLite's
``EXPLAIN QUERY PLAN``, PostgreSQL's ``EXPLAIN (ANALYZE, BUFFERS)``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

REPO = Path(__file__).resolve().parents[1]
SLOWEST_STATEMENTS = 12
EXPLAINED_STATEMENTS = 6


@dataclass(slots=True)
class Statement:
    """One timed SQL statement and where it came from."""

    seconds: float
    phase: str
    caller: str
    sql: str
    parameters: Any


class StatementLog:
    """Times every SQL statement run while it is installed, labelled with the current phase.

    A statement's time runs from its execution until its rows are fetched (the result is
    exhausted or closed): SQLite does most of a query's work while the rows are fetched, so the
    execute call alone under-counts it.
    """

    def __init__(self) -> None:
        self.phase = ""
        self.statements: list[Statement] = []
        self._started: dict[int, float] = {}
        self._open: dict[int, tuple[Statement, float]] = {}

    def _before(self, conn: Any, cursor: Any, *_: Any) -> None:
        self._started[id(cursor)] = time.perf_counter()

    def _after(self, conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        started = self._started.pop(id(cursor), None)
        if started is not None:
            seconds = time.perf_counter() - started
            found = Statement(seconds, self.phase, _db_caller(), statement, parameters)
            self.statements.append(found)
            # Completed when the result releases its cursor (see ``_fetched``).
            self._open[id(cursor)] = (found, started)

    def _fetched(self, cursor: Any) -> None:
        entry = self._open.pop(id(cursor), None)
        if entry is not None:
            entry[0].seconds = time.perf_counter() - entry[1]

    @contextmanager
    def installed(self) -> Iterator[StatementLog]:
        """Listen on every engine until the block ends."""
        from sqlalchemy.engine.cursor import CursorResult

        original = CursorResult._soft_close
        log = self

        def soft_close(result: Any, hard: bool = False) -> None:
            cursor = getattr(result, "cursor", None)
            original(result, hard)
            if cursor is not None:
                log._fetched(cursor)

        event.listen(Engine, "before_cursor_execute", self._before)
        event.listen(Engine, "after_cursor_execute", self._after)
        CursorResult._soft_close = soft_close  # type: ignore[method-assign]
        try:
            yield self
        finally:
            CursorResult._soft_close = original  # type: ignore[method-assign]
            event.remove(Engine, "before_cursor_execute", self._before)
            event.remove(Engine, "after_cursor_execute", self._after)
            self._open.clear()


def _db_caller() -> str:
    # The outermost frame of ToolLens's db package names the query function the page called
    # (inner frames are shared helpers such as ``_frame``).
    frame: Any = sys._getframe(2)
    found = "?"
    while frame is not None:
        filename = frame.f_code.co_filename
        if f"{REPO}/db/" in filename:
            module = Path(filename).relative_to(REPO).with_suffix("").as_posix()
            found = f"{module.replace('/', '.')}.{frame.f_code.co_name}"
        elif found != "?":
            break
        frame = frame.f_back
    return found


def print_statements(log: StatementLog, engine: Engine) -> None:
    """The slowest statements of the page runs, and the query plans of the slowest few."""
    measured = [s for s in log.statements if s.phase.endswith(("cold", "filtered"))]
    measured.sort(key=lambda s: -s.seconds)
    print(f"\nslowest SQL statements ({len(measured)} timed in the page runs)")
    for s in measured[:SLOWEST_STATEMENTS]:
        sql = " ".join(s.sql.split())
        print(f"  {s.seconds:6.2f} s  {s.phase:<28} {s.caller}\n           {sql[:150]}")
    for run in ("cold", "filtered"):
        per_function: dict[str, list[float]] = {}
        for s in measured:
            if s.phase.endswith(run):
                per_function.setdefault(s.caller, []).append(s.seconds)
        ranked = sorted(per_function.items(), key=lambda item: -sum(item[1]))
        print(
            f"\nSQL time per query function, {run} runs of every page (total, statements, slowest)"
        )
        for caller, times in ranked[:SLOWEST_STATEMENTS]:
            print(f"  {sum(times):6.2f} s  {len(times):3d}  {max(times):6.2f} s  {caller}")
    explained: set[str] = set()
    with engine.connect() as conn:
        for s in measured:
            if len(explained) >= EXPLAINED_STATEMENTS:
                break
            if s.caller in explained:
                continue
            explained.add(s.caller)
            # SQLite's plan outline; PostgreSQL's plan as run, with times and buffers.
            explain = (
                "EXPLAIN QUERY PLAN"
                if engine.dialect.name == "sqlite"
                else "EXPLAIN (ANALYZE, BUFFERS)"
            )
            plan = conn.exec_driver_sql(f"{explain} {s.sql}", s.parameters).all()
            print(f"\nplan of {s.caller} ({s.seconds:.2f} s, {s.phase}):")
            for row in plan:
                print(f"  {row[-1]}")
