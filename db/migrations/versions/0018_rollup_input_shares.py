"""The input-share rollup (``rollup_input_shares``): Tool Messages per bin of their share of the
input of the model call that read them, so the Tokens page's input-share histogram no longer
scans every Tool Message; and ``rollup_state.pending``, the rollups not counted yet. On a store
that already holds traces the new rollup is pending: the histogram reads the base tables until it
is counted, which opening the store does once, for this rollup alone (``db.migrate.upgrade``).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import create_rollup

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_rollup("rollup_input_shares", sa.Column("bin", sa.Integer(), nullable=False))
    with op.batch_alter_table("rollup_state") as batch:
        batch.add_column(sa.Column("pending", sa.Text(), nullable=True))
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT EXISTS (SELECT 1 FROM traces)")).scalar():
        bind.execute(sa.text("UPDATE rollup_state SET pending = 'rollup_input_shares'"))


def downgrade() -> None:
    with op.batch_alter_table("rollup_state") as batch:
        batch.drop_column("pending")
    op.drop_table("rollup_input_shares")
