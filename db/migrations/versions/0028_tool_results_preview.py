"""The Tool Message's preview stored with its result: ``tool_results.preview``.

A pair shows the first 120 characters of its Tool Message on one line. Cut from the message's
text for every pair, ``toollens pairs`` would read every Tool Message, as SQLite reads a value
whole (at 10M messages, 11 of a store's 17 GB). The import stores the preview with the result
(``db.contract.rows.one_line_preview``); this migration fills it in for the results already stored,
from their messages, with the same rule in SQL.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

#: As ``db.contract.rows.PREVIEW_CHARS`` and ``PREVIEW_BREAKS`` when this revision was written.
_CHARS = 120
_BREAKS = ("\r\n", "\n", "\r", "\t")


def upgrade() -> None:
    op.add_column("tool_results", sa.Column("preview", sa.Text(), nullable=True))
    head = f"substr(m.content, 1, {_CHARS})"
    for i in range(len(_BREAKS)):
        head = f"replace({head}, :b{i}, ' ')"
    bind = op.get_bind()
    message = "m.trace_id = tool_results.trace_id AND m.seq = tool_results.message_seq"
    if bind.dialect.name == "sqlite" and sqlite3.sqlite_version_info < (3, 33):
        sql = f"UPDATE tool_results SET preview = (SELECT {head} FROM messages m WHERE {message})"
    else:
        # UPDATE … FROM joins the messages once instead of looking one up per result.
        sql = f"UPDATE tool_results SET preview = {head} FROM messages m WHERE {message}"
    bind.execute(sa.text(sql), {f"b{i}": brk for i, brk in enumerate(_BREAKS)})


def downgrade() -> None:
    op.drop_column("tool_results", "preview")
