"""Redaction at import: secrets seeded into real traces are stored nowhere, on both databases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from dbfixture import stored_text
from typer.testing import CliRunner

from db.engine import make_engine
from ingest.cli import app
from ingest.importing.pipeline import import_paths, import_traces
from ingest.model import Message, Rejected, ToolCall, ToolDef, ToolResult, Trace
from ingest.redaction.secrets import Redactor
from ingest.redaction.traces import (
    RedactionSettings,
    format_counts,
    redact_rejected,
    redact_trace,
)

OPENAI = "sk-proj-Hq3vT9xLw2Rk7YbN4mZp8sJd1FgC6uEa0WiO5tQrVy"
AWS_ID = "AKIAQ3EGT5NXK7LRPW2M"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
#: Distinctive pieces: a secret must not survive even in part (or re-encoded as JSON).
NEEDLES = (OPENAI[8:30], AWS_ID, JWT.rsplit(".", 1)[1][:24], JWT[:40])
CLAUDE_FILE = "claude-code/9cc4a4b0-cba8-4e56-b79f-80b730735150.jsonl"
TOOLBENCH_FILE = "openai-legacy/toolbench-G2-10_ChatGPT_DFS_woFilter_w2.json"


def _seed_claude(src: Path, dst: Path) -> None:
    """A tool argument, a tool result, the metadata (summary) and a rejected line get secrets."""
    lines = src.read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    seeded_call = seeded_result = False
    for line in lines:
        rec = json.loads(line)
        if rec.get("type") == "summary":
            rec["summary"] = f"Deploy with key {AWS_ID} and token {JWT}"
        content = (rec.get("message") or {}).get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_use" and not seeded_call:
                    block["input"]["command"] = (
                        f'curl -H "Authorization: Bearer {JWT}" https://api.example.com '
                        f"&& OPENAI_API_KEY={OPENAI} python run.py"
                    )
                    seeded_call = True
                elif block.get("type") == "tool_result" and not seeded_result:
                    block["content"] = f"aws configure list\naccess_key {AWS_ID} env"
                    seeded_result = True
        out.append(json.dumps(rec))
    assert seeded_call and seeded_result
    # A line that is not JSON: rejected, its raw bytes stored.
    out.append('{"type": "user", "message": {"content": "key ' + OPENAI + '" BROKEN')
    dst.write_text("\n".join(out) + "\n", encoding="utf-8")


def _seed_toolbench(src: Path, dst: Path) -> None:
    """A tool definition and the trace metadata get secrets."""
    data = json.loads(src.read_text(encoding="utf-8"))
    gen = data["answer_generation"]
    gen["function"][0]["description"] += f" Use the key {OPENAI} for calls."
    gen["query"] = f"my token is {JWT}, and {AWS_ID}"
    gen["final_answer"] = f"done with {AWS_ID}"
    dst.write_text(json.dumps(data), encoding="utf-8")


def _seeded_files(realdata: Path, tmp_path: Path) -> list[Path]:
    claude, toolbench = tmp_path / "claude.jsonl", tmp_path / "toolbench.json"
    _seed_claude(realdata / CLAUDE_FILE, claude)
    _seed_toolbench(realdata / TOOLBENCH_FILE, toolbench)
    # The secrets really are in the inputs: the search below can find them.
    for path in (claude, toolbench):
        assert any(n in path.read_text(encoding="utf-8") for n in NEEDLES)
    return [claude, toolbench]


def _leaks(text: str) -> list[str]:
    return [n for n in NEEDLES if n in text]


def test_secrets_seeded_into_real_traces_are_stored_nowhere_nor_exported(
    realdata: Path, tmp_path: Path, db_url: str
) -> None:
    files = _seeded_files(realdata, tmp_path)
    engine = make_engine(db_url)
    summary = import_paths(engine, files, workers=0)
    assert (summary.traces, summary.rejected) == (2, 1)
    assert summary.redactions == {"aws_access_key_id": 5, "jwt": 5, "openai_key": 5}
    assert summary.line().endswith(
        "; 15 secrets redacted (aws_access_key_id 5, jwt 5, openai_key 5)"
    )
    dump = stored_text(engine)
    assert _leaks(dump) == []
    assert "[REDACTED:openai_key]" in dump and "[REDACTED:jwt]" in dump
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT redactions FROM imports")).scalar_one()
        raw = conn.execute(sa.text("SELECT raw FROM rejected_records")).scalar_one()
        ids = conn.execute(sa.text("SELECT display_id FROM traces ORDER BY id")).scalars().all()
    if isinstance(stored, str):  # SQLite hands JSON back as text through a raw query
        stored = json.loads(stored)
    assert stored == {"aws_access_key_id": 5, "jwt": 5, "openai_key": 5}
    assert bytes(raw).endswith(b'"key [REDACTED:openai_key]" BROKEN')
    runner = CliRunner()
    for trace_id in ids:
        for fmt in ("html", "json", "md"):
            out = runner.invoke(app, ["export", trace_id, "--db", db_url, "--format", fmt])
            assert out.exit_code == 0, out.output
            assert _leaks(out.output) == [], (trace_id, fmt)
    pairs = runner.invoke(app, ["pairs", "--db", db_url, "--format", "csv"])
    assert pairs.exit_code == 0
    assert len(pairs.output.splitlines()) == 19  # the header and one row per pair
    assert _leaks(pairs.output) == []
    engine.dispose()


def test_workers_redact_too_and_reimporting_the_same_files_changes_nothing(
    realdata: Path, tmp_path: Path, sqlite_url: str
) -> None:
    files = _seeded_files(realdata, tmp_path)
    engine = make_engine(sqlite_url)
    first = import_paths(engine, files, workers=2)
    # Read again whole (not skipped as unchanged files), so the traces' identity is what counts.
    again = import_paths(engine, files, workers=2, incremental=False)
    assert (first.traces, first.redactions) == (
        2,
        {"aws_access_key_id": 5, "jwt": 5, "openai_key": 5},
    )
    # Identity and content hash are computed on the redacted trace: the same input is unchanged.
    assert (again.traces, again.updated, again.unchanged) == (0, 0, 2)
    assert _leaks(stored_text(engine)) == []
    engine.dispose()


def test_the_cli_takes_a_mode_and_off_stores_the_original(
    realdata: Path, tmp_path: Path, sqlite_url: str
) -> None:
    files = [str(p) for p in _seeded_files(realdata, tmp_path)]
    runner = CliRunner()
    bad = runner.invoke(app, ["import", *files, "--db", sqlite_url, "--redact", "loose"])
    assert bad.exit_code == 2
    assert "redaction mode must be one of off, default, strict, not 'loose'" in bad.output
    off = runner.invoke(app, ["import", files[1], "--db", sqlite_url, "--redact", "off"])
    assert off.exit_code == 0, off.output
    assert "redacted" not in off.output
    assert AWS_ID in stored_text(make_engine(sqlite_url))


def test_the_cli_reads_the_mode_and_team_rules_from_the_environment(
    tmp_path: Path, sqlite_url: str
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rules]]\nkind = "acme_token"\nregex = "acme_[0-9a-f]{8}"\n')
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "use acme_0badc0de please"},
                    {"role": "assistant", "content": "ok"},
                ]
            }
        )
        + "\n"
    )
    env = {"TOOLLENS_REDACT": "strict", "TOOLLENS_REDACT_RULES": str(rules)}
    out = CliRunner().invoke(app, ["import", str(trace), "--db", sqlite_url], env=env)
    assert out.exit_code == 0, out.output
    # Every stored copy counts: the message's text and its raw payload.
    assert out.output.strip().endswith("; 2 secrets redacted (acme_token 2)")


def test_the_otlp_receivers_path_redacts(sqlite_url: str) -> None:
    trace = Trace(
        format="otlp",
        source_file="otlp-receiver",
        external_id="abc",
        metadata={"service": f"svc {AWS_ID}"},
        tools=[ToolDef(name="http", description=f"calls with {OPENAI}")],
        messages=[
            Message(
                seq=0,
                role="assistant",
                tool_calls=[
                    ToolCall(
                        call_index=0,
                        tool_call_id="c1",
                        name="http",
                        arguments_raw=json.dumps({"auth": f"Bearer {JWT}"}),
                        arguments={"auth": f"Bearer {JWT}"},
                    )
                ],
            ),
            Message(
                seq=1,
                role="tool",
                content=f"token={OPENAI}",
                tool_result=ToolResult(tool_call_id="c1", name="http"),
            ),
        ],
    )
    engine = make_engine(sqlite_url)
    summary = import_traces(engine, [trace], origin="otlp", source="otlp-receiver")
    assert summary.traces == 1
    assert summary.redactions == {"aws_access_key_id": 1, "jwt": 2, "openai_key": 2}
    assert _leaks(stored_text(engine)) == []
    engine.dispose()


def test_a_trace_without_secrets_is_returned_as_the_same_object() -> None:
    trace = Trace(
        format="x",
        source_file="a",
        messages=[Message(seq=0, role="user", content="hello", raw={"content": "hello"})],
    )
    red = Redactor("default")
    assert redact_trace(trace, red) is trace
    assert redact_trace(trace, Redactor.off()) is trace
    assert dict(red.counts) == {}


def test_rejected_bytes_that_are_not_utf8_keep_their_other_bytes() -> None:
    raw = b"\xff\xfe bad " + AWS_ID.encode() + b" \xe9"
    rejected = Rejected(
        source_file="f", line=3, byte_offset=0, reason="invalid_utf8", message="x", raw=raw
    )
    out = redact_rejected(rejected, Redactor("default"))
    assert out.raw == b"\xff\xfe bad [REDACTED:aws_access_key_id] \xe9"


def test_settings_check_their_mode_and_count_phrases_read_well(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match="redaction mode must be one of"):
        RedactionSettings("everything")
    monkeypatch.delenv("TOOLLENS_REDACT", raising=False)
    assert RedactionSettings.from_env() == RedactionSettings("default", None)
    monkeypatch.setenv("TOOLLENS_REDACT", "off")
    assert RedactionSettings.from_env().mode == "off"
    assert format_counts({"openai_key": 3, "jwt": 9}) == "12 secrets redacted (jwt 9, openai_key 3)"
