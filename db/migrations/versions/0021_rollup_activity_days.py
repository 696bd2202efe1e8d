"""The daily activity rollup: ``rollup_activity_days``, Tool Messages per day of their time.

The activity charts of a store that spans weeks bucket by day or week; summing the hourly
rollup's rows for them means hundreds of thousands of rows at 10M messages, while this rollup
holds a row per day. Keyed like the other rollups (``db.rollups.row_key``; SQLite ``WITHOUT
ROWID``). A new rollup table on a store that already holds traces is empty, so the migration
lists it in ``rollup_state.pending``: the day and week axes read the hourly rollup until
``db.migrate.upgrade`` counts it, alone (once, when the store is opened).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import create_rollup, mark_pending

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_rollup(
        "rollup_activity_days",
        sa.Column("result_day", sa.Integer(), nullable=True),
        sa.Column("error", sa.Boolean(), nullable=False),
        sa.Column("error_type", sa.String(length=60), nullable=True),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
    )
    # Its rows are missing for the traces already stored: count it before the pages trust it.
    mark_pending("rollup_activity_days")


def downgrade() -> None:
    op.drop_table("rollup_activity_days")
