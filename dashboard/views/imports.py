"""Imports: the history of imports and the quarantine of rejected records.

Every input record ends up imported, updated (a new version of a stored trace), unchanged or
rejected, per import and per file; rejected ones are kept once with ``file:line``, the reason and
their raw bytes (shown as text, at most 2 KB, never rendered). For the import chosen in the
sidebar (else the newest) the page lists its files and the traces it updated.
The sidebar's import filter narrows the rejected records to one import; an admin can then
delete that import (``dashboard.admin_ui``). At the bottom, trace
files can be uploaded and imported through the same pipeline as ``toollens import`` — on an
empty store too, where that is the way in.
"""

from __future__ import annotations

import streamlit as st

from dashboard import admin_ui, auth, files_ui, render, state, widgets, writes
from db.queries import imports as q
from db.writes.deletion import import_by_id

IMPORT_PAGE = 20
REJECTED_PAGE = 10

HISTORY_COLUMNS = (
    "id", "started_at", "origin", "state", "files", "records", "traces_imported", "kept_apart",
    "updated", "messages_added", "messages_removed", "unchanged", "older_copies", "rejected",
    "rejected_new", "rejected_known", "messages", "seconds", "encoding", "paths",
    "unknown_items", "error", "secrets_redacted", "redactions",
)  # fmt: skip


def upload_section() -> None:
    """The "Upload traces" section (the page's last)."""
    # An h3 like the subheaders above, written as markdown: the page's subheaders name the
    # stored imports' sections only.
    st.markdown("### Upload traces")
    files_ui.upload_panel(state.engine())


st.title("Imports")
if writes.note_gone_imports(state.engine()):
    st.cache_data.clear()  # the list below shows them as interrupted at once
total_imports = state.query(q.count_imports)
if total_imports == 0:
    render.empty_store()
    upload_section()
    state.end_page()

st.subheader("Import history")
offset = widgets.page_offset(total_imports, IMPORT_PAGE, key="imports_page", noun="imports")
history = state.query(q.import_history, limit=IMPORT_PAGE, offset=offset)
st.dataframe(
    history,
    hide_index=True,
    placeholder=widgets.EMPTY_CELL,
    column_order=HISTORY_COLUMNS,
    column_config={
        "id": st.column_config.NumberColumn("Import", format="%d"),
        "started_at": st.column_config.DatetimeColumn("Started (UTC)", format="YYYY-MM-DD HH:mm"),
        "origin": st.column_config.TextColumn("Origin"),
        "state": st.column_config.TextColumn("State"),
        "files": widgets.count_column("Files"),
        "records": widgets.count_column("Records", help="input lines / array items"),
        "traces_imported": widgets.count_column("Traces imported"),
        "updated": widgets.count_column("Updated", help="new versions of stored traces"),
        "unchanged": widgets.count_column("Unchanged", help="already stored as they are"),
        "kept_apart": widgets.count_column(
            "Kept apart", help="another conversation under a stored id, stored as <id>~<hash>"
        ),
        "messages_added": widgets.count_column(
            "Messages added", help="by the updates, against the versions they replaced"
        ),
        "messages_removed": widgets.count_column(
            "Messages removed", help="by the updates; the replaced versions are kept"
        ),
        "older_copies": widgets.count_column(
            "Older copies", help="unchanged: a shorter copy of a stored trace, left as stored"
        ),
        "rejected": widgets.count_column("Rejected"),
        "rejected_new": widgets.count_column("Newly rejected", help="first kept by this import"),
        "rejected_known": widgets.count_column(
            "Known rejections", help="already kept by an earlier import, not stored again"
        ),
        "unknown_items": st.column_config.TextColumn(
            "Unknown items kept", help="items of types no parser knew, kept as opaque messages"
        ),
        "secrets_redacted": widgets.count_column(
            "Secrets redacted", help="replaced by [REDACTED:kind] before storing"
        ),
        "redactions": st.column_config.TextColumn("Redacted kinds"),
        "messages": widgets.count_column("Messages"),
        "seconds": st.column_config.NumberColumn("Seconds", format="%.2f"),
        "encoding": st.column_config.TextColumn("Token encoding"),
        "paths": st.column_config.TextColumn("Files imported", width="large"),
        "error": st.column_config.TextColumn("Error"),
    },
)

import_id = state.filters().import_id
shown_import = import_id if import_id is not None else state.query(q.latest_import_id)
if shown_import is not None:
    st.subheader(f"Files of import {shown_import}")
    st.caption("Input records per file: imported + updated + unchanged + rejected = records.")
    st.dataframe(
        state.query(q.import_files, shown_import),
        hide_index=True,
        placeholder=widgets.EMPTY_CELL,
        column_config={
            "path": st.column_config.TextColumn("File", width="large"),
            "format": st.column_config.TextColumn("Format"),
            "size": widgets.count_column("Bytes"),
            "records": widgets.count_column("Records"),
            "imported": widgets.count_column("Imported"),
            "updated": widgets.count_column("Updated"),
            "unchanged": widgets.count_column("Unchanged"),
            "rejected": widgets.count_column("Rejected"),
        },
    )
    updates = state.query(q.trace_updates, shown_import)
    st.subheader(f"Traces updated by import {shown_import}")
    if updates.empty:
        st.caption("This import replaced no stored trace.")
    else:
        st.dataframe(
            updates,
            hide_index=True,
            placeholder=widgets.EMPTY_CELL,
            **widgets.columns(
                {
                    "display_id": st.column_config.TextColumn("Trace"),
                    "source_file": st.column_config.TextColumn("New version from", width="large"),
                    "old_messages": widgets.count_column("Messages before"),
                    "new_messages": widgets.count_column("Messages after"),
                    "messages_added": widgets.count_column("Added"),
                    "messages_removed": widgets.count_column("Removed"),
                    "kept_version": st.column_config.NumberColumn(
                        "Version kept", format="%d", help="the replaced version, restorable"
                    ),
                    "at": st.column_config.DatetimeColumn("At (UTC)", format="YYYY-MM-DD HH:mm"),
                }
            ),
        )

deleting = import_by_id(import_id) if import_id is not None else None
if (
    deleting is not None
    and auth.can("delete")
    and admin_ui.delete_control(deleting, "Delete this import", "delete_import")
):
    # The sidebar's import filter drops the deleted import by itself on the next run (a URL
    # value that is no longer a choice is dropped).
    st.success(f"Deleted {deleting.description} with its traces and rejected records.")
    state.end_page()
scope = f"import {import_id}" if import_id is not None else "all imports"
st.subheader(f"Rejected records ({scope})")
rejected_total = state.query(q.count_rejected, import_id)
if rejected_total == 0:
    st.caption("No record was rejected.")
else:
    reasons = state.query(q.rejected_reasons, import_id)
    st.dataframe(
        reasons,
        hide_index=True,
        placeholder=widgets.EMPTY_CELL,
        column_config={
            "reason": st.column_config.TextColumn("Reason"),
            "records": widgets.count_column("Records"),
        },
    )
    offset = widgets.page_offset(
        rejected_total, REJECTED_PAGE, key="rejected_page", noun="rejected records"
    )
    records = state.query(q.rejected_records, import_id, limit=REJECTED_PAGE, offset=offset)
    for record in records.itertuples(index=False):
        label = f"{record.location} · {record.reason} (import {record.import_id})"
        with st.expander(render.escape_markdown(label)):
            st.text(str(record.message))
            shown = min(int(record.raw_bytes), q.RAW_PREVIEW_BYTES)
            st.caption(f"Raw input: first {shown:,} of {int(record.raw_bytes):,} bytes")
            st.code(str(record.raw_preview), language=None, wrap_lines=True)

upload_section()
