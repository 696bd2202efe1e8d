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

revision = "0009"
# The trace-versions migration (0008) is developed beside this one; until it is merged this
# revision follows 0007.
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "source_files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("head_hash", sa.String(length=64), nullable=False),
        sa.Column("tail_hash", sa.String(length=64), nullable=False),
        sa.Column("full_hash", sa.String(length=64), nullable=True),
        sa.Column("format", sa.String(length=40), nullable=True),
        sa.Column("read_bytes", sa.BigInteger(), nullable=True),
        sa.Column("read_lines", sa.BigInteger(), nullable=False),
        sa.Column("records", sa.BigInteger(), nullable=False),
        sa.Column("traces", sa.BigInteger(), nullable=False),
        sa.Column("last_import_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["last_import_id"],
            ["imports.id"],
            name="fk_source_files_last_import_id_imports",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_source_files"),
        sa.UniqueConstraint("path", name="uq_source_files_path"),
    )


def downgrade() -> None:
    op.drop_table("source_files")
