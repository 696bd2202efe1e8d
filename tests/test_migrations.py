"""Every migration walks up and down on both databases, and the head matches the models."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from dbfixture import stamp_newer_schema
from typer.testing import CliRunner

from db.engine import make_engine
from db.migrate import (
    MIGRATIONS_DIR,
    NewerStoreError,
    current_revision,
    downgrade,
    head_revision,
    known_revisions,
    upgrade,
)
from db.schema import Base
from db.writes.search_index import is_search_object
from ingest.cli import app

#: The tables of the models: a migrated store has each of them, a store walked down has none.
EXPECTED_TABLES = set(Base.metadata.tables)


def test_opening_a_database_applies_every_migration(db_url: str) -> None:
    engine = make_engine(db_url)
    assert current_revision(engine) == head_revision()
    assert set(sa.inspect(engine).get_table_names()) >= EXPECTED_TABLES
    engine.dispose()


def test_the_revisions_read_from_the_files_are_alembics() -> None:
    # Opening a store reads them from the files' text, without Alembic (tests/test_import_cost.py).
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    assert head_revision() == script.get_current_head()
    assert known_revisions() == {r.revision for r in script.walk_revisions()}


def test_an_empty_database_is_at_no_revision(db_url: str) -> None:
    engine = make_engine(db_url, migrate=False)
    assert current_revision(engine) is None
    engine.dispose()


def test_each_migration_walks_down_and_up_again(db_url: str) -> None:
    engine = make_engine(db_url, migrate=False)
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    revisions = [r.revision for r in reversed(list(script.walk_revisions()))]
    for rev in revisions:
        upgrade(engine, rev)
        assert current_revision(engine) == rev
    for rev in reversed(revisions):
        down = script.get_revision(rev).down_revision
        downgrade(engine, down or "base")
        assert current_revision(engine) == (down if isinstance(down, str) else None)
    assert not (EXPECTED_TABLES & set(sa.inspect(engine).get_table_names()))
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_the_migrated_schema_matches_the_models(db_url: str) -> None:
    engine = make_engine(db_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn,
            opts={"include_name": lambda name, type_, _: not is_search_object(name, type_)},
        )
        diff = compare_metadata(context, Base.metadata)
    assert diff == []
    engine.dispose()


def test_the_migrated_check_constraints_are_the_models(db_url: str) -> None:
    # Autogenerate does not compare CHECK constraints; their names are compared here.
    engine = make_engine(db_url)
    inspector = sa.inspect(engine)
    migrated = {
        (table, ck["name"])
        for table in Base.metadata.tables
        for ck in inspector.get_check_constraints(table)
    }
    models = {
        (table.name, str(c.name))
        for table in Base.metadata.tables.values()
        for c in table.constraints
        if isinstance(c, sa.CheckConstraint)
    }
    assert migrated == models
    assert ("tool_results", "ck_tool_results_status") in models
    assert len(models) == 13
    engine.dispose()


def test_a_store_of_a_newer_toollens_says_so_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    stamp_newer_schema(f"sqlite:///{path}")
    result = CliRunner().invoke(app, ["summary", "--db", str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"toollens: the database at {path} was written by a newer ToolLens (schema 0999); "
        "upgrade ToolLens\n"
    )


def test_a_newer_postgresql_store_is_named_without_its_password(pg_url: str) -> None:
    stamp_newer_schema(pg_url)
    location = sa.make_url(pg_url).render_as_string(hide_password=True)
    with pytest.raises(NewerStoreError) as raised:
        make_engine(pg_url)
    assert str(raised.value) == (
        f"toollens: the database at {location} was written by a newer ToolLens (schema 0999); "
        "upgrade ToolLens"
    )


def test_migration_0028_stores_each_results_preview_as_the_import_does(db_url: str) -> None:
    """A store from before 0028 gets each Tool Message's preview from its text, in SQL, equal
    to what the import now stores (``db.contract.rows.one_line_preview``): line breaks and tabs as
    one space each, a CR LF as one, the first 120 characters counted as characters."""
    from ingest.importing.pipeline import import_traces
    from ingest.model import Message, ToolCall, ToolResult, Trace

    texts = [
        "a\r\nb\tc\rd\ne " + "é" * 200,
        "😀" * 130,
        "x" * 119 + "\r\n" + "y",
        "",
        "short",
    ]
    calls = [ToolCall(call_index=i, tool_call_id=f"c{i}", name="t") for i in range(len(texts))]
    messages = [Message(seq=0, role="assistant", tool_calls=calls)]
    messages += [
        Message(seq=i + 1, role="tool", content=text, tool_result=ToolResult(tool_call_id=f"c{i}"))
        for i, text in enumerate(texts)
    ]
    trace = Trace(format="openai_chat", source_file="p.json", external_id="p", messages=messages)
    engine = make_engine(db_url)
    import_traces(engine, [trace], origin="test", source="p")
    previews = sa.text("SELECT preview FROM tool_results ORDER BY message_seq")
    assert _refilled(engine, "0028", "tool_results.preview", previews) == [
        "a b c d e " + "é" * 109,
        "😀" * 120,
        "x" * 119 + " ",
        "",
        "short",
    ]
    engine.dispose()


def _refilled(engine: sa.Engine, revision: str, column: str, query: sa.TextClause) -> list[Any]:
    """What ``query`` reads as imported, checked to be read again once migration ``revision``,
    which added ``column`` (``table.name``), is undone and done again: the migration fills the
    column in as the import does."""
    table, name = column.split(".")
    with engine.connect() as conn:
        imported = list(conn.execute(query).scalars())
    downgrade(engine, f"{int(revision) - 1:04d}")
    assert name not in {c["name"] for c in sa.inspect(engine).get_columns(table)}
    upgrade(engine, revision)
    with engine.connect() as conn:
        assert list(conn.execute(query).scalars()) == imported
    return imported


def test_migration_0032_fills_in_each_traces_session_as_the_import_does(db_url: str) -> None:
    """A store from before 0032 gets the session of its Claude Code (external id), OTLP
    (``session.id``, else ``gen_ai.conversation.id``), Langfuse (``sessionId``) and other
    traces (a ``thread_id`` metadata) from their rows, equal to what the import stores; a
    LangSmith trace's ``session_id`` metadata is its project, not a session."""
    from ingest.importing.pipeline import import_traces
    from ingest.model import Message, Trace

    said = [Message(seq=0, role="user", content="hi")]
    traces = [
        Trace(format="claude_code", source_file="a.jsonl", external_id="s-1", session_id="s-1"),
        Trace(
            format="otlp",
            source_file="b.json",
            external_id="t-2",
            session_id="conv-2",
            metadata={"gen_ai.conversation.id": "conv-2", "span_count": 1},
        ),
        Trace(
            format="langfuse",
            source_file="c.json",
            external_id="t-3",
            session_id="x" * 500,
            metadata={"sessionId": "x" * 500},
        ),
        Trace(format="openai_chat", source_file="d.json", external_id="t-4"),
        Trace(
            format="openai_chat",
            source_file="e.json",
            external_id="t-5",
            session_id="th-5",
            metadata={"thread_id": "th-5"},
        ),
        Trace(
            format="langsmith",
            source_file="f.json",
            external_id="t-6",
            metadata={"session_id": "project-6"},
        ),
    ]
    for trace in traces:
        trace.messages = [m.model_copy() for m in said]
    engine = make_engine(db_url)
    import_traces(engine, traces, origin="test", source="s")
    sessions = sa.text("SELECT session_id FROM traces ORDER BY external_id")
    cut = "x" * 383 + "~" + hashlib.sha256(b"x" * 500).hexdigest()[:16]
    assert _refilled(engine, "0032", "traces.session_id", sessions) == [
        "s-1", "conv-2", cut, None, "th-5", None,
    ]  # fmt: skip
    engine.dispose()
