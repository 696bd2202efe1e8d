"""An index for an error group's first occurrence: ``tool_results (fingerprint, id, trace_id)``
over the error results.

The Errors page shows each fingerprint of its page with its first occurrence (the smallest id,
among the filtered traces' under a filter). PostgreSQL's indexes carry no id column, so without
this index it reads every error of the group from the table to find it; with the id and the
trace in the index it is the group's first entry, or a walk in id order to the first entry whose
trace the filter picks. SQLite's indexes end with the rowid (the id); the trace in the entry
spares it the table there too.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_tool_results_error_examples",
        "tool_results",
        ["fingerprint", "id", "trace_id"],
        unique=False,
        sqlite_where=sa.text("status = 'error'"),
        postgresql_where=sa.text("status = 'error'"),
    )


def downgrade() -> None:
    op.drop_index("ix_tool_results_error_examples", table_name="tool_results")
