"""Value buckets by blocks of days: ``rollup_size_buckets`` and ``rollup_duration_buckets`` also
count each block of 8 and of 64 days (``db.rollups.BLOCK_GRAINS``).

Over a wide range of days the size and execution-time histograms would sum a bucket row per day,
tool and bucket (454,000 rows for half the days of a 10M-message store, a fifth of the
Overview's SQL after that filter). With the blocks, a range reads its whole blocks and the days
at its edges (``db.rollups.day_ranges``). The tables are unchanged; on a store with traces the
two rollups are listed in ``rollup_state.pending`` and ``db.migrate.upgrade`` counts them,
alone, when the store is opened (the pages read the base tables for them until then).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

from db.migrations.ops import mark_pending

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_TABLES = ("rollup_size_buckets", "rollup_duration_buckets")
#: The grains of the blocks of 8 and of 64 days (``db.rollups.BLOCK_GRAINS`` when written).
_BLOCK_GRAINS = (17, 33)


def upgrade() -> None:
    # Counted when the store is opened (``db.migrate.count_rollups``); none without traces.
    mark_pending(*_TABLES)


def downgrade() -> None:
    # The day-grain rows stay exact: only the blocks' rows go.
    for name in _TABLES:
        op.execute(f"DELETE FROM {name} WHERE grain IN {_BLOCK_GRAINS}")
