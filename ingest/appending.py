"""Re-importing a file that only grew, when its trace spans the file (a Claude Code session).

The stored version is read back (:mod:`db.append`) and the format's ``extend`` reads only the
appended lines on top of it (``ingest.formats.base.Extend``). Only the new messages are counted
and redacted (the stored ones keep their token counts and are stored redacted already); the
content facts of the stored Tool Messages are reused; the analysis runs over the whole new
version (pairs, loops and verdicts of earlier messages change with what follows them); the
write adds the new messages and rewrites the derived rows. What ends up stored is what a fresh
import of the whole file stores (``tests/test_append_update.py`` holds it to that, row for row).

When any of that cannot be exact (no single stored trace of the file, another token encoding,
a state ``extend`` cannot rebuild, a concurrent replacement of the stored version, a trace the
analysis trips over) nothing is counted or written and :func:`extend_stored` returns False:
the caller reads the file whole instead (it returns False).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from sqlalchemy import Engine

from db.append import AppendBase, load_append_base, write_append
from db.records import ToolResultRecord
from db.vocabulary import Status, StatusSource, SuggestionKind
from db.write import TraceRows, WriteResult
from ingest.analysis import analyze_trace
from ingest.batches import BatchWriter
from ingest.bounded import fit_key
from ingest.content import CONTENT_FINDINGS
from ingest.facts import ContentFacts
from ingest.formats.base import CannotExtend, TraceFormat
from ingest.model import Message, Rejected, Trace
from ingest.reading import ReadLimits, RecordHook, appended_records
from ingest.rebuild import trace_from_stored
from ingest.rows import build_rows
from ingest.tokens import count_many, preload
from ingest.trace_redaction import add_counts, redact_trace


def extend_stored(
    engine: Engine,
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
    base = load_append_base(engine, fmt.name, name)
    if base is None or base.encoding != writer.encoding:
        return False
    unchanged = records_before - base.stored.trace.record_count
    if unchanged < 0:
        return False
    stored, stored_tokens = trace_from_stored(base.stored)
    prefix = list(stored.messages)
    usages = [m.usage for m in prefix]
    try:
        items = list(fmt.extend(stored, records, name))
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
    prepared = _prepare(writer, base, trace, stored_tokens, changed)
    if prepared is None:
        return False
    rows, redactions = prepared
    tool_contents = {m.seq: m.content for m in trace.messages if m.role == "tool"}
    if not write_append(engine, writer.import_id, base, rows, count, tool_contents):
        return False
    # Written: only now is anything counted.
    for record in records:
        on_record(record)
    result = WriteResult()
    result.count(rows, "updated")
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
    trace: Trace,
    stored_tokens: Sequence[int],
    changed: Sequence[int],
) -> tuple[TraceRows, dict[str, int]] | None:
    """The rows of the new version (the messages: only the new and the ``changed`` stored
    ones), and the secrets redacted; ``None`` when the analysis trips over the trace."""
    count = len(stored_tokens)
    added = trace.messages[count:]
    tokens = [*stored_tokens, *count_many([m.content for m in added], writer.encoding)]
    redactor = writer.redaction.redactor()
    redactor.counts.reset()
    touched = [*changed, *range(count, len(trace.messages))]
    part = trace.model_copy(update={"messages": [trace.messages[i] for i in touched]})
    redacted = redact_trace(part, redactor)
    messages: list[Message] = list(trace.messages)
    for index, message in zip(touched, redacted.messages, strict=True):
        messages[index] = message
    whole = redacted.model_copy(update={"messages": messages})
    try:
        facts = analyze_trace(
            whole, tokens, budget=writer.budget, content_facts=_stored_facts(base, whole, count)
        )
        rows = build_rows(whole, facts, tokens, message_seqs={m.seq for m in part.messages})
    except Exception:  # the whole-file import turns it into an ``analysis_failed`` rejection
        return None
    return rows, dict(redactor.counts.reset())


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


__all__ = ["extend_stored"]
