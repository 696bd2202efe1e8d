"""Chart builders for the Errors page: pure functions from DataFrames to Plotly figures.

Each error type keeps its one color (:mod:`dashboard.palette`) on every chart, so "timeout" in
the by-tool chart is the same orange as "timeout" over time and on the Overview.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard import palette
from dashboard.charts.plot_text import plot_text, plot_texts
from db.vocabulary import ERROR_TYPES, STATUS_SOURCES

#: A horizontal legend above the plot, entries in the order the traces were added.
TOP_LEGEND: dict[str, object] = {
    "orientation": "h",
    "traceorder": "normal",
    "x": 0,
    "xanchor": "left",
    "y": 1.0,
    "yanchor": "bottom",
    "title": {"text": ""},
}


def ordered_error_types(types: pd.Series) -> list[str]:
    """The distinct error types of ``types``: taxonomy order first, then others by name."""
    present = set(types.dropna().astype(str))
    known = [t for t in ERROR_TYPES if t in present]
    return known + sorted(present - set(known))


def error_types_by_tool_chart(df: pd.DataFrame) -> go.Figure:
    """Stacked horizontal bars: errors per tool, one segment per error type.

    ``df`` has columns ``tool``, ``error_type``, ``errors``; tools are drawn top-down in the
    order they first appear (the query sorts them by their error total).
    """
    tools = list(dict.fromkeys(df["tool"]))
    fig = go.Figure()
    for error_type in ordered_error_types(df["error_type"]):
        part = df[df["error_type"] == error_type]
        counts = dict(zip(part["tool"], part["errors"], strict=True))
        fig.add_trace(
            go.Bar(
                name=plot_text(error_type),
                y=[plot_text(t) for t in tools if t in counts],
                x=[int(counts[t]) for t in tools if t in counts],
                orientation="h",
                marker_color=palette.color("error_type", error_type),
                # The trace's own (escaped) name: trace text never becomes template text.
                hovertemplate="%{y}<br>%{fullData.name}: %{x}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        xaxis={"title": "errors", "tickformat": ",d"},
        yaxis={"categoryorder": "array", "categoryarray": plot_texts(tools[::-1]), "title": None},
        # Above the bars, in taxonomy order: a legend on the side takes a third of the width
        # from the bars in a half-width column.
        legend=TOP_LEGEND,
        height=max(300, 30 * len(tools) + 170),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
    )
    return fig


def errors_over_time_chart(df: pd.DataFrame, unit: str) -> go.Figure:
    """Stacked bars: errors per time bucket (or per import), one segment per error type.

    ``df`` has columns ``bucket``, ``error_type``, ``errors``; ``unit`` names the axis
    (``hour``, ``day`` or ``import``).
    """
    buckets = list(dict.fromkeys(df["bucket"]))
    fig = go.Figure()
    for error_type in ordered_error_types(df["error_type"]):
        part = df[df["error_type"] == error_type]
        fig.add_trace(
            go.Bar(
                name=plot_text(error_type),
                x=plot_texts(part["bucket"]),
                y=[int(n) for n in part["errors"]],
                marker_color=palette.color("error_type", error_type),
            )
        )
    fig.update_layout(
        barmode="stack",
        xaxis={
            "type": "category",
            "categoryorder": "array",
            "categoryarray": plot_texts(buckets),
            "title": unit,
        },
        yaxis={"title": "errors", "tickformat": ",d"},
        legend={"title": {"text": "error type"}, "traceorder": "normal"},
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig


def error_sources_chart(df: pd.DataFrame) -> go.Figure:
    """Bars: errors by how they were recognized (explicit flag, protocol, inferred by a rule).

    ``df`` has columns ``status_source``, ``rule``, ``errors``; rules are summed per source.
    """
    totals = df.groupby("status_source")["errors"].sum()
    sources = [s for s in STATUS_SOURCES if s in totals.index]
    sources += sorted(set(totals.index) - set(sources))
    fig = go.Figure(
        go.Bar(
            x=plot_texts(sources),
            y=[int(totals[s]) for s in sources],
            text=[f"{int(totals[s]):,}" for s in sources],
            textposition="outside",
            cliponaxis=False,
            marker_color=[palette.color("status_source", s) for s in sources],
        )
    )
    fig.update_layout(
        xaxis_title="recognized by",
        yaxis={"title": "errors", "tickformat": ",d"},
        height=280,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig
