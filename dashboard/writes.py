"""Every write the dashboard makes, each checked against the signed-in role first.

Pages and widgets never call a ``db`` write (or the upload import) themselves: they call these,
which ask :func:`dashboard.auth.require` for the right (raising
:class:`~dashboard.auth.PermissionDeniedError` when the role lacks it) and sign the write with
the identity (the signed-in e-mail, or the name typed in local mode). Hiding a control is for
the eye; this check is what holds when a request reaches the server anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Engine

from dashboard import auth
from dashboard.uploads import import_uploaded
from db.session import Maintenance, mark_gone_imports
from db.writes import review
from db.writes.annotations import Annotation, add_annotation, delete_annotation, update_annotation
from db.writes.corrections import UNCHANGED, ResultReview, _Unchanged, correct_result
from db.writes.deletion import Selection
from ingest.importing.pipeline import ImportSummary


def note_gone_imports(engine: Engine) -> list[int]:
    """Mark ``interrupted`` the imports left ``running`` by a process of this host that is
    gone (:func:`db.session.mark_gone_imports`); the ids marked. Any role: it records what
    happened to an import, not a choice of whoever opened the page."""
    return mark_gone_imports(engine)


def add_note(
    engine: Engine,
    trace_id: int,
    *,
    label: str,
    note: str,
    message_seq: int | None = None,
    call_index: int | None = None,
    labels: Sequence[str] | None = None,
) -> Annotation:
    """Store a note signed by the current identity (needs ``annotate``)."""
    person = auth.require("annotate")
    return add_annotation(
        engine, trace_id, label=label, note=note, author=person.signature,
        message_seq=message_seq, call_index=call_index, labels=labels,
    )  # fmt: skip


def edit_note(
    engine: Engine,
    annotation_id: int,
    *,
    version: int,
    label: str,
    note: str,
    labels: Sequence[str] | None = None,
) -> Annotation:
    """Change a note as the current identity (needs ``annotate``)."""
    person = auth.require("annotate")
    return update_annotation(
        engine, annotation_id, version=version, label=label, note=note,
        editor=person.signature, labels=labels,
    )  # fmt: skip


def delete_note(engine: Engine, annotation_id: int, *, version: int) -> None:
    """Delete a note (needs ``annotate``)."""
    auth.require("annotate")
    delete_annotation(engine, annotation_id, version=version)


def correct(
    engine: Engine,
    result_id: int,
    *,
    error_type: str | _Unchanged | None = UNCHANGED,
    verdict: str | _Unchanged | None = UNCHANGED,
) -> ResultReview:
    """Correct a result's error type and/or verdict, signed (needs ``correct``)."""
    person = auth.require("correct")
    return correct_result(
        engine, result_id, author=person.signature, error_type=error_type, verdict=verdict
    )


def mark_reviewed(engine: Engine, trace_ids: Sequence[int]) -> None:
    """Mark traces reviewed by the current identity (needs ``mark_reviewed``)."""
    person = auth.require("mark_reviewed")
    for trace_id in trace_ids:
        review.mark_reviewed(engine, trace_id, person.signature)


def clear_reviewed(engine: Engine, trace_ids: Sequence[int]) -> None:
    """Put traces back into the review queue (needs ``mark_reviewed``)."""
    auth.require("mark_reviewed")
    for trace_id in trace_ids:
        review.clear_reviewed(engine, trace_id)


def upload(
    engine: Engine,
    files: Sequence[tuple[str, bytes]],
    max_mb: int,
    *,
    progress: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import uploaded ``(name, content)`` files (needs ``upload``)."""
    auth.require("upload")
    return import_uploaded(engine, files, max_mb, progress=progress)


def delete(engine: Engine, selection: Selection) -> dict[str, int]:
    """Delete a trace or an import with every row that belongs to it (needs ``delete``); the
    rows removed per table."""
    auth.require("delete")
    return Maintenance(engine).delete(selection)
