"""Review widgets the pages share: the reviewer's name, notes on traces and pairs, corrections.

Every function draws into the current Streamlit container and writes through
:mod:`dashboard.writes` (which checks the role); a control the role lacks is not drawn;
nothing here holds SQL. Text typed by reviewers and trace content are untrusted: shown with
``st.text``/``st.code`` or escaped before any markdown. After a write the page reruns so that it
shows what is stored; corrections, which change charts, also clear the data cache, or every page
would show minute-old figures. Downloads and uploads are in :mod:`dashboard.files_ui`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st
from sqlalchemy import Engine
from streamlit.errors import StreamlitDuplicateElementKey

from dashboard import auth, writes
from dashboard.palette import TONE
from dashboard.render import badge_text, escape_markdown, show_error
from db import door
from db.contract.vocabulary import ERROR_TYPES, VERDICTS
from db.writes.annotations import (
    MAX_NOTE_CHARS,
    Annotation,
    ReviewError,
    annotations_on,
    configured_labels,
)
from db.writes.corrections import UNCHANGED, result_review

#: The name field's key and URL parameter (local mode): the name stays in the address, so a
#: reload (or a page switch) keeps it. Links meant for others leave it out (:data:`PRIVATE_PARAMS`).
_AUTHOR_WIDGET = "reviewer"
#: URL parameters that belong to this browser, not to the view a shared link opens.
PRIVATE_PARAMS = (_AUTHOR_WIDGET,)
#: URL parameter of a trace opened from the review queue: the queue's problem filter (``any``
#: for none), which "Mark reviewed, open the next" on the Trace page follows.
QUEUE_PARAM = "queue"
QUEUE_ANY = "any"
#: Option meaning "no correction: use what the rules derived".
AS_DERIVED = "(as derived)"
NO_AUTHOR_TEXT = "Enter your name in the sidebar to write notes and corrections."


def may_write(engine: Engine, action: auth.Action) -> bool:
    """Whether whoever uses the dashboard may do ``action`` (a review write) on ``engine``'s
    store: allowed to, and a store that keeps review notes, corrections and marks (a
    ClickHouse store does not: :func:`db.door.review_refused`)."""
    return auth.can(action) and door.review_refused(engine) is None


def current_author() -> str:
    """What signs a write now: the signed-in e-mail, else the name typed in the sidebar (local
    mode), else empty (nobody may write yet)."""
    person = auth.identity()
    return person.signature if person is not None else ""


def author_field() -> str:
    """Draw the sidebar's name field (local mode only; default ``$TOOLLENS_USER``); return what
    signs writes (:func:`current_author`).

    The field is bound to the URL (``reviewer``), so the name survives a reload; it also lives
    under its own session key, so it survives pages that do not draw the field. Calling this
    twice in one run (entry script and page) draws the field once. With login the signed-in
    e-mail signs, and no field is drawn.
    """
    if auth.login_required():
        return current_author()
    if _AUTHOR_WIDGET not in st.session_state and not st.query_params.get(_AUTHOR_WIDGET):
        st.session_state[_AUTHOR_WIDGET] = auth.local_name()
    try:
        name = st.sidebar.text_input(
            "Your name",
            key=_AUTHOR_WIDGET,
            max_chars=200,
            bind="query-params",
            help="Signs your notes, corrections and reviews (default: $TOOLLENS_USER); "
            "kept in this page's address.",
        )
    except StreamlitDuplicateElementKey:
        return current_author()  # already drawn in this run
    st.session_state[auth.AUTHOR_KEY] = name.strip()
    return name.strip()


def _note_header(note: Annotation) -> str:
    stamp = f"{note.author} · {note.created_at:%Y-%m-%d %H:%M} UTC"
    if note.version > 1:
        stamp += f" · edited by {note.updated_by} {note.updated_at:%Y-%m-%d %H:%M}"
    return f"{badge_text(note.label, TONE['highlight'])} {escape_markdown(stamp)}"


def _edit_note(
    engine: Engine, note: Annotation, base: str, labels: Sequence[str], key: str
) -> None:
    """The edit form of one note; the edit applies to the version the reviewer opened
    (``st.session_state[base]``), so a note someone else saved meanwhile is never overwritten
    unseen."""
    options = list(labels) if note.label in labels else [note.label, *labels]
    with st.form(key):
        label = st.selectbox("Label", options, index=options.index(note.label), key=f"{key}_l")
        text = st.text_area("Note", value=note.note, max_chars=MAX_NOTE_CHARS, key=f"{key}_t")
        save, remove = st.columns(2)
        saved = save.form_submit_button("Save", type="primary", disabled=not current_author())
        deleted = remove.form_submit_button("Delete", disabled=not current_author())
    if not (saved or deleted):
        return
    version = int(st.session_state[base])
    try:
        if saved:
            writes.edit_note(
                engine, note.id, version=version, label=label, note=text, labels=options
            )
        else:
            writes.delete_note(engine, note.id, version=version)
    except (ReviewError, auth.PermissionDeniedError) as exc:
        show_error(exc)
        # The note shown above is the current one: the next save knowingly replaces it.
        st.session_state[base] = note.version
        return
    del st.session_state[base]
    st.rerun()


def annotation_panel(
    engine: Engine, trace_id: int, message_seq: int | None = None, call_index: int | None = None
) -> None:
    """Notes on a trace (``message_seq`` None), a call (its message's seq + ``call_index``) or
    a lone result (its seq): the list, each editable, and a form to add one."""
    key = f"notes_{trace_id}_{message_seq}_{call_index}"
    labels = configured_labels()
    # Viewers read the notes; the edit toggles and the new-note form are not drawn for them.
    writable = may_write(engine, "annotate")
    author = current_author()
    for note in annotations_on(engine, trace_id, message_seq, call_index):
        with st.container(border=True):
            st.markdown(_note_header(note))
            if note.note:
                st.text(note.note)
            base = f"{key}_{note.id}_base"
            if writable and st.toggle("Edit", key=f"{key}_{note.id}_edit"):
                st.session_state.setdefault(base, note.version)
                _edit_note(engine, note, base, labels, f"{key}_{note.id}_form")
            else:
                st.session_state.pop(base, None)
    if not writable:
        return
    with st.form(f"{key}_new", clear_on_submit=True):
        label = st.selectbox("Label", labels, key=f"{key}_new_label")
        text = st.text_area(
            "Note", max_chars=MAX_NOTE_CHARS, key=f"{key}_new_note",
            placeholder="What happened, and what should change",
        )  # fmt: skip
        added = st.form_submit_button("Add note", disabled=not author)
    if not author:
        st.caption(NO_AUTHOR_TEXT)
    if added:
        try:
            writes.add_note(
                engine, trace_id, label=label, note=text, message_seq=message_seq,
                call_index=call_index, labels=labels,
            )  # fmt: skip
        except (ReviewError, auth.PermissionDeniedError) as exc:
            show_error(exc)
            return
        st.rerun()


def _choice(label: str, derived: str | None, corrected: str | None, options: Sequence[str]) -> Any:
    choices = [AS_DERIVED, *sorted({*options, *([corrected] if corrected else [])})]
    return st.selectbox(
        label,
        choices,
        index=choices.index(corrected) if corrected else 0,
        format_func=lambda o: f"as derived: {derived or 'unclassified'}" if o == AS_DERIVED else o,
    )


def correction_form(engine: Engine, result_id: int) -> None:
    """Let a reviewer correct a result's error type (errors only) and suggestion verdict
    (results with a suggestion), showing the derived values and any existing correction."""
    view = result_review(engine, result_id)
    can_type, can_verdict = view.status == "error", view.suggestion is not None
    if not (can_type or can_verdict):
        st.caption("Nothing to correct: this result is not an error and gives no suggestion.")
        return
    if view.corrected_by:
        when = f"{view.corrected_at:%Y-%m-%d %H:%M} UTC" if view.corrected_at else ""
        st.caption(escape_markdown(f"Corrected by {view.corrected_by} {when}"))
    if not may_write(engine, "correct"):
        return  # viewers (and a store without review writes) show no form
    author = current_author()
    with st.form(f"correct_{result_id}"):
        new_type = new_verdict = AS_DERIVED
        if can_type:
            new_type = _choice(
                "Error type", view.error_type, view.error_type_corrected, ERROR_TYPES
            )
        if can_verdict:
            if view.verdict_reason:
                st.caption(
                    escape_markdown(f"Derived verdict: {view.verdict} ({view.verdict_reason})")
                )
            new_verdict = _choice("Verdict", view.verdict, view.verdict_corrected, VERDICTS)
        saved = st.form_submit_button("Save correction", disabled=not author)
    if not author:
        st.caption(NO_AUTHOR_TEXT)
    if not saved:
        return
    chosen_type = None if new_type == AS_DERIVED else new_type
    chosen_verdict = None if new_verdict == AS_DERIVED else new_verdict
    try:
        writes.correct(
            engine,
            result_id,
            error_type=chosen_type if can_type else UNCHANGED,
            verdict=chosen_verdict if can_verdict else UNCHANGED,
        )
    except (ReviewError, auth.PermissionDeniedError) as exc:
        show_error(exc)
        return
    st.cache_data.clear()
    st.rerun()
