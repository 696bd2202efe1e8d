"""Queries of the Loops page, on SQLite and PostgreSQL: loop signatures at k, loops by tool,
ping-pong.

On ``analysis_store``, so every value asserted here is exact.
"""

from __future__ import annotations

import sqlalchemy as sa
from page_support import rows

from db.queries import loops
from db.queries.filters import Filters
from db.queries.summary import summarize


def test_loop_signatures_at_k3_with_runs_errors_and_wasted_tokens(
    analysis_store: sa.Engine,
) -> None:
    assert rows(loops.loop_signatures(analysis_store, 3)) == [
        ("run-a", "1:0", "get_weather", '{"city":"Paris"}', 3, 3, 2, 2510,
         "get_weather:paris0000000000000"),
        ("run-c", "1:0", "read_file", '{"path":"a"}', 3, 1, 0, 100,
         "read_file:a000000000000000"),
    ]  # fmt: skip


def test_a_filtered_page_of_loop_signatures_keeps_the_order_and_the_limit(
    analysis_store: sa.Engine,
) -> None:
    run_c = Filters(import_id=2)
    # One row: only the signatures of 3 or more calls are read (read_file's); the next page
    # reads every signature of 2 or more.
    assert rows(loops.loop_signatures(analysis_store, 2, run_c, limit=1)) == [
        ("run-c", "1:0", "read_file", '{"path":"a"}', 3, 1, 0, 100,
         "read_file:a000000000000000"),
    ]  # fmt: skip
    assert rows(loops.loop_signatures(analysis_store, 2, run_c, limit=1, offset=1)) == [
        ("run-c", "3:0", "write_file", '{"path":"a"}', 2, 1, 2, 40,
         "write_file:a00000000000000"),
    ]  # fmt: skip
    assert [r[-1] for r in rows(loops.loop_signatures(analysis_store, 2, limit=2))] == [
        "get_weather:paris0000000000000",
        "read_file:a000000000000000",
    ]
    assert loops.loop_signatures(analysis_store, 2, Filters(agent="support"), offset=1).empty


def test_lowering_k_refilters_without_reimport_and_agrees_with_the_summary(
    analysis_store: sa.Engine,
) -> None:
    for k, expected in ((2, (3, 8)), (3, (2, 6)), (4, (0, 0))):
        totals = loops.loop_totals(analysis_store, k)
        assert (totals["signatures"], totals["calls"]) == expected
        assert summarize(analysis_store, loop_k=k)["loops"] == {
            "k": k,
            "signatures": expected[0],
            "calls": expected[1],
        }
    assert loops.loop_totals(analysis_store, 2) == {
        "signatures": 3,
        "calls": 8,
        "traces": 2,
        "errors": 4,
        "wasted_tokens": 2650,
    }


def test_loops_by_tool_at_k2(analysis_store: sa.Engine) -> None:
    assert rows(loops.loops_by_tool(analysis_store, 2)) == [
        ("get_weather", 1, 3, 2510),
        ("read_file", 1, 3, 100),
        ("write_file", 1, 2, 40),
    ]


def test_ping_pong_calls_and_the_traces_they_happen_in(analysis_store: sa.Engine) -> None:
    assert loops.ping_pong_calls(analysis_store) == 5
    assert rows(loops.ping_pong_traces(analysis_store)) == [
        ("run-c", "1:0", 5, "read_file ↔ write_file")
    ]
    assert loops.ping_pong_calls(analysis_store, Filters(agent="support")) == 0
