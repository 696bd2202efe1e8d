"""Review: reviewers' notes and labels on pairs (``annotations``), and who marked a trace
reviewed and when (``traces.reviewed_at`` / ``reviewed_by``).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import (
    Index,
    columns,
    create_indexes,
    create_table,
    drop_indexes,
    owned_by_trace,
)

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_INDEXES: list[Index] = [
    ("ix_annotations_author", ["author"], False),
    ("ix_annotations_label", ["label"], False),
    ("ix_annotations_trace_id_message_seq", ["trace_id", "message_seq", "call_index"], False),
]
_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("reviewed_by", sa.String(length=200), nullable=True))

    create_table(
        "annotations",
        sa.Column("trace_id", sa.Integer(), nullable=False),
        *columns(sa.Integer(), "message_seq", "call_index", nullable=True),
        sa.Column("label", sa.String(length=60), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        *columns(_TIMESTAMP, "created_at", "updated_at"),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        owned_by_trace("annotations"),
    )
    create_indexes("annotations", _INDEXES)


def downgrade() -> None:
    drop_indexes("annotations", _INDEXES)
    op.drop_table("annotations")
    # Not batch mode: on SQLite a batch drop copies ``traces`` and drops the original, and with
    # foreign keys on that DROP deletes every message, call and result through ON DELETE CASCADE.
    # SQLite >= 3.35 drops a plain column in place.
    op.drop_column("traces", "reviewed_by")
    op.drop_column("traces", "reviewed_at")
