"""Re-importing a file that only grew, when its trace spans the file (a Claude Code session).

The stored version is read back (:mod:`db.writes.append`) and the format's ``extend`` reads only the
appended lines on top of it (``ingest.formats.base.Extend``). Only the new messages are counted
and redacted (the stored ones keep their token counts and are stored redacted already); the
content facts and images of the stored Tool Messages are reused; the analysis runs over the
whole new version (pairs, loops and verdicts of earlier messages change with what follows them);
the write adds the new messages and rewrites the derived rows. What ends up stored is what a
fresh import of the whole file stores (``tests/test_append_update.py`` holds it to that, row for
row).

The stored messages' raw payloads (most of a session's bytes) are never decoded: the content
hash of the new version is spliced from their stored JSON text (:class:`ingest.model.SplicedHash`)
once that text has given the stored version's own hash back, which proves it is what
``content_hash`` hashed. Where it is not (PostgreSQL's JSONB renders its own way; a store written
before JSON text was canonical) the payloads are decoded and dumped, as a fresh import does.

When any of that cannot be exact (no single stored trace of the file, another token encoding,
a state ``extend`` cannot rebuild, a concurrent replacement of the stored version, a stored
version whose hash its rows do not give back, a trace the analysis trips over) nothing is
counted or written and :func:`extend_stored` returns False: the caller reads the file whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

import orjson

from db.contract.bounds import fit_key
from db.contract.rows import ToolResultRecord
from db.contract.vocabulary import Status, StatusSource, SuggestionKind
from db.session import AppendBase, TraceRows, WriteResult
from ingest.analysis.content import CONTENT_FINDINGS
from ingest.analysis.facts import ContentFacts
from ingest.analysis.images import ImageFact, countable_text, message_images
from ingest.analysis.tokens import count_many, preload
from ingest.analysis.trace import analyze_trace
from ingest.formats.base import CannotExtend, TraceFormat
from ingest.importing.batches import BatchWriter
from ingest.importing.rebuild import trace_from_stored
from ingest.importing.rows import build_rows
from ingest.input.reading import ReadLimits, RecordHook, appended_records
from ingest.model import (
    Message,
    Rejected,
    SplicedHash,
    Trace,
    canonical_json,
    message_hash_part,
)
from ingest.redaction.traces import add_counts, redact_trace


def extend_stored(
    writer: BatchWriter,
    path: Path,
    name: str,
    fmt: TraceFormat,
    resume: tuple[int, int],
    *,
    records_before: int,
    on_record: RecordHook,
    limits: ReadLimits | None = None,
) -> bool:
    """Store the new version of the trace of ``path`` (read as ``name``, ``records_before``
    records up to ``resume``) with the records appended after ``resume``, counting them all
    (``on_record`` is told each appended one); False when this cannot be done exactly, and
    then nothing was written or counted."""
    if fmt.extend is None:
        return False
    records = list(appended_records(path, name, resume, limits))
    # The new messages' tokens are counted last; the tokenizer loads while the rest is done.
    loading = preload(writer.encoding) if records else None
    session = writer.session
    base = session.append_base(fmt.name, name)
    if base is None or base.encoding != writer.encoding:
        return False
    unchanged = records_before - base.stored.trace.record_count
    if unchanged < 0:
        return False
    stored, stored_tokens = trace_from_stored(base.stored)
    spliced = _stored_hash(base, stored)
    if spliced is None:
        return False
    prefix = list(stored.messages)
    usages = [m.usage for m in prefix]
    trace_id = base.stored.id

    def members(key: str, indexes: Sequence[int]) -> dict[int, str]:
        # The stored messages' seqs are their indexes.
        every = len(indexes) == len(prefix)
        return session.raw_members(trace_id, key, None if every else indexes)

    try:
        items = list(fmt.extend(stored, records, name, members))
    except CannotExtend:
        return False
    traces = [item for item in items if isinstance(item, Trace)]
    if len(traces) != 1:
        return False
    trace = traces[0]
    if fit_key("traces", "dedupe_key", trace.dedupe_key()) != base.stored.trace.dedupe_key:
        return False
    count = len(prefix)
    if len(trace.messages) < count or any(
        a is not b for a, b in zip(trace.messages, prefix, strict=False)
    ):
        return False
    changed = [i for i, m in enumerate(prefix) if m.usage is not usages[i]]
    if loading is not None:
        loading.join()
    prepared = _prepare(writer, base, stored, trace, stored_tokens, changed, spliced)
    if prepared is None:
        return False
    rows, redactions = prepared
    tool_contents = {m.seq: m.content for m in trace.messages if m.role == "tool"}
    if not session.append(base, rows, count, tool_contents):
        return False
    # Written: only now is anything counted.
    for record in records:
        on_record(record)
    result = WriteResult()
    result.count(rows, "updated")
    result.messages_added = len(trace.messages) - count
    summary = writer.summary
    summary.add_written(result)
    summary.records += records_before
    summary.records_unchanged += unchanged  # the stored part's rejected records
    counts = summary.file(name)
    counts.records += records_before
    counts.unchanged += unchanged
    summary.add_unknown(trace.metadata.get("unknown_items", {}))
    add_counts(summary.redactions, redactions)
    for item in items:
        if isinstance(item, Rejected):
            writer.add(item)
    return True


def _prepare(
    writer: BatchWriter,
    base: AppendBase,
    stored: Trace,
    trace: Trace,
    stored_tokens: Sequence[int],
    changed: Sequence[int],
    spliced: SplicedHash,
) -> tuple[TraceRows, dict[str, int]] | None:
    """The rows of the new version ``trace`` of ``stored`` (the messages: only the new and the
    ``changed`` stored ones, whose usage grew), and the secrets redacted; ``None`` when the
    analysis trips over the trace."""
    count = len(stored_tokens)
    added = trace.messages[count:]
    tokens = [
        *stored_tokens,
        *count_many([countable_text(m.content) for m in added], writer.encoding),
    ]
    redactor = writer.redaction.redactor()
    redactor.counts.reset()
    # The stored messages are stored redacted; of a changed one only the usage is new.
    part = trace.model_copy(update={"messages": list(added)})
    redacted = redact_trace(part, redactor)
    messages: list[Message] = [*trace.messages[:count], *redacted.messages]
    for index in changed:
        message = messages[index]
        usage = redactor.redact_value(message.usage)
        if usage is not message.usage:
            messages[index] = message.model_copy(update={"usage": usage})
    whole = redacted.model_copy(update={"messages": messages})
    more = [message_hash_part(m.role, m.content, canonical_json(m.raw)) for m in redacted.messages]
    try:
        digest = spliced.digest(whole.metadata, more, whole.tools)
        facts = analyze_trace(
            whole,
            tokens,
            budget=writer.budget,
            encoding=writer.encoding,
            content_facts=_stored_facts(base, whole, count),
            images=_stored_images(base, stored, whole, count),
        )
        seqs = {*(whole.messages[i].seq for i in changed), *(m.seq for m in added)}
        rows = build_rows(whole, facts, tokens, message_seqs=seqs, digest=digest)
    except Exception:  # the whole-file import turns it into an ``analysis_failed`` rejection
        return None
    return rows, dict(redactor.counts.reset())


def _stored_hash(base: AppendBase, stored: Trace) -> SplicedHash | None:
    """The stored messages' shares of the content hash (:class:`SplicedHash`), proven by giving
    the stored version's hash back; ``None`` when they cannot (the file is read whole)."""
    expected = base.stored.trace.content_hash
    if expected is None:
        return None

    def spliced(raw: Sequence[bytes]) -> SplicedHash:
        parts = [
            message_hash_part(m.role, m.content, text)
            for m, text in zip(stored.messages, raw, strict=True)
        ]
        return SplicedHash(parts)

    # SQLite holds each payload as canonical JSON text already: no decoding.
    as_stored = spliced([b"null" if text is None else text for text in base.raw_json])
    if as_stored.digest(stored.metadata, (), stored.tools) == expected:
        return as_stored
    decoded = spliced(
        [canonical_json(None if text is None else orjson.loads(text)) for text in base.raw_json]
    )
    if decoded.digest(stored.metadata, (), stored.tools) == expected:
        return decoded
    return None


def _stored_facts(base: AppendBase, trace: Trace, count: int) -> list[ContentFacts | None]:
    """The content facts of the stored Tool Messages (their content did not change), aligned
    with ``trace.messages``; ``None`` for the appended ones (computed by the analysis)."""
    results = {r.message_seq: r for r in base.stored.results}
    found: dict[int, set[str]] = {}
    for finding in base.findings:
        if finding.call_index is None:
            found.setdefault(finding.message_seq, set()).add(finding.name)
    facts: list[ContentFacts | None] = []
    for message in trace.messages:
        stored = results.get(message.seq) if message.seq < count else None
        if stored is None:
            facts.append(None)
        else:
            facts.append(_content_facts(stored, found.get(message.seq, set())))
    return facts


def _content_facts(r: ToolResultRecord, found: set[str]) -> ContentFacts:
    """The content facts stored with a Tool Message (``found``: its findings)."""
    return ContentFacts(
        # The stored values passed the CHECK constraints built from these very Literal sets.
        status=cast(Status, r.status),
        status_source=cast(StatusSource, r.status_source),
        error_type=r.error_type,
        rule=r.rule,
        summary=r.summary,
        suggestion=r.suggestion,
        suggestion_kind=cast(SuggestionKind | None, r.suggestion_kind),
        suggestion_detail=r.suggestion_detail or {},
        is_protocol=r.is_protocol,
        findings=[name for name in CONTENT_FINDINGS if name in found],
    )


def _stored_images(
    base: AppendBase, stored: Trace, trace: Trace, count: int
) -> list[list[ImageFact] | None]:
    """The images of the stored Tool Messages, aligned with ``trace.messages``: as stored when
    the model and format that choose their token rule are the stored version's, else counted
    again from the decoded payloads; ``None`` for the appended ones (found by the analysis)."""
    results = {r.message_seq: r for r in base.stored.results}
    same_rule = (trace.model, trace.format) == (stored.model, stored.format)
    images: list[list[ImageFact] | None] = []
    for index, message in enumerate(trace.messages):
        stored_result = results.get(message.seq) if index < count else None
        if stored_result is None:
            images.append(None)
        elif same_rule:
            images.append([ImageFact(**image) for image in stored_result.images or []])
        else:
            text = base.raw_json[index]
            raw = None if text is None else orjson.loads(text)
            images.append(message_images(raw, message.content, trace.model, trace.format))
    return images


__all__ = ["extend_stored"]
