"""An index of the results no call shows as its answer: ``tool_results (trace_id, message_seq)``
over the orphans, second answers and early results (``db.schema.UNPAIRED_RESULT_SQL``).

The Tool calls page lists calls and those results in trace order, a page at a time. Without this
index its branch of results walks the results' index in trace order and tests every row to find
the first page of the rare ones (under a model filter on a 3M-message store, 1.1M rows read to
find 345); this partial index holds only those rows.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

#: As ``db.schema.UNPAIRED_RESULT_SQL`` when this revision was written.
_UNPAIRED = "pair_state IN ('orphan_result', 'duplicate_result') OR call_seq IS NULL"


def upgrade() -> None:
    op.create_index(
        "ix_tool_results_unpaired",
        "tool_results",
        ["trace_id", "message_seq"],
        unique=False,
        sqlite_where=sa.text(_UNPAIRED),
        postgresql_where=sa.text(_UNPAIRED),
    )


def downgrade() -> None:
    op.drop_index("ix_tool_results_unpaired", table_name="tool_results")
