"""The item and block types an import did not know, with how often each occurred
(``imports.unknown_items``): such items are kept as opaque messages, and the import says so.

Existing imports get NULL (nothing was counted then).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import json_type

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


# Altered in place, not in batch mode: every trace and rejection references ``imports``, so
# SQLite could not drop the table to rebuild it (ADD / DROP COLUMN are native since 3.35).


def upgrade() -> None:
    op.add_column("imports", sa.Column("unknown_items", json_type(), nullable=True))


def downgrade() -> None:
    op.drop_column("imports", "unknown_items")
