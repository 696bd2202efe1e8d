"""The initial schema: ``imports``, ``traces``, ``messages``, ``tool_calls``, ``tool_results``,
``findings`` and ``rejected_records``, with their indexes and foreign keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.migrations.ops import (
    Index,
    big_id,
    columns,
    create_indexes,
    create_table,
    drop_indexes,
    json_type,
    of_import,
    owned_by_trace,
)

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TIMESTAMP = sa.DateTime(timezone=True)

#: Each table's indexes, in the order the tables are created (and dropped in the reverse).
_INDEXES: dict[str, list[Index]] = {
    "imports": [],
    "rejected_records": [
        ("ix_rejected_records_import_id", ["import_id"], False),
        ("ix_rejected_records_reason", ["reason"], False),
    ],
    "traces": [
        ("ix_traces_agent", ["agent"], False),
        ("ix_traces_display_id", ["display_id"], False),
        ("ix_traces_external_id", ["external_id"], False),
        ("ix_traces_import_id", ["import_id"], False),
        ("ix_traces_model", ["model"], False),
        ("ix_traces_started_at", ["started_at"], False),
    ],
    "findings": [
        ("ix_findings_name_tool", ["name", "tool"], False),
        ("ix_findings_trace_id", ["trace_id"], False),
    ],
    "messages": [("ix_messages_trace_id_seq", ["trace_id", "seq"], True)],
    "tool_calls": [
        ("ix_tool_calls_occurrence", ["occurrence"], False),
        ("ix_tool_calls_tool_call_id", ["tool_call_id"], False),
        ("ix_tool_calls_tool_name_pair_state", ["tool_name", "pair_state"], False),
        ("ix_tool_calls_trace_id_message_seq", ["trace_id", "message_seq", "call_index"], False),
    ],
    "tool_results": [
        ("ix_tool_results_error_type", ["error_type"], False),
        ("ix_tool_results_fingerprint", ["fingerprint"], False),
        ("ix_tool_results_tool_call_id", ["tool_call_id"], False),
        ("ix_tool_results_tool_status", ["tool", "status"], False),
        ("ix_tool_results_trace_id_message_seq", ["trace_id", "message_seq"], False),
    ],
}


def _items() -> dict[str, list[sa.Column | sa.Constraint]]:
    """Each table's columns (after its ``id``) and constraints, in creation order."""
    return {
        "imports": [
            sa.Column("started_at", _TIMESTAMP, nullable=False),
            sa.Column("finished_at", _TIMESTAMP, nullable=True),
            sa.Column("origin", sa.String(length=20), nullable=False),
            sa.Column("paths", json_type(), nullable=False),
            sa.Column("encoding", sa.String(length=40), nullable=False),
            *columns(sa.Integer(), "files", "records", "traces_imported", "duplicates", "rejected"),
            sa.Column("messages", sa.BigInteger(), nullable=False),
            sa.Column("seconds", sa.Float(), nullable=False),
            sa.Column("state", sa.String(length=20), nullable=False),
            sa.Column("error", sa.Text(), nullable=True),
        ],
        "rejected_records": [
            sa.Column("import_id", sa.Integer(), nullable=False),
            sa.Column("source_file", sa.Text(), nullable=False),
            sa.Column("line", sa.Integer(), nullable=False),
            sa.Column("byte_offset", sa.BigInteger(), nullable=False),
            sa.Column("reason", sa.String(length=60), nullable=False),
            sa.Column("message", sa.Text(), nullable=False),
            sa.Column("raw", sa.LargeBinary(), nullable=False),
            of_import("rejected_records"),
        ],
        "traces": [
            sa.Column("import_id", sa.Integer(), nullable=False),
            sa.Column("dedupe_key", sa.String(length=200), nullable=False),
            sa.Column("external_id", sa.String(length=400), nullable=True),
            sa.Column("display_id", sa.String(length=400), nullable=False),
            sa.Column("format", sa.String(length=40), nullable=False),
            sa.Column("source_file", sa.Text(), nullable=False),
            sa.Column("source_line", sa.Integer(), nullable=True),
            *columns(sa.String(length=200), "agent", "model", nullable=True),
            sa.Column("started_at", _TIMESTAMP, nullable=True),
            sa.Column("imported_at", _TIMESTAMP, nullable=False),
            *columns(json_type(), "tags", "metadata", "tools"),
            *columns(sa.Integer(), "record_count", "message_count", "tool_call_count",
                     "tool_result_count", "error_count", "problem_count"),
            *columns(sa.BigInteger(), "total_tokens", "tool_result_tokens", "wasted_tokens"),
            sa.Column("max_occurrence", sa.Integer(), nullable=False),
            of_import("traces"),
            sa.UniqueConstraint("dedupe_key", name=op.f("uq_traces_dedupe_key")),
        ],
        "findings": [
            sa.Column("trace_id", sa.Integer(), nullable=False),
            sa.Column("name", sa.String(length=60), nullable=False),
            sa.Column("tool", sa.String(length=400), nullable=True),
            sa.Column("message_seq", sa.Integer(), nullable=False),
            sa.Column("call_index", sa.Integer(), nullable=True),
            owned_by_trace("findings"),
        ],
        "messages": [
            *columns(sa.Integer(), "trace_id", "seq"),
            sa.Column("role", sa.String(length=20), nullable=False),
            sa.Column("content", sa.Text(), nullable=False),
            sa.Column("timestamp", _TIMESTAMP, nullable=True),
            *columns(sa.Integer(), "tokens", "chars", "bytes"),
            sa.Column("usage", json_type(), nullable=True),
            sa.Column("source_id", sa.String(length=400), nullable=True),
            sa.Column("source_line", sa.Integer(), nullable=True),
            sa.Column("raw", json_type(), nullable=True),
            owned_by_trace("messages"),
        ],
        "tool_calls": [
            *columns(sa.Integer(), "trace_id", "message_seq", "call_index"),
            sa.Column("tool_call_id", sa.String(length=400), nullable=True),
            sa.Column("tool_name", sa.String(length=400), nullable=False),
            sa.Column("arguments_raw", sa.Text(), nullable=True),
            sa.Column("arguments", json_type(), nullable=True),
            sa.Column("args_valid", sa.Boolean(), nullable=False),
            sa.Column("args_error", sa.Text(), nullable=True),
            sa.Column("timestamp", _TIMESTAMP, nullable=True),
            sa.Column("signature", sa.String(length=500), nullable=False),
            *columns(sa.Integer(), "occurrence", "run_length"),
            *columns(sa.Boolean(), "retry_after_error", "ping_pong"),
            sa.Column("pair_state", sa.String(length=30), nullable=False),
            sa.Column("pairing_method", sa.String(length=20), nullable=True),
            sa.Column("result_seq", sa.Integer(), nullable=True),
            *columns(sa.Boolean(), "name_mismatch", "reused_id"),
            sa.Column("schema_issue", sa.String(length=60), nullable=True),
            sa.Column("schema_detail", sa.Text(), nullable=True),
            owned_by_trace("tool_calls"),
        ],
        "tool_results": [
            *columns(sa.Integer(), "trace_id", "message_seq"),
            *columns(sa.String(length=400), "tool_call_id", "provided_name", nullable=True),
            sa.Column("explicit_error", sa.Boolean(), nullable=True),
            sa.Column("explicit_source", sa.String(length=40), nullable=True),
            sa.Column("timestamp", _TIMESTAMP, nullable=True),
            *columns(sa.Integer(), "tokens", "chars", "bytes"),
            sa.Column("tool", sa.String(length=400), nullable=False),
            *columns(sa.String(length=20), "status", "status_source"),
            *columns(sa.String(length=60), "error_type", "rule", nullable=True),
            sa.Column("fingerprint", sa.String(length=300), nullable=True),
            *columns(sa.Text(), "summary", "suggestion", nullable=True),
            sa.Column("suggestion_kind", sa.String(length=30), nullable=True),
            sa.Column("suggestion_detail", json_type(), nullable=True),
            sa.Column("is_protocol", sa.Boolean(), nullable=False),
            sa.Column("pair_state", sa.String(length=30), nullable=False),
            sa.Column("pairing_method", sa.String(length=20), nullable=True),
            *columns(sa.Integer(), "call_seq", "call_index", nullable=True),
            *columns(sa.Boolean(), "name_mismatch", "oversized"),
            sa.Column("verdict", sa.String(length=20), nullable=True),
            sa.Column("verdict_reason", sa.Text(), nullable=True),
            sa.Column("next_call_succeeded", sa.Boolean(), nullable=True),
            sa.Column("error_type_corrected", sa.String(length=60), nullable=True),
            sa.Column("verdict_corrected", sa.String(length=20), nullable=True),
            sa.Column("corrected_by", sa.String(length=200), nullable=True),
            sa.Column("corrected_at", _TIMESTAMP, nullable=True),
            owned_by_trace("tool_results"),
        ],
    }  # fmt: skip


#: The tables whose rows belong to a trace: their ids are 64-bit.
_BIG_IDS = ("findings", "messages", "tool_calls", "tool_results")


def upgrade() -> None:
    for name, items in _items().items():
        create_table(name, *items, id_kind=big_id() if name in _BIG_IDS else None)
        if _INDEXES[name]:
            create_indexes(name, _INDEXES[name])


def downgrade() -> None:
    for name in reversed(list(_INDEXES)):
        if _INDEXES[name]:
            drop_indexes(name, _INDEXES[name])
        op.drop_table(name)
