"""Error streaks: consecutive calls of one tool ending in the same error fingerprint, whatever
their arguments. The pure rule, the analysis of ``timing_traces.build_trace`` (one streak of 3
worked out there), the stored streaks at k on SQLite and PostgreSQL, and the real sessions."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from page_support import rows
from timing_traces import build_trace, search_trace

from db.queries import streaks as q
from db.queries.filters import Filters
from db.queries.traces import find_trace
from ingest.analysis.streaks import StreakCall, find_streaks
from ingest.analysis.tokens import count_many
from ingest.analysis.trace import analyze_trace
from ingest.importing.pipeline import import_paths, import_traces

#: build-1's streak: the result tokens of 3:0 and 6:0 (14 each) and their arguments' tokens
#: ({"cmd": "npm test -- --fix"}: 10, {"cmd": "npm run build"}: 8).
WASTED_TOKENS = 14 + 14 + 10 + 8
FINGERPRINT = "run: Error: build failed in '…' at line #"


def _call(seq: int, tool: str, fingerprint: str | None, ms: float | None = None) -> StreakCall:
    return StreakCall((seq, 0), tool, fingerprint, tokens=10, duration_ms=ms)


def test_other_tools_in_between_do_not_break_a_streak_another_error_or_a_success_does() -> None:
    calls = [
        _call(1, "a", "a: x", 5.0),
        _call(2, "b", None),
        _call(3, "a", "a: x", 7.0),
        _call(4, "b", "b: y"),
        _call(5, "a", "a: x", -3.0),  # a negative time is not wasted time
        _call(6, "a", "a: z"),
        _call(7, "a", "a: x"),
        _call(8, "a", "a: x", None),
        _call(9, "a", None),
        _call(10, "a", "a: x"),
    ]
    found = [
        (s.tool, s.fingerprint, s.calls, s.wasted_tokens, s.wasted_ms) for s in find_streaks(calls)
    ]
    assert found == [
        ("a", "a: x", [(1, 0), (3, 0), (5, 0)], 20, 7.0),
        ("a", "a: x", [(7, 0), (8, 0)], 10, None),
    ]
    assert [s.length for s in find_streaks(calls, min_length=3)] == [3]
    with pytest.raises(ValueError, match="at least 1"):
        find_streaks(calls, min_length=0)


def test_the_analysis_finds_the_streak_with_its_wasted_tokens_and_time() -> None:
    trace = build_trace()
    facts = analyze_trace(trace, count_many([m.content for m in trace.messages]))
    assert [
        (s.tool, s.fingerprint, s.calls, s.wasted_tokens, s.wasted_ms) for s in facts.streaks
    ] == [
        ("run", FINGERPRINT, [(1, 0), (3, 0), (6, 0)], WASTED_TOKENS, 2000.0),
    ]


@pytest.fixture
def streak_store(engine: sa.Engine) -> sa.Engine:
    import_traces(engine, [build_trace(), search_trace()])
    return engine


def test_stored_streaks_at_k(streak_store: sa.Engine) -> None:
    expected = ("build-1", "1:0", "run", "other", FINGERPRINT, 3, WASTED_TOKENS, 2000.0, "6:0")
    assert rows(q.error_streaks(streak_store, 3)) == [expected]
    assert q.streak_totals(streak_store, 3) == {
        "streaks": 1, "calls": 3, "traces": 1, "wasted_tokens": WASTED_TOKENS, "wasted_ms": 2000.0,
    }  # fmt: skip
    assert q.streak_totals(streak_store, 4) == {
        "streaks": 0, "calls": 0, "traces": 0, "wasted_tokens": 0, "wasted_ms": None,
    }  # fmt: skip
    assert q.streak_totals(streak_store, 3, Filters(tool="search"))["streaks"] == 0
    trace = find_trace(streak_store, "build-1")
    assert trace is not None
    assert rows(q.trace_streaks(streak_store, int(trace["id"]), 3)) == [
        ("1:0", "6:0", "run", "other", FINGERPRINT, 3, WASTED_TOKENS, 2000.0)
    ]
    assert q.trace_streaks(streak_store, int(trace["id"]), 4).empty


def test_real_sessions_have_error_streaks(realdata: Path, engine: sa.Engine) -> None:
    import_paths(engine, sorted((realdata / "claude-code").glob("*.jsonl")), workers=0)
    assert q.streak_totals(engine, 3) == {
        "streaks": 6, "calls": 30, "traces": 3, "wasted_tokens": 11530, "wasted_ms": 40911.0,
    }  # fmt: skip
    assert [q.streak_totals(engine, k)["streaks"] for k in (2, 4, 7, 8)] == [22, 4, 2, 0]
