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

from db.migrations.ops import owned_by_trace

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

_IMPORT_COUNTS = (
    ("older_copies", sa.Integer()),
    ("kept_apart", sa.Integer()),
    ("messages_added", sa.BigInteger()),
    ("messages_removed", sa.BigInteger()),
)
_UPDATE_COUNTS = ("messages_added", "messages_removed")


def upgrade() -> None:
    for name, kind in _IMPORT_COUNTS:
        op.add_column("imports", sa.Column(name, kind, nullable=False, server_default="0"))
    for name in _UPDATE_COUNTS:
        op.add_column(
            "trace_updates", sa.Column(name, sa.Integer(), nullable=False, server_default="0")
        )
    op.add_column("trace_updates", sa.Column("kept_version", sa.Integer(), nullable=True))
    op.create_table(
        "trace_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("shared_messages", sa.Integer(), nullable=False),
        sa.Column("replaced_by", sa.Integer(), nullable=False),
        sa.Column("replaced_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("snapshot", sa.LargeBinary(), nullable=False),
        owned_by_trace("trace_versions"),
        sa.ForeignKeyConstraint(
            ["replaced_by"], ["imports.id"], name="fk_trace_versions_replaced_by_imports"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_trace_versions"),
    )
    op.create_index("ix_trace_versions_trace_id", "trace_versions", ["trace_id"])
    op.create_index("ix_trace_versions_replaced_by", "trace_versions", ["replaced_by"])


def downgrade() -> None:
    op.drop_index("ix_trace_versions_replaced_by", table_name="trace_versions")
    op.drop_index("ix_trace_versions_trace_id", table_name="trace_versions")
    op.drop_table("trace_versions")
    for table, column in (
        ("trace_updates", "kept_version"),
        *(("trace_updates", name) for name in reversed(_UPDATE_COUNTS)),
        *(("imports", name) for name, _ in reversed(_IMPORT_COUNTS)),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
