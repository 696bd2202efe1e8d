"""The ``undeclared_parameter`` finding: ``findings.name`` accepts it.

A call naming a parameter an open tool schema does not declare is a warning-level finding
(``ingest.analysis.schema_check``). Only the CHECK constraint on ``findings.name`` changes; stored
traces get the finding from ``toollens reanalyze``. The values are 0007's (written out in
``db.migrations.ops``, not imported from the vocabulary) and the one added here, so this
migration means the same thing after the vocabulary grows again.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

from db.migrations.ops import FINDING_KINDS_0007, one_of

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_BEFORE = FINDING_KINDS_0007
#: After the schema check's ``arguments_schema_violation``.
_AT = _BEFORE.index("arguments_schema_violation") + 1
_AFTER = (*_BEFORE[:_AT], "undeclared_parameter", *_BEFORE[_AT:])


def _replace_check(values: tuple[str, ...]) -> None:
    with op.batch_alter_table("findings") as batch_op:
        batch_op.drop_constraint(op.f("ck_findings_name"), type_="check")
        batch_op.create_check_constraint(op.f("ck_findings_name"), one_of("name", values))


def upgrade() -> None:
    _replace_check(_AFTER)


def downgrade() -> None:
    # A stored ``undeclared_parameter`` finding would violate the narrower CHECK.
    op.execute("DELETE FROM findings WHERE name = 'undeclared_parameter'")
    _replace_check(_BEFORE)
