"""The Tool calls page's branch of results no call answers reads the partial index over those
rows (migration 0025) on both databases, and lists exactly those rows."""

from __future__ import annotations

import sqlalchemy as sa
from dbfixture import fixture_engine

from db import dialect
from db.queries.filters import Filters
from db.queries.pairs import ALL_PAIRS, _lone_result_rows, list_pairs
from db.schema import ToolResultRow


def _plan(conn: sa.Connection, stmt: sa.Select[tuple[object, ...]]) -> str:
    compiled = stmt.compile(conn, compile_kwargs={"literal_binds": True})
    if dialect.name_of(conn) == "sqlite":
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all()
        return "\n".join(str(row[-1]) for row in rows)
    # The fixture's tables are a few rows: without this the planner reads them whole.
    conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
    return "\n".join(str(row[0]) for row in conn.exec_driver_sql(f"EXPLAIN {compiled}"))


def test_the_lone_results_branch_reads_the_unpaired_index(db_url: str) -> None:
    engine = fixture_engine(db_url)
    r = ToolResultRow
    try:
        for filters in (Filters(), Filters(model="gpt-4o")):
            branch = _lone_result_rows(filters, ALL_PAIRS).order_by(r.trace_id, r.message_seq)
            with engine.begin() as conn:
                assert "ix_tool_results_unpaired" in _plan(conn, branch.limit(100)), filters
        with engine.connect() as conn:
            unpaired = conn.execute(
                sa.select(r.trace_id, r.message_seq)
                .where(
                    sa.or_(
                        r.pair_state.in_(["orphan_result", "duplicate_result"]),
                        r.call_seq.is_(None),
                    )
                )
                .order_by(r.trace_id, r.message_seq)
            ).all()
        shown = list_pairs(engine, Filters(), ALL_PAIRS, limit=1000)
        lone = shown[shown["pair"].str.startswith("r")]
        assert [seq for _, seq in unpaired] == [3, 6]  # one trace's orphan and early result
        assert lone["pair"].tolist() == ["r3", "r6"]
    finally:
        engine.dispose()
