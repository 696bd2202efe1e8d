"""The timeline of a trace on the Trace page: its model calls and tool calls on a time axis.

The bars come from ``db.queries.timeline.trace_timeline`` and the figure from
``dashboard.charts.trace.timeline_chart``. Clicking a bar puts its pair in the URL (``pair``),
as a click on the outline does. A trace whose messages carry no time says so in one line.
"""

from __future__ import annotations

import streamlit as st

from dashboard import render, state
from dashboard.charts.trace import timeline_chart
from dashboard.trace_outline import changed, clicked_pair
from db.queries.timeline import trace_timeline


def caption(timed: int, bars: int, untimed_calls: int) -> str:
    """What the timeline shows, in one line.

    >>> caption(10, 6, 1)
    'Time in UTC; 6 bars. 1 tool call has no time. Click a bar to open its pair.'
    >>> caption(0, 0, 0)
    'No timeline: nothing in this trace carries a time.'
    >>> caption(1, 0, 0)
    'No timeline: no model call or tool call of this trace has both a start and an end.'
    """
    if not bars:
        if timed == 0:
            return "No timeline: nothing in this trace carries a time."
        return "No timeline: no model call or tool call of this trace has both a start and an end."
    missing = f" {render.count_text(untimed_calls, 'tool call')} " + (
        "has no time." if untimed_calls == 1 else "have no time."
    )
    return (
        f"Time in UTC; {render.count_text(bars, 'bar')}."
        + (missing if untimed_calls else "")
        + " Click a bar to open its pair."
    )


def draw(trace_id: int, trace: str, selected: str | None) -> None:
    """The timeline of the trace ``trace`` (display id), the ``selected`` pair outlined."""
    timeline = state.query(trace_timeline, trace_id)
    bars = timeline.bars
    st.caption(caption(timeline.timed_messages, len(bars), timeline.untimed_calls))
    if bars.empty:
        return
    key = f"timeline_{trace_id}"
    clicked = clicked_pair(timeline_chart(bars, selected, timeline.parents), key=key)
    if changed(f"_{key}_seen", clicked or None) and clicked and clicked != selected:
        state.select_trace(trace, clicked)
        st.rerun()
