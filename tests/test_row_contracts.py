"""The row contracts (``db.contract.rows``) name real columns and every column an import writes."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from formats_helpers import GOLDEN_CASES

from db.contract import rows
from db.engine import make_engine
from db.schema import Base
from ingest.importing.pipeline import import_paths

CONTRACTS: dict[str, type[tuple[object, ...]]] = {
    "traces": rows.TraceRecord,
    "messages": rows.MessageRecord,
    "tool_calls": rows.ToolCallRecord,
    "tool_results": rows.ToolResultRecord,
    "findings": rows.FindingRecord,
    "error_streaks": rows.ErrorStreakRecord,
}
#: Per table, the columns outside its contract: keys the writer adds, the import time, and
#: what reviewers write later.
OUTSIDE: dict[str, set[str]] = {
    "traces": {"id", "import_id", "imported_at", "version", "reviewed_at", "reviewed_by"},
    "messages": {"id", "trace_id"},
    "tool_calls": {"id", "trace_id"},
    "tool_results": {
        "id", "trace_id", "error_type_corrected", "verdict_corrected", "corrected_by",
        "corrected_at",
    },
    "findings": {"id", "trace_id"},
    "error_streaks": {"id", "trace_id"},
}  # fmt: skip
#: Of those, the ones an import fills in.
WRITTEN_OUTSIDE = {"id", "trace_id", "import_id", "imported_at", "version"}


def _fields(table: str) -> tuple[str, ...]:
    fields: tuple[str, ...] = CONTRACTS[table]._fields  # type: ignore[attr-defined]
    return fields


def test_every_field_of_a_row_contract_is_a_column_of_its_table() -> None:
    for table, _ in CONTRACTS.items():
        columns = {c.name for c in Base.metadata.tables[table].c}
        assert set(_fields(table)) <= columns, table
        assert len(set(_fields(table))) == len(_fields(table)), table


def test_every_column_is_in_its_contract_or_a_key_or_a_reviewers() -> None:
    for table, outside in OUTSIDE.items():
        columns = {c.name for c in Base.metadata.tables[table].c}
        assert columns - set(_fields(table)) == outside, table


def test_the_writers_column_lists_are_the_contracts_fields() -> None:
    children = {table: _fields(table) for table in CONTRACTS if table != "traces"}
    assert children == rows.CHILD_COLUMNS


def test_an_import_writes_nothing_outside_the_contracts_but_keys_and_the_import_time(
    db_url: str,
) -> None:
    engine = make_engine(db_url)
    paths: list[Path] = [next(case.glob("input.json*")) for case in GOLDEN_CASES]
    try:
        import_paths(engine, paths, workers=0)
        with engine.connect() as conn:
            filled = {
                (table, column)
                for table, outside in OUTSIDE.items()
                for column in sorted(outside - WRITTEN_OUTSIDE)
                if conn.execute(
                    sa.select(sa.func.count()).where(
                        Base.metadata.tables[table].c[column].is_not(None)
                    )
                ).scalar_one()
            }
            traces = conn.execute(sa.select(sa.func.count()).select_from(sa.text("traces")))
            assert traces.scalar_one() > 0
    finally:
        engine.dispose()
    assert filled == set()
