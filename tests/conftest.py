"""Shared fixtures: the real-data folder, and databases (SQLite file and real PostgreSQL).

PostgreSQL tests use ``TOOLLENS_TEST_PG_URL`` (default: the local server at 127.0.0.1:5432,
database ``test``); each test gets its own schema, dropped afterwards. Without a server they
skip with the reason, unless ``TOOLLENS_REQUIRE_PG=1`` (set by CI), where a skip would hide a
failure, so they fail instead.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schema_replay
import sqlalchemy as sa

# An empty test database is brought to the head schema by a replay of the statements the first
# real migration of its dialect sent (``tests/schema_replay.py``; checked in
# ``tests/test_schema_replay.py``): it saves a fifth of the suite's time.
schema_replay.install()

#: ``TOOLLENS_REALDATA`` names the folder where the checkout is not beside ``shared/`` (a worktree).
REALDATA = Path(
    os.environ.get("TOOLLENS_REALDATA")
    or Path(__file__).resolve().parents[2] / "shared" / "realdata"
)
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def pytest_report_header() -> list[str]:
    """What this run tests against, shown even under ``-q``: the library versions, the
    PostgreSQL server (used, or why its tests skip), the browser and the real data."""
    import sqlalchemy
    import streamlit
    from browser_support import browser_unavailable, chromium_version

    pg = _pg_admin_url()
    problem = pg_unavailable()
    required = " (required)" if os.environ.get("TOOLLENS_REQUIRE_PG") else ""
    browser = browser_unavailable()
    return [
        f"toollens: sqlalchemy {sqlalchemy.__version__}, streamlit {streamlit.__version__}",
        f"toollens: PostgreSQL {pg}{required}: "
        + ("used" if problem is None else f"tests skip: {problem}"),
        "toollens: browser "
        + (chromium_version() if browser is None else f"tests skip: {browser}"),
        "toollens: realdata "
        + (f"used from {REALDATA}" if REALDATA.is_dir() else f"tests skip: no {REALDATA}"),
    ]


def runs_on_postgresql(item: pytest.Item) -> bool:
    """The test talks to the PostgreSQL server: it asks for ``pg_url``, or one of its parameters
    is ``"postgresql"`` (the ``db_url`` and ``module_db_url`` fixtures, a ``dialect``)."""
    if "pg_url" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and any(
        isinstance(value, str) and value == "postgresql" for value in callspec.params.values()
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every PostgreSQL test ``pg``, so that ``-m pg`` runs exactly those and ``-m "not
    pg"`` the rest (the SQLite variant of a test parametrized over both stays unmarked)."""
    for item in items:
        if runs_on_postgresql(item):
            item.add_marker(pytest.mark.pg)


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The folder of real public traces (``../shared/realdata``); skips when absent."""
    if not REALDATA.is_dir():
        if os.environ.get("TOOLLENS_REQUIRE_REALDATA"):
            pytest.fail(f"TOOLLENS_REQUIRE_REALDATA is set but {REALDATA} is missing")
        pytest.skip(f"../shared/realdata not found (looked in {REALDATA})")
    return REALDATA


def _pg_admin_url() -> str:
    return os.environ.get("TOOLLENS_TEST_PG_URL", DEFAULT_PG_URL)


_pg_problem: str | None = None
_pg_checked = False


def pg_unavailable() -> str | None:
    """Why PostgreSQL cannot be used (``None`` when it answers)."""
    global _pg_checked, _pg_problem
    if not _pg_checked:
        _pg_checked = True
        try:
            engine = sa.create_engine(_pg_admin_url(), connect_args={"connect_timeout": 3})
            with engine.connect() as conn:
                conn.execute(sa.text("select 1"))
            engine.dispose()
        except Exception as exc:
            _pg_problem = (
                f"no PostgreSQL server answers at {_pg_admin_url()}: {exc.__class__.__name__}"
            )
    return _pg_problem


#: The system catalogs every test schema adds rows to and its ``DROP SCHEMA`` leaves dead.
CATALOGS = (
    "pg_attribute", "pg_class", "pg_depend", "pg_type", "pg_index", "pg_constraint",
    "pg_attrdef", "pg_trigger", "pg_statistic", "pg_sequence",
)  # fmt: skip


def pytest_sessionstart(session: pytest.Session) -> None:
    """Vacuum the test database's catalogs once per run (in the controller, not in each xdist
    worker). Each PostgreSQL test creates a schema of some thirty tables and drops it; where
    autovacuum is off (as on this project's machines) their catalog rows stay dead, a run leaves
    about 500,000 of them in ``pg_attribute``, and every later run's catalog lookups wade through
    them: the suite took 9 min 18 s, then 9 min 34 s, 10 min 31 s and 11 min 06 s in four runs
    on one machine (2 million dead rows, 440 MB of ``pg_attribute``). Plain ``VACUUM`` takes no
    lock that a running query would wait for; a role that may not vacuum a catalog gets a
    warning, not an error."""
    if hasattr(session.config, "workerinput") or pg_unavailable() is not None:
        return
    engine = sa.create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("VACUUM " + ", ".join(f"pg_catalog.{c}" for c in CATALOGS)))
    finally:
        engine.dispose()


def _require_pg() -> None:
    problem = pg_unavailable()
    if problem is None:
        return
    if os.environ.get("TOOLLENS_REQUIRE_PG"):
        pytest.fail(f"TOOLLENS_REQUIRE_PG is set but {problem}")
    pytest.skip(f"{problem} (set TOOLLENS_TEST_PG_URL to run the PostgreSQL tests)")


@contextlib.contextmanager
def fresh_pg_schema() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh, empty schema, dropped afterwards."""
    _require_pg()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(_pg_admin_url())
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = sa.engine.make_url(_pg_admin_url()).update_query_dict(
        {"options": f"-csearch_path={schema}"}
    )
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh, empty schema."""
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """An empty store shared by a module's tests, once on SQLite and once on PostgreSQL (for
    the browser tests, whose served store is built once per module)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('store') / 'toollens.db'}"
        return
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite file URL in the test's temporary folder."""
    return f"sqlite:///{tmp_path / 'toollens.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """The test runs once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    """A migrated engine on each database."""
    from db.engine import make_engine

    eng = make_engine(db_url)
    try:
        yield eng
    finally:
        eng.dispose()


@pytest.fixture
def store_url(sqlite_url: str) -> str:
    """A SQLite file holding the dashboard fixture store (``tests/dbfixture.py``); its URL."""
    from dbfixture import fixture_store

    return fixture_store(sqlite_url)


@pytest.fixture
def analysis_store(engine: sa.Engine) -> sa.Engine:
    """The store of the Errors, Tokens, Loops, Suggestions and Imports pages
    (``dbfixture.build_pages2_database``, figures worked out there) on each database."""
    from dbfixture import build_pages2_database

    build_pages2_database(engine)
    return engine


@pytest.fixture(scope="session")
def analysis_store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite file holding :func:`analysis_store`'s data, shared by the session (the pages
    only read it); its URL."""
    from dbfixture import build_pages2_database

    from db.engine import make_engine

    url = f"sqlite:///{tmp_path_factory.mktemp('analysis') / 'toollens.db'}"
    engine = make_engine(url)
    build_pages2_database(engine)
    engine.dispose()
    return url


#: Sections of the terminal summary: figures tests record with ``record_property`` under a
#: name starting with the section's title.
SUMMARY_SECTIONS = ("labelled agreement", "compare A/A")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Show the figures tests recorded with ``record_property`` under a name starting with
    one of :data:`SUMMARY_SECTIONS`: they are measurements to read, whatever the capture
    setting (the properties travel with the test reports, so this works under pytest-xdist
    too)."""
    for section in SUMMARY_SECTIONS:
        lines = [
            f"{name.removeprefix(section + ': ')}: {value}"
            for reports in terminalreporter.stats.values()
            for report in reports
            if getattr(report, "when", None) == "call"
            for name, value in getattr(report, "user_properties", ())
            if name.startswith(section)
        ]
        if lines:
            terminalreporter.section(section)
            for line in lines:
                terminalreporter.write_line(line)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium for a module of browser tests (skipped, or failed where CI requires
    it, when Chromium or playwright is missing)."""
    from browser_support import browser_unavailable, launch

    problem = browser_unavailable()
    if problem is not None:
        if os.environ.get("TOOLLENS_REQUIRE_BROWSER") == "1":
            pytest.fail(f"TOOLLENS_REQUIRE_BROWSER=1 but {problem}")
        pytest.skip(f"{problem} (browser tests need Chromium and playwright)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        try:
            yield chromium
        finally:
            chromium.close()
