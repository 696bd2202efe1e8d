"""Every page of the dashboard, with every section, on a ClickHouse store (issue 41): the same
real files imported into SQLite and into ClickHouse, each page opened on both, no exception and
the same headline figures — on the 2-shard cluster (the 2018 server, 18.16) and on the
in-process current engine (chdb)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import CLICKHOUSE_CLUSTER, clickhouse_addresses, clickhouse_unavailable
from dbfixture import OpenPage, open_app
from page_support import metrics, open_section
from typer.testing import CliRunner

from dashboard import pages
from db import door
from ingest.cli import app

runner = CliRunner()

#: Real files of three formats: Claude Code sessions (timestamps, durations, errors, loops),
#: Langfuse exports of ten agent frameworks, OpenAI chat files.
FILES = (
    "claude-code/069508a5-1193-487c-a9b5-a6f5f3ae4f98.jsonl",
    "claude-code/0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl",
    "claude-code/2cba43de-c8d2-4a69-add8-9fae3ad93900.jsonl",
    "langfuse-export",
    "openai-chat",
)

#: Every page, and every section of a page with sections: ``(page, section or "")``.
VIEWS = [(page, section) for page in pages.PAGES for section in page.sections or ("",)]


def _imported(db: str, realdata: Path) -> str:
    result = runner.invoke(app, ["import", "--db", db, *(str(realdata / f) for f in FILES)])
    assert result.exit_code == 0, result.output
    return db


@pytest.fixture(scope="module")
def sqlite_store(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    return _imported(f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'store.db'}", realdata)


@pytest.fixture(scope="module")
def first_trace(sqlite_store: str) -> str:
    """The display id of the first trace imported (the Trace page opens on it)."""
    engine = sa.create_engine(sqlite_store)
    with engine.connect() as conn:
        found = conn.execute(sa.text("SELECT display_id FROM traces ORDER BY id LIMIT 1"))
        display_id = str(found.scalar_one())
    engine.dispose()
    return display_id


@pytest.fixture(scope="module", params=["cluster", "chdb"])
def clickhouse_store(request: pytest.FixtureRequest, realdata: Path) -> Iterator[str]:
    """The same files in a ClickHouse store: a fresh database on the 2-shard cluster, or in
    the in-process engine."""
    database = f"t_{uuid.uuid4().hex[:12]}"
    if request.param == "chdb":
        chdb = request.getfixturevalue("chdb_session")
        try:
            yield _imported(f"chdb://?database={database}", realdata)
        finally:
            chdb.query(f"DROP DATABASE IF EXISTS {database}")
        return
    problem = clickhouse_unavailable()
    if problem is not None:
        if os.environ.get("TOOLLENS_REQUIRE_CLICKHOUSE") == "1":
            pytest.fail(f"TOOLLENS_REQUIRE_CLICKHOUSE=1 but {problem}")
        pytest.skip(problem)
    from clickhouse_driver import Client

    servers = ",".join(f"{h}:{p}" for h, p in clickhouse_addresses())
    try:
        yield _imported(f"clickhouse://{servers}/{database}?cluster={CLICKHOUSE_CLUSTER}", realdata)
    finally:
        for host, port in clickhouse_addresses():
            client = Client(host=host, port=port)
            client.execute(f"DROP DATABASE IF EXISTS {database}")
            client.disconnect()


def _open(monkeypatch: pytest.MonkeyPatch, db: str, page: pages.Page, section: str, trace: str):
    params = {"trace": trace} if page is pages.TRACE else None
    at = open_app(monkeypatch, db, page=page.script, params=params)
    if section and section != page.sections[0]:
        at = open_section(at, page.section_param, section)
    return at


@pytest.mark.parametrize(
    ("page", "section"), VIEWS, ids=[f"{p.key}-{s or 'page'}" for p, s in VIEWS]
)
def test_every_page_shows_on_clickhouse_the_figures_sqlite_shows(
    monkeypatch: pytest.MonkeyPatch,
    sqlite_store: str,
    clickhouse_store: str,
    first_trace: str,
    page: pages.Page,
    section: str,
) -> None:
    expected = _open(monkeypatch, sqlite_store, page, section, first_trace)
    assert not expected.exception
    found = _open(monkeypatch, clickhouse_store, page, section, first_trace)
    assert [e.value for e in found.exception] == []
    assert [t.value for t in found.title] == [page.title]
    if page is pages.REVIEW:
        # The one page that writes as it reads: refused, in one line.
        assert [i.value for i in found.info] == [door.REVIEW_REFUSED]
        return
    assert [e.value for e in found.error] == [e.value for e in expected.error]
    assert metrics(found) == metrics(expected)
    # The same tables, of as many rows and columns.
    assert [d.value.shape for d in found.dataframe] == [d.value.shape for d in expected.dataframe]


def test_the_overview_counts_every_trace_imported(
    open_page: OpenPage, clickhouse_store: str, realdata: Path
) -> None:
    at = open_page(clickhouse_store)
    # The 3 Claude Code sessions and the traces of the Langfuse exports and OpenAI chat files
    # (as `toollens import` into SQLite counts them: "218 traces imported").
    assert metrics(at)["Traces"] == "218"
