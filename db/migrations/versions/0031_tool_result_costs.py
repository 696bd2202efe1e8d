"""What each Tool Message adds to the model calls after it, stored with the result and summed in
the results rollup.

* ``tool_results.later_calls``, ``reread_tokens``, ``reread_cached``, ``reread_measured``,
  ``cost_nano_usd`` (``ingest.analysis.costs``): NULL for the results already stored until
  ``toollens reanalyze`` derives them (no migration can: they need the trace's messages and
  the price table). ``ix_tool_results_cost`` lists them by cost (the most expensive).
* ``rollup_results.later_calls``, ``reread_tokens``, ``reread_cached``, ``cost_nano_usd``,
  ``priced``, ``measured``: their sums per group, 0 on the rows stored, which is what the
  results stored sum to (NULL costs, not priced, not measured): nothing to recount. ``toollens
  reanalyze`` derives the results' costs and updates the rollup with them.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

_RESULT_COLUMNS = (
    ("later_calls", sa.Integer()),
    ("reread_tokens", sa.BigInteger()),
    ("reread_cached", sa.BigInteger()),
    ("reread_measured", sa.Boolean()),
    ("cost_nano_usd", sa.BigInteger()),
)
_ROLLUP_COLUMNS = (
    "later_calls",
    "reread_tokens",
    "reread_cached",
    "cost_nano_usd",
    "priced",
    "measured",
)


def upgrade() -> None:
    for name, kind in _RESULT_COLUMNS:
        op.add_column("tool_results", sa.Column(name, kind, nullable=True))
    op.create_index("ix_tool_results_cost", "tool_results", ["cost_nano_usd"])
    for name in _ROLLUP_COLUMNS:
        # Zero on the rows stored, which the recount replaces.
        op.add_column(
            "rollup_results",
            sa.Column(name, sa.BigInteger(), nullable=False, server_default="0"),
        )


def downgrade() -> None:
    op.drop_index("ix_tool_results_cost", "tool_results")
    # Plain SQL: Alembic's drop_column falls back to a table rebuild on SQLite.
    for name, _ in _RESULT_COLUMNS:
        op.execute(f"ALTER TABLE tool_results DROP COLUMN {name}")
    # The rollup's rows keep their keys and their other sums: nothing to recount.
    for name in _ROLLUP_COLUMNS:
        op.execute(f"ALTER TABLE rollup_results DROP COLUMN {name}")
