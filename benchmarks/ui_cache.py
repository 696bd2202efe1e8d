"""Where ``make bench-ui`` keeps its stores, and when it builds, reuses or rebuilds one.

The bench owns exactly these stores and never writes anything else:

* SQLite: ``.bench/ui-<size>.db`` (``ui-1m.db``, ``ui-10m.db``, ``ui-2k.db`` …);
* PostgreSQL: the schema ``toollens_bench_<size>`` of the database a server URL names
  (``--db postgresql+psycopg://postgres@127.0.0.1:5432/test``); other schemas are never touched.

A store records what it holds (its marker: size, seed, generator version; see
:func:`benchmarks.ui_store.marker`). An own store is reused while its marker is the one asked
for and rebuilt (saying why) when it differs. A store the bench did not build (another file,
a URL whose ``search_path`` names a schema) is measured as it is; a bench-built store at such a
place (a marker of another size) is measured as it is too, and replaced only with ``--rebuild``.
A missing file other than its own the bench refuses with one line, it does not create it.

Sizes above a million that are whole millions are built from the 1M store of the same seed by
SQL (:mod:`benchmarks.ui_scale`), in seconds per million; smaller or odd sizes are generated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.ui_scale import scale_into, set_marker
from benchmarks.ui_store import DAYS, after_bulk_load, generate_into, marker, store_marker
from db.engine import display_url, make_engine, resolve_url

REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO / ".bench"
#: Stores above this size (in whole multiples of it) are copies of the store of this size.
BASE_MESSAGES = 1_000_000
SCHEMA_PREFIX = "toollens_bench_"

Log = Callable[[str], None]


class Refused(SystemExit):
    """The bench will not measure or build what it was pointed at (one line says why)."""


def size_name(messages: int) -> str:
    """``1m`` for a million messages, ``50k`` for 50,000, ``1234`` otherwise.

    >>> size_name(10_000_000), size_name(2_000), size_name(1234)
    ('10m', '2k', '1234')
    """
    if messages % 1_000_000 == 0:
        return f"{messages // 1_000_000}m"
    if messages % 1000 == 0:
        return f"{messages // 1000}k"
    return str(messages)


def store_marker_for(messages: int, seed: int) -> str:
    """The marker of the bench's store of this size: generated, or scaled from the 1M store."""
    if messages > BASE_MESSAGES and messages % BASE_MESSAGES == 0:
        return f"{marker(messages, seed)} (1m x{messages // BASE_MESSAGES})"
    return marker(messages, seed)


def own_sqlite_path(messages: int) -> Path:
    """The bench's own SQLite file for ``messages``."""
    return BENCH_DIR / f"ui-{size_name(messages)}.db"


def own_schema(messages: int) -> str:
    """The bench's own PostgreSQL schema for ``messages``."""
    return f"{SCHEMA_PREFIX}{size_name(messages)}"


def schema_url(server_url: str, schema: str) -> str:
    """``server_url`` with ``search_path`` set to ``schema``."""
    url = make_url(server_url).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


def _names_schema(url: str) -> bool:
    return "search_path" in str(make_url(url).query.get("options", ""))


def _read_marker(url: str) -> str | None:
    """The store's marker, ``None`` when it has none (or no ToolLens tables)."""
    engine = make_engine(url, migrate=False)
    try:
        return store_marker(engine)
    except Exception:  # no imports table: not a ToolLens store at all
        return None
    finally:
        engine.dispose()


@dataclass(frozen=True, slots=True)
class Request:
    """The store asked for: its size and seed, and whether ``--rebuild`` was given."""

    messages: int
    seed: int
    rebuild: bool = False


def ensure(db: str | None, req: Request, log: Log = print) -> str:
    """The URL to measure for ``--db db`` (``None``: the bench's own SQLite store), built or
    rebuilt only where the bench owns the place (see the module docstring)."""
    if db is None:
        return _ensure_own_sqlite(req, log)
    url = resolve_url(db)
    if make_url(url).get_backend_name() == "postgresql":
        if _names_schema(url):
            log(f"store: {display_url(url)} names its schema; measuring it as it is")
            return url
        return _ensure_own_schema(url, req, log)
    path = Path(make_url(url).database or "").expanduser().resolve()
    if path == own_sqlite_path(req.messages).resolve():
        return _ensure_own_sqlite(req, log)
    if not path.exists():
        raise Refused(
            f"store: {path} does not exist; the bench builds stores only as "
            f".bench/ui-<size>.db (leave out --db) or in a PostgreSQL schema {SCHEMA_PREFIX}<size>"
        )
    found, wanted = _read_marker(url), store_marker_for(req.messages, req.seed)
    if found == wanted:
        log(f"store: reusing {path} ({found})")
    elif found is None:
        log(f"store: {path} was not built by the bench; measuring it as it is")
    elif not req.rebuild:
        log(f"store: {path} holds {found}; measuring it as it is (--rebuild replaces it)")
    else:
        log(f"store: {path} holds {found}, not {wanted}; rebuilding it (--rebuild)")
        _build_sqlite(path, req, log)
    return url


def _own_store_reusable(url: str, where: str, req: Request, log: Log, refusal: str) -> bool:
    """Whether the existing store at ``url``, in one of the bench's own places (``where``, as
    the log names it), is the one ``req`` asks for; if not, the log says it is rebuilt. A store
    there that the bench did not build is refused, ``refusal`` saying what is left to do."""
    found, wanted = _read_marker(url), store_marker_for(req.messages, req.seed)
    if found == wanted:
        log(f"store: reusing {where} ({found})")
        return True
    if found is None:
        raise Refused(f"store: {where} was not built by the bench; {refusal}")
    log(f"store: {where} holds {found}, not {wanted}; rebuilding it")
    return False


def _ensure_own_sqlite(req: Request, log: Log) -> str:
    path = own_sqlite_path(req.messages).resolve()
    url = f"sqlite:///{path}"
    if path.exists() and _own_store_reusable(
        url, str(path), req, log, "move it away to build there"
    ):
        return url
    _build_sqlite(path, req, log)
    return url


def _build_sqlite(path: Path, req: Request, log: Log) -> None:
    """Build into ``<path>.partial`` and rename it over ``path`` when complete."""
    partial = path.with_name(path.name + ".partial")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    base = _base_for(req)
    if base is not None:
        base_url = _ensure_own_sqlite(base, log)
        source = make_url(base_url).database or ""
    started = time.perf_counter()
    engine = make_engine(f"sqlite:///{partial}")
    try:
        _fill(engine, req, source if base is not None else None, log)
        with engine.begin() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        engine.dispose()
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    partial.rename(path)
    log(f"store: built {path} in {time.perf_counter() - started:.1f} s")


def _base_for(req: Request) -> Request | None:
    """The 1M store a bigger store is copied from (``None``: generate this one)."""
    if req.messages > BASE_MESSAGES and req.messages % BASE_MESSAGES == 0:
        return Request(BASE_MESSAGES, req.seed)
    return None


def _fill(engine: Engine, req: Request, base: str | None, log: Log) -> None:
    """Fill an empty store: generated, or ``messages / 1M`` copies of ``base``."""
    if base is None:
        log(f"store: generating {req.messages:,} messages (seed {req.seed})")
        generate_into(engine, req.messages, req.seed)
    else:
        factor = req.messages // BASE_MESSAGES
        log(f"store: copying the 1M store {factor} times by SQL")
        scale_into(engine, base, factor, DAYS, log)
        set_marker(engine, store_marker_for(req.messages, req.seed))
    started = time.perf_counter()
    after_bulk_load(engine)
    log(f"store: after_bulk_load (ANALYZE) in {time.perf_counter() - started:.1f} s")


def _schema_exists(server_url: str, schema: str) -> bool:
    admin = create_engine(server_url)
    try:
        with admin.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :s"),
                {"s": schema},
            ).first()
        return found is not None
    finally:
        admin.dispose()


def _admin(server_url: str, sql: str) -> None:
    admin = create_engine(server_url)
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(sql)
    finally:
        admin.dispose()


def _ensure_own_schema(server_url: str, req: Request, log: Log) -> str:
    schema = own_schema(req.messages)
    url = schema_url(server_url, schema)
    if _schema_exists(server_url, schema) and _own_store_reusable(
        url, f"schema {schema}", req, log, "not touching it"
    ):
        return url
    base = _base_for(req)
    base_schema = None
    if base is not None:
        _ensure_own_schema(server_url, base, log)
        base_schema = own_schema(base.messages)
    partial = f"{schema}_partial"
    _admin(server_url, f'DROP SCHEMA IF EXISTS "{partial}" CASCADE; CREATE SCHEMA "{partial}"')
    started = time.perf_counter()
    engine = make_engine(schema_url(server_url, partial))
    try:
        _fill(engine, req, base_schema, log)
    finally:
        engine.dispose()
    _admin(
        server_url,
        f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; ALTER SCHEMA "{partial}" RENAME TO "{schema}"',
    )
    log(f"store: built schema {schema} in {time.perf_counter() - started:.1f} s")
    return url


def bytes_per_message(url: str) -> tuple[int, float]:
    """The store's size in bytes and per message: the file (with its WAL) on SQLite, the sum of
    ``pg_total_relation_size`` of the schema's tables on PostgreSQL."""
    engine = make_engine(url, migrate=False)
    try:
        with engine.connect() as conn:
            messages = int(conn.exec_driver_sql("SELECT count(*) FROM messages").scalar_one())
            if engine.dialect.name == "sqlite":
                path = Path(make_url(url).database or "")
                size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
            else:
                size = int(
                    conn.exec_driver_sql(
                        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                    ).scalar_one()
                )
    finally:
        engine.dispose()
    return size, size / max(1, messages)
