"""``toollens lint``: one line per finding, --ignore, pyproject defaults, JSON, SARIF and JUnit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from jsonschema import Draft4Validator
from lint_runs import call, write_runs
from typer.testing import CliRunner

from ingest.cli import app
from ingest.outputs.lint import lint_paths
from ingest.outputs.lint_output import junit

runner = CliRunner()
SARIF_SCHEMA = Path(__file__).parent / "sarif" / "sarif-schema-2.1.0.json"

EXPECTED_LINES = [
    "{f}:1 run-1 call_a: undeclared_parameter: undeclared parameter 'page'",
    "{f}:1 run-1 call_b: arguments_schema_violation: unexpected parameter 'country'",
    "{f}:1 run-1 call_b: name_mismatch: answered by a Tool Message named 'get_forecast'",
    "{f}:1 run-1 call_b: error_without_suggestion: Error: unknown country FR",
    "{f}:2 run-2 c1: missing_result: no Tool Message answers the call",
]


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return write_runs(tmp_path / "runs.jsonl")


def lint(*args: str) -> Any:
    return runner.invoke(app, ["lint", *args])


def test_text_lists_one_line_per_finding_then_the_counts_per_tool(runs: Path) -> None:
    result = lint(str(runs))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        *(line.format(f=runs) for line in EXPECTED_LINES),
        "2 traces, 3 tool calls, 2 tool results",
        "  get_weather: 3 findings (arguments_schema_violation 1, error_without_suggestion 1, "
        "name_mismatch 1)",
        "  lookup: 1 finding (missing_result 1)",
        "  search: 1 finding (undeclared_parameter 1)",
        "5 findings",
    ]


def test_a_name_mismatch_counts_once(runs: Path) -> None:
    report = lint_paths([runs])
    assert [f.kind for f in report.findings].count("name_mismatch") == 1
    assert report.total_findings == 5


def test_ignored_kinds_are_not_listed_and_do_not_count(runs: Path) -> None:
    result = lint(str(runs), "--ignore", "missing_result", "--ignore", "name_mismatch")
    lines = result.stdout.splitlines()
    assert lines[:3] == [line.format(f=runs) for line in EXPECTED_LINES[:2] + EXPECTED_LINES[3:4]]
    assert lines[-2:] == ["  ignored: missing_result, name_mismatch", "3 findings"]
    assert lint(str(runs), "--ignore", "missing_result", "--max-findings", "4").exit_code == 0


def test_an_unknown_kind_to_ignore_is_a_usage_error(runs: Path) -> None:
    result = lint(str(runs), "--ignore", "missing")
    assert result.exit_code == 2
    assert result.stderr == "Error: --ignore: unknown finding kind 'missing'\n"


def test_format_names_the_output_and_points_input_formats_to_input_format(runs: Path) -> None:
    result = lint(str(runs), "--format", "openai_chat")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --format must be one of text, json, sarif, junit; "
        "to skip sniffing use --input-format openai_chat\n"
    )
    assert lint(str(runs), "--input-format", "openai_chat").stdout.splitlines()[-1] == "5 findings"


def test_defaults_come_from_the_nearest_pyproject_with_a_lint_table(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.toollens.lint]\nignore = ["missing_result"]\nmax-findings = 4\nformat = "json"\n',
        encoding="utf-8",
    )
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    monkeypatch.chdir(nested)
    result = lint(str(runs))
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert (document["total"], document["ignored"]) == (4, ["missing_result"])
    # The command line wins: a lower threshold, more kinds ignored, another format.
    result = lint(str(runs), "--max-findings", "2", "--ignore", "name_mismatch", "--format", "text")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "3 findings"


def test_a_bad_lint_table_is_a_usage_error_naming_the_file(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toollens.lint]\nignore = ["nope"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = lint(str(runs))
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {config}: [tool.toollens.lint]: ignore: unknown finding kind 'nope'\n"
    )
    config.write_text("[tool.toollens.lint]\nmax_findings = 3\n", encoding="utf-8")
    assert lint(str(runs)).stderr == (
        f"Error: {config}: [tool.toollens.lint]: unknown key 'max_findings'\n"
    )


def test_json_lists_every_finding_with_its_level(runs: Path) -> None:
    document = json.loads(lint(str(runs), "--format", "json").stdout)
    assert document["findings"][0] == {
        "file": str(runs),
        "line": 1,
        "trace": "run-1",
        "call": "call_a",
        "tool": "search",
        "kind": "undeclared_parameter",
        "level": "warning",
        "message": "undeclared parameter 'page'",
    }
    assert [(f["kind"], f["level"]) for f in document["findings"]] == [
        ("undeclared_parameter", "warning"),
        ("arguments_schema_violation", "error"),
        ("name_mismatch", "error"),
        ("error_without_suggestion", "warning"),
        ("missing_result", "error"),
    ]
    assert (document["traces"], document["total"], document["rejected"]) == (2, 5, [])


def test_sarif_output_validates_against_the_sarif_2_1_0_schema(runs: Path) -> None:
    result = lint(str(runs), "--format", "sarif")
    log = json.loads(result.stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    assert sorted(e.message for e in Draft4Validator(schema).iter_errors(log)) == []
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        "error_without_suggestion",
        "name_mismatch",
        "arguments_schema_violation",
        "undeclared_parameter",
        "missing_result",
    ]
    first = run["results"][0]
    assert (first["ruleId"], first["level"], first["message"]["text"]) == (
        "undeclared_parameter",
        "warning",
        "search: undeclared parameter 'page'",
    )
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert first["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "run-1/call_a"


def test_sarif_with_rejected_records_and_no_findings_still_validates(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{not json\n')
    log = json.loads(lint(str(path), "--format", "sarif", "--input-format", "openai_chat").stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    assert list(Draft4Validator(schema).iter_errors(log)) == []
    assert [(r["ruleId"], r["level"]) for r in log["runs"][0]["results"]] == [("rejected", "error")]


def test_junit_has_a_testcase_per_trace_failed_by_its_findings(runs: Path) -> None:
    root = ET.fromstring(lint(str(runs), "--format", "junit").stdout)
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "2", "2")
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == str(runs)
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["run-1", "run-2"]
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "4 findings: arguments_schema_violation, error_without_suggestion, name_mismatch, "
        "undeclared_parameter"
    )
    assert (failure.text or "").splitlines() == [line.format(f=runs) for line in EXPECTED_LINES[:4]]


def test_junit_stays_well_formed_when_trace_text_holds_control_characters(tmp_path: Path) -> None:
    run = {
        "id": "run-\x01",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c\x02", "t", {})]},
            {"role": "tool", "tool_call_id": "c\x02", "content": "Error: bad \x00 byte </failure>"},
        ],
    }
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(run) + "\n", encoding="utf-8")
    root = ET.fromstring(junit(lint_paths([path])))
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("name") == "run-\ufffd"
    failure = case.find("failure")
    assert failure is not None
    assert (failure.text or "").endswith(
        "c\ufffd: error_without_suggestion: Error: bad \ufffd byte </failure>"
    )
