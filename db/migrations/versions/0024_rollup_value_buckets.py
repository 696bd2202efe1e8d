"""Value buckets for the size and duration histograms over a range of days.

Over many days the exact histograms are many rows (a row per day, tool and token size or
duration). Two rollups count them per bucket of two significant digits (``db.value_buckets``)
instead, at the day grain alone: ``rollup_size_buckets`` (with the tokens) and
``rollup_duration_buckets``. And the keys of ``rollup_sizes`` and ``rollup_durations`` hold
the value's bucket after the tool (``db.rollups.row_key``), so the exact rows of the few
buckets that decide a figure are ranges of keys (``db.wide_histograms``).

Keys are computed in Python: on a store with traces the four rollups are listed in
``rollup_state.pending`` and ``db.migrate.upgrade`` counts them, alone, when the store is opened
(the pages read the base tables for them until then).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_TABLES = {
    "rollup_size_buckets": [sa.Column("tokens", sa.BigInteger(), nullable=False)],
    "rollup_duration_buckets": [],
}
_RECOUNTED = "rollup_sizes rollup_durations rollup_size_buckets rollup_duration_buckets"


def upgrade() -> None:
    for name, extra in _TABLES.items():
        op.create_table(
            name,
            sa.Column("key", sa.LargeBinary(length=16), primary_key=True, nullable=False),
            sa.Column("grain", sa.Integer(), nullable=False),
            sa.Column("day", sa.Integer(), nullable=True),
            sa.Column("import_id", sa.Integer(), nullable=True),
            sa.Column("agent", sa.String(length=200), nullable=True),
            sa.Column("model", sa.String(length=200), nullable=True),
            sa.Column("tool", sa.String(length=400), nullable=True),
            sa.Column("n", sa.BigInteger(), nullable=False),
            sa.Column("bucket", sa.Integer(), nullable=False),
            *extra,
            sa.PrimaryKeyConstraint("key", name=op.f(f"pk_{name}")),
            sqlite_with_rowid=False,
        )
    _pending(_RECOUNTED)


def _pending(names: str) -> None:
    # Counted when the store is opened (``db.migrate.count_rollups``); none without traces.
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT EXISTS (SELECT 1 FROM traces)")).scalar():
        bind.execute(
            sa.text(
                "UPDATE rollup_state SET pending = "
                "CASE WHEN pending IS NULL THEN :names ELSE pending || ' ' || :names END"
            ),
            {"names": names},
        )


def downgrade() -> None:
    for name in _TABLES:
        op.drop_table(name)
    # Revision 0023's keys of these two are laid out otherwise.
    _pending("rollup_sizes rollup_durations")
