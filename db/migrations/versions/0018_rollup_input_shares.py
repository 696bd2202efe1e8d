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

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rollup_input_shares",
        sa.Column("key", sa.LargeBinary(length=16), primary_key=True, nullable=False),
        sa.Column("grain", sa.Integer(), nullable=False),
        sa.Column("day", sa.Integer(), nullable=True),
        sa.Column("import_id", sa.Integer(), nullable=True),
        sa.Column("agent", sa.String(length=200), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("tool", sa.String(length=400), nullable=True),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("bin", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_rollup_input_shares")),
        sqlite_with_rowid=False,
    )
    with op.batch_alter_table("rollup_state") as batch:
        batch.add_column(sa.Column("pending", sa.Text(), nullable=True))
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT EXISTS (SELECT 1 FROM traces)")).scalar():
        bind.execute(sa.text("UPDATE rollup_state SET pending = 'rollup_input_shares'"))


def downgrade() -> None:
    with op.batch_alter_table("rollup_state") as batch:
        batch.drop_column("pending")
    op.drop_table("rollup_input_shares")
