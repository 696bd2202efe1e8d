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
        _clickhouse_header(),
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


#: The modules that take longest (``--durations`` of a whole run on the 2-core machine), longest
#: first. ``make test`` hands whole modules to its workers in collection order (``--dist
#: loadfile``), so these go first: a long module started last would keep one worker busy while
#: the others sit idle at the end.
SLOW_MODULES = (
    "test_rollups_clickhouse",
    "test_browser",
    "test_browser_url_walk",
    "test_rollups",
    "test_clickhouse_maintenance",
    "test_compare_aa",
    "test_clickhouse_io",
    "test_copy_clickhouse",
    "test_clickhouse_parity",
    "test_import_interrupted",
    "test_browser_landing",
    "test_browser_login",
    "test_browser_debugging_path",
    "test_browser_timeline_sessions",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the :data:`SLOW_MODULES` first (each module's tests stay together and in order), and
    mark every PostgreSQL test ``pg``, so that ``-m pg`` runs exactly those and ``-m "not pg"``
    the rest (the SQLite variant of a test parametrized over both stays unmarked)."""
    rank = {name: i for i, name in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))
    for item in items:
        if runs_on_postgresql(item):
            item.add_marker(pytest.mark.pg)


def _clickhouse_header() -> str:
    """The ClickHouse cluster and the in-process engine: used, or why their tests skip."""
    import importlib.util

    problem = clickhouse_unavailable()
    required = " (required)" if os.environ.get("TOOLLENS_REQUIRE_CLICKHOUSE") == "1" else ""
    servers = ",".join(f"{h}:{p}" for h, p in clickhouse_addresses())
    cluster = "used" if problem is None else f"tests skip: {problem}"
    engine = "chdb used" if importlib.util.find_spec("chdb") else "chdb tests skip: not installed"
    return f"toollens: ClickHouse cluster {servers}{required}: {cluster}; {engine}"


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
def open_page(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The dashboard page opener of the AppTest tests (``dbfixture.OpenPage``): it opens the
    app on a store with ``dbfixture.open_app`` and asserts the run raised no exception."""
    from dbfixture import open_app

    def opened(db_url: str, page: str | None = None, params: dict[str, str] | None = None) -> Any:
        at = open_app(monkeypatch, db_url, page=page, params=params)
        assert not at.exception
        return at

    return opened


@pytest.fixture
def open_analysis_page(open_page: Any, analysis_store_url: str) -> Any:
    """``open_page`` on :func:`analysis_store_url` (``dbfixture.OpenStorePage``)."""

    def opened(page: str | None = None, params: dict[str, str] | None = None) -> Any:
        return open_page(analysis_store_url, page, params)

    return opened


@pytest.fixture
def incident_store(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[sa.Engine, dict[str, int]]]:
    """The incident (``tests/incident.py``) in a SQLite file, with its trace ids by display
    id; no reviewer name or labels preset."""
    from incident import import_incident

    from db.engine import make_engine

    engine = make_engine(sqlite_url)
    ids = import_incident(engine, tmp_path)
    monkeypatch.delenv("TOOLLENS_USER", raising=False)
    monkeypatch.delenv("TOOLLENS_LABELS", raising=False)
    yield engine, ids
    engine.dispose()


@pytest.fixture
def analysis_store(engine: sa.Engine) -> sa.Engine:
    """The store of the Errors, Tokens, Loops, Suggestions and Imports pages on each database
    (``dbfixture.build_pages2_database``): three hand-made traces whose figures are recomputed
    on paper in that module's comment, so the tests on it assert exact values."""
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


# --- ClickHouse ----------------------------------------------------------------------------------
# A real cluster of two servers on loopback (``.ci/clickhouse-cluster start``: two shards in the
# cluster ``toollens``), found through ``TOOLLENS_TEST_CLICKHOUSE`` (``host:port,host:port``, the
# native protocol; default: the script's ports). Without it the tests skip and say why, unless
# ``TOOLLENS_REQUIRE_CLICKHOUSE=1`` (CI), where they fail. The in-process current engine (chdb,
# an optional dev dependency) has its own fixture, which skips where it is not installed.

#: The cluster's name in the servers' ``<remote_servers>``.
CLICKHOUSE_CLUSTER = "toollens"
DEFAULT_CLICKHOUSE = "127.0.0.1:19001,127.0.0.1:19002"


def clickhouse_addresses() -> list[tuple[str, int]]:
    """The cluster's servers, one per shard, as ``TOOLLENS_TEST_CLICKHOUSE`` gives them."""
    value = os.environ.get("TOOLLENS_TEST_CLICKHOUSE") or DEFAULT_CLICKHOUSE
    addresses = []
    for item in value.split(","):
        host, _, port = item.strip().rpartition(":")
        addresses.append((host or "127.0.0.1", int(port)))
    return addresses


_clickhouse_problem: str | None = None
_clickhouse_checked = False


def clickhouse_unavailable() -> str | None:
    """Why the ClickHouse cluster cannot be used (``None`` when every server answers and the
    first one knows the cluster with one shard per server)."""
    global _clickhouse_checked, _clickhouse_problem
    if _clickhouse_checked:
        return _clickhouse_problem
    _clickhouse_checked = True
    try:
        from clickhouse_driver import Client
    except ImportError:
        _clickhouse_problem = "clickhouse-driver is not installed (pip install -e '.[dev]')"
        return _clickhouse_problem
    addresses = clickhouse_addresses()
    for host, port in addresses:
        client = Client(host=host, port=port, connect_timeout=2, send_receive_timeout=10)
        try:
            client.execute("SELECT 1")
        except Exception as exc:
            _clickhouse_problem = (
                f"no ClickHouse server answers at {host}:{port} ({exc.__class__.__name__}; "
                "start one with `.ci/clickhouse-cluster start`)"
            )
            return _clickhouse_problem
        finally:
            client.disconnect()
    first = Client(host=addresses[0][0], port=addresses[0][1], connect_timeout=2)
    try:
        shards = first.execute(
            "SELECT count() FROM system.clusters WHERE cluster = %(c)s",
            {"c": CLICKHOUSE_CLUSTER},
        )[0][0]
    finally:
        first.disconnect()
    if shards != len(addresses):
        _clickhouse_problem = (
            f"the server at {addresses[0][0]}:{addresses[0][1]} has {shards} shards in cluster "
            f"{CLICKHOUSE_CLUSTER!r}, {len(addresses)} servers were named"
        )
    return _clickhouse_problem


class ClickHouseCluster:
    """The test's view of the cluster: one client per shard, and a database of its own created
    on every server (dropped afterwards), so tests running side by side never meet."""

    def __init__(self, addresses: list[tuple[str, int]], database: str) -> None:
        from clickhouse_driver import Client

        self.cluster = CLICKHOUSE_CLUSTER
        self.database = database
        self.shards = [
            Client(host=host, port=port, settings={"insert_distributed_sync": 1})
            for host, port in addresses
        ]

    @property
    def url(self) -> str:
        """The store's ``--db`` URL: every server, this test's database, the cluster's name."""
        hosts = (client.connection.hosts[0] for client in self.shards)
        servers = ",".join(f"{host}:{port}" for host, port in hosts)
        return f"clickhouse://{servers}/{self.database}?cluster={self.cluster}"

    def on_every_shard(self, sql: str) -> None:
        for client in self.shards:
            client.execute(sql)

    def execute(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """``sql`` on the first server (where a Distributed table reaches every shard)."""
        return list(self.shards[0].execute(sql, params))

    def insert(self, sql: str, rows: list[tuple[Any, ...]]) -> int:
        """``INSERT … VALUES`` of ``rows`` through the first server; how many were written."""
        return int(self.shards[0].execute(sql, rows))

    def close(self) -> None:
        for client in self.shards:
            client.disconnect()


def require_clickhouse() -> None:
    """Skip the test (fail it under ``TOOLLENS_REQUIRE_CLICKHOUSE=1``) when the cluster does not
    answer."""
    problem = clickhouse_unavailable()
    if problem is not None:
        if os.environ.get("TOOLLENS_REQUIRE_CLICKHOUSE") == "1":
            pytest.fail(f"TOOLLENS_REQUIRE_CLICKHOUSE=1 but {problem}")
        pytest.skip(problem)


@pytest.fixture
def clickhouse_cluster() -> Iterator[ClickHouseCluster]:
    """The running 2-shard cluster with a fresh database on each server; skips (or fails under
    ``TOOLLENS_REQUIRE_CLICKHOUSE=1``) when it does not answer."""
    require_clickhouse()
    database = f"t_{uuid.uuid4().hex[:12]}"
    cluster = ClickHouseCluster(clickhouse_addresses(), database)
    cluster.on_every_shard(f"CREATE DATABASE {database}")
    try:
        yield cluster
    finally:
        cluster.on_every_shard(f"DROP DATABASE IF EXISTS {database}")
        cluster.close()


@pytest.fixture(scope="session")
def chdb_session() -> Iterator[Any]:
    """An in-process current ClickHouse engine (``chdb``, an optional dev dependency: about
    half a gigabyte); skips when it is not installed. One per test process: chdb keeps one
    engine per process."""
    try:
        from chdb import session
    except ImportError:
        pytest.skip("chdb is not installed (the in-process ClickHouse: pip install chdb)")
    engine = session.Session()
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture(params=["cluster", "chdb"])
def clickhouse_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """The ``--db`` URL of an empty ClickHouse store: a fresh database on the 2-shard cluster,
    then in the in-process engine (chdb)."""
    if request.param == "cluster":
        yield request.getfixturevalue("clickhouse_cluster").url
        return
    session = request.getfixturevalue("chdb_session")
    database = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield f"chdb://?database={database}"
    finally:
        session.query(f"DROP DATABASE IF EXISTS {database}")
