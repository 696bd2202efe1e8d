"""Alembic environment: runs migrations on the engine handed over in ``config.attributes``."""

from __future__ import annotations

from alembic import context

from db.schema import Base
from db.writes.search_index import is_search_object

config = context.config
engine = config.attributes["engine"]

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=True,  # SQLite needs table copies for ALTER; batch mode does that.
        compare_type=True,
        # The content search's FTS5 tables and GIN indexes are made by migrations, not models.
        include_name=lambda name, type_, _parents: not is_search_object(name, type_),
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
