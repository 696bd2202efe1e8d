"""The item and block types an import did not know, with how often each occurred
(``imports.unknown_items``): such items are kept as opaque messages, and the import says so.

Existing imports get NULL (nothing was counted then).

Revision ID: 0010
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite rebuilds the table where it cannot alter it in place.
    with op.batch_alter_table("imports") as batch:
        batch.add_column(
            sa.Column(
                "unknown_items",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("imports") as batch:
        batch.drop_column("unknown_items")
