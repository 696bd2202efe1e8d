"""The scenario ground truth survives storage, and the analysis commands print exact figures."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from db.engine import make_engine
from db.queries.pairs import PAIR_COLUMNS, iter_pairs
from db.queries.summary import summarize
from db.rollups import upkeep as rollups
from ingest.cli import app
from ingest.importing.pipeline import import_paths
from ingest.scenarios import GroundTruth, generate

runner = CliRunner()


@pytest.fixture(scope="module")
def scenario_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GroundTruth]:
    out = tmp_path_factory.mktemp("scenarios")
    return out, generate(out)


def scenario_files(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.name != "ground_truth.json")


def test_the_stored_analysis_reproduces_the_ground_truth_exactly(
    db_url: str, scenario_dir: tuple[Path, GroundTruth]
) -> None:
    out, truth = scenario_dir
    engine = make_engine(db_url)
    summary = import_paths(engine, scenario_files(out), origin="demo")
    assert (summary.traces, summary.rejected) == (truth.traces, 0)
    data = summarize(engine, loop_k=truth.loops.k)
    for key in ("traces", "messages", "tool_calls", "tool_results", "name_mismatch", "reused_id"):
        assert data[key] == getattr(truth, key), key
    assert data["pair_states"] == truth.pair_states
    assert data["status"] == truth.status
    assert data["error_types"] == truth.error_types
    assert data["loops"] == {
        "k": 3,
        "signatures": truth.loops.signatures,
        "calls": truth.loops.calls,
    }
    expected_suggestions = truth.suggestions.model_dump()
    assert {k: data["suggestions"][k] for k in expected_suggestions} == expected_suggestions
    assert data["findings"]["oversized"] == truth.oversized
    assert data["findings"]["unknown_tool"] == truth.schema_issues["unknown_tool"]
    assert (
        data["findings"]["arguments_schema_violation"]
        == truth.schema_issues["arguments_schema_violation"]
    )
    # Per pair: what `toollens pairs` exports equals the ground truth, pair by pair.
    stored = sorted(
        (
            r["trace"],
            r["call_id"] or "",
            r["pair_state"],
            r["status"],
            r["error_type"],
            r["verdict"],
        )
        for r in iter_pairs(engine)
    )
    engine.dispose()
    expected = sorted(
        (p.trace_id, p.call_id or "", p.pair_state, p.status, p.error_type, p.verdict)
        for p in truth.pairs
    )
    assert stored == expected


def test_summary_json_prints_every_documented_key(
    tmp_path: Path, scenario_dir: tuple[Path, GroundTruth]
) -> None:
    out, truth = scenario_dir
    db = str(tmp_path / "demo.db")
    assert runner.invoke(app, ["import", "--db", db, *map(str, scenario_files(out))]).exit_code == 0
    result = runner.invoke(app, ["summary", "--db", db, "--json", "--loop-k", "4"])
    data = json.loads(result.stdout)
    assert list(data)[:14] == [
        "traces", "messages", "tool_calls", "tool_results", "pair_states", "name_mismatch",
        "reused_id", "status", "error_types", "tokens", "loops", "suggestions", "findings",
        "corrections",
    ]  # fmt: skip
    assert data["tokens"]["encoding"] == "o200k_base"
    assert data["loops"]["k"] == 4
    assert data["traces"] == truth.traces
    text = runner.invoke(app, ["summary", "--db", db]).stdout
    assert text.splitlines()[0] == (
        f"traces       {truth.traces}   messages {truth.messages}   "
        f"tool calls {truth.tool_calls}   tool results {truth.tool_results}"
    )


def test_pairs_exports_one_row_per_call_or_unpaired_result_as_jsonl_and_csv(
    tmp_path: Path, scenario_dir: tuple[Path, GroundTruth]
) -> None:
    out, truth = scenario_dir
    db = str(tmp_path / "demo.db")
    runner.invoke(app, ["import", "--db", db, *map(str, scenario_files(out))])
    jsonl = runner.invoke(app, ["pairs", "--db", db]).stdout
    rows = [json.loads(line) for line in jsonl.splitlines()]
    assert len(rows) == len(truth.pairs)
    assert tuple(rows[0]) == PAIR_COLUMNS
    table = list(
        csv.DictReader(
            io.StringIO(runner.invoke(app, ["pairs", "--db", db, "--format", "csv"]).stdout)
        )
    )
    assert len(table) == len(truth.pairs)
    assert {r["pair_state"] for r in table} == set(truth.pair_states)
    assert runner.invoke(app, ["pairs", "--db", db, "--format", "xml"]).exit_code == 2


def test_lint_prints_findings_per_tool_and_fails_over_the_threshold(
    scenario_dir: tuple[Path, GroundTruth],
) -> None:
    out, _ = scenario_dir
    path = str(out / "openai_chat.jsonl")
    strict = runner.invoke(app, ["lint", path])
    assert strict.exit_code == 1
    lines = strict.stdout.splitlines()
    total = int(lines[-1].split()[0])
    assert total > 0
    # One line per finding, then the counts: 20 traces, and a line per tool.
    assert lines[total].startswith("20 traces, ")
    assert all(line.startswith(f"{path}:") for line in lines[:total])
    assert any(line.startswith("  get_weather: ") for line in lines)
    lenient = runner.invoke(app, ["lint", path, "--max-findings", str(total)])
    assert lenient.exit_code == 0


def test_reanalyze_recomputes_derived_facts_from_stored_traces(
    db_url: str, scenario_dir: tuple[Path, GroundTruth]
) -> None:
    out, _ = scenario_dir
    engine = make_engine(db_url)
    import_paths(engine, scenario_files(out))
    before = summarize(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE tool_results SET status='unknown', error_type=NULL"))
        conn.execute(sa.text("DELETE FROM findings"))
    rollups.rebuild(engine)  # the rows changed by hand: count them as the store now holds them
    assert summarize(engine)["status"]["unknown"] == before["tool_results"]
    result = runner.invoke(app, ["reanalyze", "--db", db_url])
    assert result.stdout == f"reanalyzed {before['traces']} traces\n"
    assert summarize(engine) == before
    engine.dispose()


def test_demo_generates_and_imports_the_scenarios(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.db")
    result = runner.invoke(app, ["demo", "--db", db, "--out", str(tmp_path / "traces")])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "3 files, 60 traces imported, 0 updated, 0 unchanged, 0 rejected"
    )
