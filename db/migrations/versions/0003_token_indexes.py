"""Indexes on Tool Message token counts (percentiles, size charts).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_tool_results_tokens", "tool_results", ["tokens"])
    op.create_index("ix_tool_results_tool_tokens", "tool_results", ["tool", "tokens"])


def downgrade() -> None:
    op.drop_index("ix_tool_results_tool_tokens", table_name="tool_results")
    op.drop_index("ix_tool_results_tokens", table_name="tool_results")
