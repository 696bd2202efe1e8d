"""PostgreSQL session settings (``db.engine``, docs/postgresql.md): each new connection has
``work_mem`` of at least 64 MB and no JIT compilation."""

from __future__ import annotations

import sqlalchemy as sa

from db.engine import make_engine


def test_a_postgresql_session_has_its_settings(pg_url: str) -> None:
    engine = make_engine(pg_url)
    try:
        with engine.connect() as conn:
            work_mem = conn.execute(sa.text("SELECT pg_size_bytes(current_setting('work_mem'))"))
            assert work_mem.scalar_one() >= 64 * 1024**2
            assert conn.execute(sa.text("SELECT current_setting('jit')")).scalar_one() == "off"
    finally:
        engine.dispose()
