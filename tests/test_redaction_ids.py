"""Redaction of the strings stored as ids and names: trace ids, call ids, message ids, tool
names, model, agent, metadata keys, tags and file names, on SQLite and PostgreSQL. None is
stored raw, and two ids that differ only in their secret stay two traces."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from dbfixture import stored_text

from db.engine import make_engine
from db.schema import ImportRun, SourceFileRow, ToolCallRow, ToolResultRow, TraceRow
from ingest.importing.pipeline import import_paths, import_traces
from ingest.model import Message, ToolCall, ToolDef, ToolResult, Trace
from ingest.redaction.secrets import Redactor

AWS = "AKIAQ3EGT5NXK7LRPW2M"
AWS_OTHER = "AKIAZ7PQR2LMN4XVBW6K"
GITHUB = "ghp_R7x2Lq9VbN4mZp8sJd1FgC6uEa0WiO5tQrVy"
BEARER = "Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0"
SECRETS = (AWS, AWS_OTHER, GITHUB, BEARER.split()[1])


def _trace(external_id: str) -> Trace:
    """A trace with a secret in every id and name it stores."""
    return Trace(
        format="openai_chat",
        source_file=f"runs/{GITHUB}/session.jsonl",
        external_id=external_id,
        agent=f"agent-{GITHUB}",
        model=f"gpt-4o {BEARER}",
        tags=[f"tag-{AWS}"],
        metadata={f"key-{AWS}": "value", "plain": "kept"},
        tools=[ToolDef(name=f"tool-{GITHUB}")],
        messages=[
            Message(seq=0, role="user", content="hi", source_id=f"msg-{AWS}"),
            Message(
                seq=1,
                role="assistant",
                tool_calls=[
                    ToolCall(call_index=0, tool_call_id=f"call-{GITHUB}", name=f"tool-{GITHUB}")
                ],
            ),
            Message(
                seq=2,
                role="tool",
                content="ok",
                tool_result=ToolResult(tool_call_id=f"call-{GITHUB}", name=f"tool-{GITHUB}"),
            ),
        ],
    )


def test_no_id_or_name_is_stored_with_its_secret_and_ids_differing_in_one_stay_apart(
    db_url: str,
) -> None:
    engine = make_engine(db_url)
    summary = import_traces(
        engine, [_trace(f"run-{AWS}"), _trace(f"run-{AWS_OTHER}")], source=f"spool-{GITHUB}"
    )
    assert summary.traces == 2
    stored = stored_text(engine)
    assert [s for s in SECRETS if s in stored] == []
    redactor = Redactor()
    with engine.connect() as conn:
        traces = conn.execute(
            sa.select(
                TraceRow.external_id, TraceRow.model, TraceRow.agent, TraceRow.source_file
            ).order_by(TraceRow.external_id)
        ).all()
        calls = conn.execute(sa.select(ToolCallRow.tool_call_id, ToolCallRow.tool_name)).all()
        results = conn.execute(sa.select(ToolResultRow.pair_state)).scalars().all()
    ids = sorted(str(redactor.redact_name(f"run-{key}")) for key in (AWS, AWS_OTHER))
    assert [row.external_id for row in traces] == ids
    assert ids[0] != ids[1]
    assert ids[0].startswith("run-[REDACTED:aws_access_key_id]~")
    assert {(row.model, row.agent, row.source_file) for row in traces} == {
        (
            "gpt-4o Bearer [REDACTED:bearer_token]",
            "agent-[REDACTED:github_token]",
            redactor.redact_name(f"runs/{GITHUB}/session.jsonl"),
        )
    }
    call_id = redactor.redact_name(f"call-{GITHUB}")
    assert sorted(calls) == [(call_id, "tool-[REDACTED:github_token]")] * 2
    # The redacted call id still meets its result.
    assert results == ["paired", "paired"]
    # Imported again: the same two traces, unchanged.
    again = import_traces(engine, [_trace(f"run-{AWS}"), _trace(f"run-{AWS_OTHER}")])
    assert (again.traces, again.unchanged) == (0, 2)
    engine.dispose()


def test_a_file_name_with_a_secret_is_stored_redacted(tmp_path: Path, db_url: str) -> None:
    folder = tmp_path / f"token-{GITHUB}"
    folder.mkdir()
    path = folder / "chat.jsonl"
    record = {
        "id": "one",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    }
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    engine = make_engine(db_url)
    summary = import_paths(engine, [path], workers=0, incremental=True)
    assert summary.traces == 1
    stored = stored_text(engine)
    assert GITHUB not in stored
    name = str(Redactor().redact_name(str(path)))
    assert name.startswith(f"{tmp_path}/token-[REDACTED:github_token]/chat.jsonl~")
    # The import's paths, the trace's source_file and the file registry hold it, redacted.
    with engine.connect() as conn:
        assert conn.execute(sa.select(TraceRow.source_file)).scalars().all() == [name]
        assert conn.execute(sa.select(ImportRun.paths)).scalars().all() == [[name]]
        assert conn.execute(sa.select(SourceFileRow.path)).scalars().all() == [name]
    # Imported again, incrementally: the same trace, unchanged.
    again = import_paths(engine, [path], workers=0, incremental=True)
    assert (again.traces, again.unchanged, again.records) == (0, 1, 1)
    engine.dispose()
