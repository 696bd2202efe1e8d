"""Indexes for the dashboard under a filter (migration 0004 covered the unfiltered pages).

The trace indexes of ``tool_results`` and ``tool_calls`` carry the columns the per-page counts
read, so a filter on traces reads only its traces' index entries; the verdict index becomes
partial and covering; a small partial index finds ping-pong calls. Three ``tool_results``
indexes go: per-tool status counts scan the trace index, error types and fingerprints are
looked up among errors in ``ix_tool_results_errors``.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import create_verdict_index, replace_index

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_VERDICT = "coalesce(verdict_corrected, verdict)"


def _replace_trace_index(table: str, on: list[str]) -> None:
    """Replace ``ix_<table>_trace_id_message_seq`` by the same name on ``on``."""
    name = f"ix_{table}_trace_id_message_seq"
    replace_index(table, name, name, on)


def upgrade() -> None:
    _replace_trace_index(
        "tool_results",
        ["trace_id", "message_seq", "tool", "tokens", "status", "pair_state", "name_mismatch",
         "call_seq"],
    )  # fmt: skip
    op.drop_index("ix_tool_results_tool_status_pairing", table_name="tool_results")
    op.drop_index("ix_tool_results_error_type", table_name="tool_results")
    op.drop_index("ix_tool_results_fingerprint", table_name="tool_results")
    op.drop_index("ix_tool_results_effective_verdict", table_name="tool_results")
    create_verdict_index()
    _replace_trace_index(
        "tool_calls",
        ["trace_id", "message_seq", "call_index", "tool_name", "pair_state", "reused_id",
         "occurrence"],
    )  # fmt: skip
    op.create_index(
        "ix_tool_calls_ping_pong",
        "tool_calls",
        ["trace_id", "message_seq", "call_index", "tool_name"],
        sqlite_where=sa.text("ping_pong = 1"),
        postgresql_where=sa.text("ping_pong"),
    )


def downgrade() -> None:
    op.drop_index("ix_tool_calls_ping_pong", table_name="tool_calls")
    _replace_trace_index("tool_calls", ["trace_id", "message_seq", "call_index"])
    verdict = "ix_tool_results_effective_verdict"
    replace_index("tool_results", verdict, verdict, [sa.text(_VERDICT), "tool", "trace_id"])
    op.create_index("ix_tool_results_fingerprint", "tool_results", ["fingerprint"])
    op.create_index("ix_tool_results_error_type", "tool_results", ["error_type"])
    op.create_index(
        "ix_tool_results_tool_status_pairing",
        "tool_results",
        ["tool", "status", "pair_state", "name_mismatch", "call_seq"],
    )
    _replace_trace_index("tool_results", ["trace_id", "message_seq"])
