"""The execution-time rollup: ``rollup_durations``, timed Tool Messages per (tool, duration).

Keyed like the rollups of 0017 (a 16-byte hash of grain, dimensions, tool and duration; SQLite
``WITHOUT ROWID``). A new rollup table on a store that already holds traces is empty, so the
migration lists it in ``rollup_state.pending``: the execution-time figures read the base tables
until ``db.migrate.upgrade`` counts it, alone (once, when the store is opened).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rollup_durations",
        sa.Column("key", sa.LargeBinary(length=16), primary_key=True, nullable=False),
        sa.Column("grain", sa.Integer(), nullable=False),
        sa.Column("day", sa.Integer(), nullable=True),
        sa.Column("import_id", sa.Integer(), nullable=True),
        sa.Column("agent", sa.String(length=200), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("tool", sa.String(length=400), nullable=True),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_rollup_durations")),
        sqlite_with_rowid=False,
    )
    # Its rows are missing for the traces already stored: count it before the pages trust it.
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT EXISTS (SELECT 1 FROM traces)")).scalar():
        bind.execute(
            sa.text(
                "UPDATE rollup_state SET pending = "
                "CASE WHEN pending IS NULL THEN 'rollup_durations' "
                "ELSE pending || ' rollup_durations' END"
            )
        )


def downgrade() -> None:
    op.drop_table("rollup_durations")
