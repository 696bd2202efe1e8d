"""The initial schema: ``imports``, ``traces``, ``messages``, ``tool_calls``, ``tool_results``,
``findings`` and ``rejected_records``, with their indexes and foreign keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from db.migrations.ops import owned_by_trace

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "imports",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("origin", sa.String(length=20), nullable=False),
        sa.Column(
            "paths",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("encoding", sa.String(length=40), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("records", sa.Integer(), nullable=False),
        sa.Column("traces_imported", sa.Integer(), nullable=False),
        sa.Column("duplicates", sa.Integer(), nullable=False),
        sa.Column("rejected", sa.Integer(), nullable=False),
        sa.Column("messages", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_imports")),
    )
    op.create_table(
        "rejected_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("import_id", sa.Integer(), nullable=False),
        sa.Column("source_file", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("byte_offset", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.String(length=60), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["import_id"], ["imports.id"], name=op.f("fk_rejected_records_import_id_imports")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rejected_records")),
    )
    with op.batch_alter_table("rejected_records", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_rejected_records_import_id"), ["import_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_rejected_records_reason"), ["reason"], unique=False)

    op.create_table(
        "traces",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("import_id", sa.Integer(), nullable=False),
        sa.Column("dedupe_key", sa.String(length=200), nullable=False),
        sa.Column("external_id", sa.String(length=400), nullable=True),
        sa.Column("display_id", sa.String(length=400), nullable=False),
        sa.Column("format", sa.String(length=40), nullable=False),
        sa.Column("source_file", sa.Text(), nullable=False),
        sa.Column("source_line", sa.Integer(), nullable=True),
        sa.Column("agent", sa.String(length=200), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "tags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "tools",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("record_count", sa.Integer(), nullable=False),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("tool_call_count", sa.Integer(), nullable=False),
        sa.Column("tool_result_count", sa.Integer(), nullable=False),
        sa.Column("error_count", sa.Integer(), nullable=False),
        sa.Column("problem_count", sa.Integer(), nullable=False),
        sa.Column("total_tokens", sa.BigInteger(), nullable=False),
        sa.Column("tool_result_tokens", sa.BigInteger(), nullable=False),
        sa.Column("wasted_tokens", sa.BigInteger(), nullable=False),
        sa.Column("max_occurrence", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["import_id"], ["imports.id"], name=op.f("fk_traces_import_id_imports")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_traces")),
        sa.UniqueConstraint("dedupe_key", name=op.f("uq_traces_dedupe_key")),
    )
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_traces_agent"), ["agent"], unique=False)
        batch_op.create_index(batch_op.f("ix_traces_display_id"), ["display_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_traces_external_id"), ["external_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_traces_import_id"), ["import_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_traces_model"), ["model"], unique=False)
        batch_op.create_index("ix_traces_started_at", ["started_at"], unique=False)

    op.create_table(
        "findings",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("tool", sa.String(length=400), nullable=True),
        sa.Column("message_seq", sa.Integer(), nullable=False),
        sa.Column("call_index", sa.Integer(), nullable=True),
        owned_by_trace("findings"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_findings")),
    )
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.create_index("ix_findings_name_tool", ["name", "tool"], unique=False)
        batch_op.create_index(batch_op.f("ix_findings_trace_id"), ["trace_id"], unique=False)

    op.create_table(
        "messages",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column(
            "usage",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("source_id", sa.String(length=400), nullable=True),
        sa.Column("source_line", sa.Integer(), nullable=True),
        sa.Column(
            "raw",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        owned_by_trace("messages"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
    )
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.create_index("ix_messages_trace_id_seq", ["trace_id", "seq"], unique=True)

    op.create_table(
        "tool_calls",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("message_seq", sa.Integer(), nullable=False),
        sa.Column("call_index", sa.Integer(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=400), nullable=True),
        sa.Column("tool_name", sa.String(length=400), nullable=False),
        sa.Column("arguments_raw", sa.Text(), nullable=True),
        sa.Column(
            "arguments",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("args_valid", sa.Boolean(), nullable=False),
        sa.Column("args_error", sa.Text(), nullable=True),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=True),
        sa.Column("signature", sa.String(length=500), nullable=False),
        sa.Column("occurrence", sa.Integer(), nullable=False),
        sa.Column("run_length", sa.Integer(), nullable=False),
        sa.Column("retry_after_error", sa.Boolean(), nullable=False),
        sa.Column("ping_pong", sa.Boolean(), nullable=False),
        sa.Column("pair_state", sa.String(length=30), nullable=False),
        sa.Column("pairing_method", sa.String(length=20), nullable=True),
        sa.Column("result_seq", sa.Integer(), nullable=True),
        sa.Column("name_mismatch", sa.Boolean(), nullable=False),
        sa.Column("reused_id", sa.Boolean(), nullable=False),
        sa.Column("schema_issue", sa.String(length=60), nullable=True),
        sa.Column("schema_detail", sa.Text(), nullable=True),
        owned_by_trace("tool_calls"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_calls")),
    )
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.create_index("ix_tool_calls_occurrence", ["occurrence"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_tool_calls_tool_call_id"), ["tool_call_id"], unique=False
        )
        batch_op.create_index(
            "ix_tool_calls_tool_name_pair_state", ["tool_name", "pair_state"], unique=False
        )
        batch_op.create_index(
            "ix_tool_calls_trace_id_message_seq",
            ["trace_id", "message_seq", "call_index"],
            unique=False,
        )

    op.create_table(
        "tool_results",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("message_seq", sa.Integer(), nullable=False),
        sa.Column("tool_call_id", sa.String(length=400), nullable=True),
        sa.Column("provided_name", sa.String(length=400), nullable=True),
        sa.Column("explicit_error", sa.Boolean(), nullable=True),
        sa.Column("explicit_source", sa.String(length=40), nullable=True),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=400), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("status_source", sa.String(length=20), nullable=False),
        sa.Column("error_type", sa.String(length=60), nullable=True),
        sa.Column("rule", sa.String(length=60), nullable=True),
        sa.Column("fingerprint", sa.String(length=300), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("suggestion", sa.Text(), nullable=True),
        sa.Column("suggestion_kind", sa.String(length=30), nullable=True),
        sa.Column(
            "suggestion_detail",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("is_protocol", sa.Boolean(), nullable=False),
        sa.Column("pair_state", sa.String(length=30), nullable=False),
        sa.Column("pairing_method", sa.String(length=20), nullable=True),
        sa.Column("call_seq", sa.Integer(), nullable=True),
        sa.Column("call_index", sa.Integer(), nullable=True),
        sa.Column("name_mismatch", sa.Boolean(), nullable=False),
        sa.Column("oversized", sa.Boolean(), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=True),
        sa.Column("verdict_reason", sa.Text(), nullable=True),
        sa.Column("next_call_succeeded", sa.Boolean(), nullable=True),
        sa.Column("error_type_corrected", sa.String(length=60), nullable=True),
        sa.Column("verdict_corrected", sa.String(length=20), nullable=True),
        sa.Column("corrected_by", sa.String(length=200), nullable=True),
        sa.Column("corrected_at", sa.DateTime(timezone=True), nullable=True),
        owned_by_trace("tool_results"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_results")),
    )
    with op.batch_alter_table("tool_results", schema=None) as batch_op:
        batch_op.create_index("ix_tool_results_error_type", ["error_type"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_tool_results_fingerprint"), ["fingerprint"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_tool_results_tool_call_id"), ["tool_call_id"], unique=False
        )
        batch_op.create_index("ix_tool_results_tool_status", ["tool", "status"], unique=False)
        batch_op.create_index(
            "ix_tool_results_trace_id_message_seq", ["trace_id", "message_seq"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("tool_results", schema=None) as batch_op:
        batch_op.drop_index("ix_tool_results_trace_id_message_seq")
        batch_op.drop_index("ix_tool_results_tool_status")
        batch_op.drop_index(batch_op.f("ix_tool_results_tool_call_id"))
        batch_op.drop_index(batch_op.f("ix_tool_results_fingerprint"))
        batch_op.drop_index("ix_tool_results_error_type")

    op.drop_table("tool_results")
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.drop_index("ix_tool_calls_trace_id_message_seq")
        batch_op.drop_index("ix_tool_calls_tool_name_pair_state")
        batch_op.drop_index(batch_op.f("ix_tool_calls_tool_call_id"))
        batch_op.drop_index("ix_tool_calls_occurrence")

    op.drop_table("tool_calls")
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_index("ix_messages_trace_id_seq")

    op.drop_table("messages")
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_findings_trace_id"))
        batch_op.drop_index("ix_findings_name_tool")

    op.drop_table("findings")
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.drop_index("ix_traces_started_at")
        batch_op.drop_index(batch_op.f("ix_traces_model"))
        batch_op.drop_index(batch_op.f("ix_traces_import_id"))
        batch_op.drop_index(batch_op.f("ix_traces_external_id"))
        batch_op.drop_index(batch_op.f("ix_traces_display_id"))
        batch_op.drop_index(batch_op.f("ix_traces_agent"))

    op.drop_table("traces")
    with op.batch_alter_table("rejected_records", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rejected_records_reason"))
        batch_op.drop_index(batch_op.f("ix_rejected_records_import_id"))

    op.drop_table("rejected_records")
    op.drop_table("imports")
