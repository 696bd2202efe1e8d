"""The thread a message's thread nests in: ``messages.branch_parent``.

A span source (OTLP, Langfuse) records how its spans nest: a sub-agent's model calls lie under
the span of the agent that started it. The import names each thread by its agent span
(``messages.branch``) and, with this column, the thread it nests in, so the Trace page's
timeline nests sub-agents as their spans do. Existing rows get NULL (nested in the main
conversation, as before): the span tree is not kept in the store, so re-import the files of
nested OTLP or Langfuse traces to fill it.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa

from db.migrations.ops import add_in_batch, drop_in_batch

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_in_batch("messages", sa.Column("branch_parent", sa.String(length=400), nullable=True))


def downgrade() -> None:
    drop_in_batch("messages", "branch_parent")
