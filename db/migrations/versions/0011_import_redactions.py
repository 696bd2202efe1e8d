"""The secrets an import redacted, per kind (``imports.redactions``, JSON), for the Imports page.

Existing imports get NULL: they were imported before redaction existed (nothing is known).

Revision ID: 0011
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite rebuilds the table where it cannot alter it in place.
    with op.batch_alter_table("imports") as batch:
        batch.add_column(
            sa.Column("redactions", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("imports") as batch:
        batch.drop_column("redactions")
