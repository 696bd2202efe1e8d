"""The ``undeclared_parameter`` finding: ``findings.name`` accepts it.

A call naming a parameter an open tool schema does not declare is a warning-level finding
(``ingest.analysis.schema_check``). Only the CHECK constraint on ``findings.name`` changes; stored
traces get the finding from ``toollens reanalyze``. The values are written out here, not imported,
as in 0007, so this migration means the same thing after the vocabulary grows again.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_BEFORE = (
    "bare_status", "raw_exception", "error_without_suggestion", "empty_marked_error",
    "name_mismatch", "oversized", "unparsed_arguments", "unknown_tool",
    "arguments_schema_violation", "missing_result", "orphan_result", "duplicate_result",
    "result_before_call", "late_result",
)  # fmt: skip
_AFTER = (
    "bare_status", "raw_exception", "error_without_suggestion", "empty_marked_error",
    "name_mismatch", "oversized", "unparsed_arguments", "unknown_tool",
    "arguments_schema_violation", "undeclared_parameter", "missing_result", "orphan_result",
    "duplicate_result", "result_before_call", "late_result",
)  # fmt: skip


def _replace_check(values: tuple[str, ...]) -> None:
    listed = ", ".join(f"'{value}'" for value in values)
    with op.batch_alter_table("findings") as batch_op:
        batch_op.drop_constraint(op.f("ck_findings_name"), type_="check")
        batch_op.create_check_constraint(op.f("ck_findings_name"), f"name IN ({listed})")


def upgrade() -> None:
    _replace_check(_AFTER)


def downgrade() -> None:
    # A stored ``undeclared_parameter`` finding would violate the narrower CHECK.
    op.execute("DELETE FROM findings WHERE name = 'undeclared_parameter'")
    _replace_check(_BEFORE)
