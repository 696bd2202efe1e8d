"""Tool execution times: the pure rule, the analysis, the stored column and the per-tool
nearest-rank statistics on SQLite and PostgreSQL (figures worked out in ``timing_traces``), and
the real Claude Code sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from page_support import rows
from timing_traces import build_trace, search_trace

from db.bulk.stored import iter_trace_id_batches, load_traces
from db.queries import durations
from db.queries.filters import Filters
from ingest.analysis.durations import milliseconds, tool_duration
from ingest.analysis.tokens import count_many
from ingest.analysis.trace import analyze_trace
from ingest.importing.pipeline import import_paths, import_traces
from ingest.importing.rebuild import trace_from_stored

T = datetime(2026, 1, 1, 10, tzinfo=UTC)


def test_a_span_measure_wins_over_timestamps_and_times_need_both_ends_with_zones() -> None:
    assert tool_duration(T, T + timedelta(milliseconds=1500), None) == (1500.0, "timestamps")
    assert tool_duration(T, T + timedelta(seconds=9), 42.5) == (42.5, "span")
    assert tool_duration(None, None, 42.5) == (42.5, "span")
    assert tool_duration(T, T - timedelta(seconds=1), None) == (-1000.0, "timestamps")
    assert tool_duration(T, None, None) == (None, None)
    assert tool_duration(T.replace(tzinfo=None), T, None) == (None, None)
    assert milliseconds(timedelta(microseconds=295_001)) == 295.001


def test_the_analysis_times_answered_calls_only() -> None:
    trace = build_trace()
    facts = analyze_trace(trace, count_many([m.content for m in trace.messages]))
    assert [(r.message_seq, r.duration_ms, r.duration_source) for r in facts.results] == [
        (2, 2500.0, "timestamps"),
        (4, 1250.0, "timestamps"),
        (5, 1000.0, "timestamps"),
        (7, 750.0, "timestamps"),
        (9, -500.0, "timestamps"),
        (11, None, None),
    ]


@pytest.fixture
def timed_store(engine: sa.Engine) -> sa.Engine:
    import_traces(engine, [build_trace(), search_trace()])
    return engine


def test_durations_per_tool_are_nearest_rank_with_negatives_and_missing_counted(
    timed_store: sa.Engine,
) -> None:
    # tool, timed, missing, negative, p50, p95, max, from spans; slowest p95 first.
    assert rows(durations.durations_by_tool(timed_store)) == [
        ("run", 3, 1, 1, 1250.0, 2500.0, 2500.0, 0),
        ("read_file", 1, 0, 0, 1000.0, 1000.0, 1000.0, 0),
        ("search", 1, 0, 0, 300.25, 300.25, 300.25, 1),
    ]
    assert durations.duration_totals(timed_store) == {
        "timed": 5, "missing": 1, "negative": 1,
        "p50_ms": 1000.0, "p95_ms": 2500.0, "max_ms": 2500.0,
    }  # fmt: skip


def test_the_slowest_calls_and_the_filters(timed_store: sa.Engine) -> None:
    assert rows(durations.slowest_calls(timed_store, limit=3)) == [
        ("build-1", "1:0", "run", 2500.0, "timestamps", "error"),
        ("build-1", "3:0", "run", 1250.0, "timestamps", "error"),
        ("build-1", "3:1", "read_file", 1000.0, "timestamps", "success"),
    ]
    only_search = Filters(tool="search")
    assert rows(durations.slowest_calls(timed_store, only_search)) == [
        ("search-2", "1:0", "search", 300.25, "span", "success"),
    ]
    assert durations.duration_totals(timed_store, only_search)["p50_ms"] == 300.25
    nothing = Filters(tool="absent")
    assert durations.duration_totals(timed_store, nothing) == {
        "timed": 0, "missing": 0, "negative": 0, "p50_ms": None, "p95_ms": None, "max_ms": None,
    }  # fmt: skip
    assert durations.durations_by_tool(timed_store, nothing).empty


def test_the_slowest_calls_under_a_trace_filter_keep_their_order_and_limit(
    timed_store: sa.Engine,
) -> None:
    # A trace filter: on SQLite the slowest calls walk the duration index first.
    day = Filters(start=datetime(2026, 11, 1, tzinfo=UTC), end=datetime(2026, 11, 2, tzinfo=UTC))
    assert rows(durations.slowest_calls(timed_store, day, limit=2)) == [
        ("build-1", "1:0", "run", 2500.0, "timestamps", "error"),
        ("build-1", "3:0", "run", 1250.0, "timestamps", "error"),
    ]
    assert [r[1] for r in rows(durations.slowest_calls(timed_store, day, limit=10))] == [
        "1:0", "3:0", "3:1", "6:0", "1:0",
    ]  # fmt: skip
    search = Filters(start=day.start, end=day.end, tool="search")
    assert rows(durations.slowest_calls(timed_store, search, limit=1)) == [
        ("search-2", "1:0", "search", 300.25, "span", "success"),
    ]
    next_day = Filters(start=day.end, end=day.end + timedelta(days=1))
    assert durations.slowest_calls(timed_store, next_day, limit=2).empty


def test_a_span_duration_is_stored_and_read_back_as_a_provided_fact(
    timed_store: sa.Engine,
) -> None:
    spans = []
    for ids in iter_trace_id_batches(timed_store):
        for stored in load_traces(timed_store, ids):
            trace, _ = trace_from_stored(stored)
            spans += [m.tool_result.duration_ms for m in trace.messages if m.tool_result]
    assert spans == [None, None, None, None, None, None, 300.25]


def test_real_claude_code_sessions_have_timed_calls(realdata: Path, engine: sa.Engine) -> None:
    import_paths(engine, sorted((realdata / "claude-code").glob("*.jsonl")), workers=0)
    totals = durations.duration_totals(engine)
    assert (totals["timed"], totals["missing"], totals["negative"]) == REAL_COUNTS
    assert (totals["p50_ms"], totals["p95_ms"], totals["max_ms"]) == REAL_PERCENTILES


#: The 15 real Claude Code sessions: every answered call has both times, none is negative
#: (the 2.8-hour maximum is a Bash call left waiting in a session).
REAL_COUNTS = (1091, 0, 0)
REAL_PERCENTILES = (71.0, 18453.0, 10086099.0)
