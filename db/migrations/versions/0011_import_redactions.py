"""The secrets an import redacted, per kind (``imports.redactions``, JSON), for the Imports page.

Existing imports get NULL: they were imported before redaction existed (nothing is known).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


# No batch mode: both databases add and drop a plain nullable column in place (SQLite since
# 3.35), and rebuilding ``imports`` on SQLite would drop a table that traces and rejected records
# point at, which foreign keys forbid.


def upgrade() -> None:
    op.add_column(
        "imports",
        sa.Column("redactions", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=True),
    )


def downgrade() -> None:
    # Plain SQL: Alembic's drop_column falls back to a table rebuild on SQLite.
    op.execute("ALTER TABLE imports DROP COLUMN redactions")
