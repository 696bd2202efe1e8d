"""Chart builder for the Trace page: the outline of a whole trace, one mark per pair.

Pure: a markers frame (``db.queries.traces.trace_markers``) in, a Plotly figure out. Each kind
of place (error, missing or late result, lone result, loop call, finding, plain call) has its
own row and its palette color, so a 1,000-message trace's problems show at a glance; clicking
a mark selects it (the page reads the point's ``customdata``: the ``pair`` value).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard import palette
from db.queries.traces import MARKER_KINDS

#: Row labels of the marker kinds, top to bottom.
KIND_LABELS: dict[str, str] = {
    "error": "error",
    "missing_result": "no result",
    "late_result": "late result",
    "lone_result": "lone result",
    "loop": "loop call",
    "ignored_advice": "advice ignored",
    "finding": "finding",
    "call": "call",
}


def outline_chart(markers: pd.DataFrame, messages: int, selected: str | None = None) -> go.Figure:
    """The outline strip: x is the message number (0 … ``messages`` - 1), one row per kind
    present, one mark per pair; the ``selected`` pair (``pair`` value) is ringed."""
    kinds = [k for k in MARKER_KINDS if k in set(markers["kind"])]
    traces: list[go.Scatter] = []
    for kind in kinds:
        rows = markers[markers["kind"] == kind]
        tools = [str(t) if isinstance(t, str) else "" for t in rows["tool"]]
        traces.append(
            go.Scatter(
                x=[int(s) for s in rows["seq"]],
                y=[KIND_LABELS[kind]] * len(rows),
                mode="markers",
                name=KIND_LABELS[kind],
                marker={"color": palette.MARKER[kind], "size": 9, "symbol": "line-ns-open"}
                if kind == "call"
                else {"color": palette.MARKER[kind], "size": 11, "symbol": "square"},
                customdata=[[str(p), t] for p, t in zip(rows["pair"], tools, strict=True)],
                hovertemplate="#%{x} %{customdata[1]}<br>" + KIND_LABELS[kind] + "<extra></extra>",
            )
        )
    chosen = markers[markers["pair"] == selected] if selected else markers.iloc[0:0]
    if not chosen.empty:
        traces.append(
            go.Scatter(
                x=[int(chosen["seq"].iloc[0])],
                y=[KIND_LABELS[str(chosen["kind"].iloc[0])]],
                mode="markers",
                name="selected",
                marker={
                    "color": "rgba(0,0,0,0)",
                    "size": 20,
                    "line": {"width": 2, "color": "#000"},
                },
                hoverinfo="skip",
            )
        )
    layout = {
        "height": 60 + 22 * max(1, len(kinds)),
        "margin": {"l": 10, "r": 10, "t": 10, "b": 30},
        "showlegend": False,
        "xaxis": {"range": [-0.5, max(messages, 1) - 0.5], "title": None, "tickformat": ",d"},
        "yaxis": {
            "categoryorder": "array",
            "categoryarray": [KIND_LABELS[k] for k in kinds][::-1],
            "title": None,
            "fixedrange": True,
        },
    }
    return go.Figure(data=traces, layout=layout)
