"""The outline of a long trace on the Trace page: a strip with a mark for every pair, colored
by its worst problem, and "previous / next problem" buttons.

Clicking a mark or a button puts the pair in the URL (``pair``) from Python, which the browser
records as a history entry (Back returns to the pair before); the messages page then follows the
pair (see ``views/trace.py``). The markers come from ``db.queries.traces.trace_markers``, whose
problems (``pair_problems``) the Problems tile and each pair's card name too.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import render, state
from dashboard.charts.trace import outline_chart
from db.queries.traces import PairRef

PREVIOUS_LABEL = "Previous problem"
NEXT_LABEL = "Next problem"


def _order(seq: int, call_index: Any) -> tuple[int, int]:
    """Sort key of a place: a lone Tool Message (no index) before the calls of its seq."""
    return (seq, -1 if call_index is None or pd.isna(call_index) else int(call_index))


def neighbours(
    markers: pd.DataFrame, at: tuple[int, int], *, inclusive: bool = False
) -> tuple[str | None, str | None]:
    """The ``pair`` values of the problem before and after the place ``at`` (``(seq, call
    index)``, ``-1`` for a lone result); ``None`` where there is none. ``inclusive``: a problem
    at ``at`` itself counts as the next one (when no pair is selected yet).

    >>> m = pd.DataFrame({"seq": [2, 4, 6], "call_index": [0, 0, 0],
    ...                   "pair": ["2:0", "4:0", "6:0"], "problem": [True, False, True]})
    >>> neighbours(m, (4, 0))
    ('2:0', '6:0')
    """
    places = [
        (_order(int(s), i), str(p))
        for s, i, p, bad in zip(
            markers["seq"], markers["call_index"], markers["pair"], markers["problem"], strict=True
        )
        if bad
    ]
    before = [p for key, p in places if key < at]
    after = [p for key, p in places if key > at or (inclusive and key == at)]
    return (before[-1] if before else None, after[0] if after else None)


def changed(key: str, value: Any) -> bool:
    """True when ``value`` (a chart's or table's selection) differs from what it was at the
    last call with this ``key``: a selection outlives the rerun it caused, and acting on it
    again would undo a later choice (a button, Back)."""
    seen = st.session_state.get(key)
    st.session_state[key] = value
    return value != seen and value is not None


def clicked_pair(fig: go.Figure, *, key: str) -> Any:
    """Draw ``fig`` (a trace's outline or timeline, whose points carry their pair as the first
    ``customdata``) with point clicks; the pair of the point clicked, or ``None``."""
    event = st.plotly_chart(
        fig,
        key=key,
        on_select="rerun",
        selection_mode="points",
        config={"displayModeBar": False},
    )
    # Item access: the event is a dict-like state (an AttributeDictionary in a served app).
    points = event["selection"]["points"] if event else []
    return next((p["customdata"][0] for p in points if p.get("customdata")), None)


def draw(
    markers: pd.DataFrame,
    trace_id: int,
    trace: str,
    messages: int,
    selected: PairRef | None,
    first_seq: int,
) -> None:
    """The outline of the trace ``trace`` (display id) from its ``markers``
    (``db.queries.traces.trace_markers``) with the previous / next problem buttons.
    ``selected``: the pair in the URL; without one the buttons step from ``first_seq``, the
    first message of the page shown."""
    if markers.empty:
        return
    value = None
    if selected is not None:
        value = f"{selected.seq}:{selected.call_index}" if selected.is_call else f"r{selected.seq}"
        at = _order(selected.seq, selected.call_index)
        previous, following = neighbours(markers, at)
    else:
        previous, following = neighbours(markers, (first_seq, -1), inclusive=True)
    problems = int(markers["problem"].sum())
    left, prev_col, next_col = st.columns([2, 1, 1], vertical_alignment="center")
    left.caption(
        f"Outline by message number: {problems:,} of {render.count_text(len(markers), 'pair')} "
        "have a problem. Click a mark to open its pair."
    )
    for column, label, key, icon, target in (
        (prev_col, PREVIOUS_LABEL, "problem_previous", ":material/arrow_upward:", previous),
        (next_col, NEXT_LABEL, "problem_next", ":material/arrow_downward:", following),
    ):
        column.button(
            label,
            key=key,
            icon=icon,
            disabled=target is None,
            on_click=state.select_trace,
            args=(trace, target),
            width="stretch",
        )
    key = f"outline_{trace_id}"
    clicked = clicked_pair(outline_chart(markers, messages, value), key=key)
    if changed(f"_{key}_seen", clicked) and clicked != value:
        state.select_trace(trace, clicked)
        st.rerun()
