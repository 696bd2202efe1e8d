"""``db.dialect.add_into``, the rollups' upsert: a new key is inserted, a stored one gets the
measures added — within one transaction as often as it is called (PostgreSQL stages the rows in
a temporary table that only a commit empties), after a rollback, and after a commit."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from db import dialect
from db.engine import make_engine
from db.writes.transaction import writing

COLUMNS = ("key", "label", "n", "tokens")
MEASURES = ("n", "tokens")


@pytest.fixture
def counted(db_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(db_url, migrate=False)
    meta = sa.MetaData()
    sa.Table(
        "counted",
        meta,
        sa.Column("key", sa.LargeBinary(16), primary_key=True),
        sa.Column("label", sa.String(20)),
        sa.Column("n", sa.BigInteger, nullable=False),
        sa.Column("tokens", sa.BigInteger, nullable=False),
    )
    meta.create_all(engine)
    try:
        yield engine
    finally:
        meta.drop_all(engine)
        engine.dispose()


def _rows(engine: sa.Engine) -> list[tuple[bytes, str | None, int, int]]:
    with engine.connect() as conn:
        found = conn.execute(sa.text("SELECT key, label, n, tokens FROM counted ORDER BY key"))
        return [(bytes(k), label, n, tokens) for k, label, n, tokens in found]


def test_new_keys_are_inserted_and_stored_keys_get_the_measures_added(
    counted: sa.Engine,
) -> None:
    with writing(counted) as conn:
        dialect.add_into(
            conn, "counted", COLUMNS, MEASURES, [(b"a", "first", 1, 10), (b"b", None, 2, 20)]
        )
        # Again in the same transaction: the first call's rows are not added a second time.
        dialect.add_into(
            conn, "counted", COLUMNS, MEASURES, [(b"b", None, 5, 50), (b"c", "new", 1, 0)]
        )
    assert _rows(counted) == [
        (b"a", "first", 1, 10),
        (b"b", None, 7, 70),
        (b"c", "new", 1, 0),
    ]
    with writing(counted) as conn:
        dialect.add_into(conn, "counted", COLUMNS, MEASURES, [(b"a", "first", -1, -10)])
    assert _rows(counted)[0] == (b"a", "first", 0, 0)


def test_a_rolled_back_transaction_adds_nothing_and_the_next_one_works(
    counted: sa.Engine,
) -> None:
    for _ in range(2):
        with pytest.raises(RuntimeError), writing(counted) as conn:
            dialect.add_into(conn, "counted", COLUMNS, MEASURES, [(b"a", "x", 100, 100)])
            raise RuntimeError("the batch failed")
        # On PostgreSQL the first rollback took the staging table's creation with it, the
        # second its rows.
        with writing(counted) as conn:
            dialect.add_into(conn, "counted", COLUMNS, MEASURES, [(b"a", "x", 1, 1)])
    assert _rows(counted) == [(b"a", "x", 2, 2)]
    with writing(counted) as conn:
        dialect.add_into(conn, "counted", COLUMNS, MEASURES, [(b"a", "x", 2, 2)])
        dialect.add_into(conn, "counted", COLUMNS, MEASURES, [(b"b", "y", 3, 3)])
    assert _rows(counted) == [(b"a", "x", 4, 4), (b"b", "y", 3, 3)]


def test_postgresql_stages_in_a_temporary_table_a_commit_empties(pg_url: str) -> None:
    engine = make_engine(pg_url, migrate=False)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE counted (key bytea PRIMARY KEY, n bigint)"))
        with engine.connect() as conn:
            with conn.begin():
                dialect.add_into(conn, "counted", ("key", "n"), ("n",), [(b"k", 4)])
                staged = "SELECT count(*) FROM staged_counted"
                assert conn.execute(sa.text(staged)).scalar_one() == 1
                persistence = conn.execute(
                    sa.text("SELECT relpersistence FROM pg_class WHERE relname = 'staged_counted'")
                ).scalar_one()
                assert persistence == "t"
            assert conn.execute(sa.text(staged)).scalar_one() == 0
            assert conn.execute(sa.text("SELECT n FROM counted")).scalar_one() == 4
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE counted"))
        engine.dispose()


def test_a_role_without_temporary_tables_upserts_row_by_row(pg_url: str) -> None:
    # A database of its own, whose owner may not create temporary tables (PUBLIC's and the
    # owner's TEMPORARY privilege revoked): the privilege of every other test stays.
    name = f"toollens_notemp_{uuid.uuid4().hex[:10]}"
    admin = make_engine(pg_url, migrate=False)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        may = (
            "SELECT rolsuper OR (rolcreaterole AND rolcreatedb) FROM pg_roles "
            "WHERE rolname = current_user"
        )
        if not conn.exec_driver_sql(may).scalar():
            admin.dispose()
            pytest.skip("the tests' PostgreSQL user may not create roles and databases")
        conn.exec_driver_sql(f"CREATE ROLE {name} LOGIN")
        conn.exec_driver_sql(f"CREATE DATABASE {name} OWNER {name}")
        conn.exec_driver_sql(f"REVOKE TEMPORARY ON DATABASE {name} FROM PUBLIC, {name}")
    url = make_url(pg_url).set(username=name, database=name, query={})
    engine = make_engine(url.render_as_string(hide_password=False), migrate=False)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE counted (key bytea PRIMARY KEY, n bigint)"))
        with writing(engine) as conn:
            dialect.add_into(conn, "counted", ("key", "n"), ("n",), [(b"a", 1), (b"b", 2)])
            dialect.add_into(conn, "counted", ("key", "n"), ("n",), [(b"b", 3)])
            assert conn.info["toollens_may_stage"] is False
        with engine.connect() as conn:
            found = conn.execute(sa.text("SELECT key, n FROM counted ORDER BY key")).all()
        assert [(bytes(k), n) for k, n in found] == [(b"a", 1), (b"b", 5)]
    finally:
        engine.dispose()
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
            conn.exec_driver_sql(f"DROP ROLE {name}")
        admin.dispose()
