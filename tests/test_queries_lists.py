"""The dashboard's lists of first rows, on SQLite and PostgreSQL: the shortcuts that read only
the rows a page can hold give exactly the rows, in exactly the order, of the plain statement.

* :func:`db.queries.planner.bounded_walks` (slowest calls, biggest results, a finding kind's
  occurrences): forced through each of its paths — the short walk fills the page, only the
  long walk does, no walk does (the plain statement) — and on PostgreSQL too, by making it walk
  there, against the plain statement alone.
* :func:`db.queries.loops.top_occurrence` (a page of looping signatures, the Overview's top
  loops): each page against the same rows cut from the whole list.

The store is the benchmark's generated traces (``benchmarks.ui_store``), small, under the
filters the sidebar sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from benchmarks.ui_store import StoreGenerator
from db.contract.vocabulary import DEFAULT_ENCODING
from db.engine import make_engine
from db.queries import durations, findings, loops, overview, planner, tokens
from db.queries.filters import Filters
from db.schema import FindingRow, ToolResultRow, TraceRow
from db.writes.traces import finish_import, start_import, write_traces

#: Walks of 1 and 3 entries per row: the first fills a page only where the filter keeps nearly
#: everything, the second a little more often, else the plain statement runs.
TINY_WALKS = (1, 3)


@pytest.fixture(scope="module")
def store(module_db_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(module_db_url)
    ids = [
        start_import(engine, origin="test", encoding=DEFAULT_ENCODING, paths=[f"gen-{i}"])
        for i in range(6)
    ]
    batches: dict[int, list[Any]] = {i: [] for i in range(6)}
    for week, rows in StoreGenerator(11).traces(3_000):
        batches[week].append(rows)
    for week, batch in batches.items():
        for i in range(0, len(batch), 40):
            write_traces(engine, ids[week], batch[i : i + 40])
        finish_import(engine, ids[week], state="done")
    yield engine
    engine.dispose()


def _filters(engine: sa.Engine) -> list[Filters]:
    """No filter, the most and the least frequent model, an import, an agent, a tool, a tool
    with a model, and a filter that keeps nothing."""
    with engine.connect() as conn:
        models = [
            m
            for (m,) in conn.execute(
                sa.select(TraceRow.model)
                .where(TraceRow.model.is_not(None))
                .group_by(TraceRow.model)
                .order_by(sa.func.count().desc(), TraceRow.model)
            )
        ]
        agent = conn.execute(
            sa.select(TraceRow.agent).where(TraceRow.agent.is_not(None)).limit(1)
        ).scalar_one()
        tool = conn.execute(
            sa.select(ToolResultRow.tool)
            .group_by(ToolResultRow.tool)
            .order_by(sa.func.count().desc(), ToolResultRow.tool)
            .limit(1)
        ).scalar_one()
    return [
        Filters(),
        Filters(model=models[0]),
        Filters(model=models[-1]),
        Filters(import_id=2),
        Filters(agent=agent),
        Filters(tool=tool),
        Filters(model=models[0], tool=tool),
        Filters(model="no such model"),
    ]


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    if a.empty and b.empty:  # (a cut of a frame keeps the frame's column types)
        assert list(a.columns) == list(b.columns)
        return
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def _kinds(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return [
            k
            for (k,) in conn.execute(
                sa.select(FindingRow.name).group_by(FindingRow.name).order_by(FindingRow.name)
            )
        ]


def _lists(engine: sa.Engine) -> list[tuple[str, Callable[[Filters], pd.DataFrame]]]:
    cases: list[tuple[str, Callable[[Filters], pd.DataFrame]]] = []
    for limit in (1, 7, 20):
        cases.append(
            (f"slowest {limit}", lambda f, n=limit: durations.slowest_calls(engine, f, limit=n))
        )
        cases.append(
            (f"biggest {limit}", lambda f, n=limit: tokens.biggest_results(engine, f, limit=n))
        )
        cases.append(
            (
                f"costliest {limit}",
                lambda f, n=limit: tokens.most_expensive_results(engine, f, limit=n),
            )
        )
    for kind in _kinds(engine):
        for limit, offset in ((1, 0), (5, 3), (50, 0)):
            cases.append(
                (
                    f"{kind} {limit}+{offset}",
                    lambda f, k=kind, n=limit, o=offset: findings.finding_occurrences(
                        engine, k, f, limit=n, offset=o
                    ),
                )
            )
    return cases


@pytest.mark.parametrize("walks", [TINY_WALKS, (1,), planner.WALK_PER_ROW])
def test_walked_lists_equal_the_plain_statement(
    store: sa.Engine, walks: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    walked_somewhere = 0
    for f in _filters(store):
        for name, run in _lists(store):
            monkeypatch.setattr(planner, "WALK_DIALECTS", ())
            plain = run(f)
            monkeypatch.setattr(planner, "WALK_DIALECTS", ("sqlite", "postgresql"))
            monkeypatch.setattr(planner, "WALK_PER_ROW", walks)
            walked = run(f)
            monkeypatch.undo()
            assert list(walked.columns) == list(plain.columns), name
            _same(walked, plain)
            walked_somewhere += not plain.empty
    assert walked_somewhere > 100


def test_the_walks_each_fill_pages_and_fall_back(
    store: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the most frequent model the short walk fills a page of the slowest calls; under a
    model no trace has, both walks run, then the plain statement: count the walks."""
    filters = _filters(store)
    statements: list[str] = []

    def log(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("SELECT walked."):  # a walk (not the count after it)
            statements.append(statement)

    monkeypatch.setattr(planner, "WALK_DIALECTS", ("sqlite", "postgresql"))
    monkeypatch.setattr(planner, "WALK_PER_ROW", (10, 20))
    sa.event.listen(store, "before_cursor_execute", log)
    try:
        durations.slowest_calls(store, filters[1], limit=5)
        short = len(statements)
        statements.clear()
        durations.slowest_calls(store, filters[-1], limit=5)
        both = len(statements)
    finally:
        sa.event.remove(store, "before_cursor_execute", log)
    assert (short, both) == (1, 2)


def test_a_walk_that_reaches_the_end_of_its_order_is_the_whole_answer(
    store: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Tool Message of the generated store has a price, so the first walk of the costliest
    list reads to the end of the cost order: its answer (none) is final under every filter that
    picks traces, and the plain statement, which would read every picked trace's results, never
    runs."""
    with store.connect() as conn:
        priced = conn.execute(
            sa.select(sa.func.count()).where(ToolResultRow.cost_nano_usd.is_not(None))
        ).scalar_one()
    assert priced == 0

    def plain_statement(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the plain statement ran")

    monkeypatch.setattr(planner, "WALK_DIALECTS", ("sqlite", "postgresql"))
    monkeypatch.setattr(tokens, "restrict_results", plain_statement)
    picking = [f for f in _filters(store) if f.model or f.agent or f.import_id]
    assert len(picking) == 6
    for f in picking:
        assert tokens.most_expensive_results(store, f).empty


@pytest.mark.parametrize("k", [2, 3, 5])
def test_a_page_of_loop_signatures_is_the_same_cut_of_the_whole_list(
    store: sa.Engine, k: int
) -> None:
    """Pages that read only the signatures of more than ``k`` calls (``top_occurrence`` above
    ``k``: the store's signatures reach 5 calls) and pages that read them all."""
    shortcuts = 0
    for f in _filters(store):
        whole = loops.loop_signatures(store, k, f, limit=100_000)
        every = overview.top_loops(store, k, f, limit=100_000)
        for limit, offset in ((1, 0), (2, 0), (3, 1), (50, 0), (10, 40)):
            page = loops.loop_signatures(store, k, f, limit=limit, offset=offset)
            _same(page, whole.iloc[offset : offset + limit])
            _same(overview.top_loops(store, k, f, limit=limit), every.head(limit))
            with store.connect() as conn:
                shortcuts += loops.top_occurrence(conn, k, f, offset + limit) > k
    assert shortcuts > 0 or k == 5


def test_top_occurrence_is_the_highest_occurrence_that_fills_the_page(
    store: sa.Engine,
) -> None:
    with store.connect() as conn:
        counts = dict(
            conn.execute(
                sa.text(
                    "SELECT occurrence, count(*) FROM tool_calls WHERE occurrence >= 2"
                    " GROUP BY occurrence"
                )
            ).all()
        )
        for needed in (1, 2, 5, 50, 10**6):
            expected = max((o for o, n in counts.items() if n >= needed), default=2)
            assert loops.top_occurrence(conn, 2, Filters(), needed) == expected
