"""Chart builders for the Loops page: pure functions from DataFrames to Plotly figures."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.plot_text import plot_texts

#: Up to this many loops the count axis has a tick at every whole number.
INTEGER_TICKS_UP_TO = 12


def loops_by_tool_chart(df: pd.DataFrame, k: int) -> go.Figure:
    """Horizontal bars: looping signatures per tool at threshold ``k``.

    ``df`` has columns ``tool``, ``loops``, ``calls``, ``wasted_tokens``; tools are drawn
    top-down in ``df`` order (the query sorts by loops).
    """
    tools = plot_texts(df["tool"])
    loops = [int(n) for n in df["loops"]]
    bars = go.Bar(
        y=tools,
        x=loops,
        orientation="h",
        marker_color="#AB63FA",
        text=[f"{n:,}" for n in loops],
        textposition="auto",
        # Plotly turns a label that does not fit a thin bar sideways; keep counts upright.
        textangle=0,
        customdata=[
            [int(c), int(w)] for c, w in zip(df["calls"], df["wasted_tokens"], strict=True)
        ],
        hovertemplate=(
            "%{y}<br>loops: %{x:,}<br>calls: %{customdata[0]:,}"
            "<br>wasted tokens: %{customdata[1]:,}<extra></extra>"
        ),
    )
    layout = {
        # Counts of loops: whole numbers only (a tick every loop while they fit).
        "xaxis": {
            "title": f"signatures repeated ≥ {k} times in a trace",
            "tickformat": ",d",
            **({"dtick": 1} if max(loops, default=0) <= INTEGER_TICKS_UP_TO else {}),
        },
        "yaxis": {"categoryorder": "array", "categoryarray": tools[::-1], "title": None},
        "height": max(200, 24 * len(tools) + 90),
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }
    return go.Figure(data=[bars], layout=layout)
