"""Alembic migrations, applied automatically the first time a database is opened."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(engine: Engine) -> Config:
    """An Alembic config bound to ``engine`` (no ini file needed)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision() -> str:
    """The newest migration this version of ToolLens knows."""
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    head = script.get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at (``None`` for an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


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
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return {r.revision for r in script.walk_revisions()}


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
    command.upgrade(alembic_config(engine), revision)
    if revision == "head":
        count_rollups(engine)


def count_rollups(engine: Engine) -> None:
    """Fill what the rollups lack: all of them for a store from before them (or whose rebuild
    was interrupted), else the ones a migration added (``pending``), counted alone. The pages
    read the base tables for what is not counted."""
    from db import rollups

    if not rollups.is_complete(engine):
        rollups.rebuild(engine)
    elif missing := rollups.pending(engine):
        rollups.rebuild(engine, only=missing)


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Walk migrations down to ``revision`` (used by the migration tests)."""
    command.downgrade(alembic_config(engine), revision)
