"""Files in and out of the dashboard: the incident report and table downloads (CSV, Parquet),
and the upload panel (the import itself: :mod:`dashboard.uploads`, through :mod:`dashboard.writes`).

Downloads are built only when their button is clicked. Table cells a spreadsheet would run as a
formula are defused. An upload is imported in the server process; afterwards the data cache is
cleared, or every page would show minute-old figures.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeAlias

import pandas as pd
import streamlit as st
from sqlalchemy import Engine

from dashboard import auth, writes
from dashboard.render import count_text, escape_markdown
from dashboard.uploads import too_large, upload_limit_mb
from dashboard.widgets import EMPTY_CELL
from db.contract import exact_json
from db.contract.vocabulary import DEFAULT_LOOP_K
from ingest.formats import format_names
from ingest.outputs.report import MIME_TYPES, REPORT_FORMATS, build_report, render, report_file_name

NO_UPLOAD_TEXT = "Uploading traces needs the admin role."
#: Spreadsheets run cells starting with these as formulas; trace content must not.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Most rows a table download holds (a page says so when its filters match more).
TABLE_DOWNLOAD_MAX_ROWS = 200_000
#: Headings of the upload's table of rejected records (as on the Imports page).
REJECTED_COLUMNS = {
    "location": st.column_config.TextColumn("Where", help="file:line of the record"),
    "reason": st.column_config.TextColumn("Reason"),
    "message": st.column_config.TextColumn("Message", width="large"),
}
#: A table to download, or a function that reads it when the download is clicked.
TableSource: TypeAlias = pd.DataFrame | Callable[[], pd.DataFrame]


def report_bytes(
    engine: Engine,
    trace_id: int,
    fmt: str,
    loop_k: int = DEFAULT_LOOP_K,
    view_url: str | None = None,
) -> bytes:
    """The incident report of a trace in ``fmt`` (``md``, ``html``, ``json``), as UTF-8,
    linking back to ``view_url`` when given."""
    report = build_report(engine, trace_id, loop_k=loop_k, view_url=view_url)
    return render(report, fmt).encode("utf-8")


def report_download(
    engine: Engine,
    trace: Mapping[str, Any],
    loop_k: int = DEFAULT_LOOP_K,
    view_url: str | None = None,
) -> None:
    """Download buttons for the incident report of ``trace`` (its stored row: ``id``,
    ``display_id``, ``title``, ``started_at``) in HTML, Markdown and JSON, each file named by
    the trace's title and start day (else today's); the report is built only when a button
    is clicked, and links back to ``view_url`` (the dashboard's address of this view, when the
    browser gave it)."""
    trace_id = int(trace["id"])
    started = trace.get("started_at")
    # The day the trace started; for a trace without times, the day the report is made.
    day = (started if isinstance(started, datetime) else datetime.now(UTC)).date()
    labels = {"html": "Report (HTML)", "md": "Markdown", "json": "JSON"}
    # One row of buttons as wide as their labels: equal columns cut "Report (HTML)" short
    # beside a page header.
    row = st.container(horizontal=True)
    for fmt in ("html", "md", "json"):
        assert fmt in REPORT_FORMATS
        row.download_button(
            labels[fmt],
            data=partial(report_bytes, engine, trace_id, fmt, loop_k, view_url),
            file_name=report_file_name(trace.get("title"), str(trace["display_id"]), day, fmt),
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
                lambda v: exact_json.dumps(v) if isinstance(v, dict | list) else v
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


#: What an upload says for a file whose format was not recognized (the CLI's message advises
#: ``--format``, which the upload form does not have).
UNKNOWN_FORMAT_ADVICE = (
    "not a trace format ToolLens recognizes ({formats}); check that the file is an agent trace "
    "export, or import it with `toollens import --format NAME FILE`, which names the problem"
)


def upload_message(reason: str, message: str) -> str:
    """The message of a rejected record as the upload form shows it: advice the form can
    follow (the CLI's, otherwise)."""
    if reason == "unknown_format":
        return UNKNOWN_FORMAT_ADVICE.format(formats=", ".join(format_names()))
    return message


def _show_upload_result(result: dict[str, Any]) -> None:
    # The summary line holds only counts and timings: no untrusted text to escape.
    if result["traces"] == 0 and result["rejected"] > 0:
        # Nothing stored: a failure, not a success with a footnote.
        st.error(
            f"Nothing was imported: {result['line']}. The reasons are below.",
            icon=":material/error:",
        )
    else:
        st.success(result["line"], icon=":material/task_alt:")
    rejected = pd.DataFrame(result["rejections"], columns=["location", "reason", "message"])
    if not rejected.empty:
        more = result["rejected"] - len(rejected)
        st.warning(
            f"{count_text(result['rejected'], 'record')} "
            f"{'was' if result['rejected'] == 1 else 'were'} rejected"
            + (f" ({more} more on the Imports page)" if more > 0 else ""),
            icon=":material/report:",
        )
        st.dataframe(
            rejected,
            hide_index=True,
            key="upload_rejected",
            placeholder=EMPTY_CELL,
            column_config=REJECTED_COLUMNS,
        )


def upload_panel(engine: Engine) -> None:
    """Upload trace files (limit ``$TOOLLENS_UPLOAD_MAX_MB`` MB each) and import them with a
    progress bar; then show the summary line and the rejected records with their reasons.
    Roles without the upload right see why instead of the uploader."""
    if not auth.can("upload"):
        st.caption(NO_UPLOAD_TEXT)
        return
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
    if accepted and st.button(
        f"Import {count_text(len(accepted), 'file')}", type="primary", key="upload_go"
    ):
        total = max(1, sum(f.size for f in accepted))
        bar = st.progress(0.0, text="Importing …")
        done = [0]

        def tick(n: int) -> None:
            done[0] += n
            bar.progress(
                min(1.0, done[0] / total), text=f"Importing … {done[0]:,} of {total:,} bytes"
            )

        try:
            summary = writes.upload(
                engine, [(f.name, f.getvalue()) for f in accepted], max_mb, progress=tick
            )
        except Exception as exc:  # shown to the user, who can act on it; the import is failed
            st.error(
                "The import failed and stored nothing from these files: "
                f"{escape_markdown(str(exc))}. Check the files, or import them with "
                "`toollens import FILE` to see where it stops.",
                icon=":material/error:",
            )
            return
        st.session_state["upload_result"] = {
            "line": summary.line(),
            "traces": summary.traces,
            "rejected": summary.rejected,
            "rejections": [
                (r.location(), r.reason, upload_message(r.reason, r.message))
                for r in summary.rejections
            ],
        }
        st.session_state["upload_round"] = round_ + 1  # a fresh, empty uploader
        st.cache_data.clear()
        st.rerun()
    if "upload_result" in st.session_state:
        _show_upload_result(st.session_state["upload_result"])
