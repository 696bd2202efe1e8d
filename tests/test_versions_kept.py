"""Versions never lose content (issue 46): an older copy leaves the stored version as it is, a
replaced version is kept and restorable, the difference is reported, and two conversations
under one id are both stored, on both databases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from db.queries import imports
from db.schema import Base, ImportRun, TraceRow, TraceUpdate, TraceVersionRow
from db.writes.versions import kept_version
from ingest.importing.pipeline import import_paths, import_traces
from ingest.model import Message, Trace

SESSION = "claude-code/069508a5-1193-487c-a9b5-a6f5f3ae4f98.jsonl"


def _rows(engine: sa.Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the trace tables, ids included, in id order."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for name in ("traces", "messages", "tool_calls", "tool_results", "findings"):
            table = Base.metadata.tables[name]
            out[name] = [tuple(r) for r in conn.execute(sa.select(table).order_by(table.c.id))]
    return out


def _run(texts: list[str], run_id: str = "run-1", system: str | None = None) -> Trace:
    """A conversation ``run_id`` alternating user and assistant messages with ``texts``."""
    messages = [Message(seq=0, role="system", content=system)] if system else []
    for text in texts:
        role = "user" if len(messages) % 2 == (1 if system else 0) else "assistant"
        messages.append(Message(seq=len(messages), role=role, content=text))
    return Trace(format="x", source_file="api", external_id=run_id, messages=messages)


def _traces(engine: sa.Engine) -> list[tuple[str, int, int]]:
    t = TraceRow
    with engine.connect() as conn:
        stmt = sa.select(t.display_id, t.message_count, t.version).order_by(t.id)
        return [tuple(r) for r in conn.execute(stmt)]  # type: ignore[misc]


@pytest.mark.realdata
def test_a_session_cut_to_its_first_30_lines_leaves_the_stored_session_as_it_was(
    engine: sa.Engine, realdata: Path, tmp_path: Path
) -> None:
    whole = (realdata / SESSION).read_bytes()
    path = tmp_path / "session.jsonl"
    path.write_bytes(whole)
    import_paths(engine, [path])
    before = _rows(engine)
    assert len(before["messages"]) == 57
    path.write_bytes(b"".join(whole.splitlines(keepends=True)[:30]))
    cut = import_paths(engine, [path])
    assert cut.line().startswith(
        "1 file, 0 traces imported, 0 updated, 1 unchanged (1 older copy), 0 rejected"
    )
    assert _rows(engine) == before
    with engine.connect() as conn:
        run = conn.execute(sa.select(ImportRun).where(ImportRun.id == cut.import_id)).one()
    assert (run.updated, run.unchanged, run.older_copies) == (0, 1, 1)


def test_a_shorter_copy_of_a_conversation_is_an_older_copy_not_an_update(
    engine: sa.Engine,
) -> None:
    import_traces(engine, [_run(["q", "a", "q2", "a2"])])
    shorter = import_traces(engine, [_run(["q", "a"])])
    assert (shorter.updated, shorter.unchanged, shorter.older_copies) == (0, 1, 1)
    assert _traces(engine) == [("run-1", 4, 1)]
    # Within one import too: the longer copy stays whichever comes first.
    both = import_traces(engine, [_run(["q", "a", "q2", "a2", "q3"]), _run(["q", "a", "q2"])])
    assert (both.updated, both.unchanged, both.older_copies) == (1, 1, 1)
    assert _traces(engine) == [("run-1", 5, 2)]


def test_a_version_that_drops_messages_is_kept_restorable_and_reported(
    engine: sa.Engine,
) -> None:
    first = import_traces(engine, [_run(["q", "a", "q2", "a2"])])
    second = import_traces(engine, [_run(["q", "a", "other question"])])
    assert second.line().startswith(
        "1 file, 0 traces imported, 1 updated (+1 -2 messages), 0 unchanged, 0 rejected"
    )
    assert _traces(engine) == [("run-1", 3, 2)]
    with engine.connect() as conn:
        trace_id = conn.execute(sa.select(TraceRow.id)).scalar_one()
        kept = conn.execute(
            sa.select(
                TraceVersionRow.version,
                TraceVersionRow.message_count,
                TraceVersionRow.shared_messages,
                TraceVersionRow.replaced_by,
            )
        ).all()
        run = conn.execute(sa.select(ImportRun).where(ImportRun.id == second.import_id)).one()
    assert [tuple(k) for k in kept] == [(1, 4, 2, second.import_id)]
    assert (run.messages_added, run.messages_removed) == (1, 2)
    old = kept_version(engine, trace_id, 1)
    assert old is not None
    assert [m["content"] for m in old["messages"]] == ["q", "a", "q2", "a2"]
    assert old["trace"]["message_count"] == 4
    assert kept_version(engine, trace_id, 2) is None
    updates = imports.trace_updates(engine, second.import_id)
    assert updates[
        ["display_id", "old_messages", "new_messages", "messages_added", "messages_removed",
         "kept_version"]
    ].values.tolist() == [["run-1", 4, 3, 1, 2, 1]]  # fmt: skip
    history = imports.import_history(engine)
    assert history[
        ["id", "messages_added", "messages_removed", "older_copies"]
    ].values.tolist() == [
        [second.import_id, 1, 2, 0],
        [first.import_id, 0, 0, 0],
    ]


def test_a_grown_version_keeps_its_predecessor_without_copying_the_shared_messages(
    engine: sa.Engine,
) -> None:
    import_traces(engine, [_run(["q", "a"])])
    import_traces(engine, [_run(["q", "a", "q2", "a2"])])
    third = import_traces(engine, [_run(["q", "b"])])
    assert (third.updated, third.messages_added, third.messages_removed) == (1, 1, 3)
    with engine.connect() as conn:
        trace_id = conn.execute(sa.select(TraceRow.id)).scalar_one()
        kept = conn.execute(
            sa.select(TraceVersionRow.version, TraceVersionRow.shared_messages).order_by(
                TraceVersionRow.version
            )
        ).all()
    assert [tuple(k) for k in kept] == [(1, 2), (2, 1)]
    one, two = kept_version(engine, trace_id, 1), kept_version(engine, trace_id, 2)
    assert one is not None and two is not None
    assert [m["content"] for m in one["messages"]] == ["q", "a"]
    assert [m["content"] for m in two["messages"]] == ["q", "a", "q2", "a2"]


def test_two_conversations_under_one_id_in_one_import_are_both_kept_apart(
    engine: sa.Engine,
) -> None:
    pair = [_run(["hello", "hi"]), _run(["something else", "ok"])]
    first = import_traces(engine, pair)
    assert first.line().startswith(
        "1 file, 2 traces imported (1 kept apart), 0 updated, 0 unchanged, 0 rejected"
    )
    shown = [display for display, _, _ in _traces(engine)]
    assert shown[0] == "run-1" and shown[1].startswith("run-1~") and len(shown[1]) == 14
    # The same input again changes nothing: each conversation is found under its identity.
    again = import_traces(engine, pair)
    assert (again.traces, again.updated, again.unchanged, again.kept_apart) == (0, 0, 2, 0)
    assert len(_traces(engine)) == 2


def test_another_conversation_under_a_stored_id_sharing_only_instructions_is_kept_apart(
    engine: sa.Engine,
) -> None:
    import_traces(engine, [_run(["hello", "hi"], system="be brief")])
    other = import_traces(engine, [_run(["weather?", "sunny"], system="be brief")])
    assert (other.traces, other.kept_apart, other.updated) == (1, 1, 0)
    assert [(d[:6], n, v) for d, n, v in _traces(engine)] == [("run-1", 3, 1), ("run-1~", 3, 1)]
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(TraceUpdate)).scalar_one() == 0


def test_a_version_replaced_within_one_import_is_kept_from_the_input(
    engine: sa.Engine,
) -> None:
    summary = import_traces(engine, [_run(["q", "a", "q2"]), _run(["q", "b"])])
    assert (summary.traces, summary.updated, summary.messages_removed) == (1, 1, 2)
    with engine.connect() as conn:
        trace_id = conn.execute(sa.select(TraceRow.id)).scalar_one()
    first = kept_version(engine, trace_id, 1)
    assert first is not None
    assert [m["content"] for m in first["messages"]] == ["q", "a", "q2"]
