"""Baseline vs candidate: filters as query strings, the statistics, the per-trace SQL, and the
``toollens compare`` gate, on two generated populations with known differences."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest
import sqlalchemy as sa
from dbfixture import OpenPage
from generated_change import FLAGGED
from typer.testing import CliRunner

from dashboard.render import escape_markdown
from db.engine import make_engine
from db.queries.compare import compare_sets, trace_set
from db.queries.compare_stats import (
    MIN_TRACES,
    TraceSet,
    benjamini_hochberg,
    compare,
    effective_size,
    grouped_quantile,
    metric_spec,
    nearest_rank,
    newcombe,
    split_probability,
    wilson,
)
from db.queries.filters import FilterQueryError, Filters, format_query, parse_query
from db.schema import TraceRow
from ingest.cli import app
from ingest.importing.pipeline import import_paths
from ingest.scenarios.populations import BASELINE, CANDIDATE, generate_population

runner = CliRunner()
TRACES = 300


# --- filters as query strings ----------------------------------------------------------------


def test_a_filter_query_reads_every_field_and_writes_back_the_same_query() -> None:
    query = (
        "import=3&start=2026-01-01&end=2026-01-31&agent=bot&model=gpt-4o&tool=t&tag=v2"
        "&meta=env%3Astaging"
    )
    f = parse_query(query)
    assert f == Filters(
        start=datetime(2026, 1, 1, tzinfo=UTC),
        end=datetime(2026, 2, 1, tzinfo=UTC),
        import_id=3,
        agent="bot",
        model="gpt-4o",
        tool="t",
        tag="v2",
        meta="env:staging",
    )
    assert format_query(f) == query
    assert parse_query("?model=gpt-4o&agent=") == Filters(model="gpt-4o")
    assert parse_query("") == Filters()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "imprt=3",
            "imprt: unknown filter "
            "(use import, start, end, agent, model, tool, tag, meta, since, until)",
        ),
        ("meta=staging", "meta='staging': write it as key:value (a metadata key)"),
        ("import=three", "import='three': not an import id"),
        ("start=yesterday", "start='yesterday': not a date (YYYY-MM-DD)"),
        ("import=1&import=2", "import: given more than once"),
    ],
)
def test_a_filter_query_that_cannot_be_read_names_the_parameter(query: str, message: str) -> None:
    with pytest.raises(FilterQueryError) as caught:
        parse_query(query)
    assert str(caught.value) == message


# --- statistics ------------------------------------------------------------------------------


def test_a_rate_gets_wilson_intervals_per_side_and_newcombes_for_the_difference() -> None:
    # 0 of 5 still has an upper bound; no interval leaves [0, 1] or has zero width.
    assert wilson(0.0, 5) == pytest.approx((0.0, 0.4344825))
    assert wilson(1.0, 5) == pytest.approx((0.5655175, 1.0))
    assert wilson(0.5, 20) == pytest.approx((0.29930, 0.70070), abs=1e-5)
    assert newcombe(0.0, 5, 0.0, 5) == pytest.approx((-0.4344825, 0.4344825))
    # Newcombe's own example (Statistics in Medicine 1998, table II): 56/70 against 48/80.
    low, high = newcombe(48 / 80, 80, 56 / 70, 70)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


def test_the_wilson_size_of_a_rate_is_its_effective_size_over_traces() -> None:
    # Both failures in the first trace: as clustered as it gets, the two traces count.
    assert effective_size(np.array([2.0, 0.0]), np.array([2.0, 2.0])) == 2.0
    # Every trace at the same share: nothing clusters, every result counts.
    assert effective_size(np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0, 2.0])) == 6.0
    # No failure at all: the variance cannot tell, the results count.
    assert effective_size(np.zeros(4), np.full(4, 3.0)) == 12.0
    assert effective_size(
        np.array([3.0, 0.0, 1.0, 0.0]), np.array([3.0, 3.0, 3.0, 3.0])
    ) == pytest.approx(4.0)


def test_a_grouped_quantile_moves_with_the_weights_and_a_nearest_rank_does_not() -> None:
    sizes = np.array([50.0, 51.0])
    counts = np.array([[19.0, 1.0], [18.0, 2.0], [20.0, 0.0]])
    assert grouped_quantile(counts, sizes, 0.5).tolist() == [
        pytest.approx(49.5 + 10 / 19), pytest.approx(49.5 + 10 / 18), 50.0,
    ]  # fmt: skip
    assert grouped_quantile(np.zeros((1, 2)), sizes, 0.5).tolist() == [
        pytest.approx(np.nan, nan_ok=True)
    ]
    assert nearest_rank(np.array([50.0] * 19 + [51.0]), 0.95) == 50.0
    assert nearest_rank(np.array([1.0, 2.0, 3.0, 4.0]), 0.5) == 2.0


def test_no_split_of_the_traces_can_be_less_likely_than_the_observed_one() -> None:
    # One of 7 baseline traces and two of 8 candidate traces call the tool.
    assert split_probability(15, 8, 3, 2) == pytest.approx(924 / 6435)
    assert split_probability(10, 5, 10, 5) == pytest.approx(1 / 252)


def test_benjamini_hochberg_is_monotone_and_capped() -> None:
    assert benjamini_hochberg([0.001, 0.2, 0.03, 0.04]) == pytest.approx(
        [0.004, 0.2, 0.0533333, 0.0533333]
    )
    assert benjamini_hochberg([0.9, 0.8]) == [0.9, 0.9]


def _set(tools: list[str], issues: list[tuple[str, str]], ids: range) -> TraceSet:
    traces = pd.DataFrame(
        {"trace_id": list(ids), "display_id": [f"t{i}" for i in ids], "duration_s": np.nan}
    )
    rows = [{"trace_id": i, "tool": t} for i in ids for t in tools]
    tool_frame = pd.DataFrame(rows).assign(
        calls=1, results=1, errors=0, pairing_problems=0, loop_calls=0, streak_calls=0,
        suggestions=0, followed=0, ignored=0, wasted_tokens=0, reread_tokens=0,
        cost_nano_usd=0, uncosted=0, unpriced=0,
    )  # fmt: skip
    empty = pd.DataFrame(columns=["trace_id", "tool", "error_type", "n"])
    return TraceSet(
        traces=traces,
        tools=tool_frame,
        error_types=empty,
        findings=pd.DataFrame(columns=["trace_id", "tool", "name", "n"]),
        sizes=pd.DataFrame({"trace_id": list(ids), "tool": tools[0], "tokens": 10}),
        fingerprints=pd.DataFrame(
            columns=["fingerprint", "tool", "error_type", "n", "traces", "trace", "pair"]
        ),
        schema_issues=pd.DataFrame(
            [{"tool": t, "issue": i, "n": 1, "trace": "t0", "pair": "2:0"} for t, i in issues],
            columns=["tool", "issue", "n", "trace", "pair"],
        ),
    )


def test_tools_and_schema_findings_that_appear_or_disappear_are_listed() -> None:
    base = _set(["a", "b"], [("a", "missing_required")], range(5))
    cand = _set(["a", "c"], [("a", "missing_required"), ("c", "wrong_type")], range(5, 10))
    result = compare(base, cand)
    assert (result.new_tools, result.gone_tools) == (["c"], ["b"])
    assert result.new_schema_issues[["tool", "issue"]].values.tolist() == [["c", "wrong_type"]]
    assert {d.tool for d in result.differences} == {None, "a"}
    assert result.flagged() == []


def test_a_set_of_one_trace_gives_no_evidence_and_says_why() -> None:
    result = compare(_set(["a"], [], range(1)), _set(["a"], [], range(1, 9)))
    assert result.notes == ["the baseline holds 1 trace, fewer than 5: nothing can be inferred"]
    assert {d.verdict for d in result.differences} == {"too few traces"}
    assert {d.p_value for d in result.differences} == {None}


def _errors(errors: list[int], sizes: list[int], first: int) -> TraceSet:
    """One tool ``a``, two results per trace, ``errors[i]`` of them errors, and one Tool
    Message of ``sizes[i]`` tokens per trace."""
    ids = range(first, first + len(errors))
    base = _set(["a"], [], ids)
    return replace(
        base,
        tools=base.tools.assign(calls=2, results=2, errors=errors),
        sizes=pd.DataFrame({"trace_id": list(ids), "tool": "a", "tokens": sizes}),
    )


def test_a_cell_on_fewer_than_five_traces_is_too_few_traces_and_five_can_be_evidence() -> None:
    assert MIN_TRACES == 5
    four = compare(_errors([2] * 4, [10] * 4, 0), _errors([0] * 40, [10] * 40, 100))
    rate = next(d for d in four.differences if (d.tool, d.metric) == ("a", "error_rate"))
    assert (rate.baseline, rate.candidate, rate.baseline_traces, rate.candidate_traces) == (
        1.0, 0.0, 4, 40,
    )  # fmt: skip
    assert (rate.verdict, rate.p_value, rate.low, rate.adjusted_p) == (
        "too few traces", None, None, None,
    )  # fmt: skip
    assert four.worse() == []
    five = compare(_errors([0] * 40, [10] * 40, 100), _errors([2] * 5, [10] * 5, 0))
    rate = next(d for d in five.differences if (d.tool, d.metric) == ("a", "error_rate"))
    # No relabelling is as extreme; the normal tail is far smaller than the one split of 45
    # traces that puts the five failing ones in the candidate, so that split's chance is p.
    assert rate.verdict == "worse" and rate.p_value == pytest.approx(1 / math.comb(45, 5))
    # Newcombe from Wilson 0 of 80 and 10 of 10 results (no clustering either side can show).
    assert (rate.difference, round(rate.low or 0, 4), rate.high) == (1.0, 0.7187, 1.0)


def test_an_interval_has_zero_width_only_when_every_value_is_the_same_on_both_sides() -> None:
    # Nine of ten messages are 50 tokens on both sides: the p50 is 50 in every resample a
    # nearest rank could take, yet the interval is not [0, 0].
    tied = compare(
        _errors([0] * 20, [50] * 18 + [51, 52], 0), _errors([0] * 20, [50] * 18 + [53, 54], 100)
    )
    p50 = next(d for d in tied.differences if (d.tool, d.metric) == (None, "size_p50"))
    assert (p50.baseline, p50.candidate, p50.difference, p50.verdict) == (50, 50, 0, "no evidence")
    assert p50.low is not None and p50.high is not None and p50.low < 0 < p50.high
    same = compare(_errors([0] * 20, [50] * 20, 0), _errors([0] * 20, [50] * 20, 100))
    rows = {d.metric: d for d in same.differences if d.tool is None}
    assert (rows["size_p95"].low, rows["size_p95"].high, rows["size_p95"].p_value) == (0, 0, 1)
    assert (rows["calls_per_trace"].low, rows["calls_per_trace"].high) == (0, 0)
    # A rate is a share of a sample: 0 of 40 is not known to be exactly 0.
    assert rows["error_rate"].low < 0 < rows["error_rate"].high  # type: ignore[operator]


def test_the_same_sets_always_give_the_same_figures() -> None:
    base, cand = _errors([0, 1, 2, 0, 1] * 4, list(range(20)), 0), _errors([1] * 20, [5] * 20, 50)
    first, second = compare(base, cand), compare(base, cand)
    assert first.differences == second.differences


# --- generated populations, SQL, CLI ---------------------------------------------------------


@pytest.fixture(scope="module")
def population_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("populations")
    return (
        generate_population(out / "baseline", BASELINE, seed=1, traces=TRACES),
        generate_population(out / "candidate", CANDIDATE, seed=1, traces=TRACES),
    )


def _import_both(url: str, population_files: tuple[Path, Path]) -> str:
    """The store at ``url`` with import 1 the baseline population and import 2 the candidate."""
    engine = make_engine(url)
    for path in population_files:
        import_paths(engine, [path], workers=0)
    engine.dispose()
    return url


@pytest.fixture
def two_runs(db_url: str, population_files: tuple[Path, Path]) -> str:
    """A store whose import 1 is the baseline population and import 2 the candidate."""
    return _import_both(db_url, population_files)


def test_the_known_differences_are_found_and_nothing_else_is_flagged(two_runs: str) -> None:
    engine = make_engine(two_runs)
    result = compare_sets(engine, Filters(import_id=1), Filters(import_id=2))
    assert (result.baseline_traces, result.candidate_traces) == (TRACES, TRACES)
    assert {(d.tool, d.metric): d.verdict for d in result.flagged()} == FLAGGED
    weather = [d for d in result.differences if d.tool == "get_weather"]
    assert len(weather) == 14
    # The weather tool gives no advice, so no result has a verdict to follow; its results
    # are the same, only read again by fewer calls.
    assert {d.metric for d in weather if d.verdict == "too few traces"} == {"follow_rate"}
    assert {
        d.verdict
        for d in weather
        if d.metric not in ("follow_rate", "reread_tokens_per_trace", "cost_per_trace")
    } == {"no evidence"}
    error_rate = next(
        d for d in result.differences if (d.tool, d.metric) == ("search_flights", "error_rate")
    )
    assert (error_rate.baseline, error_rate.candidate) == (0.15, 0.30)
    assert (error_rate.baseline_traces, error_rate.candidate_traces) == (TRACES, TRACES)
    assert error_rate.low is not None and 0 < error_rate.low < 0.15 < error_rate.high  # type: ignore[operator]
    assert result.new_fingerprints[["fingerprint", "n", "traces"]].values.tolist() == [
        ["search_flights: Error #: invalid date format, expected YYYY-MM-DD", 45, 45]
    ]
    assert result.gone_fingerprints.empty
    assert (result.new_tools, result.gone_tools) == ([], [])
    assert result.new_schema_issues.empty
    engine.dispose()


def _two_traces_given(url: str, values: dict[Any, Any]) -> sa.Engine:
    """An engine on ``url``, whose traces baseline-000 and candidate-001 are given ``values``."""
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.update(TraceRow)
            .where(TraceRow.display_id.in_(["baseline-000", "candidate-001"]))
            .values(values)
        )
    return engine


def test_a_tag_picks_a_trace_set(two_runs: str) -> None:
    engine = _two_traces_given(two_runs, {TraceRow.tags: ["canary", "v2"]})
    picked = trace_set(engine, parse_query("tag=canary")).traces["display_id"].tolist()
    assert picked == ["baseline-000", "candidate-001"]
    assert trace_set(engine, parse_query("tag=v2&import=2")).traces["display_id"].tolist() == [
        "candidate-001"
    ]
    assert trace_set(engine, parse_query("tag=canar")).traces.empty
    engine.dispose()


def test_a_metadata_value_picks_a_trace_set(two_runs: str) -> None:
    meta = {"env": "staging", "shard": 3, 'odd "key"': "x"}
    engine = _two_traces_given(two_runs, {TraceRow.meta: meta})
    picked = trace_set(engine, parse_query("meta=env:staging")).traces["display_id"].tolist()
    assert picked == ["baseline-000", "candidate-001"]
    by_number = trace_set(engine, parse_query("meta=shard:3&import=2")).traces
    assert by_number["display_id"].tolist() == ["candidate-001"]
    odd = trace_set(engine, Filters(meta='odd "key":x')).traces["display_id"].tolist()
    assert odd == ["baseline-000", "candidate-001"]
    assert trace_set(engine, parse_query("meta=env:stag")).traces.empty
    engine.dispose()


def test_the_gate_fails_a_worse_candidate_and_passes_a_better_one(two_runs: str) -> None:
    gate = ["compare", "--db", two_runs, "--fail-on", "error_rate,loop_rate"]
    worse = runner.invoke(app, [*gate, "--baseline", "import=1", "--candidate", "import=2"])
    assert worse.exit_code == 1
    assert worse.stdout.splitlines()[-2:] == [
        "unchanged tools: none",
        "FAILED: worse with evidence: error_rate ((all tools)), error_rate (search_flights)",
    ]
    only_loops = ["compare", "--db", two_runs, "--fail-on", "loop_rate"]
    passed = runner.invoke(app, [*only_loops, "--baseline", "import=1", "--candidate", "import=2"])
    assert passed.exit_code == 0
    assert "FAILED" not in passed.stdout
    # The other way round the loop appears: worse.
    swapped = runner.invoke(app, [*only_loops, "--baseline", "import=2", "--candidate", "import=1"])
    assert swapped.exit_code == 1


def test_the_json_report_holds_every_difference_and_what_failed(two_runs: str) -> None:
    result = runner.invoke(
        app,
        ["compare", "--db", two_runs, "--json", "--fail-on", "error_type:invalid_params",
         "--baseline", "import=1", "--candidate", "import=2"],
    )  # fmt: skip
    assert result.exit_code == 1
    data = orjson.loads(result.stdout)
    assert data["baseline"] == {"filter": "import=1", "traces": TRACES}
    assert data["failed"] == [
        {"tool": None, "metric": "error_type:invalid_params"},
        {"tool": "search_flights", "metric": "error_type:invalid_params"},
    ]
    assert data["unchanged_tools"] == []
    assert data["new_fingerprints"][0]["trace"] == "candidate-002"
    assert "Benjamini-Hochberg" in data["method"]["multiple_comparisons"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "imprt=1", "--candidate", "import=2"],
         "Error: filter: imprt: unknown filter "
         "(use import, start, end, agent, model, tool, tag, meta, since, until)"),
        (["--baseline", "import=1", "--candidate", "import=2", "--fail-on", "errors"],
         "Error: --fail-on: unknown metric 'errors'"),
    ],
)  # fmt: skip
def test_the_gate_rejects_what_it_cannot_read(
    sqlite_url: str, args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["compare", "--db", sqlite_url, *args])
    assert result.exit_code == 2
    assert result.stderr.strip() == message


# --- the page, in AppTest --------------------------------------------------------------------


@pytest.fixture
def two_runs_sqlite(sqlite_url: str, population_files: tuple[Path, Path]) -> str:
    """:func:`two_runs` on SQLite only."""
    return _import_both(sqlite_url, population_files)


def test_the_page_shows_the_known_differences(open_page: OpenPage, two_runs_sqlite: str) -> None:
    at = open_page(
        two_runs_sqlite, "views/compare.py", {"baseline": "import=1", "candidate": "import=2"}
    )
    assert not at.exception and not at.error
    assert [(m.label, m.value) for m in at.metric] == [
        ("Worse", "6"), ("Better", "13"), ("Changed", "2"),
        ("New error fingerprints", "1"), ("Unchanged tools", "0"),
    ]  # fmt: skip
    flagged = at.dataframe[0].value
    assert {
        (t, m): v
        for t, m, v in zip(flagged["tool"], flagged["metric"], flagged["verdict"], strict=True)
    } == {
        ("(all tools)" if tool is None else tool, metric_spec(metric).label): verdict
        for (tool, metric), verdict in FLAGGED.items()
    }
    rate = flagged[
        (flagged["tool"] == "search_flights")
        & (flagged["metric"] == "error rate (errors / results)")
    ]
    assert rate[
        ["baseline_traces", "candidate_traces", "baseline", "candidate", "difference"]
    ].values.tolist() == [[TRACES, TRACES, "15.0%", "30.0%", "+15.0 pp"]]
    assert rate["interval"].iloc[0].endswith("] pp")
    # The scope table of every metric: no "None", "—" where a row is not tested.
    every = at.dataframe[-1].value
    assert not every.astype(str).isin(["None", "nan", "NaN"]).any().any()
    follow = every[every["metric"] == metric_spec("follow_rate").label].iloc[0]
    assert (follow["verdict"], follow["adjusted_p"], follow["interval"]) == (
        "too few traces", "—", "—",
    )  # fmt: skip
    new = at.dataframe[1].value
    assert new[["fingerprint", "n", "link"]].values.tolist() == [
        [
            "search_flights: Error #: invalid date format, expected YYYY-MM-DD",
            45,
            "/trace?trace=candidate-002&pair=4:0",
        ]
    ]
    assert "**Unchanged tools (no metric differs):** none" in [md.value for md in at.markdown]


def test_the_page_names_a_filter_it_cannot_read_and_waits_for_both(
    open_page: OpenPage, two_runs_sqlite: str
) -> None:
    at = open_page(
        two_runs_sqlite,
        "views/compare.py",
        {"baseline": "import=1", "candidate": "[x](https://e.x)=red"},
    )
    # Shown as text: the markdown link in the user's filter is escaped.
    assert [e.value for e in at.error] == [
        escape_markdown(
            "[x](https://e.x): unknown filter "
            "(use import, start, end, agent, model, tool, tag, meta, since, until)"
        )
    ]
    assert not at.metric
    waiting = open_page(two_runs_sqlite, "views/compare.py")
    assert not waiting.error and not waiting.metric
    assert waiting.info[0].value.startswith("Write a baseline and a candidate filter above")


def test_a_trace_set_counts_loops_streaks_and_wasted_tokens_per_trace_and_tool(
    db_url: str, tmp_path: Path
) -> None:
    from ingest.scenarios import generate

    generate(tmp_path / "demo", seed=7)
    files = sorted(p for p in (tmp_path / "demo").iterdir() if p.name != "ground_truth.json")
    engine = make_engine(db_url)
    import_paths(engine, files, workers=0)
    data = trace_set(engine, Filters(), loop_k=3)
    trace = data.traces[data.traces["display_id"].str.endswith("loop_repeated_errors")]
    row = data.tools[data.tools["trace_id"] == trace["trace_id"].iloc[0]].iloc[0]
    # Five identical queries: four timeouts, then a success.
    assert row[["tool", "calls", "results", "errors", "loop_calls", "streak_calls"]].tolist() == [
        "run_sql", 5, 5, 4, 3, 3,
    ]  # fmt: skip
    sizes = data.sizes[data.sizes["trace_id"] == trace["trace_id"].iloc[0]]["tokens"].tolist()
    assert row["wasted_tokens"] == sum(sizes[1:])
    assert len(data.traces) == 60 and data.traces["duration_s"].notna().all()
    engine.dispose()
