"""Imports: the history of imports and the quarantine of rejected records.

Every input record ends up imported, duplicate or rejected; rejected ones are kept with
``file:line``, the reason and their raw bytes (shown as text, at most 2 KB, never rendered).
The sidebar's import filter narrows the rejected records to one import; an admin can then delete
that import (``dashboard.admin_ui``). At the bottom, trace files can be uploaded and imported
through the same pipeline as ``toollens import`` — on an empty store too, where that is the way
in.
"""

from __future__ import annotations

import streamlit as st

from dashboard import admin_ui, files_ui, render, state, widgets
from db.deletion import import_by_id
from db.queries import imports as q

IMPORT_PAGE = 20
REJECTED_PAGE = 10

HISTORY_COLUMNS = (
    "id", "started_at", "origin", "state", "files", "records", "traces_imported",
    "duplicates", "rejected", "messages", "seconds", "encoding", "paths", "error",
    "secrets_redacted", "redactions",
)  # fmt: skip


def upload_section() -> None:
    """The "Upload traces" section (the page's last)."""
    # An h3 like the subheaders above, written as markdown: the page's subheaders name the
    # stored imports' sections only.
    st.markdown("### Upload traces")
    files_ui.upload_panel(state.engine())


st.title("Imports")
total_imports = state.query(q.count_imports)
if total_imports == 0:
    render.empty_store()
    upload_section()
    st.stop()

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
        "duplicates": widgets.count_column("Duplicates", help="already stored"),
        "rejected": widgets.count_column("Rejected"),
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
deleting = import_by_id(import_id) if import_id is not None else None
if (
    deleting is not None
    and state.is_admin()
    and admin_ui.delete_control(deleting, "Delete this import", "delete_import")
):
    # The sidebar's import filter drops the deleted import by itself on the next run (a URL
    # value that is no longer a choice is dropped).
    st.success(f"Deleted {deleting.description} with its traces and rejected records.")
    st.stop()
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
