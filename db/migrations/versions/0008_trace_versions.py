"""Trace versions, rejected records kept once, and exact per-file accounting (issue 10).

* ``traces.content_hash`` (indexed) and ``traces.version``: a trace imported again under the same
  identity is ``unchanged`` (same hash) or ``updated`` (replaced, ``version`` + 1). The hash of a
  trace stored before this migration cannot be computed without parsing its file again, so it is
  left NULL, and NULL counts as "different": the next import of such a trace is an update (which
  stores the hash), never a silent skip. One exception: a trace without an external id was keyed
  by its content hash (``<format>:sha256:<hex>``), which is today's hash when it declares no
  tools; that hash is copied, so reading its file again finds it unchanged. Such a trace that
  declares tools is stored once more under its new identity (file and line) when its file is
  imported again: delete the old row if that matters.
* ``imports.duplicates`` is renamed ``unchanged`` (the same meaning: traces already stored with
  that content) and ``updated``, the record counts per outcome and ``rejected_new`` /
  ``rejected_known`` are added (0 for earlier imports).
* ``annotations.stale`` / ``stale_reason``: notes whose pair a new version changed or dropped.
* ``rejected_records.record_key`` (unique index; NULL for records kept earlier): the same bad record
  imported again is stored once.
* New tables ``trace_updates`` (which import and file replaced which trace) and
  ``import_files`` (records read per file and how each ended).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import columns, create_table, of_import, owned_by_trace

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_IMPORT_COUNTS = (
    "updated", "records_imported", "records_updated", "records_unchanged", "rejected_new",
    "rejected_known",
)  # fmt: skip
_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Plain ALTER TABLE (SQLite >= 3.35 renames and drops columns in place): batch mode would
    # copy ``imports`` and ``traces``, and SQLite refuses to drop a table other rows refer to.
    op.execute("ALTER TABLE imports RENAME COLUMN duplicates TO unchanged")
    for column in columns(sa.Integer(), *_IMPORT_COUNTS, server_default="0"):
        op.add_column("imports", column)
    op.add_column("traces", sa.Column("content_hash", sa.String(length=64), nullable=True))
    op.add_column("traces", sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
    op.create_index("ix_traces_content_hash", "traces", ["content_hash"])
    # A trace without an external id was keyed by its content hash (``<format>:sha256:<hex>``);
    # that hash is today's for a trace declaring no tools, so such a trace read again from any
    # path is recognized as unchanged instead of being stored twice under its new identity.
    op.execute(
        "UPDATE traces SET content_hash = substr(dedupe_key, length(dedupe_key) - 63) "
        "WHERE dedupe_key LIKE '%:sha256:%' AND CAST(tools AS TEXT) = '[]'"
    )
    op.add_column(
        "annotations", sa.Column("stale", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column("annotations", sa.Column("stale_reason", sa.Text(), nullable=True))
    op.add_column("rejected_records", sa.Column("record_key", sa.String(length=64), nullable=True))
    op.create_index(
        "ix_rejected_records_record_key", "rejected_records", ["record_key"], unique=True
    )
    create_table(
        "trace_updates",
        *columns(sa.Integer(), "import_id", "trace_id"),
        sa.Column("source_file", sa.Text(), nullable=False),
        sa.Column("old_hash", sa.String(length=64), nullable=True),
        sa.Column("new_hash", sa.String(length=64), nullable=False),
        *columns(sa.Integer(), "old_messages", "new_messages"),
        sa.Column("at", _TIMESTAMP, nullable=False),
        of_import("trace_updates"),
        owned_by_trace("trace_updates"),
    )
    op.create_index("ix_trace_updates_import_id", "trace_updates", ["import_id"])
    op.create_index("ix_trace_updates_trace_id", "trace_updates", ["trace_id"])
    create_table(
        "import_files",
        sa.Column("import_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("format", sa.String(length=40), nullable=True),
        *columns(sa.Integer(), "records", "imported", "updated", "unchanged", "rejected"),
        of_import("import_files"),
    )
    op.create_index("ix_import_files_import_id", "import_files", ["import_id"])


def downgrade() -> None:
    op.drop_index("ix_import_files_import_id", table_name="import_files")
    op.drop_table("import_files")
    op.drop_index("ix_trace_updates_trace_id", table_name="trace_updates")
    op.drop_index("ix_trace_updates_import_id", table_name="trace_updates")
    op.drop_table("trace_updates")
    op.drop_index("ix_rejected_records_record_key", table_name="rejected_records")
    op.drop_index("ix_traces_content_hash", table_name="traces")
    for table, column in (
        ("rejected_records", "record_key"),
        ("annotations", "stale_reason"),
        ("annotations", "stale"),
        ("traces", "version"),
        ("traces", "content_hash"),
        *(("imports", name) for name in reversed(_IMPORT_COUNTS)),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    op.execute("ALTER TABLE imports RENAME COLUMN unchanged TO duplicates")
