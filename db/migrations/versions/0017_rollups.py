"""Rollups: summary tables the import keeps exact (``db.rollups.upkeep``), and their state.

``rollup_results``, ``rollup_sizes``, ``rollup_calls``, ``rollup_signatures``,
``rollup_traces``, ``rollup_findings``, ``rollup_fingerprints``, ``rollup_activity`` (each keyed
by a 16-byte hash of its grain, dimensions and keys) and ``rollup_state`` (one row: do the
rollups hold the whole store). A store that already holds traces gets ``complete = false``: the
pages read the base tables until ``toollens rebuild-rollups`` (which opening the store runs, once)
fills them. The columns are written out here.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import columns, create_rollup, create_table

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def _big(*names: str) -> list[sa.Column]:
    return columns(sa.BigInteger(), *names)


def _bools(*names: str) -> list[sa.Column]:
    return columns(sa.Boolean(), *names)


_TABLES: dict[str, list[sa.Column]] = {
    "rollup_results": [
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("status_source", sa.String(length=20), nullable=True),
        sa.Column("rule", sa.String(length=100), nullable=True),
        sa.Column("error_type", sa.String(length=60), nullable=True),
        sa.Column("verdict", sa.String(length=40), nullable=True),
        *_bools("suggested"),
        sa.Column("pair_state", sa.String(length=40), nullable=False),
        *_bools("unanswered", "name_mismatch", "corrected"),
        sa.Column("timing", sa.String(length=10), nullable=False),
        *_big("tokens", "with_images", "image_tokens"),
    ],
    "rollup_sizes": [sa.Column("tokens", sa.Integer(), nullable=False)],
    "rollup_calls": [
        sa.Column("occurrence", sa.Integer(), nullable=False),
        sa.Column("pair_state", sa.String(length=40), nullable=False),
        *_bools("reused_id", "ping_pong"),
    ],
    "rollup_signatures": [
        sa.Column("occurrences", sa.Integer(), nullable=False),
        *_big("errors", "wasted_tokens"),
    ],
    "rollup_traces": [
        sa.Column("max_occurrence", sa.Integer(), nullable=False),
        sa.Column("token_counts", sa.String(length=20), nullable=False),
        sa.Column("share_bin", sa.Integer(), nullable=True),
        *_big("messages", "total_tokens", "tool_result_tokens"),
    ],
    "rollup_findings": [
        sa.Column("kind", sa.String(length=40), nullable=False),
        *_big("traces_tool", "traces_kind"),
    ],
    "rollup_activity": [
        sa.Column("hour", sa.BigInteger(), nullable=True),
        *_bools("error"),
        sa.Column("error_type", sa.String(length=60), nullable=True),
        *_big("tokens"),
    ],
    "rollup_fingerprints": [
        sa.Column("fingerprint", sa.String(length=300), nullable=False),
        sa.Column("error_type", sa.String(length=60), nullable=True),
        *_big("traces"),
    ],
}


def upgrade() -> None:
    for name, measures in _TABLES.items():
        # Clustered by the key (grain, day, hash): one B-tree on SQLite, no other index.
        create_rollup(name, *measures)
    op.create_index(op.f("ix_tool_results_duration"), "tool_results", ["duration_ms"], unique=False)
    state = create_table(
        "rollup_state",
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("rebuilt_at", sa.DateTime(timezone=True), nullable=True),
    )
    empty = op.get_bind().execute(sa.text("SELECT NOT EXISTS (SELECT 1 FROM traces)")).scalar()
    op.bulk_insert(state, [{"id": 1, "complete": bool(empty), "rebuilt_at": None}])


def downgrade() -> None:
    op.drop_index(op.f("ix_tool_results_duration"), table_name="tool_results")
    op.drop_table("rollup_state")
    for name in reversed(list(_TABLES)):
        op.drop_table(name)
