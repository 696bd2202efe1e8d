"""The session a trace belongs to: ``traces.session_id``, indexed with the start.

Traces sharing a session or conversation thread (OTLP ``session.id``, Claude Code's and
Langfuse's ``sessionId``, a LangSmith thread) are listed together on the Sessions page. The
import stores the session the format parser read (``ingest.model.Trace.session_id``); this
migration fills it in for the traces already stored from what their rows keep: a Claude Code
trace's external id (its ``sessionId``), an OTLP trace's ``session.id`` (else
``gen_ai.conversation.id``) metadata, a Langfuse trace's ``sessionId`` metadata, any other
format's ``session_id``, ``thread_id`` or ``conversation_id`` metadata. A LangSmith trace's
thread lies in its root run's raw record, which the store does not keep as such (its metadata's
``session_id`` is its project): it gets its session when imported again.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-04
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

#: As ``db.contract.widths`` (``traces.session_id``) and ``db.contract.bounds.KEY_HASH_DIGITS``
#: when this revision was written.
_WIDTH = 400
_HASH_DIGITS = 16
#: Traces read and updated per statement.
_BATCH = 5000
#: Per format, where its stored rows keep the session: ``None`` for the external id, else the
#: metadata keys, first found wins; any other format but LangSmith: :data:`_METADATA_KEYS`.
_SOURCES: dict[str, tuple[str, ...] | None] = {
    "claude_code": None,
    "otlp": ("session.id", "gen_ai.conversation.id"),
    "langfuse": ("sessionId",),
}
#: As ``ingest.formats._common.SESSION_METADATA_KEYS`` when this revision was written.
_METADATA_KEYS = ("session_id", "thread_id", "conversation_id")


def _fit_key(value: str) -> str:
    if len(value) <= _WIDTH:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_DIGITS]
    return f"{value[: _WIDTH - _HASH_DIGITS - 1]}~{digest}"


def _session(format_name: str, external_id: str | None, metadata: Any) -> str | None:
    keys = _SOURCES.get(format_name, _METADATA_KEYS)
    if keys is None:
        value: Any = external_id
    else:
        if isinstance(metadata, str | bytes):
            metadata = orjson.loads(metadata)
        found = metadata if isinstance(metadata, dict) else {}
        value = next((found[k] for k in keys if isinstance(found.get(k), str)), None)
    return _fit_key(value) if isinstance(value, str) and value else None


def upgrade() -> None:
    op.add_column("traces", sa.Column("session_id", sa.String(_WIDTH), nullable=True))
    op.create_index("ix_traces_session_id_started_at", "traces", ["session_id", "started_at"])
    bind = op.get_bind()
    read = sa.text(
        "SELECT id, format, external_id, metadata FROM traces "
        "WHERE id > :after AND format <> 'langsmith' ORDER BY id LIMIT :n"
    )
    write = sa.text("UPDATE traces SET session_id = :session WHERE id = :id")
    after = 0
    while True:
        rows = bind.execute(read, {"after": after, "n": _BATCH}).all()
        if not rows:
            break
        after = rows[-1][0]
        updates = [
            {"id": trace_id, "session": session}
            for trace_id, format_name, external_id, metadata in rows
            if (session := _session(format_name, external_id, metadata)) is not None
        ]
        if updates:
            bind.execute(write, updates)


def downgrade() -> None:
    op.drop_index("ix_traces_session_id_started_at", table_name="traces")
    op.drop_column("traces", "session_id")
