"""Tool execution times and error streaks.

* ``tool_results.duration_ms`` (execution time of the answered call in milliseconds: the tool
  span's end − start, else result − call timestamp; negative when stamped before the call) and
  ``tool_results.duration_source`` (``span`` | ``timestamps``, CHECK), indexed by tool.
* ``error_streaks``: k or more consecutive calls of one tool ending in one error fingerprint
  (stored from 2 calls on, the threshold filters in SQL).

Traces stored before this migration have neither until ``toollens reanalyze`` (or a re-import)
computes them. The columns are added in place (SQLite accepts a CHECK in ``ADD COLUMN``), so
the large ``tool_results`` table is not copied. The allowed values are written out here.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import big_id, columns, create_table, owned_by_trace

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_CHECK = "ck_tool_results_duration_source"
_SOURCES = "duration_source IN ('span', 'timestamps')"


def upgrade() -> None:
    bind = op.get_bind()
    op.add_column("tool_results", sa.Column("duration_ms", sa.Float(), nullable=True))
    if bind.dialect.name == "sqlite":
        op.execute(
            "ALTER TABLE tool_results ADD COLUMN duration_source VARCHAR(20) "
            f"CONSTRAINT {_CHECK} CHECK ({_SOURCES})"
        )
    else:
        op.add_column(
            "tool_results", sa.Column("duration_source", sa.String(length=20), nullable=True)
        )
        op.create_check_constraint(op.f(_CHECK), "tool_results", sa.text(_SOURCES))
    op.create_index(
        "ix_tool_results_tool_duration", "tool_results", ["tool", "duration_ms"], unique=False
    )
    create_table(
        "error_streaks",
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=400), nullable=False),
        sa.Column("fingerprint", sa.String(length=300), nullable=True),
        sa.Column("error_type", sa.String(length=60), nullable=True),
        *columns(sa.Integer(), "first_seq", "first_index", "last_seq", "last_index", "length"),
        sa.Column("wasted_tokens", sa.BigInteger(), nullable=False),
        sa.Column("wasted_ms", sa.Float(), nullable=True),
        owned_by_trace("error_streaks"),
        id_kind=big_id(),
    )
    op.create_index("ix_error_streaks_trace_id", "error_streaks", ["trace_id"], unique=False)
    op.create_index(
        "ix_error_streaks_length_tool",
        "error_streaks",
        ["length", "tool", "trace_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_error_streaks_length_tool", table_name="error_streaks")
    op.drop_index("ix_error_streaks_trace_id", table_name="error_streaks")
    op.drop_table("error_streaks")
    op.drop_index("ix_tool_results_tool_duration", table_name="tool_results")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint(op.f(_CHECK), "tool_results", type_="check")
    # SQLite drops a column whose CHECK concerns it alone in place.
    op.drop_column("tool_results", "duration_source")
    op.drop_column("tool_results", "duration_ms")
