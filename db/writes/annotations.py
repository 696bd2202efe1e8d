"""Review annotations: notes on a trace, a call or a result, and the errors review actions raise.

Every statement runs unchanged on SQLite and PostgreSQL. Reviewers work at the same time, so
nothing here reads-modifies-writes a shared value: each note is its own row inserted in its own
transaction, and an edit or delete names the ``version`` it was based on and fails with
:class:`AnnotationConflictError` when someone else changed the note in between.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import pandas as pd
from sqlalchemy import Connection, Engine, and_, delete, func, insert, select, update

from db.schema import AnnotationRow, ToolCallRow, ToolResultRow, TraceRow
from db.writes.transaction import writing

#: Labels offered when ``TOOLLENS_LABELS`` is not set.
DEFAULT_LABELS: tuple[str, ...] = (
    "root-cause", "tool-bug", "model-bug", "prompt-bug", "false-alarm", "needs-fix",
)  # fmt: skip
LABELS_ENV = "TOOLLENS_LABELS"
#: A note is prose for colleagues, not a place to paste a whole trace.
MAX_NOTE_CHARS = 20_000
MAX_AUTHOR_CHARS = 200


class ReviewError(ValueError):
    """A review action that cannot be done as asked; the message says why."""


class UnknownTargetError(ReviewError):
    """The trace, pair or result named does not exist."""


class AnnotationConflictError(ReviewError):
    """The note changed (or was deleted) since the reviewer read it."""


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
    #: A new version of the trace changed or dropped the pair (see :mod:`db.writes.carry_over`).
    stale: bool = False
    stale_reason: str | None = None

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


def now_or_utc(now: datetime | None) -> datetime:
    """``now``, or the current time in UTC when it is None (tests pass a fixed time)."""
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
    at = now_or_utc(now)
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
                updated_at=now_or_utc(now),
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
