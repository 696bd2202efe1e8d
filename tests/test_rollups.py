"""Rollups equal the base tables: every figure a page reads from the rollups is compared with the
same figure computed from the base tables, for a grid of filters, on both databases — on a
generated store with the golden cases (and the real data where present), and again after
updates, an append, corrections and deletions. The rollup rows the import maintained must also
equal the rows ``toollens rebuild-rollups`` computes from scratch.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from formats_helpers import GOLDEN_CASES

from benchmarks.ui_store import StoreGenerator
from db import rollups
from db.corrections import correct_result
from db.deletion import delete_rows, import_by_id, traces_by_id
from db.engine import make_engine
from db.filters import Filters
from db.queries import (
    activity,
    durations,
    errors,
    findings,
    histograms,
    loops,
    overview,
    pairs,
    tokens,
    traces,
)
from db.rollup_read import base_tables, scope, used_dims
from db.schema import RollupSizeRow, ToolResultRow, TraceRow
from db.summary import summarize, summary_counts
from db.vocabulary import DEFAULT_ENCODING
from db.write import finish_import, start_import, write_traces
from ingest.pipeline import import_paths

Query = Callable[[sa.Engine, Filters], Any]

#: Every rollup-backed figure of the pages, as the pages call it.
QUERIES: dict[str, Query] = {
    "summary_counts": lambda e, f: summary_counts(e, loop_k=3, filters=f),
    "summarize": lambda e, f: summarize(e, loop_k=2, filters=f),
    "error_type_counts": overview.error_type_counts,
    "verdict_counts": overview.verdict_counts,
    "occurrence_histogram": overview.occurrence_histogram,
    "top_error_fingerprints": overview.top_error_fingerprints,
    "scorecard_counts": lambda e, f: overview.scorecard_counts(e, 3, f),
    "tool_scorecard": lambda e, f: overview.tool_scorecard(e, 2, 150, f),
    "tool_token_counts": histograms.tool_token_counts,
    "token_counts": histograms.token_counts,
    "error_totals": errors.error_totals,
    "error_types_by_tool": errors.error_types_by_tool,
    "error_sources": errors.error_sources,
    "count_error_fingerprints": errors.count_error_fingerprints,
    "error_fingerprints": lambda e, f: errors.error_fingerprints(e, f, limit=7, offset=1),
    "token_quantiles_by_tool": tokens.token_quantiles_by_tool,
    "budget_excess": lambda e, f: tokens.budget_excess(e, 120, f),
    "tool_result_share": tokens.tool_result_share,
    "trace_share_histogram": tokens.trace_share_histogram,
    "token_count_kinds": tokens.token_count_kinds,
    "input_share_histogram": tokens.input_share_histogram,
    "image_totals": tokens.image_totals,
    "loop_totals_k2": lambda e, f: loops.loop_totals(e, 2, f),
    "loop_totals_k4": lambda e, f: loops.loop_totals(e, 4, f),
    "loops_by_tool": lambda e, f: loops.loops_by_tool(e, 2, f),
    "ping_pong_calls": loops.ping_pong_calls,
    "finding_kind_counts": findings.finding_kind_counts,
    "finding_counts_by_tool": findings.finding_counts_by_tool,
    "count_pairs": pairs.count_pairs,
    "count_pairs_missing": lambda e, f: pairs.count_pairs(
        e, f, pairs.PairQuery(pair_state="missing_result", sort="tool")
    ),
    "count_pairs_orphans": lambda e, f: pairs.count_pairs(
        e, f, pairs.PairQuery(pair_state="orphan_result")
    ),
    "durations_by_tool": durations.durations_by_tool,
    "duration_totals": durations.duration_totals,
    "time_span": activity.time_span,
    "activity_over_time": activity.activity_over_time,
    "activity_by_minute": lambda e, f: activity.activity_over_time(e, f, "minute"),
    "activity_by_week": lambda e, f: activity.activity_over_time(e, f, "week"),
    "error_types_by_day": activity.error_types_over_time,
    "error_types_by_hour": lambda e, f: activity.error_types_over_time(e, f, "hour"),
}

DAY = datetime(2026, 10, 8, tzinfo=UTC)


def _grid(agent: str, model: str, tool: str) -> list[Filters]:
    """Filters on each dimension, on several at once, with the tool, and some the rollups
    cannot answer (a brushed range to the minute, a tag), which must read the base tables."""
    week = Filters(start=DAY, end=datetime(2026, 10, 15, tzinfo=UTC))
    return [
        Filters(),
        Filters(model=model),
        Filters(agent=agent),
        Filters(import_id=2),
        Filters(tool=tool),
        week,
        Filters(since=DAY),
        Filters(start=DAY, end=DAY, model=model),
        Filters(import_id=2, agent=agent, tool=tool),
        Filters(start=week.start, end=week.end, model=model, tool=tool),
        Filters(since=datetime(2026, 10, 8, 9, 30, tzinfo=UTC)),
        Filters(tag="nightly"),
        Filters(agent="no such agent"),
    ]


def _write_generated(engine: sa.Engine, messages: int) -> None:
    """The benchmark's generated traces (6 imports), written as ``make bench-ui`` writes them."""
    ids = [
        start_import(engine, origin="test", encoding=DEFAULT_ENCODING, paths=[f"gen-{i}"])
        for i in range(6)
    ]
    batches: dict[int, list[Any]] = {i: [] for i in range(6)}
    for week, rows in StoreGenerator(5).traces(messages):
        batches[week].append(rows)
    for week, batch in batches.items():
        for i in range(0, len(batch), 40):
            write_traces(engine, ids[week], batch[i : i + 40])
        finish_import(engine, ids[week], state="done")


def _golden_inputs() -> list[Path]:
    return [next(case.glob("input.json*")) for case in GOLDEN_CASES]


@pytest.fixture(scope="module")
def store(module_db_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(module_db_url)
    _write_generated(engine, 4_000)
    import_paths(engine, _golden_inputs(), workers=1)
    yield engine
    engine.dispose()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(
            a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False
        )
        return True
    assert a == b
    return True


def _check_grid(engine: sa.Engine, *, first: int | None = None) -> int:
    """Compare every query under every filter of the grid (its ``first`` filters only); the
    comparisons made."""
    with engine.connect() as conn:
        agent, model = conn.execute(
            sa.select(TraceRow.agent, TraceRow.model)
            .where(TraceRow.agent.is_not(None), TraceRow.model.is_not(None))
            .order_by(TraceRow.id)
            .limit(1)
        ).one()
        tool = conn.execute(
            sa.select(ToolResultRow.tool).order_by(ToolResultRow.id).limit(1)
        ).scalar_one()
    compared = 0
    for f in _grid(agent, model, tool)[:first]:
        for name, query in QUERIES.items():
            rolled = query(engine, f)
            with base_tables():
                base = query(engine, f)
            try:
                _same(rolled, base)
            except AssertionError as error:
                raise AssertionError(f"{name} under {f}: rollups differ\n{error}") from None
            compared += 1
    return compared


def _rollup_rows(engine: sa.Engine) -> dict[str, set[tuple[Any, ...]]]:
    with engine.connect() as conn:
        return {
            name: {tuple(row) for row in conn.execute(sa.select(rollup.table))}
            for name, rollup in rollups.ROLLUPS.items()
        }


def _maintained_equals_rebuilt(engine: sa.Engine) -> None:
    maintained = _rollup_rows(engine)
    rollups.rebuild(engine)
    rebuilt = _rollup_rows(engine)
    for name in rollups.ROLLUPS:
        assert maintained[name] == rebuilt[name], name


def test_the_grid_reads_rollups_where_it_can() -> None:
    """Which filters the rollups answer: whole days and the sidebar's dimensions, not tags or
    ranges brushed to the minute; the size histogram has no grain of several dimensions."""
    assert used_dims(Filters(since=datetime(2026, 10, 8, 9, 30, tzinfo=UTC))) is None
    assert used_dims(Filters(tag="x")) is None
    assert used_dims(Filters(start=DAY, model="m")) == rollups.Dim.DAY | rollups.Dim.MODEL
    assert used_dims(Filters(tool="t")) == rollups.Dim(0)


def test_every_figure_equals_the_base_tables(store: sa.Engine) -> None:
    assert _check_grid(store) == 13 * len(QUERIES)
    with store.connect() as conn:
        sizes = sa.Table("rollup_sizes", sa.MetaData(), autoload_with=conn)
        assert conn.execute(sa.select(sa.func.count()).select_from(sizes)).scalar_one() > 0
        # The rollups do answer the plain grid (the comparison is not base against base).
        assert scope(conn, RollupSizeRow.__table__, Filters(model="x")) is not None  # type: ignore[arg-type]


def test_maintained_rollups_equal_a_rebuild_after_every_kind_of_change(
    store: sa.Engine, tmp_path: Path
) -> None:
    _maintained_equals_rebuilt(store)
    # An update: a golden case imported again with different content replaces its trace.
    case = _golden_inputs()[0]
    changed = tmp_path / case.name
    text = case.read_text(encoding="utf-8")
    changed.write_text(text.replace("error", "failure", 3), encoding="utf-8")
    summary = import_paths(store, [changed], workers=1, display_names=[str(case)])
    assert summary.updated >= 1
    # Corrections of an error's type and of a verdict.
    with store.connect() as conn:
        error_id = conn.execute(
            sa.select(ToolResultRow.id).where(ToolResultRow.status == "error").limit(1)
        ).scalar_one()
        advised_id = conn.execute(
            sa.select(ToolResultRow.id).where(ToolResultRow.suggestion.is_not(None)).limit(1)
        ).scalar_one()
    correct_result(store, error_id, author="rev", error_type="reviewed_type")
    correct_result(store, advised_id, author="rev", verdict="followed")
    _check_grid(store, first=2)
    _maintained_equals_rebuilt(store)
    # Deletions: one trace, then a whole import.
    with store.connect() as conn:
        first = conn.execute(sa.select(TraceRow.id).order_by(TraceRow.id).limit(1)).scalar_one()
    delete_rows(store, traces_by_id([first]))
    delete_rows(store, import_by_id(3))
    _check_grid(store, first=2)
    _maintained_equals_rebuilt(store)
    assert traces.filter_choices(store)["agent"] == sorted(
        {a for a in _agents(store) if a is not None}
    )


def _agents(engine: sa.Engine) -> list[str | None]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(TraceRow.agent).distinct()).scalars())


def test_an_append_keeps_the_rollups_exact(db_url: str, tmp_path: Path, realdata: Path) -> None:
    """A Claude Code session imported half, then whole (the append path)."""
    session = max((realdata / "claude-code").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    lines = session.read_bytes().splitlines(keepends=True)
    target = tmp_path / session.name
    target.write_bytes(b"".join(lines[: len(lines) // 2]))
    engine = make_engine(db_url)
    try:
        import_paths(engine, [target], workers=1)
        shutil.copyfile(session, target)
        import_paths(engine, [target], workers=1)
        _check_grid(engine, first=5)
        _maintained_equals_rebuilt(engine)
    finally:
        engine.dispose()


def test_a_store_from_before_the_rollups_is_filled_when_opened(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    _write_generated(engine, 600)
    expected = _rollup_rows(engine)
    with engine.begin() as conn:
        for rollup in rollups.ROLLUPS.values():
            conn.execute(sa.delete(rollup.table))
        conn.execute(sa.text("UPDATE rollup_state SET complete = false"))
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0016'"))
        conn.execute(sa.text("DROP TABLE rollup_state"))
        conn.execute(sa.text("DROP INDEX ix_tool_results_duration"))
        for rollup in rollups.ROLLUPS.values():
            conn.execute(sa.text(f"DROP TABLE {rollup.table.name}"))
    engine.dispose()
    reopened = make_engine(sqlite_url)
    try:
        assert rollups.is_complete(reopened)
        assert _rollup_rows(reopened) == expected
    finally:
        reopened.dispose()


def test_a_store_from_before_the_input_share_rollup_gets_it_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0019 adds a rollup to a store whose others are complete: opening the store
    counts it (the histogram reads the base tables until then)."""
    engine = make_engine(sqlite_url)
    import_paths(engine, _golden_inputs(), workers=0)
    expected = _rollup_rows(engine)
    assert len(expected["rollup_input_shares"]) == 92
    assert list(tokens.input_share_histogram(engine)["results"]) == [4, 0, 4, 7, 3, 0, 0, 0]
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE rollup_input_shares"))
        conn.execute(sa.text("ALTER TABLE rollup_state DROP COLUMN pending"))
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0017'"))
    engine.dispose()
    counted: list[Any] = []
    monkeypatch.setattr(rollups, "rebuild", _recorded(rollups.rebuild, counted))
    reopened = make_engine(sqlite_url)
    try:
        assert counted == [("rollup_input_shares",)]
        assert rollups.is_complete(reopened) and rollups.pending(reopened) == []
        assert _rollup_rows(reopened) == expected
    finally:
        reopened.dispose()


def _recorded(rebuild: Callable[..., int], calls: list[Any]) -> Callable[..., int]:
    def recorded(engine: sa.Engine, **kwargs: Any) -> int:
        only = kwargs.get("only")
        calls.append(None if only is None else tuple(only))
        return rebuild(engine, **kwargs)

    return recorded


def test_a_pending_rollup_is_read_from_the_base_tables_until_counted(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    import_paths(engine, _golden_inputs(), workers=0)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM rollup_input_shares"))
        conn.execute(sa.text("UPDATE rollup_state SET pending = 'rollup_input_shares'"))
        assert not rollups.counted(conn, "rollup_input_shares")
        assert rollups.counted(conn, "rollup_sizes")
    assert list(tokens.input_share_histogram(engine)["results"]) == [4, 0, 4, 7, 3, 0, 0, 0]
    rollups.rebuild(engine, only=["rollup_input_shares"])
    with engine.connect() as conn:
        assert rollups.counted(conn, "rollup_input_shares")
    assert list(tokens.input_share_histogram(engine)["results"]) == [4, 0, 4, 7, 3, 0, 0, 0]


def test_rebuild_rollups_recounts_rows_changed_by_hand(sqlite_url: str) -> None:
    """``toollens rebuild-rollups``: after a base row was changed outside ToolLens (here an
    error re-typed by SQL), the rollups are recounted and agree with the base tables again."""
    from typer.testing import CliRunner

    from ingest.cli import app

    engine = make_engine(sqlite_url)
    _write_generated(engine, 300)
    with engine.begin() as conn:
        conn.execute(
            sa.update(ToolResultRow)
            .where(ToolResultRow.status == "error")
            .values(error_type="typed_by_hand")
        )
    with base_tables():
        expected = overview.error_type_counts(engine)
    assert overview.error_type_counts(engine)["error_type"].tolist() != ["typed_by_hand"]
    result = CliRunner().invoke(app, ["rebuild-rollups", "--db", sqlite_url])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("rollups rebuilt: 14 traces in ")
    pd.testing.assert_frame_equal(overview.error_type_counts(engine), expected)
    assert expected["error_type"].tolist() == ["typed_by_hand"]
    engine.dispose()
