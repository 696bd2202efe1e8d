"""The next call's outcome of an error result in the results rollup: ``rollup_results.next_call``.

The Suggestions page's recovery rates (did the next call of the same tool succeed after an
error, with versus without advice) would otherwise group every error result under the filters,
twice. With the outcome a dimension of the results rollup — 1 the next call of the tool
succeeded, 0 it did not, -1 no next call; NULL for results that are not errors, so those rows do
not split — they are a sum over the rollup's rows like the follow rates. The rows stored lack
the outcome, so on a store with traces the migration lists the rollup in
``rollup_state.pending``: its figures read the base tables until ``db.migrate.upgrade`` recounts
it, alone (once, when the store is opened).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import mark_pending

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rollup_results", sa.Column("next_call", sa.SmallInteger(), nullable=True))
    # Its rows are counted without the outcome: recount it before the pages trust it.
    mark_pending("rollup_results")


def downgrade() -> None:
    # In place on SQLite too (the table stays WITHOUT ROWID). The rows' keys hashed the
    # outcome, and without it a trace's rows repeat their identity: recount the rollup.
    op.drop_column("rollup_results", "next_call")
    mark_pending("rollup_results")
