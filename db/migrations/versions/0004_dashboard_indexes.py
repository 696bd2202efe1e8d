"""Covering indexes for the dashboard on large stores (errors, verdicts, advice, corrections,
per-tool status and pairing, loops, per-tool call counts).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import replace_index

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_ERRORS = "status = 'error'"
_ADVISED = "suggestion IS NOT NULL"
_CORRECTED = "error_type_corrected IS NOT NULL OR verdict_corrected IS NOT NULL"


#: The ``tool_calls`` indexes this revision replaces: (before, after, the columns after).
_CALL_INDEXES = (
    ("ix_tool_calls_tool_name_pair_state", "ix_tool_calls_tool_name_pair_state_reused",
     ["tool_name", "pair_state", "reused_id"]),
    ("ix_tool_calls_occurrence", "ix_tool_calls_occurrence_tool",
     ["occurrence", "tool_name", "trace_id"]),
)  # fmt: skip
#: Their columns before (revision 0001).
_CALL_INDEXES_BEFORE = {
    "ix_tool_calls_tool_name_pair_state": ["tool_name", "pair_state"],
    "ix_tool_calls_occurrence": ["occurrence"],
}


def _where(predicate: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(predicate), "postgresql_where": sa.text(predicate)}


def upgrade() -> None:
    replace_index(
        "tool_results",
        "ix_tool_results_tool_status",
        "ix_tool_results_tool_status_pairing",
        ["tool", "status", "pair_state", "name_mismatch", "call_seq"],
    )
    op.create_index(
        "ix_tool_results_errors",
        "tool_results",
        ["fingerprint", "tool", "error_type", "error_type_corrected", "status_source", "rule",
         "trace_id", "timestamp", "next_call_succeeded", "status"],
        **_where(_ERRORS),
    )  # fmt: skip
    op.create_index(
        "ix_tool_results_effective_verdict",
        "tool_results",
        [sa.text("coalesce(verdict_corrected, verdict)"), "tool", "trace_id"],
    )
    op.create_index(
        "ix_tool_results_advised",
        "tool_results",
        ["tool", "status", "next_call_succeeded", "trace_id"],
        **_where(_ADVISED),
    )
    op.create_index(
        "ix_tool_results_corrected",
        "tool_results",
        ["error_type_corrected", "verdict_corrected", "status", "trace_id"],
        **_where(_CORRECTED),
    )
    for old, new, on in _CALL_INDEXES:
        replace_index("tool_calls", old, new, on)


def downgrade() -> None:
    for old, new, _ in reversed(_CALL_INDEXES):
        replace_index("tool_calls", new, old, _CALL_INDEXES_BEFORE[old])
    for name in (
        "ix_tool_results_corrected",
        "ix_tool_results_advised",
        "ix_tool_results_effective_verdict",
        "ix_tool_results_errors",
        "ix_tool_results_tool_status_pairing",
    ):
        op.drop_index(name, table_name="tool_results")
    op.create_index("ix_tool_results_tool_status", "tool_results", ["tool", "status"])
