"""Rollups equal the base tables: every figure a page reads from the rollups is compared with the
same figure computed from the base tables, for a grid of filters, on SQLite and PostgreSQL (the
ClickHouse engines in ``test_rollups_clickhouse``) — on a generated store with the golden
cases (and the real data where present), and again after updates, an append, corrections (not
on ClickHouse, which takes none) and deletions. The rollup rows the import maintained must also
equal the rows ``toollens rebuild-rollups`` computes from scratch.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
from formats_helpers import GOLDEN_CASES

from benchmarks.ui_store import StoreGenerator
from db import catalogue, door, figures, migrate
from db.catalogue import Condition, Dimension, Measure
from db.contract.vocabulary import DEFAULT_ENCODING, FINDING_KINDS
from db.engine import make_engine
from db.queries import (
    activity,
    durations,
    errors,
    findings,
    histograms,
    loops,
    overview,
    pairs,
    planner,
    suggestions,
    tokens,
    traces,
)
from db.queries.common import effective_error_type
from db.queries.filters import Filters
from db.queries.summary import summarize, summary_counts
from db.rollups import upkeep as rollups
from db.rollups.read import DURATIONS, SIZE_BUCKETS, base_tables, scope, used_dims
from db.rollups.value_buckets import bucket_of
from db.schema import (
    RollupDurationRow,
    RollupResultRow,
    RollupSizeRow,
    ToolResultRow,
    TraceRow,
)
from db.writes.corrections import correct_result
from db.writes.deletion import delete_rows, import_by_id, traces_by_id
from ingest.importing.pipeline import import_paths, import_traces
from ingest.model import Message, ToolCall, ToolResult, Trace

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
    "size_figures": lambda e, f: _size_figures(e, f),
    "token_figures": lambda e, f: histograms.token_figures(histograms.token_counts(e, f)),
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
    "finding_occurrence_count": lambda e, f: {
        kind: findings.finding_occurrence_count(e, kind, f) for kind in FINDING_KINDS
    },
    "count_pairs": pairs.count_pairs,
    "count_pairs_missing": lambda e, f: pairs.count_pairs(
        e, f, pairs.PairQuery(pair_state="missing_result", sort="tool")
    ),
    "count_pairs_orphans": lambda e, f: pairs.count_pairs(
        e, f, pairs.PairQuery(pair_state="orphan_result")
    ),
    "durations_by_tool": durations.durations_by_tool,
    "duration_totals": durations.duration_totals,
    "duration_figures": durations.duration_figures,
    "time_span": activity.time_span,
    "span_unit": activity.span_unit,
    "activity_over_time": activity.activity_over_time,
    "activity_by_minute": lambda e, f: activity.activity_over_time(e, f, "minute"),
    "activity_by_hour": lambda e, f: activity.activity_over_time(e, f, "hour"),
    "activity_by_day": lambda e, f: activity.activity_over_time(e, f, "day"),
    "activity_by_week": lambda e, f: activity.activity_over_time(e, f, "week"),
    "error_types_by_day": activity.error_types_over_time,
    "error_types_by_hour": lambda e, f: activity.error_types_over_time(e, f, "hour"),
    "follow_rates_by_tool": suggestions.follow_rates,
    "follow_rates_by_error_type": lambda e, f: suggestions.follow_rates(
        e, f, by="error_type", limit=4
    ),
    "recovery_rates": suggestions.recovery_rates,
    "verdict_breakdown": suggestions.verdict_breakdown,
    "error_types_by_week": lambda e, f: activity.error_types_over_time(e, f, "week"),
    "pair_choices": pairs.pair_choices,
    "filter_choices": lambda e, f: traces.filter_choices(e),
    "trace_count": lambda e, f: traces.trace_count(e),
}

DAY = datetime(2026, 10, 8, tzinfo=UTC)
#: The store's verdicts by kind of advice (``suggestions.verdict_breakdown``).
BREAKDOWN = [
    ["followed", "retry_after", 12], ["followed", "missing_param", 10],
    ["followed", "use_instead", 9], ["followed", "ask_user", 4],
    ["ignored", "retry_after", 10], ["ignored", "use_instead", 8],
    ["ignored", "missing_param", 4], ["ignored", "ask_user", 3], ["ignored", "other", 1],
    ["unclear", "missing_param", 3], ["unclear", "retry_after", 3], ["unclear", "use_instead", 3],
    ["no_next_action", "use_instead", 3], ["no_next_action", "missing_param", 2],
    ["no_next_action", "retry_after", 1],
]  # fmt: skip
#: Budgets the size figures are compared for: on a bucket's edge, inside a bucket, tiny.
BUDGETS = (1000, 1234, 37)


def _size_figures(engine: sa.Engine, f: Filters) -> tuple[Any, ...]:
    """Every figure the pages derive from the (tool, tokens) histogram, for each of
    :data:`BUDGETS` (under a range of days the histogram's rows are exact only where these are
    decided: ``db.rollups.wide_histograms``)."""
    figures: list[Any] = []
    for budget in BUDGETS:
        counts = histograms.tool_token_counts(engine, f, budget)
        figures += [
            histograms.size_bins(counts, budget),
            histograms.tool_sizes(counts, budget),
            histograms.oversized_tools(counts, budget),
            histograms.token_figures(zip(counts["tokens"], counts["results"], strict=True)),
            tokens.quantiles_from_counts(counts),
            counts["results"].sum(),
        ]
    return tuple(figures)


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
        # Whole blocks of 8 days inside, single days at both edges (``rollups.day_ranges``).
        Filters(start=datetime(2026, 10, 3, tzinfo=UTC), end=datetime(2026, 10, 29, tzinfo=UTC)),
        # Open below: the blocks of 64 days up to 2026-10-10, one of 8, then two days.
        Filters(until=datetime(2026, 10, 20, tzinfo=UTC)),
        Filters(since=datetime(2026, 10, 8, 9, 30, tzinfo=UTC)),
        Filters(tag="nightly"),
        Filters(agent="no such agent"),
    ]


def _write_generated(engine: sa.Engine, messages: int) -> None:
    """The benchmark's generated traces (6 imports), written through the import door in
    batches of 40 traces, as ``make bench-ui`` writes them."""
    sessions = [
        door.start_session(engine, origin="test", encoding=DEFAULT_ENCODING, paths=[f"gen-{i}"])
        for i in range(6)
    ]
    weeks: dict[int, list[Any]] = {i: [] for i in range(6)}
    for week, rows in StoreGenerator(5).traces(messages):
        weeks[week].append(rows)
    for week, batch in weeks.items():
        for i in range(0, len(batch), 40):
            sessions[week].write(batch[i : i + 40])
        sessions[week].finish([], state="done")


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
    if isinstance(a, tuple):
        assert len(a) == len(b)
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(
            a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False
        )
        return True
    assert a == b
    return True


def _first_agent_and_model(conn: sa.Connection) -> tuple[str, str]:
    """The agent and model of the store's first trace that names both."""
    agent, model = conn.execute(
        sa.select(TraceRow.agent, TraceRow.model)
        .where(TraceRow.agent.is_not(None), TraceRow.model.is_not(None))
        .order_by(TraceRow.id)
        .limit(1)
    ).one()
    return agent, model


def _store_grid(engine: sa.Engine) -> list[Filters]:
    """:func:`_grid` on values of ``engine``'s store."""
    with engine.connect() as conn:
        agent, model = _first_agent_and_model(conn)
        tool = conn.execute(
            sa.select(ToolResultRow.tool).order_by(ToolResultRow.id).limit(1)
        ).scalar_one()
    return _grid(agent, model, tool)


#: The filters of the grid compared on ClickHouse, whose reads of the base tables are slow on this
#: machine: the whole store, one dimension, the full grain (a day and a model), a range of days
#: read by blocks, a range open below. Not the tool filter, whose base-table form (a correlated
#: EXISTS) 18.16 cannot run, nor the tag filter, whose JSON condition the ClickHouse dialect does
#: not compile.
CLICKHOUSE_GRID = (0, 1, 7, 10, 11)


def _filters(engine: sa.Engine, first: int | None = None) -> list[Filters]:
    """The grid's filters on ``engine``'s store (its ``first`` ones; on ClickHouse those of
    :data:`CLICKHOUSE_GRID`)."""
    grid = _store_grid(engine)
    if engine.dialect.name == "clickhouse":
        grid = [grid[i] for i in CLICKHOUSE_GRID]
    return grid[:first]


def _check_grid(engine: sa.Engine, *, first: int | None = None) -> int:
    """Compare every query under every filter of the grid (its ``first`` filters only); the
    comparisons made."""
    compared = 0
    for f in _filters(engine, first):
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
    # A ClickHouse store's keys are not read back (its text columns are UTF-8, the keys any
    # bytes): each is a hash of the row's other columns, compared here.
    clickhouse = engine.dialect.name == "clickhouse"
    with engine.connect() as conn:
        return {
            name: {
                tuple(row)
                for row in conn.execute(
                    sa.select(*(c for c in rollup.table.c if not (clickhouse and c.name == "key")))
                )
            }
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
    assert _check_grid(store) == 15 * len(QUERIES)
    # The suggestion figures compared are not empty (17 advised tools, ties ordered by name).
    advised = suggestions.follow_rates(store)
    assert list(advised["tool"][:2]) == ["fetch_url", "update_user"]
    assert list(advised["suggestions"]) == [10, 10, 9, 6, 5, 5, 5, 4, 4, 4, 3, 3, 3, 2, 1, 1, 1]
    # Errors with and without advice, by each outcome of the next call of their tool.
    with store.connect() as conn:
        r = ToolResultRow
        advised = r.suggestion.is_not(None)
        errors_by = conn.execute(
            sa.select(advised, r.next_call_succeeded, sa.func.count())
            .where(r.status == "error")
            .group_by(advised, r.next_call_succeeded)
        ).all()
    assert {(bool(a), n): c for a, n, c in errors_by} == {
        (False, None): 43, (False, False): 36, (False, True): 31,
        (True, None): 6, (True, False): 38, (True, True): 32,
    }  # fmt: skip
    recovery, sent = _with_statements(store, lambda: suggestions.recovery_rates(store))
    assert _reads(sent, "rollup_results") and not _reads(sent, "tool_results"), sent
    assert recovery.values.tolist() == [
        ["with suggestion", 76, 32, 38, 6, 0.4571],
        ["without suggestion", 110, 31, 36, 43, 0.4627],
    ]
    breakdown, sent = _with_statements(store, lambda: suggestions.verdict_breakdown(store))
    assert _reads(sent, "rollup_results") and not _reads(sent, "tool_results"), sent
    assert breakdown.values.tolist() == BREAKDOWN
    with store.connect() as conn:
        sizes = sa.Table("rollup_sizes", sa.MetaData(), autoload_with=conn)
        assert conn.execute(sa.select(sa.func.count()).select_from(sizes)).scalar_one() > 0
        # The rollups do answer the plain grid (the comparison is not base against base).
        assert scope(conn, RollupSizeRow.__table__, Filters(model="x")) is not None  # type: ignore[arg-type]
        assert scope(conn, DURATIONS, Filters(model="x")) is not None


def _catalogue_requests() -> Iterator[tuple[str, list[Dimension], list[Measure], list[Condition]]]:
    """Per source of the catalogue: every measure, ungrouped and by each dimension (a measure
    the rollup counts per one dimension only, by that one; a dimension the rollup keeps under
    a condition, under it)."""
    for source, (dimensions, measures) in catalogue.ENTRIES.items():
        for dimension in (None, *dimensions):
            usable = [
                m
                for m in measures
                if (m.needs is None or m.needs is dimension)
                and (m.apart is None or dimension is None)
            ]
            by = [] if dimension is None else [dimension]
            where = [] if dimension is None or dimension.within is None else [dimension.within]
            yield source, by, usable, where


def test_every_catalogued_measure_by_every_dimension_equals_the_base_tables(
    store: sa.Engine,
) -> None:
    assert _check_catalogue(store) == 15 * 39


def _check_catalogue(store: sa.Engine) -> int:
    """Compare every catalogued request under every filter of the grid; the comparisons made."""
    compared = 0
    grid = _filters(store)
    for f in grid:
        for source, by, measures, where in _catalogue_requests():
            with store.connect() as conn:
                rolled = figures.read(conn, measures, by, where, filters=f)
                with base_tables():
                    base = figures.read(conn, measures, by, where, filters=f)
            if by:
                rolled, base = (
                    x.sort_values(by[0].name, ignore_index=True) for x in (rolled, base)
                )
            if store.dialect.name == "clickhouse":
                # ClickHouse's min/max of a text column over no rows is '' where SQL's is NULL
                # (the base tables' answer; the rollups' is NULL, SQLite's): no tool is named ''.
                base = base.astype(object).map(lambda v: None if v == "" else v)
            try:
                _same(rolled, base)
            except AssertionError as error:
                names = [d.name for d in by]
                raise AssertionError(
                    f"{source} by {names} under {f}: rollups differ\n{error}"
                ) from None
            compared += 1
    requests = sum(1 + len(dimensions) for dimensions, _ in catalogue.ENTRIES.values())
    assert compared == len(grid) * requests
    return compared


def _with_statements(engine: sa.Engine, run: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What ``run()`` returns and the SQL statements it sends to ``engine``."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        result = run()
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return result, sent


@pytest.mark.parametrize("dimension", ["model", "agent", "import", "days"])
def test_execution_times_under_one_trace_filter_are_read_from_the_rollups(
    store: sa.Engine, dimension: str
) -> None:
    """Under a filter on one trace dimension the percentiles come from ``rollup_durations``
    (no statement reads ``tool_results``) and equal the ranked base rows."""
    with store.connect() as conn:
        agent, model = _first_agent_and_model(conn)
        first = conn.execute(sa.select(sa.func.min(TraceRow.started_at))).scalar_one()
    day = datetime(first.year, first.month, first.day, tzinfo=UTC)
    f = {
        "model": Filters(model=model),
        "agent": Filters(agent=agent),
        "import": Filters(import_id=2),
        "days": Filters(start=day, end=day + timedelta(days=3)),
    }[dimension]
    for query in (durations.durations_by_tool, durations.duration_totals):
        got, sent = _with_statements(store, lambda q=query: q(store, f))  # type: ignore[misc]
        assert sent and not [s for s in sent if "tool_results" in s], sent
        with base_tables():
            base = query(store, f)
        _same(got, base)
    timed = durations.duration_totals(store, f)["timed"]
    assert timed > 0


@pytest.mark.parametrize("tool", [None, "first"])
def test_unfiltered_execution_times_beyond_the_walk_limit_or_on_postgresql_read_the_agent_grain(
    store: sa.Engine, monkeypatch: pytest.MonkeyPatch, tool: str | None
) -> None:
    """Without a trace filter, beyond ``INDEX_WALK_LIMIT`` timed results, the percentiles come
    from the agent grain of ``rollup_durations`` (the whole store: every trace has one agent),
    and equal the ranked base rows; below it, on SQLite, from look-ups in the duration indexes
    (PostgreSQL reads the rollup whatever the count: an ``OFFSET`` walk is slower there)."""
    with store.connect() as conn:
        first_tool = conn.execute(
            sa.select(ToolResultRow.tool).order_by(ToolResultRow.id).limit(1)
        ).scalar_one()
    f = Filters(tool=first_tool if tool else None)
    with store.connect() as conn:
        at = scope(conn, DURATIONS, f)
    assert at is not None
    for query in (durations.durations_by_tool, durations.duration_totals):
        with base_tables():
            base = query(store, f)
        walked, sent = _with_statements(store, lambda q=query: q(store, f))  # type: ignore[misc]
        if store.dialect.name == "sqlite":
            assert [s for s in sent if "FROM tool_results" in s]
            assert not [s for s in sent if "rollup_durations" in s]
        else:
            assert not [s for s in sent if "tool_results" in s], sent
            assert [s for s in sent if "rollup_durations" in s]
        _same(walked, base)
        monkeypatch.setattr(planner, "INDEX_WALK_LIMIT", 0)
        got, sent = _with_statements(store, lambda q=query: q(store, f))  # type: ignore[misc]
        monkeypatch.undo()
        assert not [s for s in sent if "tool_results" in s], sent
        assert [s for s in sent if "rollup_durations" in s]
        _same(got, base)
    assert durations.duration_totals(store, f)["timed"] > 0


def _reads(sent: list[str], table: str) -> bool:
    """Whether a statement of ``sent`` reads ``table`` (not a table whose name it begins)."""
    return any(re.search(rf"\b{table}\b(?!_)", s) for s in sent)


@pytest.mark.parametrize("over", ["model", "days"])
def test_the_overviews_execution_times_read_the_duration_rollup_once(
    store: sa.Engine, over: str
) -> None:
    """``duration_figures`` (the Overview) equals ``durations_by_tool`` and ``duration_totals``
    and reads ``rollup_durations`` in one statement where the two read it in two."""
    with store.connect() as conn:
        model = conn.execute(  # the model with the most timed results
            sa.select(TraceRow.model)
            .join(ToolResultRow, ToolResultRow.trace_id == TraceRow.id)
            .where(TraceRow.model.is_not(None), ToolResultRow.duration_ms >= 0)
            .group_by(TraceRow.model)
            .order_by(sa.func.count().desc(), TraceRow.model)
            .limit(1)
        ).scalar_one()
    f = (
        Filters(model=model)
        if over == "model"
        else Filters(start=DAY, end=datetime(2026, 10, 15, tzinfo=UTC))
    )
    (by_tool, totals), sent = _with_statements(store, lambda: durations.duration_figures(store, f))
    pair, sent_pair = _with_statements(
        store, lambda: (durations.durations_by_tool(store, f), durations.duration_totals(store, f))
    )
    _same((by_tool, totals), pair)
    assert totals["timed"] > 0 and len(by_tool) > 1
    assert sum(_reads([s], "rollup_durations") for s in sent) == 1
    assert sum(_reads([s], "rollup_durations") for s in sent_pair) == 2
    assert not _reads(sent, "tool_results")


def test_the_generated_store_spans_days_and_its_axes_read_the_daily_rollup(
    store: sa.Engine,
) -> None:
    """The grid's store spans years: its activity axis is in weeks (the unit settled by the
    daily rollup's first and last day, without the hours), and days and weeks are summed
    from ``rollup_activity_days``, hours from ``rollup_activity``, minutes from the base
    tables — each equal to the base tables (the grid)."""
    unit, sent = _with_statements(store, lambda: activity.span_unit(store, Filters()))
    with base_tables():
        span = activity.time_span(store, Filters())
    # The golden cases are from other years than the generated traces: weeks.
    assert span is not None and unit == activity.bucket_unit(*span) == "week"
    assert _reads(sent, "rollup_activity_days") and not _reads(sent, "rollup_activity")
    assert not _reads(sent, "tool_results")
    expected = {
        "minute": "tool_results",
        "hour": "rollup_activity",
        "day": "rollup_activity_days",
        "week": "rollup_activity_days",
    }
    tables = ("tool_results", "rollup_activity", "rollup_activity_days")
    for axis, table in expected.items():
        for query in (activity.activity_over_time, activity.error_types_over_time):
            got, sent = _with_statements(store, lambda q=query, u=axis: q(store, Filters(), u))  # type: ignore[misc]
            assert [t for t in tables if _reads(sent, t)] == [table], (axis, query)
            with base_tables():
                _same(got, query(store, Filters(), axis))  # type: ignore[arg-type]
    weekly = activity.activity_over_time(store, Filters(), "week")
    daily = activity.activity_over_time(store, Filters(), "day")
    assert len(weekly) >= 3 and weekly["results"].sum() == daily["results"].sum() > 0
    # One day: the span in hours is not settled by the days (minute? hour?): the hours say.
    day = Filters(start=DAY, end=DAY + timedelta(days=1))
    unit, sent = _with_statements(store, lambda: activity.span_unit(store, day))
    assert _reads(sent, "rollup_activity")
    span = activity.time_span(store, day)
    assert span is not None and unit == activity.bucket_unit(*span) == "hour"


def test_the_choices_and_the_count_read_the_rollups(store: sa.Engine) -> None:
    """The sidebar's choices, the trace count and the pairs' error types come from the
    rollups' grain rows (one range of keys), not from ``traces``, ``tool_calls`` or
    ``tool_results``, and equal what those give."""
    for name in ("filter_choices", "trace_count", "pair_choices"):
        for f in (Filters(), Filters(import_id=2), Filters(tool="no such tool")):
            got, sent = _with_statements(store, lambda n=name, g=f: QUERIES[n](store, g))  # type: ignore[misc]
            assert sent and not [
                s for s in sent if re.search(r"\b(traces|tool_calls|tool_results)\b", s)
            ], (name, sent)
            with base_tables():
                _same(got, QUERIES[name](store, f))
    with store.connect() as conn:
        stored = conn.execute(sa.select(sa.func.count()).select_from(TraceRow)).scalar_one()
        types = (
            conn.execute(
                sa.select(effective_error_type)
                .where(ToolResultRow.status == "error", effective_error_type.is_not(None))
                .distinct()
                .order_by(effective_error_type)
            )
            .scalars()
            .all()
        )
    assert traces.trace_count(store) == stored > 0
    assert pairs.pair_choices(store)["error_type"] == types and len(types) >= 2


def test_maintained_rollups_equal_a_rebuild_after_every_kind_of_change(
    store: sa.Engine, tmp_path: Path
) -> None:
    changes_keep_rollups_exact(store, tmp_path)


def changes_keep_rollups_exact(store: sa.Engine, tmp_path: Path) -> None:
    """An update, corrections (not on ClickHouse, which takes none) and deletions, each followed
    by a comparison of the maintained rollups with a recount."""
    _maintained_equals_rebuilt(store)
    # An update: a golden case imported again with different content replaces its trace.
    case = _golden_inputs()[0]
    changed = tmp_path / case.name
    text = case.read_text(encoding="utf-8")
    changed.write_text(text.replace("error", "failure", 3), encoding="utf-8")
    summary = import_paths(store, [changed], workers=1, display_names=[str(case)])
    assert summary.updated >= 1
    _check_grid(store, first=2)
    _maintained_equals_rebuilt(store)
    if store.dialect.name != "clickhouse":
        _corrected(store)
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


def _corrected(store: sa.Engine) -> None:
    """Corrections of an error's type and of a verdict, then the rollups compared."""
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


def test_a_rows_key_leads_with_its_grains_value_then_its_tool(store: sa.Engine) -> None:
    """The primary key orders each grain by its leading dimension's value (the day where the
    grain has it), then the tool: the rows one import, agent, model or tool filter reads are
    one range of keys (``rollups.value_range``), a range of days too."""
    model_key = rollups.row_key(
        int(rollups.Dim.MODEL), (None, None, None, "gpt-4o"), "search", (5,)
    )
    assert model_key[:8] == bytes([8]) + bytes.fromhex("b505dd4c") + bytes.fromhex("44a85b")
    day_key = rollups.row_key(int(rollups.FULL), (20_000, 3, "a", "m"), None, (1,))
    assert day_key[:8] == bytes([15, 0x80, 0x00, 0x4E, 0x20, 0, 0, 0])
    checked = by_bucket = 0
    with store.connect() as conn:
        for rollup in rollups.ROLLUPS.values():
            c = rollup.table.c
            rows = conn.execute(
                sa.select(c.key, c.grain, c.day, c.import_id, c.agent, c.model, c.tool)
            ).all()
            for key, grain, day, import_id, agent, model, tool in rows:
                if grain & rollups.Dim.DAY:
                    following = rollups.FIRST_DAY if day is None else day + 1
                    assert (
                        rollups.key_prefix(grain, day) <= key < rollups.key_prefix(grain, following)
                    )
                    if rollup.by_value and grain == rollups.Dim.DAY:
                        value = conn.execute(
                            sa.select(rollup.table.c[rollup.keys[0]]).where(c.key == key)
                        ).scalar_one()
                        first, end = rollups.bucket_range(day, tool, bucket_of(value))
                        assert first <= key < end
                        by_bucket += 1
                else:
                    first, end = rollups.value_range(grain, (day, import_id, agent, model), tool)
                    assert first <= key < end
                    first, end = rollups.value_range(grain, (day, import_id, agent, model))
                    assert first <= key < end and len(first) == 5
                checked += 1
    assert checked == sum(len(rows) for rows in _rollup_rows(store).values())
    with store.connect() as conn:
        day_rows = sum(
            conn.execute(
                sa.select(sa.func.count()).where(rollup.table.c.grain == rollups.Dim.DAY)
            ).scalar_one()
            for rollup in rollups.ROLLUPS.values()
            if rollup.by_value
        )
    assert by_bucket == day_rows > 0


def test_remembered_keys_are_the_keys_per_rollup_and_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The import's writer remembers row keys (``rollups._keys``): the same key as computing it,
    per rollup (``True`` and ``1`` are equal as dict keys but hash apart), and at most
    ``KEY_CACHE_ROWS`` rows a rollup."""
    monkeypatch.setattr(rollups, "_KEYS", {})
    monkeypatch.setattr(rollups, "KEY_CACHE_ROWS", 3)
    calls, signatures = rollups.ROLLUPS["rollup_calls"], rollups.ROLLUPS["rollup_signatures"]
    flag = (0, None, None, None, None, "search", 2, "paired", True, False)
    number = (0, None, None, None, None, "search", 2, "paired", 1, 0)
    assert rollups._key(flag) != rollups._key(number)
    assert rollups._keys(calls, {flag: [1]}) == [rollups._key(flag)]
    assert rollups._keys(signatures, {number: [1]}) == [rollups._key(number)]
    assert rollups._keys(calls, {flag: [1]}) == [rollups._key(flag)]  # remembered
    rows = {(1, day, None, None, None, "t", 5): [1] for day in range(5)}
    sizes = rollups.ROLLUPS["rollup_sizes"]
    assert rollups._keys(sizes, rows) == [rollups._key(row, by_value=True) for row in rows]
    assert len(rollups._KEYS["rollup_sizes"]) == 5
    assert rollups._keys(sizes, {(0, None, None, None, None, "t", 5): [1]}) == [
        rollups._key((0, None, None, None, None, "t", 5), by_value=True)
    ]
    assert len(rollups._KEYS["rollup_sizes"]) == 1  # over the bound: cleared, then this one


def test_a_range_of_days_reads_the_buckets_then_only_the_deciding_rows(store: sa.Engine) -> None:
    """Under a range of days the size and duration histograms are read through their bucket
    rollups: one statement each on the buckets, one on the exact rows by ranges of keys (no
    GROUP BY over every exact row of the days), with the full histogram's count and total (this
    store's sizes are small, each its own bucket: the figures are compared by the grid)."""
    week = Filters(start=DAY, end=datetime(2026, 10, 15, tzinfo=UTC))
    counts, sent = _with_statements(store, lambda: histograms.tool_token_counts(store, week, 500))
    assert sum(_reads([s], "rollup_size_buckets") for s in sent) == 1
    exact = [s for s in sent if _reads([s], "rollup_sizes")]
    assert len(exact) == 1 and exact[0].startswith("WITH wanted") and "GROUP BY" not in exact[0]
    with base_tables():
        full = histograms.tool_token_counts(store, week)
    assert 0 < len(counts) <= len(full)
    assert counts["results"].sum() == full["results"].sum()
    assert (counts["tokens"] * counts["results"]).sum() == (full["tokens"] * full["results"]).sum()
    _, sent = _with_statements(store, lambda: durations.duration_figures(store, week))
    assert sum(_reads([s], "rollup_duration_buckets") for s in sent) == 1
    exact = [s for s in sent if _reads([s], "rollup_durations")]
    assert len(exact) == 1 and exact[0].startswith("WITH wanted")


def test_a_rebuild_on_postgresql_vacuums_and_analyzes_what_it_rewrote(pg_url: str) -> None:
    """Each rebuilt rollup's rows were all replaced (a derived rollup's several times over): on
    PostgreSQL the rebuild vacuums and analyzes those tables (and only those) at once."""
    engine = make_engine(pg_url)
    try:
        _write_generated(engine, 300)
        stats = sa.text(
            "SELECT relname, vacuum_count, analyze_count FROM pg_stat_user_tables "
            "WHERE schemaname = current_schema() AND relname LIKE 'rollup_%'"
        )

        def counts() -> dict[str, tuple[int, int]]:
            with engine.connect() as conn:
                return {name: (v, a) for name, v, a in conn.execute(stats)}

        before = counts()
        two = ["rollup_size_buckets", "rollup_results"]
        rollups.rebuild(engine, only=two)
        after = counts()
        assert {name for name in after if after[name] != before[name]} == set(two)
        for name in two:
            assert after[name] == (before[name][0] + 1, before[name][1] + 1)
    finally:
        engine.dispose()


def test_a_range_of_days_splits_into_whole_blocks_then_single_days() -> None:
    """``rollups.day_ranges``: the longest blocks that fit, shorter ones at the edges, then days;
    every day of the range exactly once, whatever its bounds."""
    assert rollups.day_ranges(5, 150, (8, 64)) == [
        (33, 64, 128), (17, 8, 64), (1, 5, 8), (17, 128, 144), (1, 144, 150),
    ]  # fmt: skip
    assert rollups.day_ranges(None, 20, (8,)) == [(17, None, 16), (1, 16, 20)]
    assert rollups.day_ranges(-3, None, (8, 64)) == [(33, 0, None), (1, -3, 0)]
    assert rollups.day_ranges(3, 6, (8,)) == [(1, 3, 6)]
    assert rollups.day_ranges(8, 8, (8,)) == []
    span = {17: 8, 33: 64, 1: 1}
    for low in range(-70, 75, 3):
        for high in range(low, 220, 7):
            days: list[int] = []
            for grain, first, end in rollups.day_ranges(low, high):
                assert first is not None and end is not None
                assert first % span[grain] == 0 and end % span[grain] == 0
                days += range(first, end)
            assert sorted(days) == list(range(low, high)), (low, high)


def test_a_wide_range_of_days_reads_the_bucket_rows_of_its_whole_blocks(store: sa.Engine) -> None:
    """The bucket rollups hold a row per block of 8 and of 64 days too: a range reads the blocks
    that lie inside it and the single days at its edges, never a day twice."""
    day = rollups.day_number
    wide = Filters(start=datetime(2026, 10, 3, tzinfo=UTC), end=datetime(2026, 10, 29, tzinfo=UTC))
    with store.connect() as conn:
        at = scope(conn, SIZE_BUCKETS, wide)
        assert at is not None
        read = set(conn.execute(sa.select(SIZE_BUCKETS.c.grain, SIZE_BUCKETS.c.day).where(*at)))
        kept = set(conn.execute(sa.select(SIZE_BUCKETS.c.grain, SIZE_BUCKETS.c.day).distinct()))
    first, last = day(datetime(2026, 10, 3, tzinfo=UTC)), day(datetime(2026, 10, 28, tzinfo=UTC))
    assert first is not None and last is not None
    assert (first, last) == (20_729, 20_754)
    blocks = {(17, 20_736), (17, 20_744)}
    edges = {(1, d) for d in [*range(20_729, 20_736), *range(20_752, 20_755)]}
    assert read == (blocks | edges) & kept and blocks <= read
    # Each block row sums the day rows of its days.
    with store.connect() as conn:
        b = SIZE_BUCKETS.c
        per_block = dict(
            conn.execute(
                sa.select(b.day, sa.func.sum(b.n)).where(b.grain == 17).group_by(b.day)
            ).all()
        )
        per_day: dict[int, int] = {}
        for d, n in conn.execute(sa.select(b.day, b.n).where(b.grain == 1, b.day.is_not(None))):
            per_day[d - d % 8] = per_day.get(d - d % 8, 0) + n
    assert per_block == per_day and len(per_block) >= 4


def test_a_store_from_before_the_blocks_of_days_recounts_the_buckets_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0027 on a store at 0026 with traces: the bucket rollups lack their blocks, so
    both are pending — a range of days reads the exact histograms' rows meanwhile, and equals
    the base tables — and opening the store counts the two alone; 0027 undone deletes the
    blocks."""
    engine, expected = _generated_store(sqlite_url)
    wide = Filters(start=datetime(2026, 10, 3, tzinfo=UTC), end=datetime(2026, 10, 29, tzinfo=UTC))
    with base_tables():
        sizes = _size_figures(engine, wide)
    engine.dispose()
    migrated = make_engine(sqlite_url, migrate=False)
    two = ["rollup_size_buckets", "rollup_duration_buckets"]
    try:
        migrate.downgrade(migrated, "0026")
        with migrated.connect() as conn:
            for name in two:
                grains = conn.execute(sa.text(f"SELECT DISTINCT grain FROM {name}")).scalars()
                assert set(grains) == {1}
        migrate.upgrade(migrated, "0027")  # a revision, not "head": nothing is counted
        assert rollups.pending(migrated) == two
        got, sent = _with_statements(migrated, lambda: _size_figures(migrated, wide))
        assert _reads(sent, "rollup_sizes") and not _reads(sent, "rollup_size_buckets")
        _same(got, sizes)
        # The later revisions (the rows read below are the head's) recount nothing.
        migrate.upgrade(migrated, "0031")
        assert rollups.pending(migrated) == two
    finally:
        migrated.dispose()
    _opening_counts_alone(sqlite_url, monkeypatch, two, expected)


def test_a_store_from_before_the_value_buckets_recounts_the_histograms_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0024 on a store at 0023 with traces: the bucket rollups start empty and the
    exact histograms' keys change, so the four are pending — a range of days reads the base
    tables for them meanwhile, and equals them — and opening the store counts the four alone."""
    engine, expected = _generated_store(sqlite_url)
    assert expected["rollup_size_buckets"] and expected["rollup_duration_buckets"]
    week = Filters(start=DAY, end=datetime(2026, 10, 15, tzinfo=UTC))
    with base_tables():
        sizes = _size_figures(engine, week)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE rollup_size_buckets"))
        conn.execute(sa.text("DROP TABLE rollup_duration_buckets"))
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0023'"))
    engine.dispose()
    four = ["rollup_sizes", "rollup_durations", "rollup_size_buckets", "rollup_duration_buckets"]
    with _upgraded(sqlite_url, "0024", four) as migrated:
        got, sent = _with_statements(migrated, lambda: _size_figures(migrated, week))
        assert _reads(sent, "tool_results") and not _reads(sent, "rollup_sizes")
        _same(got, sizes)
    _opening_counts_alone(sqlite_url, monkeypatch, four, expected)


def test_a_store_with_the_earlier_rollup_keys_is_recounted_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0020 changed the key layout: a store at 0019 is recounted, all of it, once."""
    engine, expected = _generated_store(sqlite_url)
    migrate.downgrade(engine, "0028")  # what the later revisions add, taken out by them
    with engine.begin() as conn:
        # The earlier layout's keys: the day (NULL: 0) after the grain, an 11-byte hash.
        later = ("rollup_activity_days", "rollup_size_buckets", "rollup_duration_buckets")
        for name in later:  # from 0021 and 0024
            conn.execute(sa.text(f"DROP TABLE {name}"))
        for rollup in rollups.ROLLUPS.values():
            if rollup.table.name in later:
                continue
            conn.execute(
                sa.text(
                    f"UPDATE {rollup.table.name} SET key = substr(key, 1, 1) || "
                    "zeroblob(4) || substr(key, 6)"
                )
            )
        conn.execute(sa.text("DROP INDEX ix_tool_results_error_examples"))  # from 0022
        conn.execute(sa.text("DROP INDEX ix_tool_results_unpaired"))  # from 0025
        conn.execute(sa.text("ALTER TABLE rollup_results DROP COLUMN next_call"))  # from 0023
        conn.execute(sa.text("ALTER TABLE rollup_results DROP COLUMN suggestion_kind"))  # 0026
        conn.execute(sa.text("ALTER TABLE tool_results DROP COLUMN preview"))  # from 0028
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0019'"))
    engine.dispose()
    counted = _recorded_rebuilds(monkeypatch)
    _filled_when_opened(sqlite_url, expected)
    assert counted == [None]


def test_a_store_from_before_the_rollups_is_filled_when_opened(sqlite_url: str) -> None:
    engine, expected = _generated_store(sqlite_url)
    migrate.downgrade(engine, "0028")  # what the later revisions add, taken out by them
    with engine.begin() as conn:
        for rollup in rollups.ROLLUPS.values():
            conn.execute(sa.delete(rollup.table))
        conn.execute(sa.text("UPDATE rollup_state SET complete = false"))
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0016'"))
        conn.execute(sa.text("DROP TABLE rollup_state"))
        conn.execute(sa.text("DROP INDEX ix_tool_results_duration"))
        conn.execute(sa.text("DROP INDEX ix_tool_results_error_examples"))
        conn.execute(sa.text("DROP INDEX ix_tool_results_unpaired"))
        conn.execute(sa.text("ALTER TABLE tool_results DROP COLUMN preview"))  # from 0028
        for rollup in rollups.ROLLUPS.values():
            conn.execute(sa.text(f"DROP TABLE {rollup.table.name}"))
    engine.dispose()
    _filled_when_opened(sqlite_url, expected)


def test_a_store_from_before_the_input_share_rollup_gets_it_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migrations 0018 and 0019 add rollups to a store whose others are complete: opening the
    store counts them alone (the histogram reads the base tables until then)."""
    engine = make_engine(sqlite_url)
    import_paths(engine, _golden_inputs(), workers=0)
    expected = _rollup_rows(engine)
    assert len(expected["rollup_input_shares"]) == 92
    assert list(tokens.input_share_histogram(engine)["results"]) == [4, 0, 4, 7, 3, 0, 0, 0]
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE rollup_input_shares"))
        conn.execute(sa.text("DROP TABLE rollup_durations"))
        conn.execute(sa.text("ALTER TABLE rollup_state DROP COLUMN pending"))
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0017'"))
    engine.dispose()
    counted = _recorded_rebuilds(monkeypatch)
    reopened = make_engine(sqlite_url, migrate=False)
    try:
        # Up to 0019 (0020 recounts every rollup: see the test of the key layout), then what
        # opening the store does.
        migrate.upgrade(reopened, "0019")
        migrate.count_rollups(reopened)
        # Both rollups added since 0017, counted in one pass; the others left as they were.
        assert counted == [("rollup_input_shares", "rollup_durations")]
        assert rollups.is_complete(reopened) and rollups.pending(reopened) == []
        assert _rollup_rows(reopened) == expected
    finally:
        reopened.dispose()


def test_a_store_from_before_the_duration_rollup_gets_it_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0019 on a store at 0018 with traces: the new table starts empty, so it is
    pending (its figures read from the base tables meanwhile) and opening the store counts it
    alone — also when the migration ran but the count did not (interrupted), since ``upgrade``
    checks the rollups at the head too."""
    engine, expected = _generated_store(sqlite_url)
    assert expected["rollup_durations"]
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE rollup_durations"))
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0018'"))
    engine.dispose()
    with _upgraded(sqlite_url, "0019", ["rollup_durations"]) as migrated:
        with base_tables():
            base = durations.durations_by_tool(migrated, Filters(import_id=2))
        # A pending rollup is never read: the figures come from the base tables.
        pd.testing.assert_frame_equal(
            durations.durations_by_tool(migrated, Filters(import_id=2)), base
        )
    _opening_counts_alone(sqlite_url, monkeypatch, ["rollup_durations"], expected)


def test_a_store_from_before_the_daily_activity_rollup_gets_it_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0021 on a store at 0020 with traces: the daily rollup starts empty and
    pending — the day and week axes are summed from the hours meanwhile, and equal the base
    tables — and opening the store counts it alone."""
    engine, expected = _generated_store(sqlite_url)
    assert expected["rollup_activity_days"]
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE rollup_activity_days"))
        conn.execute(sa.text("DROP INDEX ix_tool_results_error_examples"))  # from 0022
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0020'"))
    engine.dispose()
    with _upgraded(sqlite_url, "0021", ["rollup_activity_days"]) as migrated:
        for axis in ("day", "week"):
            got, sent = _with_statements(
                migrated,
                lambda u=axis: activity.activity_over_time(migrated, Filters(), u),  # type: ignore[misc]
            )
            assert _reads(sent, "rollup_activity") and not _reads(sent, "rollup_activity_days")
            with base_tables():
                _same(got, activity.activity_over_time(migrated, Filters(), axis))  # type: ignore[arg-type]
            assert got["results"].sum() > 0
        with base_tables():
            unit = activity.span_unit(migrated)
        assert activity.span_unit(migrated) == unit == "day"
    _opening_counts_alone(sqlite_url, monkeypatch, ["rollup_activity_days"], expected)


def _results_column_recounted_when_opened(
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    column: str,
    revision: str,
    figure: Callable[[sa.Engine, Filters], pd.DataFrame],
    measure: str,
) -> None:
    """Migration ``revision`` added ``column`` to the results rollup: on a store at the revision
    before it, with traces, the rollup's rows lack it, so the rollup is pending — ``figure``
    reads the base tables meanwhile, and equals them — and opening the store recounts it alone."""
    engine, expected = _generated_store(url)
    with base_tables():
        base = figure(engine, Filters(import_id=2))
    before = f"{int(revision) - 1:04d}"
    with engine.begin() as conn:
        # The rows as the revision before kept them: without the column, the same counts summed.
        conn.execute(sa.text("DELETE FROM rollup_results"))
        conn.execute(sa.text(f"ALTER TABLE rollup_results DROP COLUMN {column}"))
        conn.execute(sa.text(f"UPDATE alembic_version SET version_num = '{before}'"))
    engine.dispose()
    with _upgraded(url, revision, ["rollup_results"]) as migrated:
        got, sent = _with_statements(migrated, lambda: figure(migrated, Filters(import_id=2)))
        assert _reads(sent, "tool_results") and not _reads(sent, "rollup_results")
        _same(got, base)
        assert got[measure].sum() > 0
    _opening_counts_alone(url, monkeypatch, ["rollup_results"], expected)


def test_a_store_from_before_the_recovery_outcome_recounts_the_results_rollup_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0023 (the next call's outcome of an error) on a store at 0022."""
    _results_column_recounted_when_opened(
        sqlite_url, monkeypatch, "next_call", "0023", suggestions.recovery_rates, "errors"
    )
    # The outcomes the rollup keeps: NULL on the rows that are not errors, 1, 0 and -1.
    engine = make_engine(sqlite_url, migrate=False)
    try:
        with engine.connect() as conn:
            outcomes = set(conn.execute(sa.select(RollupResultRow.next_call).distinct()).scalars())
    finally:
        engine.dispose()
    assert outcomes == {None, 1, 0, -1}


def test_a_store_from_before_the_kind_of_advice_recounts_the_results_rollup_when_opened(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0026 (the kind of advice) on a store at 0025."""
    _results_column_recounted_when_opened(
        sqlite_url,
        monkeypatch,
        "suggestion_kind",
        "0026",
        suggestions.verdict_breakdown,
        "results",
    )


def _generated_store(url: str) -> tuple[sa.Engine, dict[str, set[tuple[Any, ...]]]]:
    """An engine on ``url`` holding the generated traces of :func:`_write_generated` (600
    messages), and its rollups' rows as written."""
    engine = make_engine(url)
    _write_generated(engine, 600)
    return engine, _rollup_rows(engine)


@contextlib.contextmanager
def _upgraded(url: str, revision: str, pending: list[str]) -> Iterator[sa.Engine]:
    """The store at ``url`` migrated to ``revision`` (a revision, not "head": nothing is
    counted), complete but for the rollups ``pending``; disposed afterwards."""
    migrated = make_engine(url, migrate=False)
    try:
        migrate.upgrade(migrated, revision)
        assert rollups.is_complete(migrated)
        assert rollups.pending(migrated) == pending
        yield migrated
    finally:
        migrated.dispose()


def _opening_counts_alone(
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    only: list[str],
    expected: dict[str, set[tuple[Any, ...]]],
) -> None:
    """Opening the store at ``url`` counts the rollups ``only``, in one pass, and nothing else;
    every rollup's rows are then ``expected``."""
    counted, rows = _counted_when_opened(url, monkeypatch)
    assert counted == [tuple(only)]
    assert rows == expected


def _counted_when_opened(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Any], dict[str, set[tuple[Any, ...]]]]:
    """What opening the store at ``url`` counts (``migrate.count_rollups``): the rebuilds it
    ran (their ``only``), then every rollup's rows; nothing is left pending."""
    counted = _recorded_rebuilds(monkeypatch)
    reopened = make_engine(url, migrate=False)
    try:
        migrate.count_rollups(reopened)
        assert rollups.pending(reopened) == []
        return counted, _rollup_rows(reopened)
    finally:
        reopened.dispose()


def _filled_when_opened(url: str, expected: dict[str, set[tuple[Any, ...]]]) -> None:
    """Opening the store at ``url`` (migrated to the head) leaves every rollup complete, its
    rows ``expected``."""
    reopened = make_engine(url)
    try:
        assert rollups.is_complete(reopened)
        assert _rollup_rows(reopened) == expected
    finally:
        reopened.dispose()


def _recorded_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``only`` of each rollup rebuild from now on (``None``: all of them), in order."""
    counted: list[Any] = []
    monkeypatch.setattr(rollups, "rebuild", _recorded(rollups.rebuild, counted))
    return counted


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


def _timed_trace(
    external_id: str, model: str, results: list[tuple[str, float | str | None]]
) -> Trace:
    """A trace of ``model`` whose calls are answered in order: a number is the tool span's
    duration, ``"negative"`` a result stamped 500 ms before its call, ``None`` no time at all."""
    t0 = datetime(2026, 11, 2, 9, tzinfo=UTC)
    messages = [Message(seq=0, role="user", content="go", timestamp=t0)]
    for i, (tool, ms) in enumerate(results):
        call_id = f"{external_id}-{i}"
        at = t0 + pd.Timedelta(seconds=10 * i + 1)
        messages.append(
            Message(
                seq=len(messages),
                role="assistant",
                timestamp=at,
                tool_calls=[
                    ToolCall(
                        call_index=0,
                        tool_call_id=call_id,
                        name=tool,
                        arguments_raw=f'{{"i": {i}}}',
                        arguments={"i": i},
                    )
                ],
            )
        )
        span = ms if isinstance(ms, float) else None
        answered = at - pd.Timedelta(milliseconds=500) if ms == "negative" else None
        messages.append(
            Message(
                seq=len(messages),
                role="tool",
                content=f"result {i}",
                timestamp=answered,
                tool_result=ToolResult(tool_call_id=call_id, duration_ms=span),
            )
        )
    return Trace(
        format="openai_chat",
        source_file="timed.jsonl",
        external_id=external_id,
        model=model,
        messages=messages,
    )


#: alpha: run [7.25, 100.5 ×4, 2000] (ties), one negative, one missing; read [40] (one timed
#: result). beta: run [5000], grep [1], read missing only.
TIMED_TRACES = [
    ("t1", "alpha", [("run", 100.5), ("run", 100.5), ("run", 100.5), ("run", 2000.0),
                     ("read", 40.0), ("run", "negative"), ("run", None)]),
    ("t2", "alpha", [("run", 100.5), ("run", 7.25)]),
    ("t3", "beta", [("run", 5000.0), ("grep", 1.0), ("read", None)]),
]  # fmt: skip


def test_execution_time_percentiles_from_the_rollup_are_exact(engine: sa.Engine) -> None:
    """Nearest rank over the rollup's counts per duration: alpha's run has 6 timed results,
    p50 = rank 3 → 100.5 (a tie of four), p95 = rank ⌈5.7⌉ = 6 → 2000; over every tool of
    alpha (7 timed) p50 = rank 4 → 100.5, p95 = rank ⌈6.65⌉ = 7 → 2000."""
    import_traces(engine, [_timed_trace(*spec) for spec in TIMED_TRACES])
    with engine.connect() as conn:
        d = RollupDurationRow
        rows = conn.execute(
            sa.select(d.tool, d.duration_ms, d.n)
            .where(d.grain == int(rollups.Dim.MODEL), d.model == "alpha")
            .order_by(d.tool, d.duration_ms)
        ).all()
    assert [tuple(r) for r in rows] == [
        ("read", 40.0, 1), ("run", 7.25, 1), ("run", 100.5, 4), ("run", 2000.0, 1),
    ]  # fmt: skip
    alpha, beta = Filters(model="alpha"), Filters(model="beta")
    by_tool = {
        # tool, timed, missing, negative, p50, p95, max, from spans; slowest p95 first.
        alpha: [
            ("run", 6, 1, 1, 100.5, 2000.0, 2000.0, 6),
            ("read", 1, 0, 0, 40.0, 40.0, 40.0, 1),
        ],
        beta: [
            ("run", 1, 0, 0, 5000.0, 5000.0, 5000.0, 1),
            ("grep", 1, 0, 0, 1.0, 1.0, 1.0, 1),
            ("read", 0, 1, 0, None, None, None, 0),
        ],
        Filters(): [
            ("run", 7, 1, 1, 100.5, 5000.0, 5000.0, 7),
            ("read", 1, 1, 0, 40.0, 40.0, 40.0, 1),
            ("grep", 1, 0, 0, 1.0, 1.0, 1.0, 1),
        ],
    }
    totals = {
        alpha: (7, 1, 1, 100.5, 2000.0, 2000.0),
        beta: (2, 1, 0, 1.0, 5000.0, 5000.0),
        Filters(): (9, 2, 1, 100.5, 5000.0, 5000.0),
        Filters(model="beta", tool="read"): (0, 1, 0, None, None, None),
    }
    for base in (False, True):
        with base_tables() if base else contextlib.nullcontext():
            for f, expected in by_tool.items():
                got = durations.durations_by_tool(engine, f)
                listed = [
                    tuple(None if pd.isna(v) else v for v in row)
                    for row in got.itertuples(index=False)
                ]
                assert listed == expected, (f, base)
            for f, figures in totals.items():
                got_totals = durations.duration_totals(engine, f)
                assert tuple(got_totals.values()) == figures, (f, base)
                assert all(
                    isinstance(got_totals[k], float) or got_totals[k] is None
                    for k in ("p50_ms", "p95_ms", "max_ms")
                )
