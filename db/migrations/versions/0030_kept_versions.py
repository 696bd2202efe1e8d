"""Versions never lose content: replaced versions kept, older copies and conflicts counted.

* New table ``trace_versions``: a version of a trace that an import replaced, restorable (its
  trace row and the messages its successor does not start with, zlib-compressed JSON).
* ``trace_updates.messages_added`` / ``messages_removed`` (0 for earlier updates) and
  ``kept_version`` (the ``trace_versions`` version; NULL for earlier updates, whose replaced
  version was not kept).
* ``imports.older_copies`` (unchanged traces that were a strict prefix of the stored version),
  ``kept_apart`` (traces stored under an identity of their own because another conversation
  holds theirs), ``messages_added`` and ``messages_removed`` (over the updates); 0 for earlier
  imports.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import columns, create_table, of_import, owned_by_trace

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

_MESSAGE_COUNTS = ("messages_added", "messages_removed")


def _import_counts() -> list[sa.Column]:
    return [
        *columns(sa.Integer(), "older_copies", "kept_apart", server_default="0"),
        *columns(sa.BigInteger(), *_MESSAGE_COUNTS, server_default="0"),
    ]


def upgrade() -> None:
    for column in _import_counts():
        op.add_column("imports", column)
    for column in columns(sa.Integer(), *_MESSAGE_COUNTS, server_default="0"):
        op.add_column("trace_updates", column)
    op.add_column("trace_updates", sa.Column("kept_version", sa.Integer(), nullable=True))
    create_table(
        "trace_versions",
        *columns(sa.Integer(), "trace_id", "version"),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        *columns(sa.Integer(), "message_count", "shared_messages", "replaced_by"),
        sa.Column("replaced_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("snapshot", sa.LargeBinary(), nullable=False),
        owned_by_trace("trace_versions"),
        of_import("trace_versions", "replaced_by"),
    )
    op.create_index("ix_trace_versions_trace_id", "trace_versions", ["trace_id"])
    op.create_index("ix_trace_versions_replaced_by", "trace_versions", ["replaced_by"])


def downgrade() -> None:
    op.drop_index("ix_trace_versions_replaced_by", table_name="trace_versions")
    op.drop_index("ix_trace_versions_trace_id", table_name="trace_versions")
    op.drop_table("trace_versions")
    for table, column in (
        ("trace_updates", "kept_version"),
        *(("trace_updates", name) for name in reversed(_MESSAGE_COUNTS)),
        *(("imports", column.name) for column in reversed(_import_counts())),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
