"""Content search and trace titles.

* ``traces.title``: the first user message with any text, on one line, at most 80 characters
  (an ellipsis marks a cut); filled here for stored traces, by the import for new ones.
* The content search over ``messages.content`` and ``tool_calls.arguments_raw`` (the first
  50,000 characters of each; words are runs of letters and digits, lowercased): on SQLite an
  FTS5 table per column with external content (the index only: the text stays in its table),
  filled here; on PostgreSQL a stored generated column ``search_vector`` =
  ``to_tsvector('simple', …)`` of the text with every other character run replaced by a
  space, under a GIN index.

The rules are written out here, not imported from ``db.dialect`` / ``ingest.importing.rows``, so
that this migration means the same thing when they change (changing them takes a migration of its
own).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

SEARCHED = {"messages": "content", "tool_calls": "arguments_raw"}
TEXT_CHARS = 50_000
TITLE_CHARS = 80
#: Traces whose titles are written per statement (keeps memory flat on a large store).
TITLE_BATCH = 5_000


def _title(text: str | None) -> str | None:
    flat = " ".join((text or "").split())
    if not flat:
        return None
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1].rstrip() + "…"


def _fill_titles(conn: sa.Connection) -> None:
    # The first user message with any text: the lowest seq among the user messages whose
    # content is not only whitespace (trimmed in SQL, collapsed in Python).
    first = conn.execute(
        sa.text(
            "SELECT m.trace_id, substr(m.content, 1, 2000) FROM messages m JOIN ("
            " SELECT trace_id, min(seq) AS seq FROM messages"
            " WHERE role = 'user' AND trim(content) <> '' GROUP BY trace_id"
            ") f ON f.trace_id = m.trace_id AND f.seq = m.seq"
        )
    )
    update = sa.text("UPDATE traces SET title = :title WHERE id = :id")
    while rows := first.fetchmany(TITLE_BATCH):
        values = [{"id": tid, "title": _title(text)} for tid, text in rows]
        conn.execute(update, [v for v in values if v["title"] is not None])


def upgrade() -> None:
    # Not batch mode (here and below): on SQLite a batch copies ``traces`` and drops the
    # original, and with foreign keys on that DROP deletes every message, call and result
    # through ON DELETE CASCADE. SQLite adds and (>= 3.35) drops a plain column in place.
    op.add_column("traces", sa.Column("title", sa.String(length=200), nullable=True))
    conn = op.get_bind()
    _fill_titles(conn)
    if conn.dialect.name == "sqlite":
        for table, column in SEARCHED.items():
            fts = f"{table}_search"
            op.execute(
                f"CREATE VIRTUAL TABLE {fts} USING fts5({column}, content='{table}', "
                "content_rowid='id', tokenize='unicode61 remove_diacritics 0')"
            )
            # Not 'rebuild': that would index whole texts, the search indexes their prefix.
            op.execute(
                f"INSERT INTO {fts}(rowid, {column}) SELECT id, substr({column}, 1, {TEXT_CHARS})"
                f" FROM {table} WHERE {column} IS NOT NULL"
            )
    else:
        for table, column in SEARCHED.items():
            # Stored, not an expression index: a phrase match rechecks every candidate row,
            # and recomputing the vector from the text there cost seconds per common phrase.
            op.execute(
                f"ALTER TABLE {table} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
                f"(to_tsvector('simple', regexp_replace(left({column}, {TEXT_CHARS}), "
                "'[^[:alnum:]]+', ' ', 'g'))) STORED"
            )
            op.execute(f"CREATE INDEX ix_{table}_search ON {table} USING gin (search_vector)")


def downgrade() -> None:
    conn = op.get_bind()
    for table in SEARCHED:
        if conn.dialect.name == "sqlite":
            op.execute(f"DROP TABLE {table}_search")
        else:
            op.execute(f"DROP INDEX ix_{table}_search")
            op.execute(f"ALTER TABLE {table} DROP COLUMN search_vector")
    op.drop_column("traces", "title")
