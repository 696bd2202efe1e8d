"""The bench's stores are built right, on both databases: a tiny generated store has exactly the
rows the generator is known to make, and a store scaled from it by SQL
(:mod:`benchmarks.ui_scale`) is exactly ``factor`` shifted copies of it, consistent as an import
would leave it (the generator was once broken for a whole session without anyone noticing)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from benchmarks.ui_scale import scale_into, set_marker, table_counts
from benchmarks.ui_store import DAYS, after_bulk_load, generate_into, marker, store_marker
from db.engine import make_engine
from db.queries.search import search_content
from tests.conftest import fresh_pg_schema

MESSAGES, SEED, FACTOR = 2_000, 11, 3
#: What the generator makes of 2,000 messages with seed 11 (generator version 3): its last
#: trace may run one message over the size asked for.
TRACES = 65
EXPECTED = {
    "imports": 6,
    "traces": TRACES,
    "messages": 2_001,
    "tool_calls": 941,
    "tool_results": 932,
    "findings": 165,
    "error_streaks": 0,
    "annotations": 0,
    "trace_updates": 0,
}


def _consistency(engine: Engine) -> tuple[int, int, int, int]:
    """Traces whose stored counters disagree with their rows (messages, calls, results, errors)."""
    checks = {
        "message_count": "SELECT count(*) FROM messages m WHERE m.trace_id = t.id",
        "tool_call_count": "SELECT count(*) FROM tool_calls c WHERE c.trace_id = t.id",
        "tool_result_count": "SELECT count(*) FROM tool_results r WHERE r.trace_id = t.id",
        "error_count": "SELECT count(*) FROM tool_results r WHERE r.trace_id = t.id "
        "AND r.status = 'error'",
    }
    with engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            int(conn.execute(text(f"SELECT count(*) FROM traces t WHERE {c} <> ({q})")).scalar())
            for c, q in checks.items()
        )


def _build(base_url: str, scaled_url: str, base_ref: str) -> tuple[Engine, Engine]:
    base = make_engine(base_url)
    assert generate_into(base, MESSAGES, SEED, progress=False) == EXPECTED["messages"]
    after_bulk_load(base)
    scaled = make_engine(scaled_url)
    scale_into(scaled, base_ref, FACTOR, DAYS, log=lambda _: None)
    set_marker(scaled, "ui-bench scaled")
    after_bulk_load(scaled)
    return base, scaled


def _check(base: Engine, scaled: Engine) -> None:
    assert table_counts(base) == EXPECTED
    assert store_marker(base) == marker(MESSAGES, SEED)
    assert table_counts(scaled) == {t: n * FACTOR for t, n in EXPECTED.items()}
    assert store_marker(scaled) == "ui-bench scaled"
    assert _consistency(base) == (0, 0, 0, 0)
    assert _consistency(scaled) == (0, 0, 0, 0)
    with scaled.connect() as conn:
        keys = conn.execute(text("SELECT count(DISTINCT dedupe_key) FROM traces")).scalar()
        shown = conn.execute(text("SELECT count(DISTINCT display_id) FROM traces")).scalar()
        assert (keys, shown) == (TRACES * FACTOR, TRACES * FACTOR)
        # Copy 2 of trace 1 is trace 1 moved 2 x DAYS later, under a new identity.
        first = conn.execute(
            text("SELECT display_id, started_at, message_count FROM traces WHERE id = 1")
        ).one()
        third = conn.execute(
            text("SELECT display_id, started_at, message_count FROM traces WHERE id = :i"),
            {"i": 1 + 2 * TRACES},
        ).one()
    assert third.display_id == f"{first.display_id}.c2"
    assert third.message_count == first.message_count
    started = [scaled.dialect.name, first.started_at, third.started_at]
    if isinstance(first.started_at, str):  # SQLite returns the stored text in text()
        from datetime import datetime

        started[1:] = [datetime.fromisoformat(v) for v in started[1:]]
    assert started[2] - started[1] == timedelta(days=2 * DAYS)
    # The search finds each copy's rows: three times what it finds in the base store.
    found = search_content(base, "timed out").total
    assert found > 0
    assert search_content(scaled, "timed out").total == FACTOR * found


def test_a_tiny_bench_store_and_its_scaled_copy_on_sqlite(tmp_path: Path) -> None:
    base_path = tmp_path / "base.db"
    base, scaled = _build(
        f"sqlite:///{base_path}", f"sqlite:///{tmp_path / 'x3.db'}", str(base_path)
    )
    _check(base, scaled)


@pytest.mark.pg
def test_a_tiny_bench_store_and_its_scaled_copy_on_postgresql() -> None:
    with fresh_pg_schema() as base_url, fresh_pg_schema() as scaled_url:
        schema = base_url.rsplit("search_path%3D", 1)[-1].rsplit("search_path=", 1)[-1]
        base, scaled = _build(base_url, scaled_url, schema)
        try:
            _check(base, scaled)
        finally:
            base.dispose()
            scaled.dispose()


@pytest.fixture(autouse=True)
def _no_progress(capsys: pytest.CaptureFixture[str]) -> None:
    """The builders print progress; the tests need none of it."""
