"""Loops: calls repeated with identical arguments, at an adjustable threshold k.

``occurrence`` (the n-th identical call in its trace) is stored at import, so moving the k slider
re-filters in SQL without re-importing. k is the shared ``k`` setting (URL parameter).
"""

from __future__ import annotations

import streamlit as st

from dashboard import pages, render, state, widgets
from dashboard.charts import loops as charts
from dashboard.selection import picked_point, selectable_chart
from db.queries import loops as q
from db.queries import streaks as sq
from db.queries.errors import error_totals
from db.queries.filters import Filters

LOOP_PAGE = 25
STREAK_PAGE = 25
PING_PONG_TRACES = 20

LOOP_COLUMNS = (
    "tool",
    "arguments",
    "occurrences",
    "run_length",
    "errors",
    "wasted_tokens",
    "link",
    "trace",
)

state.open_page("Loops")

f = state.filters()
k = widgets.setting_slider(
    "Loop threshold k",
    setting="k",
    current=state.loop_k(),
    min_value=2,
    max_value=10,
    help="A call signature (tool + identical arguments) repeated k or more times in one trace "
    "is a loop.",
)
if state.query(error_totals, f)[1] == 0:  # no Tool Message under these filters
    render.no_match()
    state.end_page()
totals = state.query(q.loop_totals, k, f)
ping_pong = state.query(q.ping_pong_calls, f)
sk = state.streak_k()
streaks = state.query(sq.streak_totals, sk, f)

widgets.metrics(
    st.columns(6),
    [
        ("Loops", f"{totals['signatures']:,}", f"signatures repeated ≥ {k} times"),
        (
            "Calls in loops",
            f"{totals['calls']:,}",
            f"in {render.count_text(totals['traces'], 'trace')}",
        ),
        (
            "Errors in loops",
            f"{totals['errors']:,}",
            "error results among the calls of looping signatures",
        ),
        (
            "Wasted tokens",
            f"{totals['wasted_tokens']:,}",
            "tokens of the results of repeats after the first call",
        ),
        ("Ping-pong calls", f"{ping_pong:,}", "part of an A-B-A-B alternation"),
        (
            "Error streaks",
            f"{streaks['streaks']:,}",
            f"{sk}+ consecutive calls of one tool ending in the same error, whatever their "
            f"arguments ({render.count_text(streaks['calls'], 'call')} in "
            f"{render.count_text(streaks['traces'], 'trace')})",
        ),
    ],
)


def _looping_calls(f: Filters, k: int, totals: dict[str, int]) -> None:
    """The looping signatures, a page at a time; a row opens the loop's first call."""
    if totals["signatures"] == 0:
        st.info(f"No call signature repeats {k} or more times in a trace. Lower k to see more.")
        return
    st.caption("Select a row to open the loop's first call in its trace.")
    offset = widgets.page_offset(totals["signatures"], LOOP_PAGE, key="loop_page", noun="loops")
    loops = widgets.with_links(state.query(q.loop_signatures, k, f, limit=LOOP_PAGE, offset=offset))
    widgets.trace_table(
        loops,
        key="loops_table",
        height=widgets.table_height(len(loops), max_rows=LOOP_PAGE),
        column_order=LOOP_COLUMNS,
        column_config={
            "tool": st.column_config.TextColumn("Tool", width=widgets.TOOL_PX),
            "arguments": st.column_config.TextColumn(
                "Arguments", width=widgets.CONTENT_PX, help="the identical arguments of every call"
            ),
            "occurrences": widgets.count_column("Calls", help="identical calls in the trace"),
            "run_length": widgets.count_column("Longest run", help="identical calls in a row"),
            "errors": widgets.count_column("Errors", help="error results among these calls"),
            "wasted_tokens": widgets.count_column(
                "Wasted tokens", help="tokens of the results of the repeats after the first"
            ),
            "trace": st.column_config.TextColumn("Trace", width="medium"),
            "link": widgets.link_column("First call"),
        },
    )


def _per_tool(f: Filters, k: int, totals: dict[str, int]) -> None:
    """Loops per tool; a bar sets the Tool filter."""
    if totals["signatures"] == 0:
        st.info(f"No call signature repeats {k} or more times in a trace. Lower k to see more.")
        return
    st.caption("Click a tool's bar to list only its loops (the Tool filter).")
    by_tool = state.query(q.loops_by_tool, k, f)
    point = picked_point(
        selectable_chart(charts.loops_by_tool_chart(by_tool, k), key="loops_by_tool")
    )
    if point is not None:
        state.apply_filters({"tool": str(by_tool.iloc[point[1]]["tool"])})


def _ping_pong(f: Filters, ping_pong: int) -> None:
    """Traces alternating between two calls."""
    if ping_pong == 0:
        st.caption("No A-B-A-B alternation between two calls.")
    else:
        st.caption("Traces alternating between two calls. Select a row to open the first one.")
        traces = widgets.with_links(state.query(q.ping_pong_traces, f, limit=PING_PONG_TRACES))
        widgets.trace_table(
            traces,
            key="ping_pong_table",
            **widgets.columns(
                {
                    "tools": st.column_config.TextColumn("Tools", width="medium"),
                    "calls": widgets.count_column("Ping-pong calls"),
                    "link": widgets.link_column("First call"),
                    "trace": st.column_config.TextColumn("Trace", width="medium"),
                }
            ),
        )


def _streaks(f: Filters, sk: int, streaks: dict[str, int]) -> None:
    """Error streaks at their own threshold; a row opens the streak's first call."""
    sk = widgets.setting_slider(
        "Error streak threshold k",
        setting="sk",
        current=sk,
        min_value=2,
        max_value=10,
        help="k or more consecutive calls of one tool (its own calls in order; calls of other "
        "tools in between do not count) whose results are the same error fingerprint, whatever "
        "their arguments.",
    )
    if streaks["streaks"] == 0:
        st.caption(f"No tool fails the same way {sk} or more times in a row. Lower k to see more.")
    else:
        st.caption(
            f"{render.count_text(streaks['streaks'], 'streak')} · wasted "
            f"{streaks['wasted_tokens']:,} tokens (results "
            "and arguments of the calls after the first) and "
            f"{render.duration_text(streaks['wasted_ms'])} of tool time. Select a row to open the "
            "streak's first call."
        )
        offset = widgets.page_offset(
            streaks["streaks"], STREAK_PAGE, key="streak_page", noun="streaks"
        )
        table = widgets.with_links(
            state.query(sq.error_streaks, sk, f, limit=STREAK_PAGE, offset=offset)
        )
        widgets.trace_table(
            table.assign(wasted_ms=widgets.as_seconds(table["wasted_ms"])),
            key="streaks_table",
            height=widgets.table_height(len(table), max_rows=STREAK_PAGE),
            **widgets.columns(
                {
                    "tool": st.column_config.TextColumn("Tool"),
                    "fingerprint": st.column_config.TextColumn(
                        "Error", width=260, help="tool + first line, ids and numbers masked"
                    ),
                    "error_type": st.column_config.TextColumn("Error type"),
                    "length": widgets.count_column("Calls", help="consecutive calls of the tool"),
                    "wasted_tokens": widgets.count_column(
                        "Wasted tokens",
                        help="result + argument tokens of the calls after the first",
                    ),
                    "wasted_ms": widgets.seconds_column(
                        "Wasted time", help="execution time of the calls after the first"
                    ),
                    "link": widgets.link_column("First call"),
                    "trace": st.column_config.TextColumn("Trace", width="medium"),
                }
            ),
        )


# The sections as tabs (``pages.LOOPS.sections``): only the open one runs and is drawn.
widgets.page_sections(
    pages.LOOPS,
    (
        lambda: _looping_calls(f, k, totals),
        lambda: _per_tool(f, k, totals),
        lambda: _ping_pong(f, ping_pong),
        lambda: _streaks(f, sk, streaks),
    ),
)
