"""Errors: headline figures, then four sections as tabs (``pages.ERRORS.sections``): errors
grouped by fingerprint, error types by tool, how errors were recognized, errors over time.

Errors are grouped by fingerprint (tool + first line with ids, numbers and quotes masked): one
row per "same error", with how many traces it hit. Selecting a group lists its occurrences in a
highlighted box at the top of the page, where a link from another page (the Overview's most
frequent errors) lands too; selecting an occurrence opens it on the Trace page. The selected
group is the ``fingerprint`` URL parameter, so a drill-down is a link too. A bar of the charts
opens the Tool calls page on those errors; brushing (or clicking) the time axis sets the
``since``/``until`` filter.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import pages, render, state, widgets
from dashboard.charts import errors as charts
from dashboard.palette import TONE
from dashboard.selection import brushed_range, picked_point, selectable_chart
from db.queries import activity
from db.queries import errors as q
from db.queries.common import UNCLASSIFIED
from db.queries.filters import Filters
from db.writes.corrections import correction_counts

FINGERPRINT_PAGE = 25
OCCURRENCE_PAGE = 50
#: The time axis: time (buckets following the range) or the import of each trace.
TIME_AXES = ("time", "import")
#: Key of the highlighted box of the selected error group (tests find it by its class).
GROUP_KEY = "error_group_here"

#: What failed first (on screen at 1,440 px), then where.
OCCURRENCE_COLUMNS = (
    "tool",
    "error_type",
    "content",
    "trace",
    "pair",
    "status_source",
    "rule",
    "timestamp",
)
GENERATION_KEY = "errors_fingerprint_table"


def close_drill_down() -> None:
    """Forget the selected error group (URL and table selection)."""
    st.session_state[GENERATION_KEY] = st.session_state.get(GENERATION_KEY, 0) + 1
    st.query_params.pop("fingerprint", None)


state.open_page("Errors")

f = state.filters()
errors, results = state.query(q.error_totals, f)
if results == 0:
    render.no_match()
    state.end_page()
if errors == 0:
    st.success(f"No Tool Message has status error among {render.count_text(results, 'result')}.")
    state.end_page()

sources = state.query(q.error_sources, f)
by_source = sources.groupby("status_source")["errors"].sum()
fingerprints_total = state.query(q.count_error_fingerprints, f)

explicit, protocol = int(by_source.get("explicit", 0)), int(by_source.get("protocol", 0))
inferred = int(by_source.get("inferred", 0)) + protocol
widgets.metrics(
    st.columns(5),
    [
        ("Errors", f"{errors:,}", "Tool Messages with status error"),
        (
            "Error rate",
            render.percent_text(errors, results),
            f"{errors:,} of {results:,} Tool Messages",
        ),
        ("Explicit", f"{explicit:,}", "flagged by the source: is_error, status, span status …"),
        (
            "Inferred",
            f"{inferred:,}",
            f"by the Tool Message protocol: {protocol:,}; "
            "the rest by text rules (Error: …, tracebacks, HTTP codes)",
        ),
        ("Distinct errors", f"{fingerprints_total:,}", "error fingerprints"),
    ],
)
corrected = state.query(correction_counts, f)["error_type"]
if corrected:
    st.caption(
        f"{render.count_text(corrected, 'error type')} corrected by reviewers; the figures "
        "and charts use the corrected types."
    )

fingerprint = st.query_params.get("fingerprint")
if fingerprint:
    # At the top, highlighted: a link from another page lands on the group it names.
    box = st.container(border=True, key=GROUP_KEY)
    top = box.columns([5, 1], vertical_alignment="center")
    top[0].markdown(f":{TONE['highlight']}-badge[:material/my_location: Selected error group]")
    top[1].button("Close", key="close_fingerprint", on_click=close_drill_down)
    box.code(fingerprint, language=None, wrap_lines=True)
    count = state.query(q.count_fingerprint_occurrences, fingerprint, f)
    with box:
        offset = widgets.page_offset(count, OCCURRENCE_PAGE, key="occ_page", noun="occurrences")
        found = state.query(
            q.fingerprint_occurrences, fingerprint, f, limit=OCCURRENCE_PAGE, offset=offset
        )
        if count == 0:
            st.info("This error does not occur under the current filters.")
        else:
            st.caption("Select an occurrence to open it in its trace.")
            widgets.trace_table(
                found,
                key="occurrences_table",
                column_order=OCCURRENCE_COLUMNS,
                column_config={
                    "trace": st.column_config.TextColumn("Trace"),
                    "pair": st.column_config.TextColumn("Pair", help="call seq:index, r = result"),
                    "tool": st.column_config.TextColumn("Tool", width=widgets.TOOL_PX),
                    "error_type": st.column_config.TextColumn(
                        "Error type", width=widgets.ERROR_TYPE_PX
                    ),
                    "status_source": st.column_config.TextColumn("Recognized by"),
                    "rule": st.column_config.TextColumn("Rule"),
                    "timestamp": st.column_config.DatetimeColumn("Time (UTC)"),
                    "content": st.column_config.TextColumn(
                        "Tool Message", width=widgets.CONTENT_PX * 2
                    ),
                },
            )


def _groups(f: Filters, fingerprints_total: int, fingerprint: str | None) -> None:
    """The errors grouped by fingerprint, a page at a time; a selected row opens its group."""
    st.caption("Errors grouped by fingerprint. Select a row to list its occurrences.")
    offset = widgets.page_offset(
        fingerprints_total, FINGERPRINT_PAGE, key="fp_page", noun="distinct errors"
    )
    groups = state.query(q.error_fingerprints, f, limit=FINGERPRINT_PAGE, offset=offset)
    # A selection is a row number of one page of one table generation: the key changes with the
    # page and when the drill-down is closed, so a stale selection never reopens a group.
    generation = st.session_state.get(GENERATION_KEY, 0)
    picked = widgets.picked_row(
        groups,
        key=f"fingerprints_{offset}_{generation}",
        **widgets.columns(
            {
                "tool": st.column_config.TextColumn("Tool", width=widgets.TOOL_PX),
                "error_type": st.column_config.TextColumn(
                    "Error type", width=widgets.ERROR_TYPE_PX
                ),
                "errors": widgets.count_column("Errors"),
                "traces": widgets.count_column("Traces", help="same error in N traces"),
                "fingerprint": st.column_config.TextColumn("Fingerprint", width="medium"),
                "example": st.column_config.TextColumn("Example (first occurrence)", width="large"),
            }
        ),
    )
    if picked is not None:
        picked_group = str(picked["fingerprint"])
        if picked_group != fingerprint:
            # The group is shown above the table: draw the page again with it.
            st.query_params["fingerprint"] = picked_group
            st.rerun()


def _by_tool(f: Filters) -> None:
    """Error types by tool; a bar lists those errors."""
    # Full width: beside another chart the tool names and the legend leave the bars no room.
    st.caption("Click a bar to list those errors.")
    by_tool = state.query(q.error_types_by_tool, f)
    point = picked_point(
        selectable_chart(charts.error_types_by_tool_chart(by_tool), key="errors_by_tool")
    )
    if point is not None:
        error_type, tools = charts.by_tool_points(by_tool)[point[0]]
        state.open_filtered(
            pages.CALLS,
            {
                "tool": tools[point[1]],
                "status": "error",
                "error_type": None if error_type == UNCLASSIFIED else error_type,
            },
        )


def _recognized(sources: pd.DataFrame) -> None:
    """How the errors were recognized (explicit, protocol, text rules), chart and table."""
    left, right = st.columns([2, 3])
    with left:
        totals = charts.source_totals(sources)
        point = picked_point(
            selectable_chart(charts.error_sources_chart(sources), key="error_sources")
        )
        if point is not None:
            picked_source = str(totals.index[point[1]])
            state.open_filtered(pages.CALLS, {"status": "error", "source": picked_source})
    with right:
        picked = widgets.picked_row(
            sources,
            height=widgets.table_height(len(sources), max_rows=7),
            key="sources_table",
            column_config={
                "status_source": st.column_config.TextColumn("Recognized by"),
                "rule": st.column_config.TextColumn(
                    "Rule", help="the rule that decided the status"
                ),
                "errors": widgets.count_column("Errors"),
            },
        )
        if picked is not None:
            picked_source = str(picked["status_source"])
            state.open_filtered(pages.CALLS, {"status": "error", "source": picked_source})


def _over_time(f: Filters, errors: int) -> None:
    """Error types per time bucket (or per import); a brushed range becomes the time filter."""
    unit = state.query(activity.span_unit, f)
    axis = st.segmented_control(
        "Time axis",
        TIME_AXES,
        default="time" if unit is not None else "import",
        key="errors_axis",
        help="time: buckets of a minute, hour, day or week, following the range; import: by the "
        "import that brought each trace (for traces without timestamps)",
    )
    axis = axis or ("time" if unit is not None else "import")
    if axis == "import":
        timeline = state.query(q.errors_over_time, f, unit="import")
        placed = int(timeline["errors"].sum()) if not timeline.empty else 0
        st.plotly_chart(charts.errors_over_time_chart(timeline, "import"), key="errors_by_import")
    elif unit is None:
        placed = 0
        st.caption("No error has a timestamp; choose the import axis.")
    else:
        timeline = state.query(activity.error_types_over_time, f, unit)
        placed = int(timeline["errors"].sum()) if not timeline.empty else 0
        st.caption(
            f"Per {unit}, on a continuous axis (a quiet {unit} is a gap). Drag across the chart, "
            "or click a bar, to filter to that time range."
        )
        selection = selectable_chart(
            charts.error_types_over_time_chart(timeline, unit),
            key="errors_over_time",
            modes=("points", "box"),
        )
        # A clicked bar: its bucket, found through the rows its trace (error type) draws.
        point = picked_point(selection)
        rows = charts.over_time_points(timeline)[point[0]] if point is not None else []
        width = pd.Timedelta(seconds=activity.BUCKET_SECONDS[unit])
        buckets = timeline.loc[rows].assign(end=lambda d: d["start"] + width)
        brushed = brushed_range(selection, buckets, unit)
        if brushed is not None:
            state.apply_filters({"since": brushed[0], "until": brushed[1]})
    if placed < errors and axis != "import":
        st.caption(
            f"{render.count_text(errors - placed, 'error')}"
            + (
                " comes from a trace without timestamps and is not"
                if errors - placed == 1
                else " come from traces without timestamps and are not"
            )
            + " on this axis; the import axis shows every error."
        )


# The sections as tabs (``pages.ERRORS.sections``): only the open one runs and is drawn.
widgets.page_sections(
    pages.ERRORS,
    (
        lambda: _groups(f, fingerprints_total, fingerprint),
        lambda: _by_tool(f),
        lambda: _recognized(sources),
        lambda: _over_time(f, errors),
    ),
)
