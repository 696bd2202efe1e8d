"""The process running an import: ``imports.host``, ``imports.pid``, ``imports.process_start``.

An import whose process was killed (SIGKILL, a crash, a reboot) never records its end and
would stay ``running``. With the process it ran in (host name, pid, and the process's own start
so that a reused pid is not taken for it), the next import and the Imports page can tell it
is gone and mark it ``interrupted`` (``db.writes.traces.mark_gone_imports``).

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


# Plain ADD / DROP COLUMN on both engines (SQLite 3.35+ drops a column without constraints in
# place): a batch copy of ``imports`` would have to drop a table that other tables refer to.


def upgrade() -> None:
    op.add_column("imports", sa.Column("host", sa.String(255), nullable=True))
    op.add_column("imports", sa.Column("pid", sa.Integer(), nullable=True))
    op.add_column("imports", sa.Column("process_start", sa.String(80), nullable=True))


def downgrade() -> None:
    op.drop_column("imports", "process_start")
    op.drop_column("imports", "pid")
    op.drop_column("imports", "host")
