"""``toollens summary`` imports neither pandas (with numpy) nor, on a store already at the
head, Alembic: measured, they were about 1.2 s of the command's 3 s, its figures 0.2 s. Nor
SQLAlchemy's ORM (the tables are Core tables, ``db.schema``) or pydantic (typer below 0.29):
0.2 s each of a 1.2 s command. Each test runs the code in a fresh interpreter, since this one
has imported everything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from dbfixture import build_fixture

from db.migrate import MIGRATIONS_DIR, current_revision, downgrade, head_revision
from db.queries.summary import summarize

ROOT = Path(__file__).resolve().parents[1]

# Runs the command line with the given arguments, then names the heavy modules it loaded.
RUN_AND_NAME_MODULES = """
import sys
from ingest.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exit:
    if exit.code:
        raise
heavy = ("pandas", "numpy", "alembic", "pydantic", "sqlalchemy.orm")
print("loaded:", [m for m in heavy if m in sys.modules])
"""


def _python(code: str, *args: str) -> str:
    """What ``code`` prints, run by this Python from the repository's root (its ``db`` and
    ``ingest``, not an installed copy)."""
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.stderr == ""
    return result.stdout


def test_importing_the_summary_loads_no_pandas() -> None:
    assert _python("import sys, db.queries.summary; print('pandas' in sys.modules)") == "False\n"


def test_the_summary_command_loads_no_heavy_module(db_url: str, engine: sa.Engine) -> None:
    build_fixture(engine)
    expected = summarize(engine)
    out = _python(RUN_AND_NAME_MODULES, "summary", "--json", "--db", db_url)
    printed, loaded = out.rstrip("\n").rsplit("\n", 1)
    assert orjson.loads(printed) == expected
    assert expected["tool_results"] == 9
    assert loaded == "loaded: []"


def test_a_store_behind_the_head_is_migrated_with_alembic(db_url: str, engine: sa.Engine) -> None:
    build_fixture(engine)
    expected = summarize(engine)
    previous = ScriptDirectory(str(MIGRATIONS_DIR)).get_revision(head_revision()).down_revision
    assert isinstance(previous, str)
    downgrade(engine, previous)
    assert current_revision(engine) == previous
    out = _python(RUN_AND_NAME_MODULES, "summary", "--json", "--db", db_url)
    printed, loaded = out.rstrip("\n").rsplit("\n", 1)
    assert orjson.loads(printed) == expected
    assert loaded == "loaded: ['alembic']"
    assert current_revision(engine) == head_revision()
