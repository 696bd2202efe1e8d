"""Review widgets the pages share: the reviewer's name, notes, corrections, downloads, upload.

Every function draws into the current Streamlit container and writes through ``db.review`` or
``ingest``; nothing here holds SQL. Text typed by reviewers and trace content are untrusted:
shown with ``st.text``/``st.code`` or escaped before any markdown. After a write the page reruns
so that it shows what is stored; writes that change charts (corrections, uploads) also clear
the data cache, or every page would show minute-old figures.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeAlias

import orjson
import pandas as pd
import streamlit as st
from sqlalchemy import Engine
from streamlit.errors import StreamlitDuplicateElementKey

from dashboard.render import badge_text, escape_markdown
from db.review import (
    MAX_NOTE_CHARS,
    UNCHANGED,
    Annotation,
    ReviewError,
    add_annotation,
    annotations_on,
    configured_labels,
    correct_result,
    delete_annotation,
    result_review,
    update_annotation,
)
from db.summary import VERDICTS
from ingest.facts import ERROR_TYPES
from ingest.pipeline import ImportSummary, import_paths
from ingest.report import MIME_TYPES, REPORT_FORMATS, build_report, render

#: Session key holding the reviewer's name across pages.
AUTHOR_KEY = "toollens_author"
_AUTHOR_WIDGET = "_toollens_author_input"
USER_ENV = "TOOLLENS_USER"
UPLOAD_MAX_MB_ENV = "TOOLLENS_UPLOAD_MAX_MB"
DEFAULT_UPLOAD_MAX_MB = 200
#: Option meaning "no correction: use what the rules derived".
AS_DERIVED = "(as derived)"
#: Spreadsheets run cells starting with these as formulas; trace content must not.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NO_AUTHOR_TEXT = "Enter your name in the sidebar to write notes and corrections."
#: Most rows a table download holds (a page says so when its filters match more).
TABLE_DOWNLOAD_MAX_ROWS = 200_000
#: A table to download, or a function that reads it when the download is clicked.
TableSource: TypeAlias = pd.DataFrame | Callable[[], pd.DataFrame]


def current_author() -> str:
    """The reviewer's name: as typed in the sidebar, else ``$TOOLLENS_USER``, else empty."""
    return str(st.session_state.get(AUTHOR_KEY, os.environ.get(USER_ENV, ""))).strip()


def author_field() -> str:
    """Draw the sidebar's name field (default ``$TOOLLENS_USER``); return the name.

    The name lives under its own session key, so it survives pages that do not draw the field.
    Calling this twice in one run (entry script and page) draws the field once.
    """
    if _AUTHOR_WIDGET not in st.session_state:
        st.session_state[_AUTHOR_WIDGET] = current_author()
    try:
        name = st.sidebar.text_input(
            "Your name",
            key=_AUTHOR_WIDGET,
            max_chars=200,
            help="Signs your notes, corrections and reviews (default: $TOOLLENS_USER).",
        )
    except StreamlitDuplicateElementKey:
        return current_author()  # already drawn in this run
    st.session_state[AUTHOR_KEY] = name.strip()
    return name.strip()


def _show_error(exc: Exception) -> None:
    st.error(escape_markdown(str(exc)), icon=":material/error:")


def _note_header(note: Annotation) -> str:
    stamp = f"{note.author} · {note.created_at:%Y-%m-%d %H:%M} UTC"
    if note.version > 1:
        stamp += f" · edited by {note.updated_by} {note.updated_at:%Y-%m-%d %H:%M}"
    return f"{badge_text(note.label, 'highlight')} {escape_markdown(stamp)}"


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
            update_annotation(
                engine, note.id, version=version, label=label, note=text,
                editor=current_author(), labels=options,
            )  # fmt: skip
        else:
            delete_annotation(engine, note.id, version=version)
    except ReviewError as exc:
        _show_error(exc)
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
    for note in annotations_on(engine, trace_id, message_seq, call_index):
        with st.container(border=True):
            st.markdown(_note_header(note))
            if note.note:
                st.text(note.note)
            base = f"{key}_{note.id}_base"
            if st.toggle("Edit", key=f"{key}_{note.id}_edit"):
                st.session_state.setdefault(base, note.version)
                _edit_note(engine, note, base, labels, f"{key}_{note.id}_form")
            else:
                st.session_state.pop(base, None)
    author = current_author()
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
            add_annotation(
                engine, trace_id, label=label, note=text, author=author,
                message_seq=message_seq, call_index=call_index, labels=labels,
            )  # fmt: skip
        except ReviewError as exc:
            _show_error(exc)
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
        correct_result(
            engine,
            result_id,
            author=author,
            error_type=chosen_type if can_type else UNCHANGED,
            verdict=chosen_verdict if can_verdict else UNCHANGED,
        )
    except ReviewError as exc:
        _show_error(exc)
        return
    st.cache_data.clear()
    st.rerun()


def report_bytes(engine: Engine, trace_id: int, fmt: str, loop_k: int = 3) -> bytes:
    """The incident report of a trace in ``fmt`` (``md``, ``html``, ``json``), as UTF-8."""
    return render(build_report(engine, trace_id, loop_k=loop_k), fmt).encode("utf-8")


def report_download(engine: Engine, trace_id: int, loop_k: int = 3) -> None:
    """Download buttons for the trace's incident report (HTML, Markdown, JSON); the report is
    built only when a button is clicked."""
    labels = {"html": "Report (HTML)", "md": "Markdown", "json": "JSON"}
    # One row of buttons as wide as their labels: equal columns cut "Report (HTML)" short
    # beside a page header.
    row = st.container(horizontal=True)
    for fmt in ("html", "md", "json"):
        assert fmt in REPORT_FORMATS
        row.download_button(
            labels[fmt],
            data=partial(report_bytes, engine, trace_id, fmt, loop_k),
            file_name=f"toollens-trace-{trace_id}.{fmt}",
            mime=MIME_TYPES[fmt],
            on_click="ignore",
            key=f"report_{trace_id}_{fmt}",
            icon=":material/download:",
        )


def _defuse_formula(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _json_cells(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for column in out.columns:
        if out[column].dtype == object and out[column].map(type).isin([dict, list]).any():
            out[column] = out[column].map(
                lambda v: orjson.dumps(v).decode() if isinstance(v, dict | list) else v
            )
    return out


def table_csv(df: pd.DataFrame) -> bytes:
    """``df`` as CSV (UTF-8); text cells that a spreadsheet would run as a formula get a
    leading ``'``, JSON cells become JSON text."""
    return _json_cells(df).map(_defuse_formula).to_csv(index=False).encode("utf-8")


def table_parquet(df: pd.DataFrame) -> bytes:
    """``df`` as Parquet (JSON cells as JSON text, so that every column has one type)."""
    buffer = io.BytesIO()
    _json_cells(df).to_parquet(buffer, index=False)
    return buffer.getvalue()


def _table_bytes(make: Callable[[pd.DataFrame], bytes], table: TableSource) -> bytes:
    return make(table() if callable(table) else table)


def table_downloads(table: TableSource, name: str = "toollens-calls") -> None:
    """CSV and Parquet download buttons for a table, built when clicked.

    ``table`` is a DataFrame or a function returning one; a function runs only on a click, so
    a page can offer every filtered row without reading them on each rerun.
    """
    row = st.container(horizontal=True)
    for label, make, ext, mime in (
        ("CSV", table_csv, "csv", "text/csv"),
        ("Parquet", table_parquet, "parquet", "application/vnd.apache.parquet"),
    ):
        row.download_button(
            label, data=partial(_table_bytes, make, table), file_name=f"{name}.{ext}", mime=mime,
            on_click="ignore", key=f"{name}_{ext}", icon=":material/download:",
        )  # fmt: skip


# --- Upload ------------------------------------------------------------------------------


class UploadTooLargeError(ValueError):
    """An uploaded file is over the size limit."""


def upload_limit_mb(value: str | None = None) -> int:
    """The per-file upload limit in MB: ``value`` or ``$TOOLLENS_UPLOAD_MAX_MB``, default 200."""
    raw = os.environ.get(UPLOAD_MAX_MB_ENV, "") if value is None else value
    try:
        limit = int(raw)
    except ValueError:
        return DEFAULT_UPLOAD_MAX_MB
    return limit if limit > 0 else DEFAULT_UPLOAD_MAX_MB


def too_large(files: Sequence[tuple[str, int]], max_mb: int) -> list[str]:
    """One message per ``(name, size in bytes)`` over ``max_mb``."""
    limit = max_mb * 1024 * 1024
    return [
        f"{name} is {size / 1024 / 1024:.1f} MB; the upload limit is {max_mb} MB "
        f"(import bigger files with `toollens import`)"
        for name, size in files
        if size > limit
    ]


def _safe_name(name: str) -> str:
    # Only the base name, in safe characters: a browser-supplied name never picks the folder.
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name.replace("\\", "/")).name).lstrip(".")
    return base or "upload"


def import_uploaded(
    engine: Engine,
    files: Sequence[tuple[str, bytes]],
    max_mb: int,
    *,
    progress: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import uploaded ``(original name, content)`` files through the CLI's pipeline; the
    stored file names are the original ones. Raises :class:`UploadTooLargeError` first if a
    file is over ``max_mb``."""
    if not files:
        raise ValueError("no file to import")
    problems = too_large([(name, len(data)) for name, data in files], max_mb)
    if problems:
        raise UploadTooLargeError("; ".join(problems))
    with tempfile.TemporaryDirectory(prefix="toollens-upload-") as tmp:
        paths = []
        for i, (name, data) in enumerate(files):
            # One folder per file keeps the original names even when two are the same.
            path = Path(tmp) / str(i) / _safe_name(name)
            path.parent.mkdir()
            path.write_bytes(data)
            paths.append(path)
        # In-process (no worker processes): forking a threaded Streamlit server is unsafe.
        return import_paths(
            engine, paths, origin="upload", display_names=[n for n, _ in files],
            progress=progress, workers=0,
        )  # fmt: skip


def _show_upload_result(result: dict[str, Any]) -> None:
    # The summary line holds only counts and timings: no untrusted text to escape.
    st.success(result["line"], icon=":material/task_alt:")
    rejected = pd.DataFrame(result["rejections"], columns=["location", "reason", "message"])
    if not rejected.empty:
        more = result["rejected"] - len(rejected)
        st.warning(
            f"{result['rejected']} records were rejected"
            + (f" ({more} more on the Imports page)" if more > 0 else ""),
            icon=":material/report:",
        )
        st.dataframe(rejected, hide_index=True, key="upload_rejected")


def upload_panel(engine: Engine) -> None:
    """Upload trace files (limit ``$TOOLLENS_UPLOAD_MAX_MB`` MB each) and import them with a
    progress bar; then show the summary line and the rejected records with their reasons."""
    max_mb = upload_limit_mb()
    round_ = int(st.session_state.get("upload_round", 0))
    files = st.file_uploader(
        f"Trace files (.json, .jsonl, .gz — up to {max_mb} MB each)",
        accept_multiple_files=True, max_upload_size=max_mb, key=f"upload_files_{round_}",
    )  # fmt: skip
    files = list(files or [])
    for message in too_large([(f.name, f.size) for f in files], max_mb):
        st.error(escape_markdown(message), icon=":material/block:")
    accepted = [f for f in files if not too_large([(f.name, f.size)], max_mb)]
    if accepted and st.button(f"Import {len(accepted)} file(s)", type="primary", key="upload_go"):
        total = max(1, sum(f.size for f in accepted))
        bar = st.progress(0.0, text="Importing …")
        done = [0]

        def tick(n: int) -> None:
            done[0] += n
            bar.progress(
                min(1.0, done[0] / total), text=f"Importing … {done[0]:,} of {total:,} bytes"
            )

        try:
            summary = import_uploaded(
                engine, [(f.name, f.getvalue()) for f in accepted], max_mb, progress=tick
            )
        except (
            Exception
        ) as exc:  # shown to the user, who can act on it; the import is marked failed
            _show_error(exc)
            return
        st.session_state["upload_result"] = {
            "line": summary.line(),
            "rejected": summary.rejected,
            "rejections": [(r.location(), r.reason, r.message) for r in summary.rejections],
        }
        st.session_state["upload_round"] = round_ + 1  # a fresh, empty uploader
        st.cache_data.clear()
        st.rerun()
    if "upload_result" in st.session_state:
        _show_upload_result(st.session_state["upload_result"])
