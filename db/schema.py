"""The storage schema: SQLAlchemy 2 typed models for every table ToolLens keeps.

Hot fields (what charts filter and group by) are columns; the long tail is JSON (JSONB on
PostgreSQL). Keys are integer surrogates; ids that come from trace files (``tool_call_id``,
``external_id``) are plain indexed columns, never unique, because real traces reuse them.
Provided facts and derived facts sit side by side but under different names (``explicit_error``
vs ``status``/``status_source``); ``toollens reanalyze`` rewrites only the derived ones and never
touches the human corrections (``*_corrected``).

No ``from __future__ import annotations`` here: SQLAlchemy reads each ``Mapped[...]`` annotation,
and as text it evaluates each of them again (importing it with ``db.queries.common``, which maps
the classes: 0.126 s with the future import, 0.100 s without; part of every ``toollens`` start).
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    TypeDecorator,
    false,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from db.vocabulary import (
    CALL_KINDS,
    DURATION_SOURCES,
    FINDING_KINDS,
    PAIR_STATES,
    PAIRING_METHODS,
    ROLES,
    STATUS_SOURCES,
    STATUSES,
    TOKEN_COUNTS,
    VERDICTS,
)

#: Constraint names are stable across dialects, so migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: JSON everywhere, JSONB on PostgreSQL (indexable, compact, de-duplicated keys).
JsonType = JSON().with_variant(JSONB(), "postgresql")


def _one_of(column: str, values: Sequence[str]) -> CheckConstraint:
    """A CHECK that ``column`` holds one of ``values``, named ``ck_<table>_<column>`` by the
    naming convention. A NULL passes (SQL: ``NULL IN (…)`` is not false), so nullable columns
    stay nullable.

    >>> str(_one_of("status", ("success", "error")).sqltext)
    "status IN ('success', 'error')"
    """
    listed = ", ".join("'" + value.replace("'", "''") + "'" for value in values)
    return CheckConstraint(f"{column} IN ({listed})", name=column)


class UtcTimeStamp(TypeDecorator[datetime]):
    """Timestamps stored in UTC and always read back timezone-aware.

    SQLite has no time zone support; naive values written there are UTC by convention.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JsonType,
        list[Any]: JsonType,
        Any: JsonType,
    }


class ImportRun(Base):
    """One run of ``toollens import`` (or an upload, or the demo)."""

    __tablename__ = "imports"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UtcTimeStamp)
    finished_at: Mapped[datetime | None] = mapped_column(UtcTimeStamp)
    #: ``cli`` | ``upload`` | ``demo`` | ``bench``
    origin: Mapped[str] = mapped_column(String(20), default="cli")
    paths: Mapped[list[Any]] = mapped_column(default=list)
    encoding: Mapped[str] = mapped_column(String(40))
    files: Mapped[int] = mapped_column(Integer, default=0)
    records: Mapped[int] = mapped_column(Integer, default=0)
    traces_imported: Mapped[int] = mapped_column(Integer, default=0)
    #: Traces already stored under the same identity with a different content: replaced.
    updated: Mapped[int] = mapped_column(Integer, default=0)
    #: Traces already stored with the same content (or, without an external id, the same
    #: content under another identity): nothing changed.
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    #: Input records of the imported, updated and unchanged traces: with ``rejected`` they add
    #: up to ``records``.
    records_imported: Mapped[int] = mapped_column(Integer, default=0)
    records_updated: Mapped[int] = mapped_column(Integer, default=0)
    records_unchanged: Mapped[int] = mapped_column(Integer, default=0)
    rejected: Mapped[int] = mapped_column(Integer, default=0)
    #: Of ``rejected``: first seen by this import, and already kept from an earlier one.
    rejected_new: Mapped[int] = mapped_column(Integer, default=0)
    rejected_known: Mapped[int] = mapped_column(Integer, default=0)
    messages: Mapped[int] = mapped_column(BigInteger, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    #: Item / block type -> how many items of a type no parser knew were kept as opaque
    #: messages (``unknown_item``); NULL for imports from before it was counted.
    unknown_items: Mapped[dict[str, Any] | None] = mapped_column()
    #: ``running`` | ``done`` | ``failed`` | ``interrupted`` (Ctrl-C or SIGTERM; run it again)
    state: Mapped[str] = mapped_column(String(20), default="running")
    error: Mapped[str | None] = mapped_column(Text)
    #: Secrets replaced by ``[REDACTED:kind]`` at import, per kind (``{}``: none found;
    #: ``None``: imported before redaction existed).
    redactions: Mapped[dict[str, Any] | None] = mapped_column()


class SourceFileRow(Base):
    """What the last import read of one trace file, so that the next one reads only what changed.

    ``read_bytes`` is where reading can go on (the end of the last complete line of a JSONL file)
    or NULL where it cannot (compressed files, JSON documents and arrays: read whole again).
    ``tail_hash`` covers the 64 KiB ending at ``read_bytes`` (at ``size`` when NULL).
    """

    __tablename__ = "source_files"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: Absolute, resolved path of the file on the machine that imported it.
    path: Mapped[str] = mapped_column(Text, unique=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)
    head_hash: Mapped[str] = mapped_column(String(64))
    tail_hash: Mapped[str] = mapped_column(String(64))
    #: SHA-256 of the whole file, computed only under ``--full-hash``.
    full_hash: Mapped[str | None] = mapped_column(String(64))
    format: Mapped[str | None] = mapped_column(String(40))
    read_bytes: Mapped[int | None] = mapped_column(BigInteger)
    #: Lines before ``read_bytes``: where line numbering goes on.
    read_lines: Mapped[int] = mapped_column(BigInteger, default=0)
    records: Mapped[int] = mapped_column(BigInteger, default=0)
    traces: Mapped[int] = mapped_column(BigInteger, default=0)
    last_import_id: Mapped[int] = mapped_column(ForeignKey("imports.id"))


class TraceRow(Base):
    """One agent run / conversation."""

    __tablename__ = "traces"
    __table_args__ = (
        Index("ix_traces_started_at", "started_at"),
        _one_of("token_counts", TOKEN_COUNTS),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id"), index=True)
    #: Identity (format + external id, else format + source file + first line, else a content
    #: hash): a trace imported again under the same identity is unchanged or a new version.
    dedupe_key: Mapped[str] = mapped_column(String(200), unique=True)
    #: SHA-256 of the canonical content (messages, tools, metadata; not file name or line).
    #: NULL for traces stored before migration 0008: their next import counts as an update.
    content_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    #: 1 when first imported, +1 for every update that replaced its content.
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    external_id: Mapped[str | None] = mapped_column(String(400), index=True)
    #: What the UI and ``toollens pairs`` call the trace: the external id, else a short hash.
    display_id: Mapped[str] = mapped_column(String(400), index=True)
    #: The first user message, on one line and shortened: what lists call the trace.
    title: Mapped[str | None] = mapped_column(String(200))
    format: Mapped[str] = mapped_column(String(40))
    source_file: Mapped[str] = mapped_column(Text)
    source_line: Mapped[int | None] = mapped_column(Integer)
    agent: Mapped[str | None] = mapped_column(String(200), index=True)
    model: Mapped[str | None] = mapped_column(String(200), index=True)
    started_at: Mapped[datetime | None] = mapped_column(UtcTimeStamp)
    imported_at: Mapped[datetime] = mapped_column(UtcTimeStamp)
    tags: Mapped[list[Any]] = mapped_column(default=list)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    #: Tool definitions the trace declares (name, description, parameters JSON Schema).
    tools: Mapped[list[Any]] = mapped_column(default=list)
    #: Input records (lines / array items) the trace was built from.
    record_count: Mapped[int] = mapped_column(Integer, default=1)
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    tool_call_count: Mapped[int] = mapped_column(Integer, default=0)
    tool_result_count: Mapped[int] = mapped_column(Integer, default=0)
    error_count: Mapped[int] = mapped_column(Integer, default=0)
    problem_count: Mapped[int] = mapped_column(Integer, default=0)
    total_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    tool_result_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    wasted_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    max_occurrence: Mapped[int] = mapped_column(Integer, default=0)
    #: ``exact``: token counts of the model's own tokenizer; ``estimate``: of another one.
    token_counts: Mapped[str] = mapped_column(
        String(20), default="estimate", server_default="estimate"
    )
    #: Set when a reviewer marks the trace reviewed (the Review page's queue hides it).
    reviewed_at: Mapped[datetime | None] = mapped_column(UtcTimeStamp)
    reviewed_by: Mapped[str | None] = mapped_column(String(200))


class MessageRow(Base):
    """One message of a trace, in ``seq`` order, with its raw payload."""

    __tablename__ = "messages"
    __table_args__ = (
        Index("ix_messages_trace_id_seq", "trace_id", "seq", unique=True),
        _one_of("role", ROLES),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(20))
    content: Mapped[str] = mapped_column(Text, default="")
    timestamp: Mapped[datetime | None] = mapped_column(UtcTimeStamp)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    chars: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(Integer, default=0)
    usage: Mapped[dict[str, Any] | None] = mapped_column()
    source_id: Mapped[str | None] = mapped_column(String(400))
    source_line: Mapped[int | None] = mapped_column(Integer)
    #: Sub-agent thread (Claude Code side chain, Langfuse thread); NULL: the main conversation.
    branch: Mapped[str | None] = mapped_column(String(400))
    raw: Mapped[Any] = mapped_column(nullable=True)


class ToolCallRow(Base):
    """One tool call and its derived facts (pairing, loop position, schema check)."""

    __tablename__ = "tool_calls"
    __table_args__ = (
        # A trace's calls in order; with the columns the filtered per-page counts group by, so
        # that a filter on traces reads its calls' entries and never the table.
        Index(
            "ix_tool_calls_trace_id_message_seq",
            "trace_id",
            "message_seq",
            "call_index",
            "tool_name",
            "pair_state",
            "reused_id",
            "occurrence",
        ),
        # Per-tool call counts and pair states without reading the table.
        Index("ix_tool_calls_tool_name_pair_state_reused", "tool_name", "pair_state", "reused_id"),
        # Loops at any k: the few calls at occurrence >= k, with what loop figures group by.
        Index("ix_tool_calls_occurrence_tool", "occurrence", "tool_name", "trace_id"),
        # The few calls in an A-B-A-B ping-pong.
        Index(
            "ix_tool_calls_ping_pong",
            "trace_id",
            "message_seq",
            "call_index",
            "tool_name",
            sqlite_where=text("ping_pong = 1"),
            postgresql_where=text("ping_pong"),
        ),
        _one_of("pair_state", PAIR_STATES),
        _one_of("pairing_method", PAIRING_METHODS),
        _one_of("kind", CALL_KINDS),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"))
    message_seq: Mapped[int] = mapped_column(Integer)
    call_index: Mapped[int] = mapped_column(Integer)
    tool_call_id: Mapped[str | None] = mapped_column(String(400), index=True)
    tool_name: Mapped[str] = mapped_column(String(400))
    arguments_raw: Mapped[str | None] = mapped_column(Text)
    #: Parsed arguments; NULL when they did not parse (see ``args_valid``).
    arguments: Mapped[Any] = mapped_column(nullable=True)
    args_valid: Mapped[bool] = mapped_column(Boolean, default=True)
    args_error: Mapped[str | None] = mapped_column(Text)
    timestamp: Mapped[datetime | None] = mapped_column(UtcTimeStamp)
    # Derived facts.
    signature: Mapped[str] = mapped_column(String(500))
    occurrence: Mapped[int] = mapped_column(Integer, default=1)
    run_length: Mapped[int] = mapped_column(Integer, default=1)
    retry_after_error: Mapped[bool] = mapped_column(Boolean, default=False)
    ping_pong: Mapped[bool] = mapped_column(Boolean, default=False)
    pair_state: Mapped[str] = mapped_column(String(30))
    pairing_method: Mapped[str | None] = mapped_column(String(20))
    result_seq: Mapped[int | None] = mapped_column(Integer)
    name_mismatch: Mapped[bool] = mapped_column(Boolean, default=False)
    reused_id: Mapped[bool] = mapped_column(Boolean, default=False)
    schema_issue: Mapped[str | None] = mapped_column(String(60))
    schema_detail: Mapped[str | None] = mapped_column(Text)
    #: Who runs the call (``db.vocabulary.CallKind``): client, server (the provider's API) or mcp.
    kind: Mapped[str] = mapped_column(String(10), default="client", server_default="client")


#: The results no call shows as its answer (the predicate of ``ix_tool_results_unpaired``; the
#: queries spell it the same way, with literals, so both databases use the index).
UNPAIRED_RESULT_SQL = "pair_state IN ('orphan_result', 'duplicate_result') OR call_seq IS NULL"
#: The predicate of the partial verdict index: results with an effective verdict.
_HAS_VERDICT = "coalesce(verdict_corrected, verdict) IS NOT NULL"


class ToolResultRow(Base):
    """One Tool Message: provided facts, derived facts, and human corrections."""

    __tablename__ = "tool_results"
    __table_args__ = (
        # A trace's results in order; with the columns the per-page counts read (sizes, status,
        # pairing, name mismatches), so that a filter on traces reads its results' entries and
        # never the table, and unfiltered counts scan this index instead of the table.
        Index(
            "ix_tool_results_trace_id_message_seq",
            "trace_id",
            "message_seq",
            "tool",
            "tokens",
            "status",
            "pair_state",
            "name_mismatch",
            "call_seq",
        ),
        # Percentiles and size charts sort by tokens; the index makes them index-only scans.
        Index("ix_tool_results_tokens", "tokens"),
        Index("ix_tool_results_tool_tokens", "tool", "tokens"),
        # Error results (about a tenth) with every column the error charts group by; partial,
        # so success results cost nothing. ``status`` is listed so that SQLite sees the index
        # as covering.
        Index(
            "ix_tool_results_errors",
            "fingerprint",
            "tool",
            "error_type",
            "error_type_corrected",
            "status_source",
            "rule",
            "trace_id",
            "timestamp",
            "next_call_succeeded",
            "status",
            sqlite_where=text("status = 'error'"),
            postgresql_where=text("status = 'error'"),
        ),
        # An error group's first occurrence (``db.queries.errors``: the example of a page's
        # fingerprints): the first entry of its fingerprint, or the first in id order whose
        # trace a filter picks (the trace is in the entry). PostgreSQL's indexes hold no id, so
        # without this index it read every error of the group from the table (0.6 s per page at
        # 10M messages).
        Index(
            "ix_tool_results_error_examples",
            "fingerprint",
            "id",
            "trace_id",
            sqlite_where=text("status = 'error'"),
            postgresql_where=text("status = 'error'"),
        ),
        # Results with a verdict (a few percent), by the effective verdict (a correction wins),
        # with every column the verdict charts read: the verdict columns themselves are listed so
        # that SQLite sees the index as covering.
        Index(
            "ix_tool_results_effective_verdict",
            func.coalesce(text("verdict_corrected"), text("verdict")),
            "tool",
            "trace_id",
            "verdict",
            "verdict_corrected",
            "error_type",
            "error_type_corrected",
            "suggestion_kind",
            sqlite_where=text(_HAS_VERDICT),
            postgresql_where=text(_HAS_VERDICT),
        ),
        # Results carrying advice (the text itself is not indexed).
        Index(
            "ix_tool_results_advised",
            "tool",
            "status",
            "next_call_succeeded",
            "trace_id",
            sqlite_where=text("suggestion IS NOT NULL"),
            postgresql_where=text("suggestion IS NOT NULL"),
        ),
        # The few results no call shows as its answer (orphans, second answers, early results:
        # ``db.queries.common.unpaired_result``), in trace order: the pairs list's branch of
        # them reads this instead of walking every result of the store to find its first page.
        Index(
            "ix_tool_results_unpaired",
            "trace_id",
            "message_seq",
            sqlite_where=text(UNPAIRED_RESULT_SQL),
            postgresql_where=text(UNPAIRED_RESULT_SQL),
        ),
        # The few results a reviewer corrected.
        Index(
            "ix_tool_results_corrected",
            "error_type_corrected",
            "verdict_corrected",
            "status",
            "trace_id",
            sqlite_where=text("error_type_corrected IS NOT NULL OR verdict_corrected IS NOT NULL"),
            postgresql_where=text(
                "error_type_corrected IS NOT NULL OR verdict_corrected IS NOT NULL"
            ),
        ),
        # The closed sets of db.vocabulary. error_type has no CHECK: a protocol-provided
        # error type is kept verbatim, so its set is open.
        _one_of("status", STATUSES),
        _one_of("status_source", STATUS_SOURCES),
        _one_of("pair_state", PAIR_STATES),
        _one_of("pairing_method", PAIRING_METHODS),
        _one_of("verdict", VERDICTS),
        _one_of("verdict_corrected", VERDICTS),
        _one_of("duration_source", DURATION_SOURCES),
        # Per-tool duration percentiles read the tool's known durations in order.
        Index("ix_tool_results_tool_duration", "tool", "duration_ms"),
        # The overall nearest-rank percentiles read the ordered durations at a rank.
        Index("ix_tool_results_duration", "duration_ms"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"))
    message_seq: Mapped[int] = mapped_column(Integer)
    # Provided facts.
    tool_call_id: Mapped[str | None] = mapped_column(String(400), index=True)
    provided_name: Mapped[str | None] = mapped_column(String(400))
    explicit_error: Mapped[bool | None] = mapped_column(Boolean)
    explicit_source: Mapped[str | None] = mapped_column(String(40))
    timestamp: Mapped[datetime | None] = mapped_column(UtcTimeStamp)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    chars: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(Integer, default=0)
    # Derived facts.
    #: The tool this result belongs to: the paired call's name, else the provided name.
    tool: Mapped[str] = mapped_column(String(400))
    status: Mapped[str] = mapped_column(String(20))
    status_source: Mapped[str] = mapped_column(String(20))
    error_type: Mapped[str | None] = mapped_column(String(60))
    rule: Mapped[str | None] = mapped_column(String(60))
    # Looked up among error results only, in ``ix_tool_results_errors``.
    fingerprint: Mapped[str | None] = mapped_column(String(300))
    summary: Mapped[str | None] = mapped_column(Text)
    suggestion: Mapped[str | None] = mapped_column(Text)
    suggestion_kind: Mapped[str | None] = mapped_column(String(30))
    suggestion_detail: Mapped[dict[str, Any] | None] = mapped_column()
    is_protocol: Mapped[bool] = mapped_column(Boolean, default=False)
    pair_state: Mapped[str] = mapped_column(String(30))
    pairing_method: Mapped[str | None] = mapped_column(String(20))
    call_seq: Mapped[int | None] = mapped_column(Integer)
    call_index: Mapped[int | None] = mapped_column(Integer)
    name_mismatch: Mapped[bool] = mapped_column(Boolean, default=False)
    oversized: Mapped[bool] = mapped_column(Boolean, default=False)
    #: Tokens of the images in the result (``ingest.images``; included in ``tokens``), and
    #: each image: ``{"media", "width", "height", "rule", "tokens", "detail"}``.
    image_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    images: Mapped[list[Any] | None] = mapped_column()
    #: The model call that read the result: its message seq and input tokens (from its usage).
    read_by_seq: Mapped[int | None] = mapped_column(Integer)
    read_input_tokens: Mapped[int | None] = mapped_column(BigInteger)
    verdict: Mapped[str | None] = mapped_column(String(20))
    verdict_reason: Mapped[str | None] = mapped_column(Text)
    next_call_succeeded: Mapped[bool | None] = mapped_column(Boolean)
    #: Execution time of the answered call in milliseconds (``ingest.durations``): negative
    #: when the result is stamped before its call, NULL when unknown.
    duration_ms: Mapped[float | None] = mapped_column(Float)
    #: ``span`` (the tool span's end − start, a provided fact) | ``timestamps`` (derived).
    duration_source: Mapped[str | None] = mapped_column(String(20))
    #: The Tool Message's first characters on one line (``db.records.one_line_preview``).
    preview: Mapped[str | None] = mapped_column(Text)
    # Human corrections (never written by analysis).
    error_type_corrected: Mapped[str | None] = mapped_column(String(60))
    verdict_corrected: Mapped[str | None] = mapped_column(String(20))
    corrected_by: Mapped[str | None] = mapped_column(String(200))
    corrected_at: Mapped[datetime | None] = mapped_column(UtcTimeStamp)


class FindingRow(Base):
    """One named, countable Tool Message problem (``bare_status``, ``oversized`` …)."""

    __tablename__ = "findings"
    __table_args__ = (
        Index("ix_findings_name_tool", "name", "tool"),
        _one_of("name", FINDING_KINDS),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(60))
    tool: Mapped[str | None] = mapped_column(String(400))
    #: Seq of the message the finding is about (the call's or the result's message).
    message_seq: Mapped[int] = mapped_column(Integer)
    call_index: Mapped[int | None] = mapped_column(Integer)


class ErrorStreakRow(Base):
    """k or more consecutive calls of one tool ending in one error fingerprint
    (``ingest.streaks``); streaks of 2 or more are stored, the threshold k filters in SQL."""

    __tablename__ = "error_streaks"
    __table_args__ = (
        # Streaks at any k: the few at length >= k, with what the figures group by.
        Index("ix_error_streaks_length_tool", "length", "tool", "trace_id"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    tool: Mapped[str] = mapped_column(String(400))
    fingerprint: Mapped[str | None] = mapped_column(String(300))
    error_type: Mapped[str | None] = mapped_column(String(60))
    first_seq: Mapped[int] = mapped_column(Integer)
    first_index: Mapped[int] = mapped_column(Integer)
    last_seq: Mapped[int] = mapped_column(Integer)
    last_index: Mapped[int] = mapped_column(Integer)
    length: Mapped[int] = mapped_column(Integer)
    #: Result tokens + argument tokens of the calls after the first.
    wasted_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    #: Known execution times of the calls after the first, in milliseconds.
    wasted_ms: Mapped[float | None] = mapped_column(Float)


class RejectedRecord(Base):
    """An input record that could not be imported, kept with its raw bytes and the reason."""

    __tablename__ = "rejected_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id"), index=True)
    source_file: Mapped[str] = mapped_column(Text)
    line: Mapped[int] = mapped_column(Integer)
    byte_offset: Mapped[int] = mapped_column(BigInteger)
    reason: Mapped[str] = mapped_column(String(60), index=True)
    message: Mapped[str] = mapped_column(Text)
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    #: SHA-256 of (source file, byte offset, SHA-256 of the raw bytes): the same bad record
    #: imported again is kept once. NULL for records kept before migration 0008.
    record_key: Mapped[str | None] = mapped_column(String(64), unique=True, index=True)


class AnnotationRow(Base):
    """A reviewer's note on a trace or on one call/result pair: a label, free text, who, when.

    The target is the trace (``message_seq`` null), a call (``message_seq`` of the assistant
    message + ``call_index``) or a result that answers no call (its ``message_seq``, no
    ``call_index``). Each note is its own row, so reviewers writing at the same time never
    overwrite each other; edits check ``version`` (optimistic concurrency).
    """

    __tablename__ = "annotations"
    __table_args__ = (
        Index("ix_annotations_trace_id_message_seq", "trace_id", "message_seq", "call_index"),
        Index("ix_annotations_label", "label"),
        Index("ix_annotations_author", "author"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"))
    message_seq: Mapped[int | None] = mapped_column(Integer)
    call_index: Mapped[int | None] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(60))
    note: Mapped[str] = mapped_column(Text, default="")
    author: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcTimeStamp)
    updated_at: Mapped[datetime] = mapped_column(UtcTimeStamp)
    #: Who made the last edit (the author until someone else edits).
    updated_by: Mapped[str] = mapped_column(String(200))
    #: Incremented by every edit; an edit based on an older version is a conflict.
    version: Mapped[int] = mapped_column(Integer, default=1)
    #: Set when a new version of the trace changed or dropped the pair the note is about (or
    #: the note stands for a correction whose result is gone): kept, never deleted.
    stale: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    stale_reason: Mapped[str | None] = mapped_column(Text)


class TraceUpdate(Base):
    """One replacement of a stored trace by a new version: which import and file it came from."""

    __tablename__ = "trace_updates"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id"), index=True)
    trace_id: Mapped[int] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    source_file: Mapped[str] = mapped_column(Text)
    old_hash: Mapped[str | None] = mapped_column(String(64))
    new_hash: Mapped[str] = mapped_column(String(64))
    old_messages: Mapped[int] = mapped_column(Integer)
    new_messages: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UtcTimeStamp)


class ImportFile(Base):
    """What one import did with one file: records read and how each of them ended.

    ``records == imported + updated + unchanged + rejected`` (input records, not traces; the
    reader yields no record for a blank line, so blank lines are not counted).
    """

    __tablename__ = "import_files"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    import_id: Mapped[int] = mapped_column(ForeignKey("imports.id"), index=True)
    path: Mapped[str] = mapped_column(Text)
    size: Mapped[int | None] = mapped_column(BigInteger)
    format: Mapped[str | None] = mapped_column(String(40))
    records: Mapped[int] = mapped_column(Integer, default=0)
    imported: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    rejected: Mapped[int] = mapped_column(Integer, default=0)


# --- Rollups -------------------------------------------------------------------------------------
# Summary tables the import keeps in the same transaction as the traces they summarize
# (``db.rollups``): what the pages chart, counted per *grain* — a set of the trace dimensions the
# sidebar filters on (day of the trace's start, import, agent, model), the dimensions outside the
# grain left NULL — and per tool and the figure's own keys. A row's identity is ``key``, a hash of
# its grain, dimensions and keys (NULLs included, which a unique index over the columns would not
# treat as equal). ``n`` counts the rows (or traces) summarized; a row whose ``n`` falls to 0 is
# deleted.


#: Rollup tables are clustered by their key (``db.rollups.key_prefix``: grain, then day): on
#: SQLite a table without rowid is that one B-tree.
_ROLLUP_TABLE: Any = {"sqlite_with_rowid": False}


class _RollupColumns:
    """The identity and the trace dimensions every rollup row has."""

    key: Mapped[bytes] = mapped_column(LargeBinary(16), primary_key=True)
    #: Which dimensions the row is counted by: a bit set of ``db.rollups.Dim``.
    grain: Mapped[int] = mapped_column(Integer)
    #: Days since 1970-01-01 (UTC) of the trace's start; NULL outside the grain or without one.
    day: Mapped[int | None] = mapped_column(Integer)
    import_id: Mapped[int | None] = mapped_column(Integer)
    agent: Mapped[str | None] = mapped_column(String(200))
    model: Mapped[str | None] = mapped_column(String(200))
    tool: Mapped[str | None] = mapped_column(String(400))
    n: Mapped[int] = mapped_column(BigInteger)


class RollupResultRow(_RollupColumns, Base):
    """Tool Messages by status, effective error type and verdict, pairing and flags."""

    __tablename__ = "rollup_results"
    __table_args__ = _ROLLUP_TABLE

    status: Mapped[str] = mapped_column(String(20))
    status_source: Mapped[str | None] = mapped_column(String(20))
    #: The rule that decided an error (NULL for other results).
    rule: Mapped[str | None] = mapped_column(String(100))
    error_type: Mapped[str | None] = mapped_column(String(60))
    verdict: Mapped[str | None] = mapped_column(String(40))
    suggested: Mapped[bool] = mapped_column(Boolean)
    pair_state: Mapped[str] = mapped_column(String(40))
    #: ``call_seq IS NULL``: the result answers no call.
    unanswered: Mapped[bool] = mapped_column(Boolean)
    name_mismatch: Mapped[bool] = mapped_column(Boolean)
    corrected: Mapped[bool] = mapped_column(Boolean)
    #: How the execution time is known: ``span`` | ``timed`` | ``negative`` | ``missing``.
    timing: Mapped[str] = mapped_column(String(10))
    #: An error's next call of the same tool: 1 succeeded, 0 did not, -1 none (NULL for results
    #: that are not errors): the Suggestions page's recovery rates.
    next_call: Mapped[int | None] = mapped_column(SmallInteger)
    #: The kind of the Tool Message's advice (``tool_results.suggestion_kind``): the
    #: Suggestions page's verdicts by kind of advice.
    suggestion_kind: Mapped[str | None] = mapped_column(String(30))
    tokens: Mapped[int] = mapped_column(BigInteger)
    #: Results with images and their images' tokens.
    with_images: Mapped[int] = mapped_column(BigInteger)
    image_tokens: Mapped[int] = mapped_column(BigInteger)


class RollupSizeRow(_RollupColumns, Base):
    """Tool Messages per (tool, exact token size): every size percentile stays exact."""

    __tablename__ = "rollup_sizes"
    __table_args__ = _ROLLUP_TABLE

    tokens: Mapped[int] = mapped_column(Integer)


class RollupInputShareRow(_RollupColumns, Base):
    """Tool Messages per bin of their share of the input of the model call that read them
    (``db.queries.common.INPUT_SHARE_BINS``; results with a reported input only)."""

    __tablename__ = "rollup_input_shares"
    __table_args__ = _ROLLUP_TABLE

    bin: Mapped[int] = mapped_column(Integer)


class RollupDurationRow(_RollupColumns, Base):
    """Timed Tool Messages (a duration ≥ 0) per (tool, exact duration): every execution-time
    percentile stays exact, and under a trace filter it is read off these counts instead of
    ranking every timed result of the picked traces."""

    __tablename__ = "rollup_durations"
    __table_args__ = _ROLLUP_TABLE

    #: ``tool_results.duration_ms`` as stored (milliseconds).
    duration_ms: Mapped[float] = mapped_column(Float)


class RollupSizeBucketRow(_RollupColumns, Base):
    """Tool Messages per day, tool and bucket of their token size (``db.value_buckets``), with
    their tokens: over a range of days, which sizes decide a figure (``db.wide_histograms``).
    Kept at the day grain alone, from :class:`RollupSizeRow`'s counts."""

    __tablename__ = "rollup_size_buckets"
    __table_args__ = _ROLLUP_TABLE

    bucket: Mapped[int] = mapped_column(Integer)
    tokens: Mapped[int] = mapped_column(BigInteger)


class RollupDurationBucketRow(_RollupColumns, Base):
    """Timed Tool Messages per day, tool and bucket of their duration (``db.value_buckets``):
    :class:`RollupSizeBucketRow` for execution times, from :class:`RollupDurationRow`."""

    __tablename__ = "rollup_duration_buckets"
    __table_args__ = _ROLLUP_TABLE

    bucket: Mapped[int] = mapped_column(Integer)


class RollupCallRow(_RollupColumns, Base):
    """Tool calls per occurrence (so any loop threshold k is a plain sum), pairing and flags."""

    __tablename__ = "rollup_calls"
    __table_args__ = _ROLLUP_TABLE

    occurrence: Mapped[int] = mapped_column(Integer)
    pair_state: Mapped[str] = mapped_column(String(40))
    reused_id: Mapped[bool] = mapped_column(Boolean)
    ping_pong: Mapped[bool] = mapped_column(Boolean)


class RollupSignatureRow(_RollupColumns, Base):
    """Signatures (tool + arguments) of a trace by how often they occur in it: the loops at any
    k are the rows with ``occurrences >= k``."""

    __tablename__ = "rollup_signatures"
    __table_args__ = _ROLLUP_TABLE

    occurrences: Mapped[int] = mapped_column(Integer)
    #: Error results of the signature's calls, and tokens of the results of its repeats.
    errors: Mapped[int] = mapped_column(BigInteger)
    wasted_tokens: Mapped[int] = mapped_column(BigInteger)


class RollupTraceRow(_RollupColumns, Base):
    """Traces (``tool`` NULL: every trace; else the traces that call that tool)."""

    __tablename__ = "rollup_traces"
    __table_args__ = _ROLLUP_TABLE

    #: The highest occurrence of a signature (of ``tool``'s calls) in the trace.
    max_occurrence: Mapped[int] = mapped_column(Integer)
    token_counts: Mapped[str] = mapped_column(String(20))
    #: Tenth of the trace's tokens spent on tool results (0-9; NULL without tokens).
    share_bin: Mapped[int | None] = mapped_column(Integer)
    messages: Mapped[int] = mapped_column(BigInteger)
    total_tokens: Mapped[int] = mapped_column(BigInteger)
    tool_result_tokens: Mapped[int] = mapped_column(BigInteger)


class RollupFindingRow(_RollupColumns, Base):
    """Findings (counted ones: a name mismatch once, on its call) per tool and kind."""

    __tablename__ = "rollup_findings"
    __table_args__ = _ROLLUP_TABLE

    kind: Mapped[str] = mapped_column(String(40))
    #: Traces with this (tool, kind); traces with this kind, counted on one tool's row only.
    traces_tool: Mapped[int] = mapped_column(BigInteger)
    traces_kind: Mapped[int] = mapped_column(BigInteger)


class RollupFingerprintRow(_RollupColumns, Base):
    """Error results per fingerprint ("the same error") and effective error type."""

    __tablename__ = "rollup_fingerprints"
    __table_args__ = _ROLLUP_TABLE

    fingerprint: Mapped[str] = mapped_column(String(300))
    error_type: Mapped[str | None] = mapped_column(String(60))
    #: Traces with this fingerprint, counted on the row of its smallest error type only.
    traces: Mapped[int] = mapped_column(BigInteger)


class RollupState(Base):
    """Whether the rollups hold the whole store (one row). A store migrated from before the
    rollups has none until ``toollens rebuild-rollups`` (run by the migration step) fills them;
    until then every page reads the base tables. A rollup a later migration adds to a store
    with traces is ``pending`` until counted alone (the others stay in use)."""

    __tablename__ = "rollup_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    complete: Mapped[bool] = mapped_column(Boolean)
    rebuilt_at: Mapped[datetime | None] = mapped_column(UtcTimeStamp)
    #: Names of rollup tables not counted yet, space-separated (NULL: none).
    pending: Mapped[str | None] = mapped_column(Text)


class RollupActivityRow(_RollupColumns, Base):
    """Tool Messages per hour of their time (own timestamp, else the trace's start): the time
    axis of hours (days and weeks: :class:`RollupActivityDayRow`)."""

    __tablename__ = "rollup_activity"
    __table_args__ = _ROLLUP_TABLE

    #: Whole hours since 1970-01-01 UTC (floored); NULL: no time.
    hour: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[bool] = mapped_column(Boolean)
    #: The effective error type of errors (NULL for other results and unclassified errors).
    error_type: Mapped[str | None] = mapped_column(String(60))
    tokens: Mapped[int] = mapped_column(BigInteger)


class RollupActivityDayRow(_RollupColumns, Base):
    """Tool Messages per day of their time (own timestamp, else the trace's start): the time
    axes of days and weeks (a week is 7 whole days from a Monday) are sums of days, far fewer
    rows than the hours of :class:`RollupActivityRow` over a store that spans weeks."""

    __tablename__ = "rollup_activity_days"
    __table_args__ = _ROLLUP_TABLE

    #: Whole days since 1970-01-01 UTC (floored) of the Tool Message's time; NULL: no time.
    #: (``day`` is the trace's start, like every rollup's.)
    result_day: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[bool] = mapped_column(Boolean)
    #: The effective error type of errors (NULL for other results and unclassified errors).
    error_type: Mapped[str | None] = mapped_column(String(60))
    tokens: Mapped[int] = mapped_column(BigInteger)
