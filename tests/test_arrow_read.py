"""Bulk range reads as Arrow tables (``db.bulk.arrow_read``): in range order, typed by the caller,
read-only on SQLite, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa

from db.bulk.arrow_read import (
    UTC_MICROSECONDS,
    ArrowReadUnavailable,
    conform,
    connect,
    range_sql,
    stream_range_tables,
)
from db.engine import make_engine
from db.schema import TraceRow
from ingest.importing.pipeline import import_traces
from ingest.model import Message, Trace

LO, HI = sa.bindparam("lo", 0, type_=sa.Integer), sa.bindparam("hi", 0, type_=sa.Integer)
SCHEMA = pa.schema([("id", pa.int64()), ("trace", pa.string()), ("started", UTC_MICROSECONDS)])


def _store(engine: Any, n: int) -> list[int]:
    t0 = datetime(2026, 11, 3, 9, 0, 0, 250000, tzinfo=UTC)
    traces = [
        Trace(
            format="openai_chat",
            source_file="a.json",
            external_id=f"run-{i}",
            messages=[Message(seq=0, role="user", content=f"hi {i}", timestamp=t0)],
        )
        for i in range(n)
    ]
    import_traces(engine, traces, origin="test", source="arrow")
    with engine.connect() as conn:
        return list(conn.execute(sa.select(TraceRow.id).order_by(TraceRow.id)).scalars())


def test_ranges_come_back_in_their_order_typed_and_without_the_empty_ones(engine: Any) -> None:
    ids = _store(engine, 5)
    stmt = sa.select(
        TraceRow.id, TraceRow.display_id.label("trace"), TraceRow.started_at.label("started")
    ).where(TraceRow.id.between(LO, HI))
    ranges = [(ids[3], ids[4]), (ids[4] + 100, ids[4] + 200), (ids[0], ids[0])]
    tables = list(stream_range_tables(engine, [stmt], ranges, lambda t: conform(t[0], SCHEMA)))
    assert [t.schema for t in tables] == [SCHEMA, SCHEMA]
    assert [t.to_pylist() for t in tables] == [
        [
            {
                "id": ids[3],
                "trace": "run-3",
                "started": datetime(2026, 11, 3, 9, 0, 0, 250000, UTC),
            },
            {
                "id": ids[4],
                "trace": "run-4",
                "started": datetime(2026, 11, 3, 9, 0, 0, 250000, UTC),
            },
        ],
        [{"id": ids[0], "trace": "run-0", "started": datetime(2026, 11, 3, 9, 0, 0, 250000, UTC)}],
    ]


def test_a_column_of_nulls_takes_the_callers_type() -> None:
    table = pa.table({"id": pa.array([1], pa.int32()), "trace": pa.array([None], pa.int64()),
                      "started": pa.array(["2026-11-03 09:00:00.000001"])})  # fmt: skip
    assert conform(table, SCHEMA).to_pylist() == [
        {"id": 1, "trace": None, "started": datetime(2026, 11, 3, 9, 0, 0, 1, UTC)}
    ]


def _nulls_then_names(engine: Any, ids: list[int], nulls: int) -> list[pa.Table]:
    """The range of all ``ids``: each trace's id, and its display id but for the first
    ``nulls`` traces (a column of NULLs at first)."""
    late = sa.case((TraceRow.id > ids[nulls - 1], TraceRow.display_id)).label("trace")
    stmt = sa.select(TraceRow.id, late, TraceRow.started_at.label("started")).where(
        TraceRow.id.between(LO, HI)
    )
    return list(stream_range_tables(engine, [stmt], [(ids[0], ids[-1])], lambda t: t[0]))


def test_a_sqlite_range_is_read_in_one_batch(sqlite_url: str) -> None:
    """SQLite's driver types a column by its first batch: a range is one batch (1,100 rows,
    more than the driver's default of 1,024), so a column that starts with 1,050 NULLs keeps
    the type of its later values (with batches of 1,024: "Type mismatch", no pairs at all)."""
    engine = make_engine(sqlite_url)
    ids = _store(engine, 1100)
    (table,) = _nulls_then_names(engine, ids, 1050)
    engine.dispose()
    assert table["trace"].num_chunks == 1
    assert table["trace"].to_pylist() == [None] * 1050 + [f"run-{i}" for i in range(1050, 1100)]


def test_a_range_longer_than_a_batch_is_read_again_in_one(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A range with more rows than a batch whose column is NULL all through the first batch
    is read again in one batch of its size (here a batch of 4 rows, NULLs in the first 5)."""
    import db.bulk.arrow_read

    monkeypatch.setattr(db.bulk.arrow_read, "_SQLITE_BATCH_ROWS", 4)
    engine = make_engine(sqlite_url)
    ids = _store(engine, 8)
    (table,) = _nulls_then_names(engine, ids, 5)
    engine.dispose()
    assert table["trace"].to_pylist() == [None] * 5 + ["run-5", "run-6", "run-7"]
    assert table["id"].to_pylist() == ids


def test_a_sqlite_store_is_read_read_only(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    conn = connect(engine)
    try:
        with conn.cursor() as cur, pytest.raises(Exception, match="readonly"):
            cur.execute("CREATE TABLE written (a)")
    finally:
        conn.close()
        engine.dispose()


def test_a_statement_must_be_bounded_by_lo_and_hi(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    with pytest.raises(ValueError, match="lo and hi"):
        range_sql(engine, sa.select(TraceRow.id))
    assert "BETWEEN {lo} AND {hi}" in range_sql(
        engine, sa.select(TraceRow.id).where(TraceRow.id.between(LO, HI))
    )
    engine.dispose()


def test_an_in_memory_store_has_no_second_connection() -> None:
    engine = make_engine("sqlite://")
    with pytest.raises(ArrowReadUnavailable):
        connect(engine)
    engine.dispose()
