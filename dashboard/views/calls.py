"""Tool calls: every call beside its Tool Message, filtered, sorted and paged in SQL.

Selecting a row opens that pair on the Trace page. The table's own filters (status, error type,
pair state, verdict, finding, a token range, how the status was recognized) are bound to the
URL like the shared ones, so a filtered, sorted page is a link too, and the charts and tables
of other pages open it filtered to what they count. The CSV and Parquet downloads hold every
row the filters match (up to ``files_ui.TABLE_DOWNLOAD_MAX_ROWS``), not just this page; they
are read from the database only when a download is clicked.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import streamlit as st

from dashboard import files_ui, render, state, widgets
from db.contract.vocabulary import FINDING_KINDS, STATUS_SOURCES
from db.queries.durations import durations_by_tool, slowest_calls
from db.queries.pairs import (
    PAIR_COLUMNS,
    SORT_KEYS,
    PairQuery,
    count_pairs,
    list_pairs,
    pair_choices,
    pair_table,
)

PAGE_SIZE = 100
#: The table's columns: every field of :data:`PAIR_COLUMNS`, those saying what the call did
#: first, then where it is.
CALLS_ORDER: tuple[str, ...] = (
    "tool", "error_type", "arguments", "result", "status", "pair", "trace", "title",
    *(c for c in PAIR_COLUMNS if c not in {
        "tool", "error_type", "arguments", "result", "status", "pair", "trace", "title",
    }),
)  # fmt: skip


def _any_of(where: Any, label: str, options: Sequence[str], key: str, **more: Any) -> Any:
    """A URL-bound select in ``where`` of one of ``options`` or, at first, any (no filter)."""
    return where.selectbox(
        label, options, index=None, key=key, bind="query-params", placeholder="Any", **more
    )


state.open_page("Tool calls")

f = state.filters()
choices = state.query(pair_choices, f)

row = st.columns([2, 2, 2, 2, 2, 3])
status = _any_of(row[0], "Status", choices["status"], "status")
error_type = _any_of(row[1], "Error type", choices["error_type"], "error_type")
pair_state = _any_of(row[2], "Pair state", choices["pair_state"], "pair_state")
verdict = _any_of(row[3], "Verdict", choices["verdict"], "verdict")
kind = _any_of(
    row[4],
    "Call kind",
    choices["kind"],
    # Not "kind": the Findings page's URL names a finding kind with it.
    "call_kind",
    help="client: the agent's own tools; server: run by the provider's API (web search, code "
    "execution); mcp: an MCP server the provider called",
)
trace_text = row[5].text_input(
    "Trace id contains",
    # Not "q": the Search page's words. A bound widget's value stays in Session State under
    # its key, so a search for "error" then filtered this list by trace ids holding "error".
    key="trace_q",
    bind="query-params",
    placeholder="e.g. orders-7",
)

row = st.columns([3, 2, 2, 2, 3])
finding = _any_of(
    row[0],
    "Finding",
    FINDING_KINDS,
    "finding",
    format_func=render.humanize,
    help="pairs with a finding of this kind, on the call or on its Tool Message",
)
min_tokens, max_tokens = (
    where.number_input(
        label, min_value=low, value=None, step=100, key=key, bind="query-params", help=text
    )
    for where, label, low, key, text in (
        (row[1], "Tokens from", 0, "tmin", "Tool Messages of at least this many tokens"),
        (row[2], "Tokens below", 1, "tmax", "Tool Messages of fewer tokens than this"),
    )
)
status_source = _any_of(
    row[3],
    "Recognized by",
    STATUS_SOURCES,
    "source",
    help="how the status was decided: flagged by the source, the protocol, or a text rule",
)

row = st.columns([2, 2, 2, 4], vertical_alignment="bottom")
sort = row[0].selectbox(
    "Sort by", SORT_KEYS, key="sort", bind="query-params", format_func=render.humanize
)
descending = row[1].toggle("Descending", key="desc", bind="query-params")

pq = PairQuery(
    status=status,
    error_type=error_type,
    pair_state=pair_state,
    verdict=verdict,
    trace=trace_text or None,
    kind=kind,
    sort=sort,
    descending=descending,
    min_tokens=None if min_tokens is None else int(min_tokens),
    max_tokens=None if max_tokens is None else int(max_tokens),
    finding=finding,
    status_source=status_source,
)
total = state.query(count_pairs, f, pq)
pages = max(1, -(-total // PAGE_SIZE))
page = row[2].number_input("Page", min_value=1, value=1, step=1, key="page", bind="query-params")
page = min(int(page), pages)
row[3].caption(
    f"{render.count_text(total, 'row')} · page {page:,} of {pages:,} · select a row to open it"
)

if total == 0:
    st.info(
        "No tool calls match these filters. Clear a filter above, or widen the time range in "
        "the sidebar.",
        icon=":material/filter_alt_off:",
    )
    state.end_page()

df = state.query(list_pairs, f, pq, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
picked = widgets.picked_row(
    df,
    height=widgets.table_height(len(df), max_rows=20),
    key="pairs_table",
    # The fields of ``toollens pairs`` under human headings; what a call did first (tool, error
    # type, arguments, result: on screen at 1,440 px), then where it is and the rest.
    column_order=CALLS_ORDER,
    column_config={
        "trace": st.column_config.TextColumn("Trace"),
        "title": st.column_config.TextColumn(
            "Title", width="medium", help="the trace's first user message"
        ),
        "pair": st.column_config.TextColumn("Pair", help="message seq:call index, r = result"),
        "time": st.column_config.DatetimeColumn("Time", format="YYYY-MM-DD HH:mm:ss", help="UTC"),
        "model": st.column_config.TextColumn("Model"),
        "call_id": st.column_config.TextColumn("Call id"),
        "tool": st.column_config.TextColumn("Tool", width=widgets.TOOL_PX),
        "kind": st.column_config.TextColumn(
            "Kind", help="client: the agent's tool; server: the provider's; mcp: an MCP server's"
        ),
        "arguments": st.column_config.TextColumn(
            "Arguments", width=widgets.CONTENT_PX, help="the first 120 characters"
        ),
        "result": st.column_config.TextColumn(
            "Result", width=widgets.CONTENT_PX, help="the first 120 characters"
        ),
        "duration_s": st.column_config.NumberColumn(
            "Duration",
            format="%.3f s",
            help="execution time: the tool span's own, else result time minus call time; "
            "negative when the result is stamped before its call",
        ),
        "pair_state": st.column_config.TextColumn("Pair state"),
        "status": st.column_config.TextColumn("Status", width=80),
        "status_source": st.column_config.TextColumn("Status source"),
        "error_type": st.column_config.TextColumn("Error type", width=widgets.ERROR_TYPE_PX),
        "tokens": widgets.count_column("Tokens", help="of the Tool Message"),
        "occurrence": widgets.count_column("Occurrence", help="n-th identical call"),
        "suggestion": st.column_config.TextColumn("Suggestion"),
        "verdict": st.column_config.TextColumn("Verdict", width=110),
        "verdict_reason": st.column_config.TextColumn("Verdict reason"),
        "later_calls": widgets.count_column(
            "Later calls", help="model calls after it that still had it in their input"
        ),
        "reread_tokens": widgets.count_column(
            "Re-read tokens", help="its tokens read again by the later calls after the first"
        ),
        "reread_cached": widgets.count_column("Of them cached", help="read from a prompt cache"),
        "cost_usd": st.column_config.NumberColumn(
            "Cost", format="$%.6f", help="every read by a later call, at the model's prices"
        ),
        "cost_basis": st.column_config.TextColumn(
            "Cost basis", help="measured from the calls' usage, or an estimate"
        ),
    },
)
cap = files_ui.TABLE_DOWNLOAD_MAX_ROWS
# Uncached and run only on a click: the whole filtered table, in the table's order, with the
# columns of ``toollens pairs``.
files_ui.table_downloads(
    partial(pair_table, state.engine(), f, pq, limit=cap), name="toollens-calls"
)
if total > cap:
    st.caption(
        f"Downloads hold the first {cap:,} of {render.count_text(total, 'row')}, in this order; "
        "narrow the filters to get the rest."
    )
else:
    st.caption(
        f"Downloads hold all {render.count_text(total, 'row')} these filters match, not just "
        "this page."
    )
if picked is not None:
    state.open_trace(str(picked["trace"]), str(picked["pair"]))

st.subheader("Execution time per tool")
st.caption(
    "Under the sidebar filters: nearest-rank percentiles of the known times ≥ 0; results "
    "without a time and those stamped before their call are counted, not averaged in."
)
timing = state.query(durations_by_tool, f)
seconds = {c: widgets.as_seconds(timing[c]) for c in ("p50_ms", "p95_ms", "max_ms")}
st.dataframe(
    timing.assign(**seconds),
    hide_index=True,
    height=widgets.table_height(len(timing), max_rows=10),
    placeholder=widgets.EMPTY_CELL,
    key="tool_times",
    **widgets.columns(
        {
            "tool": st.column_config.TextColumn("Tool"),
            "p50_ms": widgets.seconds_column("p50"),
            "p95_ms": widgets.seconds_column("p95"),
            "max_ms": widgets.seconds_column("Max"),
            "timed": widgets.count_column("Timed", help="results with a known time ≥ 0"),
            "missing": widgets.count_column("No time"),
            "negative": widgets.count_column("Negative", help="stamped before their call"),
            "from_spans": widgets.count_column("From spans", help="timed by a tool span"),
        }
    ),
)
st.markdown("**Slowest calls**")
slow = widgets.with_links(state.query(slowest_calls, f, limit=10))
widgets.trace_table(
    slow.assign(duration_ms=widgets.as_seconds(slow["duration_ms"])),
    key="slowest_calls",
    **widgets.columns(
        {
            "tool": st.column_config.TextColumn("Tool"),
            "duration_ms": widgets.seconds_column("Duration"),
            "duration_source": st.column_config.TextColumn("Measured by"),
            "status": st.column_config.TextColumn("Status"),
            "link": widgets.link_column("Call"),
            "trace": st.column_config.TextColumn("Trace", width="medium"),
        }
    ),
)
