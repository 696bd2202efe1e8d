"""The row contracts between ``ingest`` and ``db``: one named tuple per table row.

``ingest.importing.rows`` builds these, :mod:`db.writes.traces` stores them and
:mod:`db.bulk.stored` reads them back. Field names are the table's column names and the column lists
of the writers are the tuples' ``_fields``, so a field cannot be misnamed or left out without mypy
or the contract test saying so. They stay tuples because ``executemany`` and ``COPY`` take tuples as
they are.

Surrogate keys (``id``), the parent key (``trace_id``, ``import_id``), the import time and the
reviewers' columns (``reviewed_*``, ``*_corrected``) are not part of a contract: the writer adds
the first ones and ``import`` never writes the others.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

#: Longest trace title (``traces.title``), the ellipsis included.
TITLE_MAX_CHARS = 80


class TraceRecord(NamedTuple):
    """A ``traces`` row: the trace's provided facts and its per-trace aggregates."""

    dedupe_key: str
    #: SHA-256 of the canonical content (``ingest.model.content_hash``); NULL when read back
    #: from a trace stored before migration 0008.
    content_hash: str | None
    external_id: str | None
    display_id: str
    #: The first user message, one line, at most :data:`TITLE_MAX_CHARS` characters.
    title: str | None
    format: str
    source_file: str
    source_line: int | None
    agent: str | None
    model: str | None
    started_at: datetime | None
    tags: list[Any]
    metadata: dict[str, Any]
    #: Tool definitions: ``{"name", "description", "parameters"}`` per tool.
    tools: list[Any]
    record_count: int
    message_count: int
    tool_call_count: int
    tool_result_count: int
    error_count: int
    problem_count: int
    total_tokens: int
    tool_result_tokens: int
    wasted_tokens: int
    max_occurrence: int
    #: ``exact``: counted with the model's own tokenizer; ``estimate``: with another.
    token_counts: str
    #: The session or conversation thread the trace belongs to (``ingest.model.Trace``).
    session_id: str | None = None


class MessageRecord(NamedTuple):
    """A ``messages`` row (without ``trace_id``)."""

    seq: int
    role: str
    content: str
    timestamp: datetime | None
    tokens: int
    chars: int
    bytes: int
    usage: dict[str, Any] | None
    source_id: str | None
    source_line: int | None
    branch: str | None
    branch_parent: str | None
    raw: Any


class ToolCallRecord(NamedTuple):
    """A ``tool_calls`` row (without ``trace_id``): provided facts, then derived ones."""

    message_seq: int
    call_index: int
    tool_call_id: str | None
    tool_name: str
    arguments_raw: str | None
    arguments: Any
    args_valid: bool
    args_error: str | None
    timestamp: datetime | None
    signature: str
    occurrence: int
    run_length: int
    retry_after_error: bool
    ping_pong: bool
    pair_state: str
    pairing_method: str | None
    result_seq: int | None
    name_mismatch: bool
    reused_id: bool
    schema_issue: str | None
    schema_detail: str | None
    #: Who runs the call (``contract.vocabulary.CallKind``); last, with its default, so rows built
    #: before it existed (``ToolCallRecord(*row)``) still read.
    kind: str = "client"


#: Characters of a tool call's arguments and of a Tool Message a pair shows.
PREVIEW_CHARS = 120
#: What :func:`one_line_preview` turns into a space, in this order (``\r\n`` as one).
PREVIEW_BREAKS: tuple[str, ...] = ("\r\n", "\n", "\r", "\t")


def one_line_preview(text: str | None) -> str | None:
    """The first :data:`PREVIEW_CHARS` characters of ``text``, each of :data:`PREVIEW_BREAKS`
    then a space (``db.queries.pairs`` computes the same in SQL for the arguments).

    >>> one_line_preview("line one\r\nline\ttwo")
    'line one line two'
    """
    if text is None:
        return None
    head = text[:PREVIEW_CHARS]
    for brk in PREVIEW_BREAKS:
        head = head.replace(brk, " ")
    return head


class ToolResultRecord(NamedTuple):
    """A ``tool_results`` row (without ``trace_id`` and the human corrections)."""

    message_seq: int
    tool_call_id: str | None
    provided_name: str | None
    explicit_error: bool | None
    explicit_source: str | None
    timestamp: datetime | None
    tokens: int
    chars: int
    bytes: int
    tool: str
    status: str
    status_source: str
    error_type: str | None
    rule: str | None
    fingerprint: str | None
    summary: str | None
    suggestion: str | None
    suggestion_kind: str | None
    suggestion_detail: dict[str, Any] | None
    is_protocol: bool
    pair_state: str
    pairing_method: str | None
    call_seq: int | None
    call_index: int | None
    name_mismatch: bool
    oversized: bool
    #: Tokens of the result's images (included in ``tokens``) and the images as counted.
    image_tokens: int
    images: list[Any] | None
    #: Seq and input tokens of the model call that read the result (from its usage).
    read_by_seq: int | None
    read_input_tokens: int | None
    verdict: str | None
    verdict_reason: str | None
    next_call_succeeded: bool | None
    #: Execution time of the answered call in ms (negative: stamped before its call; NULL:
    #: unknown) and where it came from (``span`` | ``timestamps``, ``ingest.analysis.durations``).
    duration_ms: float | None
    duration_source: str | None
    #: The Tool Message's first :data:`PREVIEW_CHARS` characters on one line
    #: (:func:`one_line_preview`): the ``result`` of a pair, read without the message's text.
    preview: str | None
    #: What it adds to the model calls after it (``ingest.analysis.costs``): the calls that still
    #: had it in their input, the tokens of their reads after the first, of them cached reads (NULL:
    #: unknown, an estimate), whether the calls' reported usage measured it (else an estimate
    #: from the assistant turns after it), and every read priced in nanodollars (NULL: no price
    #: for the model).
    later_calls: int | None = None
    reread_tokens: int | None = None
    reread_cached: int | None = None
    reread_measured: bool | None = None
    cost_nano_usd: int | None = None


class FindingRecord(NamedTuple):
    """A ``findings`` row (without ``trace_id``)."""

    name: str
    tool: str | None
    message_seq: int
    call_index: int | None


class ErrorStreakRecord(NamedTuple):
    """An ``error_streaks`` row (without ``trace_id``): k or more consecutive calls of one tool
    ending in one error fingerprint (``ingest.analysis.streaks``); streaks of 2 or more are
    stored."""

    tool: str
    #: The stored fingerprint of the first call's result (``tool_results.fingerprint``).
    fingerprint: str | None
    #: The derived error type of the first call's result.
    error_type: str | None
    #: The first and the last call of the streak (message seq, call index).
    first_seq: int
    first_index: int
    last_seq: int
    last_index: int
    length: int
    #: Result tokens + argument tokens of the calls after the first.
    wasted_tokens: int
    #: Known execution times of the calls after the first, in ms (NULL: none known).
    wasted_ms: float | None


class SourceFileRecord(NamedTuple):
    """A ``source_files`` row: what the last import read of one file
    (``db.writes.source_files``)."""

    path: str
    size: int
    mtime_ns: int
    head_hash: str
    tail_hash: str
    full_hash: str | None
    format: str | None
    #: Where reading can go on (end of the last complete JSONL line); None: read whole again.
    read_bytes: int | None
    read_lines: int
    records: int
    traces: int
    last_import_id: int


#: The child tables of a trace, in writing order, with their columns: their contract's fields.
CHILD_COLUMNS: dict[str, tuple[str, ...]] = {
    "messages": MessageRecord._fields,
    "tool_calls": ToolCallRecord._fields,
    "tool_results": ToolResultRecord._fields,
    "findings": FindingRecord._fields,
    "error_streaks": ErrorStreakRecord._fields,
}

#: Columns holding JSON, per table (serialized by the writers of the raw paths).
JSON_COLUMNS: dict[str, frozenset[str]] = {
    "traces": frozenset({"tags", "metadata", "tools"}),
    "messages": frozenset({"usage", "raw"}),
    "tool_calls": frozenset({"arguments"}),
    "tool_results": frozenset({"suggestion_detail", "images"}),
    "findings": frozenset(),
    "error_streaks": frozenset(),
}
