"""The branch of a message (a sub-agent's side chain, a thread), so that a stored trace is the
trace that was parsed and ``reanalyze`` judges late results within a branch as the import did.

Existing rows get NULL (the main conversation): re-import the files of sub-agent traces to
fill it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa

from db.migrations.ops import add_in_batch, drop_in_batch

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_in_batch("messages", sa.Column("branch", sa.String(length=400), nullable=True))


def downgrade() -> None:
    drop_in_batch("messages", "branch")
