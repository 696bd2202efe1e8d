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

from db.migrations.ops import create_rollup, mark_pending

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_rollup("rollup_durations", sa.Column("duration_ms", sa.Float(), nullable=False))
    # Its rows are missing for the traces already stored: count it before the pages trust it.
    mark_pending("rollup_durations")


def downgrade() -> None:
    op.drop_table("rollup_durations")
