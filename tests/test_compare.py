"""Baseline vs candidate: filters as query strings, the statistics, the per-trace SQL, and the
``toollens compare`` gate, on two generated populations with known differences."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest
import sqlalchemy as sa
from dbfixture import open_app
from typer.testing import CliRunner

from dashboard.render import escape_markdown
from db.compare_stats import (
    TraceSet,
    benjamini_hochberg,
    compare,
    metric_spec,
    quantile_estimate,
    ratio_estimate,
)
from db.engine import make_engine
from db.filters import FilterQueryError, Filters, format_query, parse_query
from db.queries.compare import compare_sets, trace_set
from db.schema import TraceRow
from ingest.cli import app
from ingest.pipeline import import_paths
from ingest.scenarios.populations import BASELINE, CANDIDATE, generate_population

runner = CliRunner()
TRACES = 300

#: What the generated change did, and every consequence it must have — nothing else may be
#: flagged. (tool, metric) -> verdict; ``None`` is all tools.
EXPECTED = {
    # The flight search's error rate doubles, the added half a new invalid-date error without
    # advice (so the error_without_suggestion finding doubles with it).
    ("search_flights", "error_rate"): "worse",
    ("search_flights", "error_type:invalid_params"): "worse",
    ("search_flights", "finding:error_without_suggestion"): "worse",
    (None, "error_rate"): "worse",
    (None, "error_type:invalid_params"): "worse",
    (None, "finding:error_without_suggestion"): "worse",
    # The notes-reading loop disappears: fewer calls, no wasted tokens, shorter runs.
    ("read_file", "loop_rate"): "better",
    ("read_file", "wasted_tokens_per_trace"): "better",
    ("read_file", "calls_per_trace"): "changed",
    (None, "loop_rate"): "better",
    (None, "wasted_tokens_per_trace"): "better",
    (None, "calls_per_trace"): "changed",
    (None, "duration_s"): "better",
}


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


def test_the_ratio_variance_treats_traces_as_clusters() -> None:
    # 2 of 4 results fail, both in the first trace: per trace residuals (2-1, 0-1) / 4.
    estimate = ratio_estimate(np.array([2.0, 0.0]), np.array([2.0, 2.0]))
    assert estimate.value == 0.5
    assert estimate.variance == pytest.approx(2 / 1 * (1 + 1) / 16)
    assert ratio_estimate(np.array([1.0]), np.array([2.0])).variance is None
    assert ratio_estimate(np.zeros(3), np.zeros(3)).value is None


def test_benjamini_hochberg_is_monotone_and_capped() -> None:
    assert benjamini_hochberg([0.001, 0.2, 0.03, 0.04]) == pytest.approx(
        [0.004, 0.2, 0.0533333, 0.0533333]
    )
    assert benjamini_hochberg([0.9, 0.8]) == [0.9, 0.9]


def test_a_percentile_variance_reads_the_share_band_back_through_the_sizes() -> None:
    # 20 traces of 3 sizes each (0-59): the share at or below 29 is 0.5 with a cluster
    # standard error of 0.1147, so the band 0.5 ± 0.2248 reads back as sizes 16 to 43.
    traces = np.repeat(np.arange(20), 3)
    estimate = quantile_estimate(traces, np.arange(60, dtype=float), 0.5)
    assert (estimate.value, estimate.traces) == (29.0, 20)
    assert estimate.variance == pytest.approx(((43 - 16) / (2 * 1.959963984540054)) ** 2)
    same = quantile_estimate(np.arange(10), np.full(10, 7.0), 0.95)
    assert (same.value, same.variance) == (7.0, 0.0)
    assert quantile_estimate(np.zeros(3, dtype=int), np.arange(3.0), 0.5).variance is None


def _set(tools: list[str], issues: list[tuple[str, str]], ids: range) -> TraceSet:
    traces = pd.DataFrame(
        {"trace_id": list(ids), "display_id": [f"t{i}" for i in ids], "duration_s": np.nan}
    )
    rows = [{"trace_id": i, "tool": t} for i in ids for t in tools]
    tool_frame = pd.DataFrame(rows).assign(
        calls=1, results=1, errors=0, pairing_problems=0, loop_calls=0, streak_calls=0,
        suggestions=0, followed=0, ignored=0, wasted_tokens=0,
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
    assert result.notes == ["the baseline holds 1 trace: nothing can be inferred"]
    assert all(d.verdict == "no evidence" for d in result.differences)


# --- generated populations, SQL, CLI ---------------------------------------------------------


@pytest.fixture(scope="module")
def population_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("populations")
    return (
        generate_population(out / "baseline", BASELINE, seed=1, traces=TRACES),
        generate_population(out / "candidate", CANDIDATE, seed=1, traces=TRACES),
    )


@pytest.fixture
def two_runs(db_url: str, population_files: tuple[Path, Path]) -> str:
    """A store whose import 1 is the baseline population and import 2 the candidate."""
    engine = make_engine(db_url)
    for path in population_files:
        import_paths(engine, [path], workers=0)
    engine.dispose()
    return db_url


def test_the_known_differences_are_found_and_nothing_else_is_flagged(two_runs: str) -> None:
    engine = make_engine(two_runs)
    result = compare_sets(engine, Filters(import_id=1), Filters(import_id=2))
    assert (result.baseline_traces, result.candidate_traces) == (TRACES, TRACES)
    assert {(d.tool, d.metric): d.verdict for d in result.flagged()} == EXPECTED
    weather = [d for d in result.differences if d.tool == "get_weather"]
    assert len(weather) == 12 and {d.verdict for d in weather} == {"no evidence"}
    error_rate = next(
        d for d in result.differences if (d.tool, d.metric) == ("search_flights", "error_rate")
    )
    assert (error_rate.baseline, error_rate.candidate) == (0.15, 0.30)
    assert error_rate.low is not None and 0 < error_rate.low < 0.15 < error_rate.high  # type: ignore[operator]
    assert result.new_fingerprints[["fingerprint", "n", "traces"]].values.tolist() == [
        ["search_flights: Error #: invalid date format, expected YYYY-MM-DD", 45, 45]
    ]
    assert result.gone_fingerprints.empty
    assert (result.new_tools, result.gone_tools) == ([], [])
    assert result.new_schema_issues.empty
    engine.dispose()


def test_a_tag_picks_a_trace_set(two_runs: str) -> None:
    engine = make_engine(two_runs)
    with engine.begin() as conn:
        conn.execute(
            sa.update(TraceRow)
            .where(TraceRow.display_id.in_(["baseline-000", "candidate-001"]))
            .values(tags=["canary", "v2"])
        )
    picked = trace_set(engine, parse_query("tag=canary")).traces["display_id"].tolist()
    assert picked == ["baseline-000", "candidate-001"]
    assert trace_set(engine, parse_query("tag=v2&import=2")).traces["display_id"].tolist() == [
        "candidate-001"
    ]
    assert trace_set(engine, parse_query("tag=canar")).traces.empty
    engine.dispose()


def test_a_metadata_value_picks_a_trace_set(two_runs: str) -> None:
    engine = make_engine(two_runs)
    with engine.begin() as conn:
        conn.execute(
            sa.update(TraceRow)
            .where(TraceRow.display_id.in_(["baseline-000", "candidate-001"]))
            .values({TraceRow.meta: {"env": "staging", "shard": 3, 'odd "key"': "x"}})
        )
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
        "unchanged tools: get_weather",
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
    assert data["unchanged_tools"] == ["get_weather"]
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
    engine = make_engine(sqlite_url)
    for path in population_files:
        import_paths(engine, [path], workers=0)
    engine.dispose()
    return sqlite_url


def test_the_page_shows_the_known_differences(
    monkeypatch: pytest.MonkeyPatch, two_runs_sqlite: str
) -> None:
    at = open_app(
        monkeypatch,
        two_runs_sqlite,
        page="views/compare.py",
        params={"baseline": "import=1", "candidate": "import=2"},
    )
    assert not at.exception and not at.error
    assert [(m.label, m.value) for m in at.metric] == [
        ("Worse", "6"), ("Better", "5"), ("Changed", "2"),
        ("New error fingerprints", "1"), ("Unchanged tools", "1"),
    ]  # fmt: skip
    flagged = at.dataframe[0].value
    assert {
        (t, m): v
        for t, m, v in zip(flagged["tool"], flagged["metric"], flagged["verdict"], strict=True)
    } == {
        ("(all tools)" if tool is None else tool, metric_spec(metric).label): verdict
        for (tool, metric), verdict in EXPECTED.items()
    }
    new = at.dataframe[1].value
    assert new[["fingerprint", "n", "link"]].values.tolist() == [
        [
            "search_flights: Error #: invalid date format, expected YYYY-MM-DD",
            45,
            "/trace?trace=candidate-002&pair=4:0",
        ]
    ]
    assert "**Unchanged tools (no metric differs):** get\\_weather" in [
        md.value for md in at.markdown
    ]


def test_the_page_names_a_filter_it_cannot_read_and_waits_for_both(
    monkeypatch: pytest.MonkeyPatch, two_runs_sqlite: str
) -> None:
    at = open_app(
        monkeypatch,
        two_runs_sqlite,
        page="views/compare.py",
        params={"baseline": "import=1", "candidate": "[x](https://e.x)=red"},
    )
    # Shown as text: the markdown link in the user's filter is escaped.
    assert [e.value for e in at.error] == [
        escape_markdown(
            "[x](https://e.x): unknown filter "
            "(use import, start, end, agent, model, tool, tag, meta, since, until)"
        )
    ]
    assert not at.metric
    waiting = open_app(monkeypatch, two_runs_sqlite, page="views/compare.py")
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
