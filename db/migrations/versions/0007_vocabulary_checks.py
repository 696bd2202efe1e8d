"""CHECK constraints on the closed-set columns: statuses, status sources, pair states, pairing
methods, verdicts, finding kinds and message roles (``db.contract.vocabulary``).

``error_type`` gets none: a protocol-provided error type is kept verbatim, so its set is open.
The values are written out here (the finding kinds in ``db.migrations.ops``), not imported from
the vocabulary, so this migration means the same thing after the vocabulary grows (growing it
takes a migration of its own). On SQLite a constraint can only come
with a new table, so ``batch_alter_table`` copies each table; SQLite's reflection cannot read the
expression index on the effective verdict, so that index is created again as 0005 made it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from alembic import op
from alembic.operations import BatchOperations

from db.migrations.ops import FINDING_KINDS_0007, create_verdict_index, one_of

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_STATUSES = ("success", "error", "partial", "unknown")
_STATUS_SOURCES = ("explicit", "protocol", "inferred")
_PAIR_STATES = (
    "paired", "missing_result", "orphan_result", "duplicate_result", "result_before_call",
    "late_result",
)  # fmt: skip
_PAIRING_METHODS = ("id", "position")
_VERDICTS = ("followed", "ignored", "unclear", "no_next_action")
_ROLES = ("system", "user", "assistant", "tool")

#: (table, column, allowed values); the constraint is named ``ck_<table>_<column>``.
_CHECKS: tuple[tuple[str, str, Sequence[str]], ...] = (
    ("messages", "role", _ROLES),
    ("tool_calls", "pair_state", _PAIR_STATES),
    ("tool_calls", "pairing_method", _PAIRING_METHODS),
    ("tool_results", "status", _STATUSES),
    ("tool_results", "status_source", _STATUS_SOURCES),
    ("tool_results", "pair_state", _PAIR_STATES),
    ("tool_results", "pairing_method", _PAIRING_METHODS),
    ("tool_results", "verdict", _VERDICTS),
    ("tool_results", "verdict_corrected", _VERDICTS),
    ("findings", "name", FINDING_KINDS_0007),
)


def _tables() -> list[str]:
    return list(dict.fromkeys(table for table, _, _ in _CHECKS))


_Check = tuple[str, str, Sequence[str]]


def _alter_each_table(alter: Callable[[BatchOperations, list[_Check]], None]) -> None:
    """Call ``alter`` in a batch of each checked table with the table's checks; on SQLite the
    expression index on the effective verdict is dropped before the tables are copied and
    created again after."""
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        op.drop_index("ix_tool_results_effective_verdict", table_name="tool_results")
    for table in _tables():
        with op.batch_alter_table(table) as batch_op:
            alter(batch_op, [check for check in _CHECKS if check[0] == table])
    if sqlite:
        create_verdict_index()


def _add_checks(batch_op: BatchOperations, checks: list[_Check]) -> None:
    for table, column, values in checks:
        batch_op.create_check_constraint(op.f(f"ck_{table}_{column}"), one_of(column, values))


def _drop_checks(batch_op: BatchOperations, checks: list[_Check]) -> None:
    for table, column, _ in checks:
        batch_op.drop_constraint(op.f(f"ck_{table}_{column}"), type_="check")


def upgrade() -> None:
    _alter_each_table(_add_checks)


def downgrade() -> None:
    _alter_each_table(_drop_checks)
