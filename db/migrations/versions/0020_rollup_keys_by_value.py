"""Rollup keys that lead with the value of the grain's dimension, then the tool.

With keys made of the grain, the day, then a hash of the row's identity, a filter on one import,
agent or model, or on a tool, reads every row of its grain. With this migration the 4 bytes
after the grain hold the value of the grain's leading dimension (the day where the grain has it,
else the import, or a hash of the agent or model) and 3 bytes a hash of the tool, so those
filters read one range of keys (``db.rollups.row_key``). Keys are computed in Python, so this
migration cannot rewrite them: it marks the rollups incomplete, and ``db.migrate.upgrade``
recounts them all when the store is opened (the pages read the base tables until then).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().execute(
        sa.text("UPDATE rollup_state SET complete = false WHERE EXISTS (SELECT 1 FROM traces)")
    )


def downgrade() -> None:
    # Revision 0019's keys are laid out otherwise: recounted when the store is next opened.
    op.get_bind().execute(sa.text("UPDATE rollup_state SET complete = false"))
