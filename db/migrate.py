"""Alembic migrations, applied automatically the first time a database is opened.

Opening a store already at the head imports no Alembic (a fifth of a second of every
command): the stored revision is read from ``alembic_version`` with SQLAlchemy, and the
revisions this ToolLens knows from the ``revision = …`` lines of the migration files, without
running them (a test checks they are Alembic's). Alembic is imported to migrate.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, String, column, inspect, select, table

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
#: Alembic's table of the revision a database is at (its default name).
VERSION_TABLE = "alembic_version"
#: ``revision = "0022"`` and ``down_revision = "0021"`` (or ``None``) at a migration's top level.
_REVISION_LINE = re.compile(
    r"^(revision|down_revision)(?:\s*:[^=\n]*)?\s*=\s*(?:[\"']([^\"']+)[\"']|None)\s*$",
    re.MULTILINE,
)


def alembic_config(engine: Engine) -> Config:
    """An Alembic config bound to ``engine`` (no ini file needed)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def _revisions() -> dict[str, str | None]:
    """Each migration's revision and the one it revises, read from the files' text."""
    graph: dict[str, str | None] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        found = dict(_REVISION_LINE.findall(path.read_text(encoding="utf-8")))
        graph[found["revision"]] = found.get("down_revision") or None
    return graph


def head_revision() -> str:
    """The newest migration this version of ToolLens knows: the one no other revises."""
    graph = _revisions()
    (head,) = set(graph) - set(graph.values())
    return head


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at (``None`` for an empty database)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        version = column("version_num", String)
        return conn.execute(select(version).select_from(table(VERSION_TABLE))).scalar_one_or_none()


class NewerStoreError(RuntimeError):
    """The database was migrated by a newer ToolLens: its schema revision is unknown here."""

    def __init__(self, location: str, revision: str) -> None:
        self.location = location
        self.revision = revision
        super().__init__(
            f"toollens: the database at {location} was written by a newer ToolLens "
            f"(schema {revision}); upgrade ToolLens"
        )


def store_location(engine: Engine) -> str:
    """Where the database is, fit to show: the SQLite file, else the URL without password.

    >>> from sqlalchemy import create_engine
    >>> store_location(create_engine("sqlite:///runs/toollens.db"))
    'runs/toollens.db'
    """
    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database:
        return url.database
    return url.render_as_string(hide_password=True)


def known_revisions() -> set[str]:
    """Every migration revision this version of ToolLens has."""
    return set(_revisions())


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database to ``revision``; a no-op (two cheap queries) when it is already there
    with its rollups complete.

    Raises :class:`NewerStoreError` when a newer ToolLens migrated the database past what this
    one knows (Alembic would fail with a traceback naming a revision it cannot locate).
    """
    current = current_revision(engine)
    if revision == "head" and current == head_revision():
        # Rollups left uncounted at the head: a rebuild after a migration that was interrupted
        # (it takes minutes on a large store); without this the pages would read the base
        # tables until someone ran ``toollens rebuild-rollups``.
        count_rollups(engine)
        return
    if current is not None and current not in known_revisions():
        raise NewerStoreError(store_location(engine), current)
    from alembic import command

    command.upgrade(alembic_config(engine), revision)
    if revision == "head":
        count_rollups(engine)


def count_rollups(engine: Engine) -> None:
    """Fill what the rollups lack: all of them for a store from before them (or whose rebuild
    was interrupted), else the ones a migration added (``pending``), counted alone. The pages
    read the base tables for what is not counted."""
    from db.rollups import upkeep as rollups

    if not rollups.is_complete(engine):
        rollups.rebuild(engine)
    elif missing := rollups.pending(engine):
        rollups.rebuild(engine, only=missing)


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Walk migrations down to ``revision`` (used by the migration tests)."""
    from alembic import command

    command.downgrade(alembic_config(engine), revision)
