"""The kind of advice in the results rollup: ``rollup_results.suggestion_kind``.

The Suggestions page's breakdown of verdicts by kind of advice would otherwise group every
result with a verdict under the filters; PostgreSQL, which estimates ten times the results with
a verdict there are, then reads the whole results table. With the kind a dimension of the
results rollup (NULL for results without advice, so those rows do not split) it is a sum over
the rollup's rows like the follow rates. The rows stored lack the kind, so on a store with
traces the migration lists the rollup in ``rollup_state.pending``: its figures read the base
tables until ``db.migrate.upgrade`` recounts it, alone (once, when the store is opened).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import mark_pending

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "rollup_results", sa.Column("suggestion_kind", sa.String(length=30), nullable=True)
    )
    # Its rows are counted without the kind: recount it before the pages trust it.
    mark_pending("rollup_results")


def downgrade() -> None:
    # In place on SQLite too (the table stays WITHOUT ROWID). The rows' keys hashed the kind,
    # and without it a trace's rows repeat their identity: recount the rollup.
    op.drop_column("rollup_results", "suggestion_kind")
    mark_pending("rollup_results")
