"""Sessions: the traces that share a session or conversation thread, together.

A trace's session is what its source named (OTLP ``session.id`` or ``gen_ai.conversation.id``,
Claude Code's and Langfuse's ``sessionId``, a LangSmith thread: ``traces.session_id``). The list
shows each session with its traces, messages, tool calls, errors and problems and its first and
last trace start, the latest first; selecting one shows its traces, each opening on the Trace
page. The search (``sq``), "shared only" (``shared``), the page (``sespage``) and the session
shown (``session``) are URL parameters, and the sidebar filters narrow everything like every
other page. Session ids and titles are untrusted: plain cell text only.
"""

from __future__ import annotations

import streamlit as st

from dashboard import render, state, widgets
from dashboard.trace_outline import changed
from db.queries.sessions import count_sessions, list_sessions, session_traces

PAGE_SIZE = 50
#: Most traces of one session listed.
TRACES_SHOWN = 500
#: URL parameter of the session shown.
SESSION_KEY = "session"


def _show_session(session: str) -> None:
    """The traces of ``session``, each row opening its trace."""
    if st.button("All sessions", icon=":material/arrow_back:", key="all_sessions"):
        del st.query_params[SESSION_KEY]
        st.rerun()
    st.subheader("Session")
    st.code(session, language=None, wrap_lines=True)
    traces = state.query(session_traces, session, state.filters(), limit=TRACES_SHOWN)
    if traces.empty:
        st.info("No trace of this session passes the filters (or no trace has this session).")
        return
    shown = render.count_text(len(traces), "trace")
    if len(traces) == TRACES_SHOWN:
        shown = f"The first {TRACES_SHOWN:,} traces"
    st.caption(f"{shown} in order of start; select a row (or its link) to open the trace.")
    widgets.trace_table(
        widgets.with_links(traces.assign(pair=None)),
        key="session_traces",
        height=widgets.table_height(len(traces), max_rows=20),
        # The link beside the title and no id column: every column fits 1,440 px.
        **widgets.columns(
            {
                "title": st.column_config.TextColumn("Title", width="medium"),
                "link": widgets.link_column("Trace", help="open this trace on the Trace page"),
                "agent": st.column_config.TextColumn("Agent", width="small"),
                "started_at": st.column_config.DatetimeColumn(
                    "Started (UTC)", format="YYYY-MM-DD HH:mm:ss"
                ),
                "messages": widgets.count_column("Messages"),
                "tool_calls": widgets.count_column("Tool calls"),
                "errors": widgets.count_column("Errors"),
                "problems": widgets.count_column("Problems"),
            }
        ),
    )


state.open_page("Sessions")

shown = st.query_params.get(SESSION_KEY)
if shown:
    _show_session(shown)
    state.end_page()

filters = state.filters()
row = st.columns([4, 2], vertical_alignment="bottom")
text = row[0].text_input(
    "Session id contains", key="sq", bind="query-params", help="Any case; part of the id."
)
shared = row[1].toggle("Two traces or more", key="shared", bind="query-params")
total = state.query(count_sessions, filters, text=text or None, shared=shared)
if total == 0:
    st.info(
        "No session: no trace passing the filters names one. OTLP traces name theirs with "
        "the session.id or gen_ai.conversation.id attribute; Claude Code, Langfuse and "
        "LangSmith traces with their session or thread id.",
        icon=":material/forum:",
    )
    state.end_page()
offset = widgets.page_offset(total, PAGE_SIZE, key="sespage", noun="sessions")
found = state.query(
    list_sessions, filters, text=text or None, shared=shared, limit=PAGE_SIZE, offset=offset
)
st.caption("The latest activity first. Select a session to see its traces.")
picked = widgets.picked_row(
    found,
    height=widgets.table_height(len(found), max_rows=20),
    key="sessions_table",
    column_config={
        "session": st.column_config.TextColumn("Session", width="large"),
        "traces": widgets.count_column("Traces"),
        "messages": widgets.count_column("Messages"),
        "tool_calls": widgets.count_column("Tool calls"),
        "errors": widgets.count_column("Errors"),
        "problems": widgets.count_column(
            "Problems", help="errors + pairing problems + loop calls + ignored advice"
        ),
        "first": st.column_config.DatetimeColumn("First (UTC)", format="YYYY-MM-DD HH:mm"),
        "last": st.column_config.DatetimeColumn("Last (UTC)", format="YYYY-MM-DD HH:mm"),
    },
)
chosen = None if picked is None else str(picked["session"])
# The selection outlives the rerun it caused: acting only on a change lets Back and "All
# sessions" return to the list.
if changed("_sessions_table_seen", chosen) and chosen:
    st.query_params[SESSION_KEY] = chosen
    st.rerun()
