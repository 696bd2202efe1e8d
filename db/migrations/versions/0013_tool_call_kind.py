"""Who runs each tool call (``tool_calls.kind``: client | server | mcp), so that calls the
provider's API runs itself (Anthropic ``server_tool_use``: web search, web fetch, code execution)
and calls to MCP servers (``mcp_tool_use``) are told apart from the agent's own tools.

Existing calls are client calls (no format read server or MCP blocks as calls before). The
column comes with its CHECK constraint in one ``ADD COLUMN`` (both SQLite and PostgreSQL take a
named column constraint there), so SQLite need not copy the table. The values are written out
here, not imported, so this migration means the same thing after the vocabulary grows.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_CALL_KINDS = ("client", "server", "mcp")


def upgrade() -> None:
    listed = ", ".join(f"'{kind}'" for kind in _CALL_KINDS)
    op.execute(
        "ALTER TABLE tool_calls ADD COLUMN kind VARCHAR(10) DEFAULT 'client' NOT NULL "
        f"CONSTRAINT ck_tool_calls_kind CHECK (kind IN ({listed}))"
    )


def downgrade() -> None:
    op.drop_column("tool_calls", "kind")
