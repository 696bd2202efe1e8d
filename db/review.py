"""Incident review: annotations, the review queue, the reviewed flag and verdict corrections.

Every statement runs unchanged on SQLite and PostgreSQL. Reviewers work at the same time, so
nothing here reads-modifies-writes a shared value: each note is its own row inserted in its own
transaction, and an edit or delete names the ``version`` it was based on and fails with
:class:`AnnotationConflictError` when someone else changed the note in between.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Literal

import pandas as pd
from sqlalchemy import Connection, Engine, and_, delete, exists, func, insert, or_, select, update

from db.engine import writing
from db.filters import NO_FILTERS, Filters, restrict_traces
from db.schema import AnnotationRow, ToolCallRow, ToolResultRow, TraceRow
from db.summary import VERDICTS, effective_verdict

#: Labels offered when ``TOOLLENS_LABELS`` is not set.
DEFAULT_LABELS: tuple[str, ...] = (
    "root-cause", "tool-bug", "model-bug", "prompt-bug", "false-alarm", "needs-fix",
)  # fmt: skip
LABELS_ENV = "TOOLLENS_LABELS"
#: A note is prose for colleagues, not a place to paste a whole trace.
MAX_NOTE_CHARS = 20_000
MAX_AUTHOR_CHARS = 200
#: Error types are snake_case; protocol-provided ones are kept verbatim, so any such name goes.
ERROR_TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,59}$")
#: Kinds of problem the review queue can be narrowed to.
Problem = Literal["errors", "pairing", "loops", "ignored"]
PROBLEMS: tuple[str, ...] = ("errors", "pairing", "loops", "ignored")


class ReviewError(ValueError):
    """A review action that cannot be done as asked; the message says why."""


class UnknownTargetError(ReviewError):
    """The trace, pair or result named does not exist."""


class AnnotationConflictError(ReviewError):
    """The note changed (or was deleted) since the reviewer read it."""


class _Unchanged(Enum):
    UNCHANGED = "unchanged"


#: Pass for a correction field that should stay as it is.
UNCHANGED = _Unchanged.UNCHANGED


@dataclass(frozen=True, slots=True)
class Annotation:
    """One stored note; ``message_seq``/``call_index`` say what it is about (see ``target``)."""

    id: int
    trace_id: int
    message_seq: int | None
    call_index: int | None
    label: str
    note: str
    author: str
    created_at: datetime
    updated_at: datetime
    updated_by: str
    version: int

    @property
    def target(self) -> Literal["trace", "call", "result"]:
        """``trace`` (the whole run), ``call`` (a call and its result) or ``result`` (unpaired)."""
        if self.message_seq is None:
            return "trace"
        return "result" if self.call_index is None else "call"


def configured_labels(value: str | None = None) -> tuple[str, ...]:
    """The label set: ``value`` (or ``$TOOLLENS_LABELS``) split on commas, else the default.

    >>> configured_labels(" root-cause, flaky ,,root-cause")
    ('root-cause', 'flaky')
    """
    raw = os.environ.get(LABELS_ENV, "") if value is None else value
    labels = tuple(dict.fromkeys(p.strip() for p in raw.split(",") if p.strip()))
    return labels or DEFAULT_LABELS


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(UTC)


def _check_text(label: str, note: str, author: str, labels: Sequence[str] | None) -> None:
    allowed = tuple(labels) if labels is not None else configured_labels()
    if label not in allowed:
        raise ReviewError(f"unknown label {label!r}; choose one of {', '.join(allowed)}")
    if len(note) > MAX_NOTE_CHARS:
        raise ReviewError(f"note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
    if not author.strip():
        raise ReviewError("author is empty: say who writes the note")
    if len(author) > MAX_AUTHOR_CHARS:
        raise ReviewError(f"author is longer than {MAX_AUTHOR_CHARS} characters")


def _check_target(
    conn: Connection, trace_id: int, message_seq: int | None, call_index: int | None
) -> None:
    if conn.execute(select(TraceRow.id).where(TraceRow.id == trace_id)).first() is None:
        raise UnknownTargetError(f"no trace with id {trace_id}")
    if message_seq is None:
        if call_index is not None:
            raise UnknownTargetError("call_index needs the message_seq of its assistant message")
        return
    if call_index is not None:
        found = select(ToolCallRow.id).where(
            ToolCallRow.trace_id == trace_id,
            ToolCallRow.message_seq == message_seq,
            ToolCallRow.call_index == call_index,
        )
        what = f"call {call_index} of message {message_seq}"
    else:
        found = select(ToolResultRow.id).where(
            ToolResultRow.trace_id == trace_id, ToolResultRow.message_seq == message_seq
        )
        what = f"tool result at message {message_seq}"
    if conn.execute(found.limit(1)).first() is None:
        raise UnknownTargetError(f"trace {trace_id} has no {what}")


def _annotation(row: Any) -> Annotation:
    return Annotation(**{f: getattr(row, f) for f in Annotation.__slots__})


def add_annotation(
    engine: Engine,
    trace_id: int,
    *,
    label: str,
    note: str,
    author: str,
    message_seq: int | None = None,
    call_index: int | None = None,
    labels: Sequence[str] | None = None,
    now: datetime | None = None,
) -> Annotation:
    """Store a new note on a trace (no ``message_seq``), a call (``message_seq`` of its
    assistant message + ``call_index``) or an unpaired result (its ``message_seq`` only).

    ``labels``: the allowed set (default :func:`configured_labels`).
    """
    _check_text(label, note, author, labels)
    at = _now(now)
    values = {
        "trace_id": trace_id, "message_seq": message_seq, "call_index": call_index,
        "label": label, "note": note, "author": author.strip(), "created_at": at,
        "updated_at": at, "updated_by": author.strip(), "version": 1,
    }  # fmt: skip
    # One row per note in its own transaction: concurrent reviewers only ever add rows.
    with writing(engine) as conn:
        _check_target(conn, trace_id, message_seq, call_index)
        new_id = conn.execute(
            insert(AnnotationRow).values(values).returning(AnnotationRow.id)
        ).scalar_one()
        row = conn.execute(select(AnnotationRow).where(AnnotationRow.id == new_id)).one()
    return _annotation(row)


def _conflict(conn: Connection, annotation_id: int, version: int) -> AnnotationConflictError:
    current = conn.execute(
        select(AnnotationRow.updated_by, AnnotationRow.updated_at, AnnotationRow.version).where(
            AnnotationRow.id == annotation_id
        )
    ).first()
    if current is None:
        return AnnotationConflictError(f"note {annotation_id} no longer exists (deleted)")
    return AnnotationConflictError(
        f"note {annotation_id} was changed by {current.updated_by} at "
        f"{current.updated_at:%Y-%m-%d %H:%M:%S} UTC (version {current.version}, you edited "
        f"version {version}); reload it and apply your change again"
    )


def update_annotation(
    engine: Engine,
    annotation_id: int,
    *,
    version: int,
    label: str,
    note: str,
    editor: str,
    labels: Sequence[str] | None = None,
    now: datetime | None = None,
) -> Annotation:
    """Change a note's label and text, provided it is still at ``version``.

    Raises :class:`AnnotationConflictError` when another reviewer saved or deleted it first.
    """
    _check_text(label, note, editor, labels)
    row_is = and_(AnnotationRow.id == annotation_id, AnnotationRow.version == version)
    with writing(engine) as conn:
        changed = conn.execute(
            update(AnnotationRow)
            .where(row_is)
            .values(
                label=label,
                note=note,
                updated_by=editor.strip(),
                updated_at=_now(now),
                version=AnnotationRow.version + 1,
            )
        ).rowcount
        if changed != 1:
            raise _conflict(conn, annotation_id, version)
        row = conn.execute(select(AnnotationRow).where(AnnotationRow.id == annotation_id)).one()
    return _annotation(row)


def delete_annotation(engine: Engine, annotation_id: int, *, version: int) -> None:
    """Delete a note, provided nobody changed it since ``version`` was read."""
    with writing(engine) as conn:
        gone = conn.execute(
            delete(AnnotationRow).where(
                AnnotationRow.id == annotation_id, AnnotationRow.version == version
            )
        ).rowcount
        if gone != 1:
            raise _conflict(conn, annotation_id, version)


def annotations_on(
    engine: Engine,
    trace_id: int,
    message_seq: int | None = None,
    call_index: int | None = None,
) -> list[Annotation]:
    """Notes on exactly this target (the trace itself when ``message_seq`` is None), oldest
    first."""
    a = AnnotationRow
    stmt = select(a).where(
        a.trace_id == trace_id,
        a.message_seq.is_(None) if message_seq is None else a.message_seq == message_seq,
        a.call_index.is_(None) if call_index is None else a.call_index == call_index,
    )
    with engine.connect() as conn:
        return [_annotation(r) for r in conn.execute(stmt.order_by(a.created_at, a.id))]


def trace_annotations(engine: Engine, trace_id: int) -> list[Annotation]:
    """Every note on a trace and on its pairs, oldest first."""
    a = AnnotationRow
    stmt = select(a).where(a.trace_id == trace_id).order_by(a.created_at, a.id)
    with engine.connect() as conn:
        return [_annotation(r) for r in conn.execute(stmt)]


#: Columns of :func:`list_annotations`, in order.
ANNOTATION_COLUMNS: tuple[str, ...] = (
    "id", "trace_id", "display_id", "message_seq", "call_index", "tool", "label", "note",
    "author", "created_at", "updated_at", "updated_by", "version",
)  # fmt: skip


def list_annotations(
    engine: Engine,
    *,
    labels: Sequence[str] = (),
    authors: Sequence[str] = (),
    trace_id: int | None = None,
    limit: int = 500,
) -> pd.DataFrame:
    """All notes (newest first) with their trace's display id and the tool of the pair,
    filtered by label and author (empty = all)."""
    a, c, r = AnnotationRow, ToolCallRow, ToolResultRow
    special: dict[str, Any] = {
        "display_id": TraceRow.display_id,
        "tool": func.coalesce(c.tool_name, r.tool),
    }
    columns = [(special[n] if n in special else getattr(a, n)).label(n) for n in ANNOTATION_COLUMNS]
    stmt = (
        select(*columns)
        .join(TraceRow, TraceRow.id == a.trace_id)
        .outerjoin(
            c,
            and_(
                c.trace_id == a.trace_id,
                c.message_seq == a.message_seq,
                c.call_index == a.call_index,
            ),
        )
        .outerjoin(
            r,
            and_(r.trace_id == a.trace_id, r.message_seq == a.message_seq, a.call_index.is_(None)),
        )
    )
    if labels:
        stmt = stmt.where(a.label.in_(list(labels)))
    if authors:
        stmt = stmt.where(a.author.in_(list(authors)))
    if trace_id is not None:
        stmt = stmt.where(a.trace_id == trace_id)
    stmt = stmt.order_by(a.created_at.desc(), a.id.desc()).limit(limit)
    with engine.connect() as conn:
        rows = conn.execute(stmt).all()
    return pd.DataFrame([tuple(row) for row in rows], columns=list(ANNOTATION_COLUMNS))


def annotation_choices(engine: Engine) -> dict[str, list[str]]:
    """The labels and authors that notes use, alphabetically (for the Review page's filters)."""
    a = AnnotationRow
    with engine.connect() as conn:
        return {
            name: list(conn.execute(select(col).distinct().order_by(col)).scalars())
            for name, col in (("label", a.label), ("author", a.author))
        }


def trace_header(engine: Engine, trace: int | str) -> dict[str, Any] | None:
    """A trace's row as a dict, by id (``int``) or display id (``str``; as on the Trace page the
    first imported wins), plus ``same_display_id``: how many traces share its display id."""
    t = TraceRow
    where = t.id == trace if isinstance(trace, int) else t.display_id == trace
    with engine.connect() as conn:
        row = conn.execute(select(t.__table__).where(where).order_by(t.id).limit(1)).first()
        if row is None:
            return None
        header = dict(row._mapping)
        header["same_display_id"] = conn.execute(
            select(func.count()).where(t.display_id == header["display_id"])
        ).scalar_one()
    return header


def _problem_condition(problem: Problem, loop_k: int) -> Any:
    t = TraceRow
    if problem == "errors":
        return t.error_count > 0
    if problem == "loops":
        return t.max_occurrence >= loop_k
    if problem == "pairing":
        return or_(
            exists().where(ToolCallRow.trace_id == t.id, ToolCallRow.pair_state != "paired"),
            exists().where(ToolResultRow.trace_id == t.id, ToolResultRow.call_seq.is_(None)),
        )
    if problem == "ignored":
        return exists().where(ToolResultRow.trace_id == t.id, effective_verdict == "ignored")
    raise ReviewError(f"unknown problem {problem!r}; choose one of {', '.join(PROBLEMS)}")


def _queue_statement(
    filters: Filters, problem: Problem | None, include_reviewed: bool, loop_k: int
) -> Any:
    stmt = restrict_traces(select(TraceRow.id).where(TraceRow.problem_count > 0), filters)
    if not include_reviewed:
        stmt = stmt.where(TraceRow.reviewed_at.is_(None))
    if problem is not None:
        stmt = stmt.where(_problem_condition(problem, loop_k))
    return stmt


#: Columns of :func:`review_queue`, in order.
QUEUE_COLUMNS: tuple[str, ...] = (
    "trace_id", "display_id", "agent", "model", "started_at", "severity", "errors", "pairing",
    "loop_calls", "ignored", "notes", "reviewed_at", "reviewed_by",
)  # fmt: skip


def review_queue(
    engine: Engine,
    *,
    filters: Filters = NO_FILTERS,
    problem: Problem | None = None,
    include_reviewed: bool = False,
    loop_k: int = 3,
    limit: int = 100,
    offset: int = 0,
) -> pd.DataFrame:
    """Traces with problems, most severe first (``severity`` = the trace's problem count:
    errors + pairing problems + loop calls + ignored suggestions), not yet reviewed unless
    ``include_reviewed``; one page of ``limit`` rows with the problems broken down."""
    t = TraceRow
    ids = _queue_statement(filters, problem, include_reviewed, loop_k).subquery()
    page = (
        select(t)
        .where(t.id.in_(select(ids.c.id)))
        .order_by(t.problem_count.desc(), t.started_at.desc().nulls_last(), t.id)
        .limit(limit)
        .offset(offset)
    )
    with engine.connect() as conn:
        traces = conn.execute(page).all()
        counts = _breakdown(conn, [tr.id for tr in traces], loop_k)
    rows = [
        (tr.id, tr.display_id, tr.agent, tr.model, tr.started_at, tr.problem_count,
         tr.error_count, *counts[tr.id], tr.reviewed_at, tr.reviewed_by)
        for tr in traces
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(QUEUE_COLUMNS))


def _count_by_trace(conn: Connection, stmt: Any) -> dict[int, int]:
    return {int(tid): int(n) for tid, n in conn.execute(stmt)}


def _breakdown(
    conn: Connection, ids: Sequence[int], loop_k: int
) -> dict[int, tuple[int, int, int, int]]:
    """(pairing problems, loop calls, ignored suggestions, notes) per trace of one page."""
    if not ids:
        return {}
    c, r, a = ToolCallRow, ToolResultRow, AnnotationRow
    unpaired_calls = _count_by_trace(
        conn,
        select(c.trace_id, func.count())
        .where(c.trace_id.in_(ids), c.pair_state != "paired")
        .group_by(c.trace_id),
    )
    unpaired_results = _count_by_trace(
        conn,
        select(r.trace_id, func.count())
        .where(r.trace_id.in_(ids), r.call_seq.is_(None))
        .group_by(r.trace_id),
    )
    groups = (
        select(c.trace_id, func.count().label("n"))
        .where(c.trace_id.in_(ids))
        .group_by(c.trace_id, c.signature)
        .having(func.max(c.occurrence) >= loop_k)
        .subquery()
    )
    loops = _count_by_trace(
        conn, select(groups.c.trace_id, func.sum(groups.c.n)).group_by(groups.c.trace_id)
    )
    ignored = _count_by_trace(
        conn,
        select(r.trace_id, func.count())
        .where(r.trace_id.in_(ids), effective_verdict == "ignored")
        .group_by(r.trace_id),
    )
    notes = _count_by_trace(
        conn, select(a.trace_id, func.count()).where(a.trace_id.in_(ids)).group_by(a.trace_id)
    )
    return {
        tid: (
            unpaired_calls.get(tid, 0) + unpaired_results.get(tid, 0),
            loops.get(tid, 0),
            ignored.get(tid, 0),
            notes.get(tid, 0),
        )
        for tid in ids
    }


def queue_size(
    engine: Engine,
    *,
    filters: Filters = NO_FILTERS,
    problem: Problem | None = None,
    include_reviewed: bool = False,
    loop_k: int = 3,
) -> int:
    """How many traces :func:`review_queue` would list over all pages."""
    sub = _queue_statement(filters, problem, include_reviewed, loop_k).subquery()
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(sub)).scalar_one())


def mark_reviewed(
    engine: Engine, trace_id: int, author: str, *, now: datetime | None = None
) -> None:
    """Mark a trace reviewed by ``author`` (it leaves the review queue)."""
    if not author.strip():
        raise ReviewError("author is empty: say who reviewed the trace")
    with writing(engine) as conn:
        done = conn.execute(
            update(TraceRow)
            .where(TraceRow.id == trace_id)
            .values(reviewed_at=_now(now), reviewed_by=author.strip())
        ).rowcount
    if done != 1:
        raise UnknownTargetError(f"no trace with id {trace_id}")


def clear_reviewed(engine: Engine, trace_id: int) -> None:
    """Put a trace back into the review queue."""
    with writing(engine) as conn:
        conn.execute(
            update(TraceRow)
            .where(TraceRow.id == trace_id)
            .values(reviewed_at=None, reviewed_by=None)
        )


@dataclass(frozen=True, slots=True)
class ResultReview:
    """What a reviewer needs to correct one Tool Message: derived values beside corrections."""

    result_id: int
    trace_id: int
    message_seq: int
    tool: str
    status: str
    error_type: str | None
    error_type_corrected: str | None
    suggestion: str | None
    verdict: str | None
    verdict_reason: str | None
    verdict_corrected: str | None
    corrected_by: str | None
    corrected_at: datetime | None


def result_review(engine: Engine, result_id: int) -> ResultReview:
    """The derived and corrected error type and verdict of one result."""
    r = ToolResultRow
    cols = [getattr(r, "id" if f == "result_id" else f) for f in ResultReview.__slots__]
    with engine.connect() as conn:
        row = conn.execute(select(*cols).where(r.id == result_id)).first()
    if row is None:
        raise UnknownTargetError(f"no tool result with id {result_id}")
    return ResultReview(*row)


def correct_result(
    engine: Engine,
    result_id: int,
    *,
    author: str,
    error_type: str | _Unchanged | None = UNCHANGED,
    verdict: str | _Unchanged | None = UNCHANGED,
    now: datetime | None = None,
) -> ResultReview:
    """Correct (a value) or un-correct (``None``) the error type and/or suggestion verdict of a
    result; ``UNCHANGED`` leaves a field alone. Charts, ``toollens summary`` and exports use
    the correction; ``toollens reanalyze`` keeps it."""
    if not author.strip():
        raise ReviewError("author is empty: say who corrects the result")
    if isinstance(error_type, str) and not ERROR_TYPE_PATTERN.match(error_type):
        raise ReviewError(f"error type {error_type!r} is not a snake_case name")
    if isinstance(verdict, str) and verdict not in VERDICTS:
        raise ReviewError(f"unknown verdict {verdict!r}; choose one of {', '.join(VERDICTS)}")
    r = ToolResultRow
    with writing(engine) as conn:
        row = conn.execute(
            select(r.status, r.suggestion, r.error_type_corrected, r.verdict_corrected)
            .where(r.id == result_id)
            .with_for_update()
        ).first()
        if row is None:
            raise UnknownTargetError(f"no tool result with id {result_id}")
        if isinstance(error_type, str) and row.status != "error":
            raise ReviewError(
                f"result {result_id} has status {row.status}: only errors have an error type"
            )
        if isinstance(verdict, str) and row.suggestion is None:
            raise ReviewError(f"result {result_id} gives no suggestion: there is no verdict")
        new_type = row.error_type_corrected if error_type is UNCHANGED else error_type
        new_verdict = row.verdict_corrected if verdict is UNCHANGED else verdict
        corrected = new_type is not None or new_verdict is not None
        conn.execute(
            update(r)
            .where(r.id == result_id)
            .values(
                error_type_corrected=new_type,
                verdict_corrected=new_verdict,
                corrected_by=author.strip() if corrected else None,
                corrected_at=_now(now) if corrected else None,
            )
        )
    return result_review(engine, result_id)
