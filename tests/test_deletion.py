"""Deletion and retention (db.writes.deletion, ``toollens delete`` / ``prune`` / ``vacuum``)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from formats_helpers import chat_call, chat_result
from typer.testing import CliRunner

from db.engine import make_engine
from db.schema import Base
from db.writes.annotations import add_annotation
from db.writes.deletion import (
    count_rows,
    delete_rows,
    import_by_id,
    imports_before,
    traces_by_display_id,
)
from ingest.cli import app
from ingest.importing.pipeline import import_paths

TABLES = (
    "imports",
    "traces",
    "messages",
    "tool_calls",
    "tool_results",
    "findings",
    "rejected_records",
    "annotations",
)


def _conversation(run: str, ok: bool) -> str:
    result = "ok" if ok else "Error: connection refused"
    return json.dumps(
        {
            "id": run,
            "messages": [
                {"role": "user", "content": f"weather for {run}"},
                chat_call("c1", "get_weather", '{"city":"x"}'),
                chat_result("c1", result),
                {"role": "assistant", "content": "done"},
            ],
        }
    )


def _store(engine: sa.Engine, tmp_path: Path) -> list[int]:
    """Two imports: runs a, b and a rejected line; then run c. A note on run a."""
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first.write_text(_conversation("a", True) + "\n" + _conversation("b", False) + "\n{oops\n")
    second.write_text(_conversation("c", False) + "\n")
    ids = [import_paths(engine, [p], workers=0).import_id for p in (first, second)]
    with engine.connect() as conn:
        trace_a = conn.execute(sa.text("SELECT id FROM traces WHERE display_id = 'a'")).scalar()
    assert trace_a is not None
    add_annotation(engine, trace_a, label="tool-bug", note="look", author="ann")
    return ids


def _counts(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t: conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


def test_deleting_a_trace_removes_its_rows_and_nothing_else(
    engine: sa.Engine, tmp_path: Path
) -> None:
    _store(engine, tmp_path)
    before = _counts(engine)
    assert before == {
        "imports": 2,
        "traces": 3,
        "messages": 12,
        "tool_calls": 3,
        "tool_results": 3,
        "findings": 3,
        "rejected_records": 1,
        "annotations": 1,
    }
    expected = {
        "traces": 1,
        "messages": 4,
        "tool_calls": 1,
        "tool_results": 1,
        "findings": 1,
        "annotations": 1,
        "error_streaks": 0,
        "trace_updates": 0,
        "trace_versions": 0,
    }
    assert count_rows(engine, traces_by_display_id("a")) == expected
    assert delete_rows(engine, traces_by_display_id("a")) == expected
    after = _counts(engine)
    assert after == {t: before[t] - expected.get(t, 0) for t in TABLES}
    with engine.connect() as conn:
        left = conn.execute(sa.text("SELECT display_id FROM traces ORDER BY display_id"))
        assert left.scalars().all() == ["b", "c"]


def test_deleting_an_import_removes_its_traces_and_rejected_records(
    engine: sa.Engine, tmp_path: Path
) -> None:
    first, _ = _store(engine, tmp_path)
    assert delete_rows(engine, import_by_id(first)) == {
        "imports": 1,
        "import_files": 1,
        "source_files": 1,
        "traces": 2,
        "messages": 8,
        "tool_calls": 2,
        "tool_results": 2,
        "findings": 2,
        "rejected_records": 1,
        "annotations": 1,
        "error_streaks": 0,
        "trace_updates": 0,
        "trace_versions": 0,
    }
    assert _counts(engine) == {
        "imports": 1,
        "traces": 1,
        "messages": 4,
        "tool_calls": 1,
        "tool_results": 1,
        "findings": 1,
        "rejected_records": 0,
        "annotations": 0,
    }


def test_retention_deletes_the_imports_started_before_the_cutoff(
    engine: sa.Engine, tmp_path: Path
) -> None:
    first, second = _store(engine, tmp_path)
    old = datetime.now(UTC) - timedelta(days=40)
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE imports SET started_at = :t WHERE id = :i"), {"t": old, "i": first}
        )
    cutoff = datetime.now(UTC) - timedelta(days=30)
    assert count_rows(engine, imports_before(cutoff))["traces"] == 2
    delete_rows(engine, imports_before(cutoff))
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT id FROM imports")).scalars().all() == [second]


def test_tables_added_later_that_point_at_traces_or_imports_are_deleted_too(
    engine: sa.Engine, tmp_path: Path
) -> None:
    """A table the deletion code never names (as later migrations add them) loses its rows."""
    first, second = _store(engine, tmp_path)
    meta = sa.MetaData()
    for table in Base.metadata.tables.values():
        table.to_metadata(meta)
    updates = sa.Table(
        "trace_reviews",
        meta,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("trace_id", sa.ForeignKey("traces.id")),
        sa.Column("import_id", sa.ForeignKey("imports.id")),
    )
    files = sa.Table(
        "import_notes",
        meta,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("import_id", sa.ForeignKey("imports.id")),
    )
    # A grandchild: it points at a new child table, not at traces or imports.
    parts = sa.Table(
        "import_file_parts",
        meta,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("file_id", sa.ForeignKey("import_notes.id")),
    )
    new_tables = [updates, files, parts]
    meta.create_all(engine, tables=new_tables)
    with engine.begin() as conn:
        trace_a, trace_c = conn.execute(
            sa.text("SELECT id FROM traces WHERE display_id IN ('a', 'c') ORDER BY display_id")
        ).scalars()
        conn.execute(
            updates.insert(),
            [
                {"trace_id": trace_a, "import_id": first},
                {"trace_id": trace_c, "import_id": second},
                # Points at the import of a but at trace c: goes with either deletion.
                {"trace_id": trace_c, "import_id": first},
            ],
        )
        conn.execute(
            files.insert(), [{"id": 1, "import_id": first}, {"id": 2, "import_id": second}]
        )
        conn.execute(parts.insert(), [{"file_id": 1}, {"file_id": 1}, {"file_id": 2}])
    counts = delete_rows(engine, import_by_id(first), meta)
    assert {t: counts[t] for t in ("trace_reviews", "import_notes", "import_file_parts")} == {
        "trace_reviews": 2,
        "import_notes": 1,
        "import_file_parts": 2,
    }
    with engine.connect() as conn:
        left = conn.execute(sa.select(updates.c.trace_id, updates.c.import_id)).all()
        assert [tuple(r) for r in left] == [(trace_c, second)]
        assert conn.execute(sa.select(parts.c.file_id)).scalars().all() == [2]
    meta.drop_all(engine, tables=new_tables)


# ---- the command line -------------------------------------------------------------------------


def test_delete_prints_counts_and_asks_first(sqlite_url: str, tmp_path: Path) -> None:
    engine = make_engine(sqlite_url)
    _store(engine, tmp_path)
    runner = CliRunner()
    no = runner.invoke(app, ["delete", "--trace", "a", "--db", sqlite_url], input="n\n")
    assert no.exit_code == 1
    assert no.output == (
        "trace a: traces 1, annotations 1, error_streaks 0, findings 1, messages 4, tool_calls 1, "
        "tool_results 1, trace_updates 0, trace_versions 0\n"
        "Delete these rows? [y/N]: n\n"
        "Nothing deleted.\n"
    )
    assert _counts(engine)["traces"] == 3
    yes = runner.invoke(app, ["delete", "--import", "2", "--db", sqlite_url, "--yes"])
    assert yes.exit_code == 0, yes.output
    assert yes.output == (
        "import 2: imports 1, import_files 1, rejected_records 0, source_files 1, traces 1, "
        "annotations 0, error_streaks 0, findings 1, messages 4, tool_calls 1, tool_results 1, "
        "trace_updates 0, trace_versions 0\n"
        "Deleted. `toollens vacuum` gives the space back to the disk.\n"
    )
    assert _counts(engine)["traces"] == 2
    engine.dispose()


def test_delete_without_a_terminal_refuses_unless_yes(sqlite_url: str, tmp_path: Path) -> None:
    engine = make_engine(sqlite_url)
    _store(engine, tmp_path)
    # CliRunner's stdin is not a terminal: no question can be asked.
    out = CliRunner().invoke(app, ["delete", "--before", "2999-01-01", "--db", sqlite_url])
    assert out.exit_code == 2
    assert out.output.endswith(
        "Error: not deleting without confirmation: no answer on stdin; pass --yes\n"
    )
    assert _counts(engine)["imports"] == 2
    engine.dispose()


def test_delete_needs_exactly_one_target_and_a_known_one(sqlite_url: str) -> None:
    make_engine(sqlite_url).dispose()  # an empty store (a missing one is an error of its own)
    runner = CliRunner()
    none = runner.invoke(app, ["delete", "--db", sqlite_url, "--yes"])
    assert none.exit_code == 2
    assert "Error: name one of --trace ID, --import N or --before DATE" in none.output
    two = runner.invoke(app, ["delete", "--trace", "a", "--import", "1", "--db", sqlite_url])
    assert two.exit_code == 2
    missing = runner.invoke(app, ["delete", "--trace", "zzz", "--db", sqlite_url, "--yes"])
    assert missing.exit_code == 0
    assert missing.output == "trace zzz: nothing to delete.\n"
    bad_date = runner.invoke(app, ["delete", "--before", "yesterday", "--db", sqlite_url])
    assert bad_date.exit_code == 2
    assert "Error: --before: 'yesterday' is not a date (YYYY-MM-DD)" in bad_date.output


def test_prune_keeps_recent_imports_and_vacuum_shrinks_the_file(
    sqlite_url: str, tmp_path: Path
) -> None:
    engine = make_engine(sqlite_url)
    first, second = _store(engine, tmp_path)
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(_conversation(f"r{i}", i % 2 == 0) for i in range(3000)) + "\n")
    third = import_paths(engine, [big], workers=0).import_id
    old = datetime.now(UTC) - timedelta(days=10)
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE imports SET started_at = :t WHERE id IN (:a, :c)"),
            {"t": old, "a": first, "c": third},
        )
    runner = CliRunner()
    out = runner.invoke(app, ["prune", "--keep-days", "7", "--db", sqlite_url, "--yes"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("imports before ")
    assert out.output.endswith(
        ": imports 2, import_files 2, rejected_records 1, source_files 2, traces 3002, "
        "annotations 1, error_streaks 0, findings 3002, messages 12008, tool_calls 3002, "
        "tool_results 3002, trace_updates 0, trace_versions 0\n"
        "Deleted. `toollens vacuum` gives the space back to the disk.\n"
    )
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT id FROM imports")).scalars().all() == [second]
    engine.dispose()
    db_file = Path(sqlite_url.removeprefix("sqlite:///"))
    size = db_file.stat().st_size
    vac = runner.invoke(app, ["vacuum", "--db", sqlite_url])
    assert vac.exit_code == 0, vac.output
    assert db_file.stat().st_size < size / 2
    assert vac.output.startswith("vacuumed: ")


def test_vacuum_runs_on_postgresql(pg_url: str) -> None:
    out = CliRunner().invoke(app, ["vacuum", "--db", pg_url])
    assert out.exit_code == 0, out.output


def test_vacuum_on_postgresql_keeps_to_the_stores_own_tables(pg_url: str) -> None:
    """A team's database holds other schemas: ``toollens vacuum`` works through the store's
    tables only, so a table of another schema held by someone else's transaction (which a
    database-wide ``VACUUM`` would wait on) does not stop it."""
    url = sa.engine.make_url(pg_url)
    other = f"{url.query['options'].split('=', 1)[1]}_other"
    admin = sa.create_engine(url.set(query={}))
    holder = admin.connect()
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{other}"'))
            conn.execute(sa.text(f'CREATE TABLE "{other}".busy (id int)'))
        holder.execute(sa.text(f'LOCK TABLE "{other}".busy IN SHARE UPDATE EXCLUSIVE MODE'))
        make_engine(pg_url).dispose()  # the store's schema
        done = threading.Event()
        thread = threading.Thread(
            target=lambda: (CliRunner().invoke(app, ["vacuum", "--db", pg_url]), done.set()),
            daemon=True,
        )
        thread.start()
        assert done.wait(60), "vacuum waited on another schema's table"
    finally:
        holder.rollback()
        holder.close()
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{other}" CASCADE'))
        admin.dispose()


@pytest.mark.parametrize("days", ["0", "-1"])
def test_prune_keeps_at_least_a_day(sqlite_url: str, days: str) -> None:
    out = CliRunner().invoke(app, ["prune", "--keep-days", days, "--db", sqlite_url, "--yes"])
    assert out.exit_code == 2


def test_a_deleted_trace_comes_back_when_its_unchanged_file_is_imported_again(
    engine: sa.Engine, tmp_path: Path
) -> None:
    _store(engine, tmp_path)
    delete_rows(engine, traces_by_display_id("a"))
    again = import_paths(engine, [tmp_path / "one.jsonl"], workers=0)
    assert (again.files_unchanged, again.traces, again.unchanged) == (0, 1, 1)
    with engine.connect() as conn:
        left = conn.execute(sa.text("SELECT display_id FROM traces ORDER BY display_id"))
        assert left.scalars().all() == ["a", "b", "c"]


def test_a_deleted_trace_is_no_longer_found_by_the_content_search(
    engine: sa.Engine, tmp_path: Path
) -> None:
    from db.queries.search import search_content

    _store(engine, tmp_path)
    assert search_content(engine, "weather for a").total == 1
    delete_rows(engine, traces_by_display_id("a"))
    assert search_content(engine, "weather for a").total == 0
    assert search_content(engine, "weather for b").total == 1
