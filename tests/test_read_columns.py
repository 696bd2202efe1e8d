"""Rows read off the driver's cursor (``db.bulk.streaming.read_columns``, which every page frame
goes through via ``db.queries.common.to_frame``) hold exactly what ``conn.execute(stmt).all()``
holds: the same values of the same types, NULLs included, on both databases."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import cast, func, select

from db.bulk.streaming import read_columns, read_keyed_columns
from db.queries.common import to_frame
from db.schema import MessageRow, ToolCallRow, ToolResultRow, TraceRow


def _statements() -> list[Any]:
    r, t, m, c = ToolResultRow, TraceRow, MessageRow, ToolCallRow
    return [
        # Timestamps (a UTC type decorator), text, integers, JSON lists and objects, NULLs.
        select(t.id, t.display_id, t.started_at, t.imported_at, t.model, t.tags, t.meta).order_by(
            t.id
        ),
        # JSON or NULL per message, floats from a cast, booleans from a comparison.
        select(
            m.id, m.usage, m.timestamp, cast(m.tokens, sa.Float), (m.tokens > 10).label("big")
        ).order_by(m.id),
        # Aggregates: PostgreSQL's SUM of an integer is NUMERIC; a labelled count.
        select(r.tool, func.sum(r.tokens), func.count().label("n"), func.max(r.duration_ms))
        .group_by(r.tool)
        .order_by(r.tool),
        # Two columns under one name; SQLite's 0/1 turned into booleans; JSON arguments.
        select(c.tool_name.label("tool"), r.tool, c.args_valid, c.arguments, c.timestamp)
        .join(r, r.trace_id == c.trace_id)
        .order_by(c.id, r.id)
        .limit(50),
    ]


def _typed(columns: list[tuple[Any, ...]]) -> list[list[tuple[type, Any]]]:
    return [[(type(v), v) for v in column] for column in columns]


def test_columns_off_the_cursor_equal_the_rows_sqlalchemy_returns(
    analysis_store: sa.Engine,
) -> None:
    with analysis_store.connect() as conn:
        for stmt in _statements():
            result = conn.execute(stmt)
            keys, rows = list(result.keys()), result.all()
            assert rows, stmt
            expected = [tuple(column) for column in zip(*rows, strict=True)]
            got_keys, got = read_keyed_columns(conn, stmt)
            assert got_keys == keys
            assert _typed(got) == _typed(expected)
            assert read_columns(conn, stmt) == got


def test_no_rows_give_empty_columns_and_an_empty_frame_with_the_names(
    analysis_store: sa.Engine,
) -> None:
    r = ToolResultRow
    stmt = select(r.tool, r.tokens.label("size")).where(r.tool == "no such tool")
    with analysis_store.connect() as conn:
        assert read_keyed_columns(conn, stmt) == (["tool", "size"], [(), ()])
        frame = to_frame(conn, stmt)
    assert frame.empty
    assert list(frame.columns) == ["tool", "size"]
