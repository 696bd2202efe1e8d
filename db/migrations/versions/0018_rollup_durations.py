"""The execution-time rollup: ``rollup_durations``, timed Tool Messages per (tool, duration).

Keyed like the rollups of 0017 (a 16-byte hash of grain, dimensions, tool and duration; SQLite
``WITHOUT ROWID``). A new rollup table on a store that already holds traces is empty, so the
migration marks the rollups incomplete: the pages read the base tables, and the import stops
keeping rollups, until ``db.migrate.upgrade`` rebuilds them all (once, when the store is opened).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
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
    # Its rows are missing for the traces already stored: recount every rollup before the
    # pages (or the import's incremental upkeep) trust them again.
    state = sa.table("rollup_state", sa.column("complete", sa.Boolean()))
    traces = sa.table("traces", sa.column("id", sa.Integer()))
    op.get_bind().execute(
        sa.update(state).where(sa.exists(sa.select(traces.c.id))).values(complete=False)
    )


def downgrade() -> None:
    op.drop_table("rollup_durations")
