"""Every statement the import and the pages run has a key in SQLAlchemy's statement cache.

A construct without a cache key makes the whole statement holding it uncacheable, silently:
it is compiled anew on every execution (the rollups' per-batch contribution statements, which
all group by the day of :func:`db.dialect.epoch_seconds`, spent 4 ms each compiling, a fifth of
the import's rollup upkeep). The check is SQLAlchemy's own: the execution context's
``cache_hit`` is ``NO_CACHE_KEY`` exactly when ``[no key]`` would be logged.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from dbfixture import OpenPage, fixture_store
from sqlalchemy.engine.interfaces import CacheStats
from sqlalchemy.sql.compiler import SQLCompiler

from dashboard import pages
from db import dialect
from db.engine import make_engine
from db.queries.filters import Filters
from db.queries.summary import summarize
from db.schema import TraceRow


@pytest.fixture
def uncached() -> Iterator[list[str]]:
    """The first line of each statement run while the test runs that had no cache key."""
    found: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        context = rest[-2]
        compiled = getattr(context, "compiled", None)
        # Driver-level SQL has no compiled form; DDL (the schema's creation) is not cached.
        if isinstance(compiled, SQLCompiler) and context.cache_hit is CacheStats.NO_CACHE_KEY:
            found.append(statement.strip().splitlines()[0][:120])

    sa.event.listen(sa.Engine, "after_cursor_execute", record)
    try:
        yield found
    finally:
        sa.event.remove(sa.Engine, "after_cursor_execute", record)


def test_the_custom_constructs_key_on_their_columns() -> None:
    table = TraceRow.__table__
    started, imported = table.c.started_at, table.c.imported_at
    built: list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = [
        (dialect.epoch_seconds, (started,), (imported,)),
        (dialect.seconds_between, (started, imported), (imported, started)),
        (dialect.json_list_contains, (table.c.tags, "a"), (table.c.metadata, "a")),
        (dialect.json_key_equals, (table.c.metadata, "k", "v"), (table.c.tags, "k", "v")),
    ]
    for build, one, other in built:
        key = sa.select(build(*one))._generate_cache_key()
        assert key is not None, build.__name__
        # The same construct built again: the same key (its compiled form is reused) ...
        assert sa.select(build(*one))._generate_cache_key() == key
        # ... and on other columns another key: never SQL compiled for another statement.
        assert sa.select(build(*other))._generate_cache_key() != key


def test_the_import_and_every_page_run_only_cacheable_statements(
    open_page: OpenPage, db_url: str, uncached: list[str]
) -> None:
    url = fixture_store(db_url)  # written by the import's writer, rollups kept
    for page in pages.PAGES:
        at = open_page(url, params={"model": "gpt-4o", "start": "2025-01-01"})
        if not page.default:
            at.switch_page(page.script).run()
        assert not at.exception, page.key
    engine = make_engine(url, migrate=False)
    try:
        since = datetime(2025, 1, 1, tzinfo=UTC)
        for filters in (Filters(tag="beta"), Filters(meta="env:prod"), Filters(start=since)):
            summarize(engine, filters=filters)
    finally:
        engine.dispose()
    assert uncached == []
