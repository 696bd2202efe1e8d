"""The storage schema: every table ToolLens keeps, as SQLAlchemy Core tables declared by classes.

Hot fields (what charts filter and group by) are columns; the long tail is JSON (JSONB on
PostgreSQL). Keys are integer surrogates; ids that come from trace files (``tool_call_id``,
``external_id``) are plain indexed columns, never unique, because real traces reuse them.
Provided facts and derived facts sit side by side but under different names (``explicit_error``
vs ``status``/``status_source``); ``toollens reanalyze`` rewrites only the derived ones and never
touches the human corrections (``*_corrected``).

A table is declared as a class (``TraceRow``) whose annotated attributes are its columns; the
class attribute is then the table's column (``TraceRow.id``), and ``TraceRow`` stands for the table
wherever SQLAlchemy takes one (``select(TraceRow)``, ``insert(TraceRow)``). This is SQLAlchemy's
declarative syntax without its ORM, which ToolLens does not use (no sessions, no mapped
objects): mapping the classes and importing the ORM would be about a third of every
``toollens`` command's start (``docs/performance.md``). No ``from __future__ import
annotations`` here: :class:`Base` reads each annotation's ``| None`` for the column's
nullability.
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from types import UnionType
from typing import Any, ClassVar, TypeVar, Union, cast, get_args, get_origin

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    TypeDecorator,
    false,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import ColumnClause
from sqlalchemy.types import TypeEngine

from db.contract import vocabulary
from db.contract.widths import DIMENSION_WIDTHS, column_width

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


class _ColumnSpec:
    """A column as a table class declares it (:func:`column`): the arguments of its
    ``Column``, built by :class:`Base` once the annotation has given what they leave out."""

    __slots__ = ("args", "kwargs")

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args = args
        self.kwargs = kwargs


def column(*args: Any, **kwargs: Any) -> Any:
    """A column of a table class, with ``Column``'s arguments (a name first where it differs
    from the attribute's: ``TraceRow.meta`` is the column ``metadata``). Left out, the type
    comes from the annotation's Python type (:data:`_ANNOTATION_TYPES`) and ``nullable`` from
    its ``| None``. Typed ``Any`` so that the attribute's annotation (``ColumnClause[int]``) types
    what the class later holds (a ``Column``: a ``ColumnClause``, but typed as one whose
    class attributes are not columns)."""
    return _ColumnSpec(args, kwargs)


#: The column type of a Python type, for columns declared without one (as SQLAlchemy's
#: declarative mapping would infer them).
_ANNOTATION_TYPES: dict[Any, Any] = {
    int: Integer,
    dict[str, Any]: JsonType,
    list[Any]: JsonType,
    Any: JsonType,
}


def _declared_column(key: str, annotation: Any, spec: _ColumnSpec, table: str) -> Column[Any]:
    """The ``Column`` of ``key: ColumnClause[T] = column(...)`` of ``table``: the type from ``T``
    unless given (text: a ``VARCHAR`` of the width :mod:`db.contract.widths` declares), NOT NULL
    unless ``T`` admits None (or ``nullable`` says otherwise; a primary key never)."""
    if isinstance(annotation, str):
        raise TypeError(
            f"{key}: annotated as text ({annotation!r}): declare tables without"
            " `from __future__ import annotations`"
        )
    if get_origin(annotation) is not ColumnClause:
        raise TypeError(f"{key}: a column is annotated ColumnClause[...], not {annotation!r}")
    (python_type,) = get_args(annotation)
    optional = get_origin(python_type) in (Union, UnionType) and type(None) in get_args(python_type)
    if optional:
        (python_type,) = [arg for arg in get_args(python_type) if arg is not type(None)]
    args: list[Any] = list(spec.args)
    name: list[Any] = [args.pop(0)] if args and isinstance(args[0], str) else [key]
    given_type = any(isinstance(arg, TypeEngine | type) for arg in args)
    if not given_type and python_type is str:
        try:
            args.insert(0, String(column_width(table, key)))
        except ValueError:
            raise TypeError(
                f"{key}: text without a type: declare its width in db.contract.widths"
                " (or give the column its type, e.g. Text)"
            ) from None
    elif not given_type:
        if python_type not in _ANNOTATION_TYPES:
            raise TypeError(f"{key}: no column type given for {python_type!r}")
        args.insert(0, _ANNOTATION_TYPES[python_type])
    kwargs = dict(spec.kwargs)
    if "nullable" not in kwargs:
        kwargs["nullable"] = optional and not kwargs.get("primary_key", False)
    return Column(*name, *args, **kwargs)


class Base:
    """A table class: ``__tablename__``, optional ``__table_args__`` (constraints and indexes,
    a dict of table options, or both) and annotated :func:`column` attributes, its own first,
    then those of column mixins (plain classes, each subclass gets its own columns). The class
    becomes the table: ``__table__``, each attribute its ``Column``, and ``__clause_element__``
    lets SQLAlchemy take the class for the table."""

    metadata: ClassVar[MetaData] = MetaData(naming_convention=NAMING_CONVENTION)
    __tablename__: ClassVar[str]
    __table__: ClassVar[Table]
    __table_args__: ClassVar[Any] = ()
    #: Attribute name -> column (the column's own key is its name: ``meta`` is ``metadata``).
    __columns__: ClassVar[dict[str, Column[Any]]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        columns: dict[str, Column[Any]] = {}
        for klass in cls.__mro__:
            for key, annotation in vars(klass).get("__annotations__", {}).items():
                spec = vars(klass).get(key)
                if isinstance(spec, _ColumnSpec) and key not in columns:
                    columns[key] = _declared_column(key, annotation, spec, cls.__tablename__)
        table_args: tuple[Any, ...] = cls.__table_args__
        options: dict[str, Any] = {}
        if isinstance(cls.__table_args__, dict):
            table_args, options = (), cls.__table_args__
        elif table_args and isinstance(table_args[-1], dict):
            table_args, options = table_args[:-1], table_args[-1]
        cls.__table__ = Table(
            cls.__tablename__, cls.metadata, *columns.values(), *table_args, **options
        )
        for key, declared in columns.items():
            setattr(cls, key, declared)
        cls.__columns__ = columns

    @classmethod
    def __clause_element__(cls) -> Table:
        return cls.__table__


TableClass = TypeVar("TableClass", bound=type[Base])


def aliased(table: TableClass, name: str | None = None) -> TableClass:
    """``table`` under an alias (a name, else an anonymous one), its columns as attributes like
    the table class's: for a second reference to a table in one statement."""
    alias = table.__table__.alias(name)
    namespace: dict[str, Any] = {key: alias.c[c.key] for key, c in table.__columns__.items()}
    namespace["__table__"] = alias
    namespace["__clause_element__"] = classmethod(lambda _: alias)
    return cast(TableClass, type(f"{table.__name__}Alias", (), namespace))


class ImportRun(Base):
    """One run of ``toollens import`` (or an upload, or the demo)."""

    __tablename__ = "imports"

    id: ColumnClause[int] = column(Integer, primary_key=True)
    started_at: ColumnClause[datetime] = column(UtcTimeStamp)
    finished_at: ColumnClause[datetime | None] = column(UtcTimeStamp)
    #: ``cli`` | ``upload`` | ``demo`` | ``bench``
    origin: ColumnClause[str] = column(default="cli")
    paths: ColumnClause[list[Any]] = column(default=list)
    encoding: ColumnClause[str] = column()
    files: ColumnClause[int] = column(Integer, default=0)
    records: ColumnClause[int] = column(Integer, default=0)
    traces_imported: ColumnClause[int] = column(Integer, default=0)
    #: Traces already stored under the same identity with a different content: replaced.
    updated: ColumnClause[int] = column(Integer, default=0)
    #: Traces already stored with the same content (or, without an external id, the same
    #: content under another identity): nothing changed.
    unchanged: ColumnClause[int] = column(Integer, default=0)
    #: Input records of the imported, updated and unchanged traces: with ``rejected`` they add
    #: up to ``records``.
    records_imported: ColumnClause[int] = column(Integer, default=0)
    records_updated: ColumnClause[int] = column(Integer, default=0)
    records_unchanged: ColumnClause[int] = column(Integer, default=0)
    rejected: ColumnClause[int] = column(Integer, default=0)
    #: Of ``rejected``: first seen by this import, and already kept from an earlier one.
    rejected_new: ColumnClause[int] = column(Integer, default=0)
    rejected_known: ColumnClause[int] = column(Integer, default=0)
    #: Of ``unchanged``: copies whose messages are a strict prefix of the stored version's
    #: (an older copy of a trace that has grown since): the stored version is left as it is.
    older_copies: ColumnClause[int] = column(Integer, default=0, server_default="0")
    #: Traces stored under an identity of their own (``<identity>~<hash>``): a conversation
    #: that differs from the one stored under the same identity (see ``db.writes.traces``).
    kept_apart: ColumnClause[int] = column(Integer, default=0, server_default="0")
    #: Over the updates: messages the new versions add and drop against the replaced ones.
    messages_added: ColumnClause[int] = column(BigInteger, default=0, server_default="0")
    messages_removed: ColumnClause[int] = column(BigInteger, default=0, server_default="0")
    messages: ColumnClause[int] = column(BigInteger, default=0)
    seconds: ColumnClause[float] = column(Float, default=0.0)
    #: Item / block type -> how many items of a type no parser knew were kept as opaque
    #: messages (``unknown_item``); NULL for imports from before it was counted.
    unknown_items: ColumnClause[dict[str, Any] | None] = column()
    #: ``running`` | ``done`` | ``failed`` | ``interrupted`` (Ctrl-C or SIGTERM, or its
    #: process found gone: :func:`db.writes.traces.mark_gone_imports`; run it again)
    state: ColumnClause[str] = column(default="running")
    #: The process running the import (:mod:`db.writes.processes`): host name, pid, and its start
    #: (a reused pid is not taken for it). NULL for imports from before they were recorded.
    host: ColumnClause[str | None] = column()
    pid: ColumnClause[int | None] = column(Integer)
    process_start: ColumnClause[str | None] = column()
    error: ColumnClause[str | None] = column(Text)
    #: Secrets replaced by ``[REDACTED:kind]`` at import, per kind (``{}``: none found;
    #: ``None``: imported before redaction existed).
    redactions: ColumnClause[dict[str, Any] | None] = column()


class SourceFileRow(Base):
    """What the last import read of one trace file, so that the next one reads only what changed.

    ``read_bytes`` is where reading can go on (the end of the last complete line of a JSONL file)
    or NULL where it cannot (compressed files, JSON documents and arrays: read whole again).
    ``tail_hash`` covers the 64 KiB ending at ``read_bytes`` (at ``size`` when NULL).
    """

    __tablename__ = "source_files"

    id: ColumnClause[int] = column(Integer, primary_key=True)
    #: Absolute, resolved path of the file on the machine that imported it.
    path: ColumnClause[str] = column(Text, unique=True)
    size: ColumnClause[int] = column(BigInteger)
    mtime_ns: ColumnClause[int] = column(BigInteger)
    head_hash: ColumnClause[str] = column()
    tail_hash: ColumnClause[str] = column()
    #: SHA-256 of the whole file, computed only under ``--full-hash``.
    full_hash: ColumnClause[str | None] = column()
    format: ColumnClause[str | None] = column()
    read_bytes: ColumnClause[int | None] = column(BigInteger)
    #: Lines before ``read_bytes``: where line numbering goes on.
    read_lines: ColumnClause[int] = column(BigInteger, default=0)
    records: ColumnClause[int] = column(BigInteger, default=0)
    traces: ColumnClause[int] = column(BigInteger, default=0)
    last_import_id: ColumnClause[int] = column(ForeignKey("imports.id"))


class TraceRow(Base):
    """One agent run / conversation."""

    __tablename__ = "traces"
    __table_args__ = (
        Index("ix_traces_started_at", "started_at"),
        # A session's traces, and the sessions listed by their first trace's start.
        Index("ix_traces_session_id_started_at", "session_id", "started_at"),
        _one_of("token_counts", vocabulary.TOKEN_COUNTS),
    )

    id: ColumnClause[int] = column(Integer, primary_key=True)
    import_id: ColumnClause[int] = column(ForeignKey("imports.id"), index=True)
    #: Identity (format + external id, else format + source file + first line, else a content
    #: hash): a trace imported again under the same identity is unchanged or a new version.
    dedupe_key: ColumnClause[str] = column(unique=True)
    #: SHA-256 of the canonical content (messages, tools, metadata; not file name or line).
    #: NULL for traces stored before migration 0008: their next import counts as an update.
    content_hash: ColumnClause[str | None] = column(index=True)
    #: 1 when first imported, +1 for every update that replaced its content.
    version: ColumnClause[int] = column(Integer, default=1, server_default="1")
    external_id: ColumnClause[str | None] = column(index=True)
    #: What the UI and ``toollens pairs`` call the trace: the external id, else a short hash.
    display_id: ColumnClause[str] = column(index=True)
    #: The first user message, on one line and shortened: what lists call the trace.
    title: ColumnClause[str | None] = column()
    format: ColumnClause[str] = column()
    source_file: ColumnClause[str] = column(Text)
    source_line: ColumnClause[int | None] = column(Integer)
    agent: ColumnClause[str | None] = column(index=True)
    model: ColumnClause[str | None] = column(index=True)
    started_at: ColumnClause[datetime | None] = column(UtcTimeStamp)
    imported_at: ColumnClause[datetime] = column(UtcTimeStamp)
    tags: ColumnClause[list[Any]] = column(default=list)
    meta: ColumnClause[dict[str, Any]] = column("metadata", default=dict)
    #: Tool definitions the trace declares (name, description, parameters JSON Schema).
    tools: ColumnClause[list[Any]] = column(default=list)
    #: Input records (lines / array items) the trace was built from.
    record_count: ColumnClause[int] = column(Integer, default=1)
    message_count: ColumnClause[int] = column(Integer, default=0)
    tool_call_count: ColumnClause[int] = column(Integer, default=0)
    tool_result_count: ColumnClause[int] = column(Integer, default=0)
    error_count: ColumnClause[int] = column(Integer, default=0)
    problem_count: ColumnClause[int] = column(Integer, default=0)
    total_tokens: ColumnClause[int] = column(BigInteger, default=0)
    tool_result_tokens: ColumnClause[int] = column(BigInteger, default=0)
    wasted_tokens: ColumnClause[int] = column(BigInteger, default=0)
    max_occurrence: ColumnClause[int] = column(Integer, default=0)
    #: ``exact``: token counts of the model's own tokenizer; ``estimate``: of another one.
    token_counts: ColumnClause[str] = column(default="estimate", server_default="estimate")
    #: Set when a reviewer marks the trace reviewed (the Review page's queue hides it).
    reviewed_at: ColumnClause[datetime | None] = column(UtcTimeStamp)
    reviewed_by: ColumnClause[str | None] = column()
    #: The session or conversation thread the source says the trace belongs to (OTLP
    #: ``session.id``, Claude Code's ``sessionId``, Langfuse's ``sessionId``, a LangSmith
    #: thread): traces sharing it are one session (the Sessions page). NULL: none given.
    session_id: ColumnClause[str | None] = column()


class MessageRow(Base):
    """One message of a trace, in ``seq`` order, with its raw payload."""

    __tablename__ = "messages"
    __table_args__ = (
        Index("ix_messages_trace_id_seq", "trace_id", "seq", unique=True),
        _one_of("role", vocabulary.ROLES),
    )

    id: ColumnClause[int] = column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"))
    seq: ColumnClause[int] = column(Integer)
    role: ColumnClause[str] = column()
    content: ColumnClause[str] = column(Text, default="")
    timestamp: ColumnClause[datetime | None] = column(UtcTimeStamp)
    tokens: ColumnClause[int] = column(Integer, default=0)
    chars: ColumnClause[int] = column(Integer, default=0)
    bytes: ColumnClause[int] = column(Integer, default=0)
    usage: ColumnClause[dict[str, Any] | None] = column()
    source_id: ColumnClause[str | None] = column()
    source_line: ColumnClause[int | None] = column(Integer)
    #: Sub-agent thread (Claude Code side chain, Langfuse thread); NULL: the main conversation.
    branch: ColumnClause[str | None] = column()
    #: The thread ``branch`` nests in (a sub-agent's span under another's: OTLP, Langfuse);
    #: NULL: the main conversation, or the source does not say.
    branch_parent: ColumnClause[str | None] = column()
    raw: ColumnClause[Any] = column(nullable=True)


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
        _one_of("pair_state", vocabulary.PAIR_STATES),
        _one_of("pairing_method", vocabulary.PAIRING_METHODS),
        _one_of("kind", vocabulary.CALL_KINDS),
    )

    id: ColumnClause[int] = column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"))
    message_seq: ColumnClause[int] = column(Integer)
    call_index: ColumnClause[int] = column(Integer)
    tool_call_id: ColumnClause[str | None] = column(index=True)
    tool_name: ColumnClause[str] = column()
    arguments_raw: ColumnClause[str | None] = column(Text)
    #: Parsed arguments; NULL when they did not parse (see ``args_valid``).
    arguments: ColumnClause[Any] = column(nullable=True)
    args_valid: ColumnClause[bool] = column(Boolean, default=True)
    args_error: ColumnClause[str | None] = column(Text)
    timestamp: ColumnClause[datetime | None] = column(UtcTimeStamp)
    # Derived facts.
    signature: ColumnClause[str] = column()
    occurrence: ColumnClause[int] = column(Integer, default=1)
    run_length: ColumnClause[int] = column(Integer, default=1)
    retry_after_error: ColumnClause[bool] = column(Boolean, default=False)
    ping_pong: ColumnClause[bool] = column(Boolean, default=False)
    pair_state: ColumnClause[str] = column()
    pairing_method: ColumnClause[str | None] = column()
    result_seq: ColumnClause[int | None] = column(Integer)
    name_mismatch: ColumnClause[bool] = column(Boolean, default=False)
    reused_id: ColumnClause[bool] = column(Boolean, default=False)
    schema_issue: ColumnClause[str | None] = column()
    schema_detail: ColumnClause[str | None] = column(Text)
    #: Who runs the call (``vocabulary.CallKind``): client, server (the provider's API) or mcp.
    kind: ColumnClause[str] = column(default="client", server_default="client")


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
        # The most expensive Tool Messages (the Tokens page) off their cost.
        Index("ix_tool_results_cost", "cost_nano_usd"),
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
        # without this index it reads every error of the group from the table.
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
        # The closed sets of db.contract.vocabulary. error_type has no CHECK: a protocol-provided
        # error type is kept verbatim, so its set is open.
        _one_of("status", vocabulary.STATUSES),
        _one_of("status_source", vocabulary.STATUS_SOURCES),
        _one_of("pair_state", vocabulary.PAIR_STATES),
        _one_of("pairing_method", vocabulary.PAIRING_METHODS),
        _one_of("verdict", vocabulary.VERDICTS),
        _one_of("verdict_corrected", vocabulary.VERDICTS),
        _one_of("duration_source", vocabulary.DURATION_SOURCES),
        # Per-tool duration percentiles read the tool's known durations in order.
        Index("ix_tool_results_tool_duration", "tool", "duration_ms"),
        # The overall nearest-rank percentiles read the ordered durations at a rank.
        Index("ix_tool_results_duration", "duration_ms"),
    )

    id: ColumnClause[int] = column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"))
    message_seq: ColumnClause[int] = column(Integer)
    # Provided facts.
    tool_call_id: ColumnClause[str | None] = column(index=True)
    provided_name: ColumnClause[str | None] = column()
    explicit_error: ColumnClause[bool | None] = column(Boolean)
    explicit_source: ColumnClause[str | None] = column()
    timestamp: ColumnClause[datetime | None] = column(UtcTimeStamp)
    tokens: ColumnClause[int] = column(Integer, default=0)
    chars: ColumnClause[int] = column(Integer, default=0)
    bytes: ColumnClause[int] = column(Integer, default=0)
    # Derived facts.
    #: The tool this result belongs to: the paired call's name, else the provided name.
    tool: ColumnClause[str] = column()
    status: ColumnClause[str] = column()
    status_source: ColumnClause[str] = column()
    error_type: ColumnClause[str | None] = column()
    rule: ColumnClause[str | None] = column()
    # Looked up among error results only, in ``ix_tool_results_errors``.
    fingerprint: ColumnClause[str | None] = column()
    summary: ColumnClause[str | None] = column(Text)
    suggestion: ColumnClause[str | None] = column(Text)
    suggestion_kind: ColumnClause[str | None] = column()
    suggestion_detail: ColumnClause[dict[str, Any] | None] = column()
    is_protocol: ColumnClause[bool] = column(Boolean, default=False)
    pair_state: ColumnClause[str] = column()
    pairing_method: ColumnClause[str | None] = column()
    call_seq: ColumnClause[int | None] = column(Integer)
    call_index: ColumnClause[int | None] = column(Integer)
    name_mismatch: ColumnClause[bool] = column(Boolean, default=False)
    oversized: ColumnClause[bool] = column(Boolean, default=False)
    #: Tokens of the images in the result (``ingest.analysis.images``; included in ``tokens``), and
    #: each image: ``{"media", "width", "height", "rule", "tokens", "detail"}``.
    image_tokens: ColumnClause[int] = column(Integer, default=0, server_default="0")
    images: ColumnClause[list[Any] | None] = column()
    #: The model call that read the result: its message seq and input tokens (from its usage).
    read_by_seq: ColumnClause[int | None] = column(Integer)
    read_input_tokens: ColumnClause[int | None] = column(BigInteger)
    verdict: ColumnClause[str | None] = column()
    verdict_reason: ColumnClause[str | None] = column(Text)
    next_call_succeeded: ColumnClause[bool | None] = column(Boolean)
    #: Execution time of the answered call in milliseconds (``ingest.analysis.durations``): negative
    #: when the result is stamped before its call, NULL when unknown.
    duration_ms: ColumnClause[float | None] = column(Float)
    #: ``span`` (the tool span's end − start, a provided fact) | ``timestamps`` (derived).
    duration_source: ColumnClause[str | None] = column()
    #: The Tool Message's first characters on one line (``db.contract.rows.one_line_preview``).
    preview: ColumnClause[str | None] = column(Text)
    #: What it adds to the model calls after it (``ingest.analysis.costs``; NULL until analyzed):
    #: the calls that still had it in their input, the tokens of their reads after the first, of
    #: them cached reads (NULL for an estimate), measured from usage or estimated, and every
    #: read priced in nanodollars (10⁻⁹ USD; NULL without a price for the model).
    later_calls: ColumnClause[int | None] = column(Integer)
    reread_tokens: ColumnClause[int | None] = column(BigInteger)
    reread_cached: ColumnClause[int | None] = column(BigInteger)
    reread_measured: ColumnClause[bool | None] = column(Boolean)
    cost_nano_usd: ColumnClause[int | None] = column(BigInteger)
    # Human corrections (never written by analysis).
    error_type_corrected: ColumnClause[str | None] = column()
    verdict_corrected: ColumnClause[str | None] = column()
    corrected_by: ColumnClause[str | None] = column()
    corrected_at: ColumnClause[datetime | None] = column(UtcTimeStamp)


class FindingRow(Base):
    """One named, countable Tool Message problem (``bare_status``, ``oversized`` …)."""

    __tablename__ = "findings"
    __table_args__ = (
        Index("ix_findings_name_tool", "name", "tool"),
        _one_of("name", vocabulary.FINDING_KINDS),
    )

    id: ColumnClause[int] = column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    name: ColumnClause[str] = column()
    tool: ColumnClause[str | None] = column()
    #: Seq of the message the finding is about (the call's or the result's message).
    message_seq: ColumnClause[int] = column(Integer)
    call_index: ColumnClause[int | None] = column(Integer)


class ErrorStreakRow(Base):
    """k or more consecutive calls of one tool ending in one error fingerprint
    (``ingest.analysis.streaks``); streaks of 2 or more are stored, the threshold k filters in
    SQL."""

    __tablename__ = "error_streaks"
    __table_args__ = (
        # Streaks at any k: the few at length >= k, with what the figures group by.
        Index("ix_error_streaks_length_tool", "length", "tool", "trace_id"),
    )

    id: ColumnClause[int] = column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    tool: ColumnClause[str] = column()
    fingerprint: ColumnClause[str | None] = column()
    error_type: ColumnClause[str | None] = column()
    first_seq: ColumnClause[int] = column(Integer)
    first_index: ColumnClause[int] = column(Integer)
    last_seq: ColumnClause[int] = column(Integer)
    last_index: ColumnClause[int] = column(Integer)
    length: ColumnClause[int] = column(Integer)
    #: Result tokens + argument tokens of the calls after the first.
    wasted_tokens: ColumnClause[int] = column(BigInteger, default=0)
    #: Known execution times of the calls after the first, in milliseconds.
    wasted_ms: ColumnClause[float | None] = column(Float)


class RejectedRecord(Base):
    """An input record that could not be imported, kept with its raw bytes and the reason."""

    __tablename__ = "rejected_records"

    id: ColumnClause[int] = column(Integer, primary_key=True)
    import_id: ColumnClause[int] = column(ForeignKey("imports.id"), index=True)
    source_file: ColumnClause[str] = column(Text)
    line: ColumnClause[int] = column(Integer)
    byte_offset: ColumnClause[int] = column(BigInteger)
    reason: ColumnClause[str] = column(index=True)
    message: ColumnClause[str] = column(Text)
    raw: ColumnClause[bytes] = column(LargeBinary)
    #: SHA-256 of (source file, byte offset, SHA-256 of the raw bytes): the same bad record
    #: imported again is kept once. NULL for records kept before migration 0008.
    record_key: ColumnClause[str | None] = column(unique=True, index=True)


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

    id: ColumnClause[int] = column(Integer, primary_key=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"))
    message_seq: ColumnClause[int | None] = column(Integer)
    call_index: ColumnClause[int | None] = column(Integer)
    label: ColumnClause[str] = column()
    note: ColumnClause[str] = column(Text, default="")
    author: ColumnClause[str] = column()
    created_at: ColumnClause[datetime] = column(UtcTimeStamp)
    updated_at: ColumnClause[datetime] = column(UtcTimeStamp)
    #: Who made the last edit (the author until someone else edits).
    updated_by: ColumnClause[str] = column()
    #: Incremented by every edit; an edit based on an older version is a conflict.
    version: ColumnClause[int] = column(Integer, default=1)
    #: Set when a new version of the trace changed or dropped the pair the note is about (or
    #: the note stands for a correction whose result is gone): kept, never deleted.
    stale: ColumnClause[bool] = column(Boolean, default=False, server_default=false())
    stale_reason: ColumnClause[str | None] = column(Text)


class TraceUpdate(Base):
    """One replacement of a stored trace by a new version: which import and file it came from."""

    __tablename__ = "trace_updates"

    id: ColumnClause[int] = column(Integer, primary_key=True)
    import_id: ColumnClause[int] = column(ForeignKey("imports.id"), index=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    source_file: ColumnClause[str] = column(Text)
    old_hash: ColumnClause[str | None] = column()
    new_hash: ColumnClause[str] = column()
    old_messages: ColumnClause[int] = column(Integer)
    new_messages: ColumnClause[int] = column(Integer)
    #: Messages the new version adds and drops: past the messages both versions start with.
    messages_added: ColumnClause[int] = column(Integer, default=0, server_default="0")
    messages_removed: ColumnClause[int] = column(Integer, default=0, server_default="0")
    #: The replaced version, kept in ``trace_versions`` (NULL for updates from before).
    kept_version: ColumnClause[int | None] = column(Integer)
    at: ColumnClause[datetime] = column(UtcTimeStamp)


class TraceVersionRow(Base):
    """A version of a trace that a newer one replaced, kept so that it can be restored.

    ``snapshot`` is zlib-compressed JSON (``db.writes.traces.version_snapshot``): the trace row's
    values and the messages past the ``shared_messages`` its successor starts with, each as its
    ``messages`` row (``raw`` payload included). The shared messages are not copied: a session
    that grows is replaced at every import, and copying them would store it over and over.
    The version is its successor's first ``shared_messages`` messages followed by the kept ones.
    """

    __tablename__ = "trace_versions"

    id: ColumnClause[int] = column(Integer, primary_key=True)
    trace_id: ColumnClause[int] = column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    version: ColumnClause[int] = column(Integer)
    content_hash: ColumnClause[str | None] = column()
    message_count: ColumnClause[int] = column(Integer)
    shared_messages: ColumnClause[int] = column(Integer)
    #: The import that replaced it.
    replaced_by: ColumnClause[int] = column(ForeignKey("imports.id"), index=True)
    replaced_at: ColumnClause[datetime] = column(UtcTimeStamp)
    snapshot: ColumnClause[bytes] = column(LargeBinary)


class ImportFile(Base):
    """What one import did with one file: records read and how each of them ended.

    ``records == imported + updated + unchanged + rejected`` (input records, not traces; the
    reader yields no record for a blank line, so blank lines are not counted).
    """

    __tablename__ = "import_files"

    id: ColumnClause[int] = column(Integer, primary_key=True)
    import_id: ColumnClause[int] = column(ForeignKey("imports.id"), index=True)
    path: ColumnClause[str] = column(Text)
    size: ColumnClause[int | None] = column(BigInteger)
    format: ColumnClause[str | None] = column()
    records: ColumnClause[int] = column(Integer, default=0)
    imported: ColumnClause[int] = column(Integer, default=0)
    updated: ColumnClause[int] = column(Integer, default=0)
    unchanged: ColumnClause[int] = column(Integer, default=0)
    rejected: ColumnClause[int] = column(Integer, default=0)


# --- Rollups -------------------------------------------------------------------------------------
# Summary tables the import keeps in the same transaction as the traces they summarize
# (``db.rollups.upkeep``): what the pages chart, counted per *grain* — a set of the trace dimensions
# the sidebar filters on (day of the trace's start, import, agent, model), the dimensions outside
# the grain left NULL — and per tool and the figure's own keys. A row's identity is ``key``, a hash
# of its grain, dimensions and keys (NULLs included, which a unique index over the columns would not
# treat as equal). ``n`` counts the rows (or traces) summarized; a row whose ``n`` falls to 0 is
# deleted.


class _RollupColumns:
    """The identity and the trace dimensions every rollup row has."""

    #: Rollup tables are clustered by their key (``db.rollups.key_prefix``: grain, then day): on
    #: SQLite a table without rowid is that one B-tree.
    __table_args__: ClassVar[Any] = {"sqlite_with_rowid": False}

    key: ColumnClause[bytes] = column(LargeBinary(16), primary_key=True)
    #: Which dimensions the row is counted by: a bit set of ``db.rollups.Dim``.
    grain: ColumnClause[int] = column(Integer)
    #: Days since 1970-01-01 (UTC) of the trace's start; NULL outside the grain or without one.
    day: ColumnClause[int | None] = column(Integer)
    import_id: ColumnClause[int | None] = column(Integer)
    agent: ColumnClause[str | None] = column(String(DIMENSION_WIDTHS["agent"]))
    model: ColumnClause[str | None] = column(String(DIMENSION_WIDTHS["model"]))
    tool: ColumnClause[str | None] = column(String(DIMENSION_WIDTHS["tool"]))
    n: ColumnClause[int] = column(BigInteger)


class RollupResultRow(_RollupColumns, Base):
    """Tool Messages by status, effective error type and verdict, pairing and flags."""

    __tablename__ = "rollup_results"

    status: ColumnClause[str] = column()
    status_source: ColumnClause[str | None] = column()
    #: The rule that decided an error (NULL for other results).
    rule: ColumnClause[str | None] = column()
    error_type: ColumnClause[str | None] = column()
    verdict: ColumnClause[str | None] = column()
    suggested: ColumnClause[bool] = column(Boolean)
    pair_state: ColumnClause[str] = column()
    #: ``call_seq IS NULL``: the result answers no call.
    unanswered: ColumnClause[bool] = column(Boolean)
    name_mismatch: ColumnClause[bool] = column(Boolean)
    corrected: ColumnClause[bool] = column(Boolean)
    #: How the execution time is known: ``span`` | ``timed`` | ``negative`` | ``missing``.
    timing: ColumnClause[str] = column()
    #: An error's next call of the same tool: 1 succeeded, 0 did not, -1 none (NULL for results
    #: that are not errors): the Suggestions page's recovery rates.
    next_call: ColumnClause[int | None] = column(SmallInteger)
    #: The kind of the Tool Message's advice (``tool_results.suggestion_kind``): the
    #: Suggestions page's verdicts by kind of advice.
    suggestion_kind: ColumnClause[str | None] = column()
    tokens: ColumnClause[int] = column(BigInteger)
    #: Results with images and their images' tokens.
    with_images: ColumnClause[int] = column(BigInteger)
    image_tokens: ColumnClause[int] = column(BigInteger)
    #: What the results add to later model calls (``tool_results.later_calls`` …): the sums,
    #: the results priced and the results measured from usage.
    later_calls: ColumnClause[int] = column(BigInteger)
    reread_tokens: ColumnClause[int] = column(BigInteger)
    reread_cached: ColumnClause[int] = column(BigInteger)
    cost_nano_usd: ColumnClause[int] = column(BigInteger)
    priced: ColumnClause[int] = column(BigInteger)
    measured: ColumnClause[int] = column(BigInteger)


class RollupSizeRow(_RollupColumns, Base):
    """Tool Messages per (tool, exact token size): every size percentile stays exact."""

    __tablename__ = "rollup_sizes"

    tokens: ColumnClause[int] = column(Integer)


class RollupInputShareRow(_RollupColumns, Base):
    """Tool Messages per bin of their share of the input of the model call that read them
    (``db.queries.common.INPUT_SHARE_BINS``; results with a reported input only)."""

    __tablename__ = "rollup_input_shares"

    bin: ColumnClause[int] = column(Integer)


class RollupDurationRow(_RollupColumns, Base):
    """Timed Tool Messages (a duration ≥ 0) per (tool, exact duration): every execution-time
    percentile stays exact, and under a trace filter it is read off these counts instead of
    ranking every timed result of the picked traces."""

    __tablename__ = "rollup_durations"

    #: ``tool_results.duration_ms`` as stored (milliseconds).
    duration_ms: ColumnClause[float] = column(Float)


class RollupSizeBucketRow(_RollupColumns, Base):
    """Tool Messages per day, tool and bucket of their token size (``db.rollups.value_buckets``),
    with their tokens: over a range of days, which sizes decide a figure
    (``db.rollups.wide_histograms``). Kept at the day grain alone, from :class:`RollupSizeRow`'s
    counts."""

    __tablename__ = "rollup_size_buckets"

    bucket: ColumnClause[int] = column(Integer)
    tokens: ColumnClause[int] = column(BigInteger)


class RollupDurationBucketRow(_RollupColumns, Base):
    """Timed Tool Messages per day, tool and bucket of their duration
    (``db.rollups.value_buckets``): :class:`RollupSizeBucketRow` for execution times, from
    :class:`RollupDurationRow`."""

    __tablename__ = "rollup_duration_buckets"

    bucket: ColumnClause[int] = column(Integer)


class RollupCallRow(_RollupColumns, Base):
    """Tool calls per occurrence (so any loop threshold k is a plain sum), pairing and flags."""

    __tablename__ = "rollup_calls"

    occurrence: ColumnClause[int] = column(Integer)
    pair_state: ColumnClause[str] = column()
    reused_id: ColumnClause[bool] = column(Boolean)
    ping_pong: ColumnClause[bool] = column(Boolean)


class RollupSignatureRow(_RollupColumns, Base):
    """Signatures (tool + arguments) of a trace by how often they occur in it: the loops at any
    k are the rows with ``occurrences >= k``."""

    __tablename__ = "rollup_signatures"

    occurrences: ColumnClause[int] = column(Integer)
    #: Error results of the signature's calls, and tokens of the results of its repeats.
    errors: ColumnClause[int] = column(BigInteger)
    wasted_tokens: ColumnClause[int] = column(BigInteger)


class RollupTraceRow(_RollupColumns, Base):
    """Traces (``tool`` NULL: every trace; else the traces that call that tool)."""

    __tablename__ = "rollup_traces"

    #: The highest occurrence of a signature (of ``tool``'s calls) in the trace.
    max_occurrence: ColumnClause[int] = column(Integer)
    token_counts: ColumnClause[str] = column()
    #: Tenth of the trace's tokens spent on tool results (0-9; NULL without tokens).
    share_bin: ColumnClause[int | None] = column(Integer)
    messages: ColumnClause[int] = column(BigInteger)
    total_tokens: ColumnClause[int] = column(BigInteger)
    tool_result_tokens: ColumnClause[int] = column(BigInteger)


class RollupFindingRow(_RollupColumns, Base):
    """Findings (counted ones: a name mismatch once, on its call) per tool and kind."""

    __tablename__ = "rollup_findings"

    kind: ColumnClause[str] = column()
    #: Traces with this (tool, kind); traces with this kind, counted on one tool's row only.
    traces_tool: ColumnClause[int] = column(BigInteger)
    traces_kind: ColumnClause[int] = column(BigInteger)


class RollupFingerprintRow(_RollupColumns, Base):
    """Error results per fingerprint ("the same error") and effective error type."""

    __tablename__ = "rollup_fingerprints"

    fingerprint: ColumnClause[str] = column()
    error_type: ColumnClause[str | None] = column()
    #: Traces with this fingerprint, counted on the row of its smallest error type only.
    traces: ColumnClause[int] = column(BigInteger)


class RollupState(Base):
    """Whether the rollups hold the whole store (one row). A store migrated from before the
    rollups has none until ``toollens rebuild-rollups`` (run by the migration step) fills them;
    until then every page reads the base tables. A rollup a later migration adds to a store
    with traces is ``pending`` until counted alone (the others stay in use)."""

    __tablename__ = "rollup_state"

    id: ColumnClause[int] = column(Integer, primary_key=True)
    complete: ColumnClause[bool] = column(Boolean)
    rebuilt_at: ColumnClause[datetime | None] = column(UtcTimeStamp)
    #: Names of rollup tables not counted yet, space-separated (NULL: none).
    pending: ColumnClause[str | None] = column(Text)


class RollupActivityRow(_RollupColumns, Base):
    """Tool Messages per hour of their time (own timestamp, else the trace's start): the time
    axis of hours (days and weeks: :class:`RollupActivityDayRow`)."""

    __tablename__ = "rollup_activity"

    #: Whole hours since 1970-01-01 UTC (floored); NULL: no time.
    hour: ColumnClause[int | None] = column(BigInteger)
    error: ColumnClause[bool] = column(Boolean)
    #: The effective error type of errors (NULL for other results and unclassified errors).
    error_type: ColumnClause[str | None] = column()
    tokens: ColumnClause[int] = column(BigInteger)


class RollupActivityDayRow(_RollupColumns, Base):
    """Tool Messages per day of their time (own timestamp, else the trace's start): the time
    axes of days and weeks (a week is 7 whole days from a Monday) are sums of days, far fewer
    rows than the hours of :class:`RollupActivityRow` over a store that spans weeks."""

    __tablename__ = "rollup_activity_days"

    #: Whole days since 1970-01-01 UTC (floored) of the Tool Message's time; NULL: no time.
    #: (``day`` is the trace's start, like every rollup's.)
    result_day: ColumnClause[int | None] = column(Integer)
    error: ColumnClause[bool] = column(Boolean)
    #: The effective error type of errors (NULL for other results and unclassified errors).
    error_type: ColumnClause[str | None] = column()
    tokens: ColumnClause[int] = column(BigInteger)
