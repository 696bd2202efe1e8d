"""Value buckets for the size and duration histograms over a range of days.

Over many days the exact histograms are many rows (a row per day, tool and token size or
duration). Two rollups count them per bucket of two significant digits
(``db.rollups.value_buckets``) instead, at the day grain alone: ``rollup_size_buckets`` (with the
tokens) and ``rollup_duration_buckets``. And the keys of ``rollup_sizes`` and ``rollup_durations``
hold the value's bucket after the tool (``db.rollups.row_key``), so the exact rows of the few
buckets that decide a figure are ranges of keys (``db.rollups.wide_histograms``).

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

from db.migrations.ops import create_rollup, mark_pending

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_TABLES = {
    "rollup_size_buckets": [sa.Column("tokens", sa.BigInteger(), nullable=False)],
    "rollup_duration_buckets": [],
}
_RECOUNTED = ("rollup_sizes", "rollup_durations", "rollup_size_buckets", "rollup_duration_buckets")


def upgrade() -> None:
    for name, extra in _TABLES.items():
        create_rollup(name, sa.Column("bucket", sa.Integer(), nullable=False), *extra)
    # Counted when the store is opened (``db.migrate.count_rollups``); none without traces.
    mark_pending(*_RECOUNTED)


def downgrade() -> None:
    for name in _TABLES:
        op.drop_table(name)
    # Revision 0023's keys of these two are laid out otherwise.
    mark_pending("rollup_sizes", "rollup_durations")
