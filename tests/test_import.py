"""End to end: files -> `toollens import` -> database, on SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from formats_helpers import chat_call, chat_result
from typer.testing import CliRunner

from db.engine import make_engine
from db.queries.summary import summarize
from db.schema import RejectedRecord, TraceRow
from ingest import formats
from ingest.cli import app
from ingest.importing.pipeline import import_paths
from ingest.model import ToolDef

runner = CliRunner()

CONVERSATION = {
    "id": "conv-1",
    "model": "gpt-4o",
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        chat_call("call_1", "get_weather", '{"city":"Paris"}'),
        chat_result("call_1", "rainy, 12C"),
        {"role": "assistant", "content": "It is rainy."},
    ],
}


def write_jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def counts(url: str) -> dict[str, int]:
    engine = make_engine(url)
    data = summarize(engine)
    engine.dispose()
    return {k: data[k] for k in ("traces", "messages", "tool_calls", "tool_results")}


def test_reimporting_a_file_changes_nothing(db_url: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [json.dumps(CONVERSATION).encode()])
    first = runner.invoke(app, ["import", "--db", db_url, str(path)])
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith(
        "1 file, 1 trace imported, 0 updated, 0 unchanged, 0 rejected in "
    )
    second = runner.invoke(app, ["import", "--db", db_url, str(path)])
    assert second.stdout.startswith(
        "1 file (1 unchanged), 0 traces imported, 0 updated, 1 unchanged, 0 rejected in "
    )
    third = runner.invoke(app, ["import", "--db", db_url, "--no-incremental", str(path)])
    assert third.stdout.startswith(
        "1 file, 0 traces imported, 0 updated, 1 unchanged, 0 rejected in "
    )
    assert counts(db_url) == {"traces": 1, "messages": 4, "tool_calls": 1, "tool_results": 1}


def test_gzip_input_imports_like_plain_input(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(json.dumps(CONVERSATION).encode() + b"\n"))
    result = runner.invoke(app, ["import", "--db", db_url, str(path)])
    assert result.exit_code == 0, result.output
    assert counts(db_url)["tool_results"] == 1


@pytest.mark.parametrize(
    ("line", "reason", "message"),
    [
        (
            b'{"messages": [',
            "malformed_json",
            "malformed JSON: unexpected end of data: line 1 column 15 (char 14)",
        ),
        (
            b'{"id": "x", "messages": [{"role": "assistant", "tool_calls": 5}]}',
            "wrong_shape",
            "messages[0].tool_calls: expected an array, got number",
        ),
        (
            b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
            "lone_surrogate",
            "unpaired UTF-16 surrogate escape in a string",
        ),
        (
            b'{"messages": [{"role": "user", "content": "caf\xe9"}]}',
            "invalid_utf8",
            "invalid UTF-8 at byte 46 of the record",
        ),
        (b"42", "not_a_record", "expected a JSON object or array, got number"),
    ],
)
def test_a_bad_record_is_rejected_with_its_line_and_kept(
    db_url: str, tmp_path: Path, line: bytes, reason: str, message: str
) -> None:
    good = json.dumps(CONVERSATION).encode()
    path = write_jsonl(tmp_path / "mixed.jsonl", [good, line])
    result = runner.invoke(app, ["import", "--db", db_url, "--strict", str(path)])
    assert result.exit_code == 1
    assert f"{path}:2: {reason}: {message}\n" in result.stderr
    assert "1 trace imported, 0 updated, 0 unchanged, 1 rejected" in result.stdout
    engine = make_engine(db_url)
    with engine.connect() as conn:
        row = conn.execute(sa.select(RejectedRecord)).one()
    engine.dispose()
    assert (row.line, row.byte_offset, row.reason, row.raw) == (2, len(good) + 1, reason, line)


def test_nul_characters_are_stored_safely(db_url: str, tmp_path: Path) -> None:
    conv = json.loads(json.dumps(CONVERSATION))
    conv["messages"][2]["content"] = "bad\u0000byte"
    path = write_jsonl(tmp_path / "nul.jsonl", [json.dumps(conv).encode()])
    result = runner.invoke(app, ["import", "--db", db_url, str(path)])
    assert result.exit_code == 0, result.output
    assert "1 trace imported" in result.stdout


def test_an_unrecognized_file_is_rejected_whole_with_a_hint(db_url: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "other.jsonl", [b'{"hello": "world"}'])
    result = runner.invoke(app, ["import", "--db", db_url, str(path)])
    assert result.exit_code == 0
    assert (
        f"{path}:1: unknown_format: could not recognize the trace format (otlp: record 1: no "
        '"resourceSpans" array; langfuse: record 1: no "observations" array; langsmith: '
        'record 1: no "id" / "run_type" key); pass --format NAME to read it as one'
    ) in result.stderr


def test_usage_errors_exit_2_and_name_the_problem(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    missing = runner.invoke(app, ["import", "--db", db, str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2
    assert f"Error: {tmp_path / 'nope.jsonl'}: no such file" in missing.stderr
    path = write_jsonl(tmp_path / "a.jsonl", [json.dumps(CONVERSATION).encode()])
    bad_format = runner.invoke(app, ["import", "--db", db, "--format", "xml", str(path)])
    assert bad_format.exit_code == 2
    assert "xml" in bad_format.stderr and "openai_chat" in bad_format.stderr


def test_formats_lists_every_registered_format_with_its_description() -> None:
    result = runner.invoke(app, ["formats"])
    rows = [line.split(None, 1) for line in result.stdout.splitlines()]
    assert [name for name, _ in rows] == formats.format_names()
    assert [text for _, text in rows] == [fmt.description for fmt in formats.FORMATS]
    assert rows[0] == [
        "otlp",
        "OpenTelemetry OTLP JSON exports (GenAI / OpenInference spans, Collector file lines)",
    ]


@pytest.mark.realdata
def test_tau_bench_imports_with_exact_counts_and_pairing(db_url: str, realdata: Path) -> None:
    engine = make_engine(db_url)
    summary = import_paths(engine, [realdata / "openai-chat" / "tau-bench-gpt-4o-airline.json"])
    assert (summary.traces, summary.rejected, summary.records) == (200, 0, 200)
    data = summarize(engine, loop_k=3)
    engine.dispose()
    assert (data["traces"], data["tool_calls"], data["tool_results"]) == (200, 1164, 1164)
    assert data["pair_states"] == {
        "paired": 1164,
        "missing_result": 0,
        "orphan_result": 0,
        "duplicate_result": 0,
        "result_before_call": 0,
        "late_result": 0,
    }
    assert data["reused_id"] == 73
    assert data["loops"] == {"k": 3, "signatures": 5, "calls": 16}
    assert data["status"] == {"success": 1091, "error": 73, "partial": 0, "unknown": 0}
    assert data["error_types"] == {"invalid_params": 28, "conflict": 23, "not_found": 22}


@pytest.mark.realdata
def test_claude_code_sessions_import_with_one_missing_result(db_url: str, realdata: Path) -> None:
    engine = make_engine(db_url)
    files = sorted((realdata / "claude-code").glob("*.jsonl"))
    summary = import_paths(engine, files)
    assert (summary.files, summary.traces, summary.rejected) == (15, 15, 0)
    assert summary.records == summary.records_imported == 3096
    data = summarize(engine)
    again = import_paths(engine, files)
    whole = import_paths(engine, files, incremental=False)
    engine.dispose()
    assert (again.files_unchanged, again.traces, again.updated, again.unchanged) == (15, 0, 0, 15)
    assert (again.records, again.records_unchanged) == (3096, 3096)
    assert (whole.traces, whole.updated, whole.unchanged, whole.records_unchanged) == (
        0,
        0,
        15,
        3096,
    )
    assert (data["traces"], data["tool_calls"], data["tool_results"]) == (15, 1092, 1091)
    assert data["pair_states"]["paired"] == 1091
    assert data["pair_states"]["missing_result"] == 1
    assert data["status"]["error"] == 149


@pytest.mark.realdata
def test_toolbench_answers_import_without_loss_paired_by_position(
    db_url: str, realdata: Path
) -> None:
    engine = make_engine(db_url)
    summary = import_paths(engine, sorted((realdata / "openai-legacy").glob("*.json")))
    data = summarize(engine)
    with engine.connect() as conn:
        methods = dict(
            conn.execute(
                sa.text("SELECT pairing_method, count(*) FROM tool_calls GROUP BY pairing_method")
            ).all()
        )
        unanswered = conn.execute(
            sa.text("SELECT DISTINCT tool_name FROM tool_calls WHERE pair_state='missing_result'")
        ).all()
    engine.dispose()
    assert (summary.traces, summary.rejected) == (15, 0)
    assert (data["tool_calls"], data["tool_results"]) == (50, 37)
    assert methods == {"position": 37, None: 13}
    assert unanswered == [("Finish",)]


def test_nesting_deeper_than_storage_allows_is_rejected(tmp_path: Path) -> None:
    deep = b'{"messages": [{"role": "user", "content": "x", "extra": ' + b"[" * 250 + b"]" * 250
    path = write_jsonl(tmp_path / "deep.jsonl", [json.dumps(CONVERSATION).encode(), deep + b"}]}"])
    engine = make_engine(str(tmp_path / "t.db"))
    summary = import_paths(engine, [path])
    engine.dispose()
    assert (summary.traces, summary.rejected) == (1, 1)
    rejected = summary.rejections[0]
    assert (rejected.line, rejected.reason, rejected.message) == (
        2,
        "too_deep",
        "nesting deeper than 200 levels",
    )


def test_a_trace_the_analysis_trips_over_is_kept_as_a_rejection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ingest.importing.batches

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ValueError("rule exploded")

    monkeypatch.setattr(ingest.importing.batches, "analyze_trace", broken)
    path = write_jsonl(tmp_path / "a.jsonl", [json.dumps(CONVERSATION).encode()])
    engine = make_engine(str(tmp_path / "t.db"))
    summary = import_paths(engine, [path], workers=0)
    with engine.connect() as conn:
        row = conn.execute(sa.select(RejectedRecord)).one()
    engine.dispose()
    assert (summary.traces, summary.rejected) == (0, 1)
    assert (row.line, row.reason, row.message) == (
        1,
        "analysis_failed",
        "could not analyze this trace: ValueError: rule exploded",
    )
    assert json.loads(row.raw)[0] == {"role": "user", "content": "Weather in Paris?"}


def test_stored_tool_definitions_hold_every_field_of_the_declared_tools(tmp_path: Path) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather now",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    path = write_jsonl(
        tmp_path / "a.jsonl", [json.dumps({**CONVERSATION, "tools": [tool]}).encode()]
    )
    engine = make_engine(str(tmp_path / "t.db"))
    import_paths(engine, [path], workers=0)
    with engine.connect() as conn:
        stored = conn.execute(sa.select(TraceRow.tools)).scalar_one()
    engine.dispose()
    # Every field of the canonical ToolDef, as JSON: a new field must reach the database too.
    parsed = ToolDef(
        name="get_weather", description="Weather now", parameters=tool["function"]["parameters"]
    )
    assert stored == [parsed.model_dump(mode="json")]
    assert stored == [{**tool["function"]}]
