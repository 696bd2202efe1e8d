"""Compare's cost metrics: re-read tokens and cost per trace, with their intervals, in the trace
sets, ``toollens compare`` and the Compare page, on generated traces of known sizes, usage and
prices (``tests/cost_traces.py``).

The baseline is five ``measured`` runs (Claude Sonnet 4.5: 3,200 tokens re-read, $0.00852 each)
and one ``unpriced`` run (70 re-read, no price); the candidate five ``estimated`` runs (GPT-4o:
240 re-read, $0.00095 each) and the same ``unpriced`` one.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from cost_traces import stored_traces
from dbfixture import OpenPage
from typer.testing import CliRunner

from db.engine import make_engine
from db.queries.compare import compare_sets, trace_set
from db.queries.compare_stats import Difference
from db.queries.filters import Filters
from ingest.analysis.prices import PRICES_ENV
from ingest.cli import app
from ingest.importing.pipeline import import_traces
from ingest.model import Trace

RUNS = 5
#: Per run: re-read tokens and cost in nanodollars (``tests/test_costs.py`` derives them).
MEASURED = (2000 + 1200, 3_600_000 + 3_420_000 + 900_000 + 600_000)
ESTIMATED = (200 + 40, 750_000 + 200_000)
UNPRICED_REREAD = 70


def _runs(name: str, side: str) -> list[Trace]:
    trace = next(t for t in stored_traces() if t.external_id == name)
    return [
        trace.model_copy(update={"external_id": f"{side}-{name}-{i}"})
        for i in range(RUNS if name != "unpriced" else 1)
    ]


@pytest.fixture
def two_imports(db_url: str, monkeypatch: pytest.MonkeyPatch) -> sa.Engine:
    """Import 1: the baseline; import 2: the candidate (default price table)."""
    monkeypatch.delenv(PRICES_ENV, raising=False)
    engine = make_engine(db_url)
    import_traces(engine, [*_runs("measured", "b"), *_runs("unpriced", "b")])
    import_traces(engine, [*_runs("estimated", "c"), *_runs("unpriced", "c")])
    yield engine
    engine.dispose()


def _row(differences: list[Difference], metric: str, tool: str | None = None) -> Difference:
    return next(d for d in differences if d.metric == metric and d.tool == tool)


def test_a_trace_set_holds_each_traces_reread_tokens_and_cost_per_tool(
    two_imports: sa.Engine,
) -> None:
    data = trace_set(two_imports, Filters(import_id=1))
    ids = dict(zip(data.traces["trace_id"], data.traces["display_id"], strict=True))
    columns = ["tool", "results", "reread_tokens", "cost_nano_usd", "uncosted", "unpriced"]
    rows = {
        (ids[row.trace_id], *row[columns].tolist())
        for _, row in data.tools.iterrows()
        if ids[row.trace_id] in ("b-measured-0", "b-unpriced-0")
    }
    assert rows == {
        ("b-measured-0", "a", 1, 2000, 3_600_000, 0, 0),
        ("b-measured-0", "b", 1, 1200, 3_420_000, 0, 0),
        ("b-measured-0", "c", 1, 0, 900_000, 0, 0),
        ("b-measured-0", "d", 1, 0, 600_000, 0, 0),
        ("b-unpriced-0", "search", 1, 70, 0, 0, 1),
    }


def test_compare_gives_reread_tokens_and_cost_per_trace_with_their_intervals(
    two_imports: sa.Engine,
) -> None:
    comparison = compare_sets(two_imports, Filters(import_id=1), Filters(import_id=2))
    reread = _row(comparison.differences, "reread_tokens_per_trace")
    # Every trace has the figure: six a side, the unpriced run's 70 tokens included.
    assert (reread.baseline_traces, reread.candidate_traces) == (6, 6)
    assert reread.baseline == pytest.approx((RUNS * MEASURED[0] + UNPRICED_REREAD) / 6, rel=1e-12)
    assert reread.candidate == pytest.approx((RUNS * ESTIMATED[0] + UNPRICED_REREAD) / 6, rel=1e-12)
    assert reread.low is not None and reread.high is not None
    assert reread.low <= reread.difference <= reread.high < 0
    cost = _row(comparison.differences, "cost_per_trace")
    # Only the runs of a priced model: five a side, each costing the same, so the bootstrap's
    # interval has no width.
    assert (cost.baseline_traces, cost.candidate_traces) == (5, 5)
    assert cost.baseline == pytest.approx(0.00852, rel=1e-12)
    assert cost.candidate == pytest.approx(0.00095, rel=1e-12)
    assert cost.difference == pytest.approx(-0.00757, rel=1e-12)
    assert cost.low == pytest.approx(-0.00757, rel=1e-9)
    assert cost.high == pytest.approx(-0.00757, rel=1e-9)
    assert cost.is_money and cost.better == "lower"
    # A tool called by one priced run a side is not tested.
    search = _row(comparison.differences, "cost_per_trace", "search")
    assert (search.baseline_traces, search.candidate_traces, search.verdict) == (
        0,
        5,
        "too few traces",
    )


def test_a_trace_stored_before_its_costs_were_derived_is_left_out(
    two_imports: sa.Engine,
) -> None:
    with two_imports.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE tool_results SET later_calls = NULL, reread_tokens = NULL,"
                " reread_cached = NULL, reread_measured = NULL, cost_nano_usd = NULL"
                " WHERE trace_id = (SELECT id FROM traces WHERE external_id = 'b-measured-0')"
            )
        )
    comparison = compare_sets(two_imports, Filters(import_id=1), Filters(import_id=2))
    reread = _row(comparison.differences, "reread_tokens_per_trace")
    assert reread.baseline_traces == 5
    assert reread.baseline == pytest.approx((4 * MEASURED[0] + UNPRICED_REREAD) / 5, rel=1e-12)
    cost = _row(comparison.differences, "cost_per_trace")
    assert (cost.baseline_traces, cost.verdict) == (4, "too few traces")


def _cost_row(data: dict[str, Any]) -> dict[str, Any]:
    return next(
        d for d in data["differences"] if d["metric"] == "cost_per_trace" and d["tool"] is None
    )


def test_toollens_compare_prints_the_cost_per_trace_and_gates_on_it(
    two_imports: sa.Engine, db_url: str
) -> None:
    runner = CliRunner()
    args = ["compare", "--db", db_url, "--baseline", "import=2", "--candidate", "import=1"]
    result = runner.invoke(app, [*args, "--json"])
    row = _cost_row(orjson.loads(result.stdout))
    assert (row["baseline"], row["candidate"]) == (
        pytest.approx(0.00095, rel=1e-12),
        pytest.approx(0.00852, rel=1e-12),
    )
    assert (row["baseline_traces"], row["candidate_traces"], row["verdict"]) == (5, 5, "worse")
    text = runner.invoke(app, [*args, "--fail-on", "cost_per_trace"])
    assert text.exit_code == 1
    line = next(
        ln for ln in text.stdout.splitlines() if "cost_per_trace" in ln and "(all tools)" in ln
    )
    assert line.split()[:8] == [
        "worse",
        "(all",
        "tools)",
        "cost_per_trace",
        "$0.00095",
        "->",
        "$0.00852",
        "+$0.00757",
    ]
    assert "[+$0.00757, +$0.00757]" in line and "5/5 traces" in line
    assert text.stdout.rstrip().endswith(
        "FAILED: worse with evidence: cost_per_trace ((all tools))"
    )


def test_the_compare_page_shows_the_cost_per_trace(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:

    monkeypatch.delenv(PRICES_ENV, raising=False)
    engine = make_engine(sqlite_url)
    import_traces(engine, [*_runs("measured", "b"), *_runs("unpriced", "b")])
    import_traces(engine, [*_runs("estimated", "c"), *_runs("unpriced", "c")])
    engine.dispose()
    at = open_page(
        sqlite_url, "views/compare.py", {"baseline": "import=1", "candidate": "import=2"}
    )
    table = at.dataframe[-1].value
    shown = table[table["metric"].str.startswith("Tool Message cost per trace")].iloc[0]
    assert shown[["baseline_traces", "candidate_traces", "baseline", "candidate"]].tolist() == [
        5,
        5,
        "$0.00852",
        "$0.00095",
    ]
    assert shown["difference"] == "-$0.00757"
    assert shown["interval"] == "[-$0.00757, -$0.00757]"
    reread = table[table["metric"].str.startswith("re-read tokens per trace")].iloc[0]
    assert reread[["baseline", "candidate", "difference"]].tolist() == ["2,678", "211.7", "-2,467"]
