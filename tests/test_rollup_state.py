"""The rollup state is read once per transaction: ``toollens summary``'s figures send a fixed,
small number of statements, and a change of the state is seen by the next transaction (or at
once through the connection that wrote it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from db.queries.filters import Filters
from db.queries.summary import summary_counts
from db.rollups import state as rollup_state
from db.rollups import upkeep as rollups


def _statements(engine: sa.Engine, run: Callable[[], Any]) -> list[str]:
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(" ".join(statement.split()))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        run()
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return sent


def test_summary_counts_reads_the_rollup_state_once(analysis_store: sa.Engine) -> None:
    """From the rollups: the state once, the traces, the Tool Messages (their statuses, pair
    states, costs, advice and corrections in one statement), the calls by pair state, the error
    types, the verdicts, the findings, the loops, the encoding and the rejected records
    (SQLite's driver sends a BEGIN of its own). Under a tag the rollups cannot answer: the base
    tables, without reading the state."""
    engine = analysis_store
    begin = ["BEGIN"] if engine.dialect.name == "sqlite" else []
    sent = _statements(engine, lambda: summary_counts(engine, loop_k=3))
    state = [s for s in sent if "rollup_state" in s]
    assert len(state) == 1
    assert [s.split()[0] for s in sent] == [*begin, *["SELECT"] * 10]
    read = [m.group(1) for s in sent if (m := re.search(r"\bFROM (\w+)", s))]
    assert read == [
        "rollup_state",
        "rollup_traces",
        "rollup_results",  # statuses, pair states, costs, advice, corrections
        "rollup_calls",  # by pair state
        "rollup_results",  # error types
        "rollup_results",  # verdicts
        "rollup_findings",
        "rollup_calls",  # loops
        "imports",
        "rejected_records",
    ]
    sent = _statements(engine, lambda: summary_counts(engine, loop_k=3, filters=Filters(tag="x")))
    assert len(sent) == len(begin) + 11
    assert not [s for s in sent if "rollup_" in s]


def test_a_change_of_the_state_is_seen_by_the_next_transaction(analysis_store: sa.Engine) -> None:
    engine = analysis_store
    with engine.connect() as conn:
        assert rollups.counted(conn, "rollup_sizes")
        with engine.begin() as other:
            other.execute(sa.text("UPDATE rollup_state SET pending = 'rollup_sizes'"))
        # Within the transaction that read it, the state holds (one read per transaction) …
        sent = _statements(engine, lambda: rollups.counted(conn, "rollup_sizes"))
        assert sent == []
        conn.commit()
        # … and the next one reads it again.
        assert not rollups.counted(conn, "rollup_sizes")
        assert rollups.counted(conn, "rollup_results")
        assert rollups.pending_in(conn) == ["rollup_sizes"]
        # Written through the same connection, it is forgotten there at once.
        conn.execute(sa.text("UPDATE rollup_state SET pending = NULL"))
        rollup_state.forget(conn)
        assert rollups.counted(conn, "rollup_sizes")
        conn.commit()
    # A rebuild of the pending rollup writes the state through its own connection.
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE rollup_state SET pending = 'rollup_sizes'"))
    with engine.connect() as conn:
        assert rollups.pending_in(conn) == ["rollup_sizes"]
    rollups.rebuild(engine, only=["rollup_sizes"])
    with engine.connect() as conn:
        assert rollups.pending_in(conn) == []
        assert rollups.complete(conn)
