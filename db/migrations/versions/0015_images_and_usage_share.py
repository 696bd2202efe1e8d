"""Images, exact-or-estimate token counts, and the model call that read each Tool Message.

* ``traces.token_counts``: ``exact`` when the trace's model tokenizes with the encoding it was
  counted with, else ``estimate`` (CHECK ``ck_traces_token_counts``). Stored traces get
  ``estimate`` until ``toollens reanalyze`` derives it.
* ``tool_results.image_tokens`` / ``images``: tokens and sizes of the images a Tool Message
  carries (0 / NULL until ``toollens reanalyze``).
* ``tool_results.read_by_seq`` / ``read_input_tokens``: the model call that read the result
  and its input tokens, from its usage (NULL until ``toollens reanalyze``).

No batch mode: both databases add a column in place (SQLite accepts a CHECK on an added
column), and rebuilding ``traces`` on SQLite would drop a table every child table points at.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from db.migrations.ops import one_of

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_CHECK = one_of("token_counts", ("exact", "estimate"))
_RESULT_COLUMNS = ("image_tokens", "images", "read_by_seq", "read_input_tokens")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "ALTER TABLE traces ADD COLUMN token_counts VARCHAR(20) DEFAULT 'estimate' NOT NULL "
            f"CONSTRAINT ck_traces_token_counts CHECK ({_CHECK})"
        )
    else:
        op.add_column(
            "traces",
            sa.Column("token_counts", sa.String(20), nullable=False, server_default="estimate"),
        )
        op.create_check_constraint(op.f("ck_traces_token_counts"), "traces", _CHECK)
    op.add_column(
        "tool_results",
        sa.Column("image_tokens", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column(
        "tool_results",
        sa.Column("images", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=True),
    )
    op.add_column("tool_results", sa.Column("read_by_seq", sa.Integer(), nullable=True))
    op.add_column("tool_results", sa.Column("read_input_tokens", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    # Plain SQL: Alembic's drop_column falls back to a table rebuild on SQLite.
    for column in _RESULT_COLUMNS:
        op.execute(f"ALTER TABLE tool_results DROP COLUMN {column}")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint(op.f("ck_traces_token_counts"), "traces", type_="check")
    op.execute("ALTER TABLE traces DROP COLUMN token_counts")
