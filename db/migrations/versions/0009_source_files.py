"""The registry of imported files (``source_files``): size, mtime, head and tail hashes and how
far the last import read, so that re-importing an unchanged file is skipped and a grown JSONL
file is read from where the last import stopped.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import columns, create_table, of_import

revision = "0009"
# The trace-versions migration (0008) is developed beside this one; until it is merged this
# revision follows 0007.
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_table(
        "source_files",
        sa.Column("path", sa.Text(), nullable=False),
        *columns(sa.BigInteger(), "size", "mtime_ns"),
        *columns(sa.String(length=64), "head_hash", "tail_hash"),
        sa.Column("full_hash", sa.String(length=64), nullable=True),
        sa.Column("format", sa.String(length=40), nullable=True),
        sa.Column("read_bytes", sa.BigInteger(), nullable=True),
        *columns(sa.BigInteger(), "read_lines", "records", "traces"),
        sa.Column("last_import_id", sa.Integer(), nullable=False),
        of_import("source_files", "last_import_id"),
        sa.UniqueConstraint("path", name="uq_source_files_path"),
    )


def downgrade() -> None:
    op.drop_table("source_files")
