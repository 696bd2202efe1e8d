"""Chart builders for the Errors page: pure functions from DataFrames to Plotly figures.

Each error type keeps its one color (:mod:`dashboard.palette`) on every chart, so "timeout" in
the by-tool chart is the same orange as "timeout" over time and on the Overview.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard import palette
from dashboard.charts.plot_text import plot_text, plot_texts
from dashboard.charts.stacked import segment_bars
from db.contract.vocabulary import ERROR_TYPES, STATUS_SOURCES
from db.queries.activity import BUCKET_SECONDS

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


def by_tool_points(df: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """The traces of :func:`error_types_by_tool_chart`, in drawing order: each error type
    with its tools, point by point (a selected point's ``curve_number`` and ``point_index``)."""
    tools = list(dict.fromkeys(df["tool"]))
    out = []
    for error_type in ordered_error_types(df["error_type"]):
        present = set(df.loc[df["error_type"] == error_type, "tool"])
        out.append((error_type, [t for t in tools if t in present]))
    return out


def error_types_by_tool_chart(df: pd.DataFrame) -> go.Figure:
    """Stacked horizontal bars: errors per tool, one segment per error type.

    ``df`` has columns ``tool``, ``error_type``, ``errors``; tools are drawn top-down in the
    order they first appear (the query sorts them by their error total).
    """
    tools = list(dict.fromkeys(df["tool"]))
    traces: list[go.Bar] = []
    for error_type, with_type in by_tool_points(df):
        part = df[df["error_type"] == error_type]
        counts = dict(zip(part["tool"], part["errors"], strict=True))
        traces.append(
            go.Bar(
                name=plot_text(error_type),
                y=[plot_text(t) for t in with_type],
                x=[int(counts[t]) for t in with_type],
                orientation="h",
                marker_color=palette.color("error_type", error_type),
                # The trace's own (escaped) name: trace text never becomes template text.
                hovertemplate="%{y}<br>%{fullData.name}: %{x}<extra></extra>",
            )
        )
    layout = {
        "barmode": "stack",
        "xaxis": {"title": "errors", "tickformat": ",d"},
        "yaxis": {
            "categoryorder": "array",
            "categoryarray": plot_texts(tools[::-1]),
            "title": None,
        },
        # Above the bars, in taxonomy order: a legend on the side takes a third of the width
        # from the bars in a half-width column.
        "legend": TOP_LEGEND,
        "height": max(300, 30 * len(tools) + 170),
        "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
    }
    return go.Figure(data=traces, layout=layout)


def errors_over_time_chart(df: pd.DataFrame, unit: str) -> go.Figure:
    """Stacked bars: errors per time bucket (or per import), one segment per error type.

    ``df`` has columns ``bucket``, ``error_type``, ``errors``; ``unit`` names the axis
    (``hour``, ``day`` or ``import``).
    """
    buckets = list(dict.fromkeys(df["bucket"]))
    traces = segment_bars(
        df,
        by="error_type",
        groups=ordered_error_types(df["error_type"]),
        x="bucket",
        y="errors",
        color="error_type",
    )
    layout = {
        "barmode": "stack",
        "xaxis": {
            "type": "category",
            "categoryorder": "array",
            "categoryarray": plot_texts(buckets),
            "title": unit,
        },
        "yaxis": {"title": "errors", "tickformat": ",d"},
        "legend": {"title": {"text": "error type"}, "traceorder": "normal"},
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }
    return go.Figure(data=traces, layout=layout)


def over_time_points(df: pd.DataFrame) -> list[list[int]]:
    """The rows of ``df`` each trace of :func:`error_types_over_time_chart` draws, in drawing
    order (a selected point's ``curve_number`` and ``point_index``)."""
    return [
        [int(i) for i in df.index[df["error_type"] == error_type]]
        for error_type in ordered_error_types(df["error_type"])
    ]


def error_types_over_time_chart(df: pd.DataFrame, unit: str) -> go.Figure:
    """Stacked bars of errors per error type on a continuous time axis: each bar over its
    whole ``unit`` bucket, a bucket without errors an empty stretch of the axis.

    ``df`` has columns ``start`` (the bucket's start), ``error_type``, ``errors`` (the frame of
    :func:`db.queries.activity.error_types_over_time`); dragging brushes a time range.
    """
    width_ms = BUCKET_MS[unit]
    middles = pd.to_datetime(df["start"], utc=True).dt.tz_localize(None) + pd.to_timedelta(
        width_ms / 2, unit="ms"
    )
    traces: list[go.Bar] = []
    for error_type, rows in zip(
        ordered_error_types(df["error_type"]), over_time_points(df), strict=True
    ):
        traces.append(
            go.Bar(
                name=plot_text(error_type),
                x=middles.loc[rows],
                y=[int(n) for n in df["errors"].loc[rows]],
                width=[width_ms * 0.9] * len(rows),
                marker_color=palette.color("error_type", error_type),
                hovertemplate="%{x}<br>%{fullData.name}: %{y:,}<extra></extra>",
            )
        )
    layout = {
        "barmode": "stack",
        "xaxis": {"type": "date", "title": f"per {unit} (UTC)"},
        "yaxis": {"title": "errors", "tickformat": ",d"},
        "legend": {"title": {"text": "error type"}, "traceorder": "normal"},
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
        "dragmode": "select",
        "selectdirection": "h",
    }
    return go.Figure(data=traces, layout=layout)


#: Milliseconds per time bucket (:data:`db.queries.activity.BUCKET_SECONDS`).
BUCKET_MS: dict[str, int] = {unit: seconds * 1000 for unit, seconds in BUCKET_SECONDS.items()}


def source_totals(df: pd.DataFrame) -> pd.Series:
    """Errors per status source of ``df`` (``status_source``, ``rule``, ``errors``), in
    vocabulary order then by name: the bars of :func:`error_sources_chart`, in order."""
    totals = df.groupby("status_source")["errors"].sum()
    order = [s for s in STATUS_SOURCES if s in totals.index]
    order += sorted(set(totals.index) - set(order))
    return totals.reindex(order)


def error_sources_chart(df: pd.DataFrame) -> go.Figure:
    """Bars: errors by how they were recognized (explicit flag, protocol, inferred by a rule).

    ``df`` has columns ``status_source``, ``rule``, ``errors``; rules are summed per source.
    """
    totals = source_totals(df)
    sources = [str(s) for s in totals.index]
    bars = go.Bar(
        x=plot_texts(sources),
        y=[int(totals[s]) for s in sources],
        text=[f"{int(totals[s]):,}" for s in sources],
        textposition="outside",
        cliponaxis=False,
        marker_color=[palette.color("status_source", s) for s in sources],
    )
    layout = {
        "xaxis": {"title": {"text": "recognized by"}},
        "yaxis": {"title": "errors", "tickformat": ",d"},
        "height": 280,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }
    return go.Figure(data=[bars], layout=layout)
