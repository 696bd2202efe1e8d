"""PostgreSQL session settings (``db.engine``, docs/postgresql.md): each new connection has
``work_mem`` of at least 64 MB and no JIT compilation."""

from __future__ import annotations

import pytest
import sqlalchemy as sa


def test_a_postgresql_session_has_its_settings(engine: sa.Engine) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL session settings")
    with engine.connect() as conn:
        work_mem = conn.execute(sa.text("SELECT pg_size_bytes(current_setting('work_mem'))"))
        assert work_mem.scalar_one() >= 64 * 1024**2
        assert conn.execute(sa.text("SELECT current_setting('jit')")).scalar_one() == "off"
