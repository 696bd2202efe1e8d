"""Chart builders for the Errors page: pure functions from DataFrames to Plotly figures.

Each error type keeps one color on every chart (the taxonomy's order picks it), so "timeout" in
the by-tool chart is the same orange as "timeout" over time.
"""

from __future__ import annotations

import zlib

import pandas as pd
import plotly.graph_objects as go

from ingest.facts import ERROR_TYPES

#: The error-type taxonomy in display order (DESIGN.md); unknown protocol types come after.
ERROR_TYPE_ORDER: tuple[str, ...] = ERROR_TYPES
#: One distinct color per taxonomy type (Tableau 20 hues): transient failures warm, caller
#: mistakes green/blue, tool faults red, "other" grey. Together with :data:`EXTRA_COLORS` no
#: color is used twice, so a chart with every type and several unknown ones stays readable.
ERROR_TYPE_COLORS: dict[str, str] = {
    "rate_limit": "#F28E2B",
    "timeout": "#FFBE7D",
    "unavailable": "#B6992D",
    "auth": "#B07AA1",
    "not_found": "#4E79A7",
    "invalid_params": "#59A14F",
    "invalid_arguments_json": "#8CD17D",
    "unknown_tool": "#86BCB6",
    "tool_exception": "#E15759",
    "conflict": "#FF9D9A",
    "quota": "#D4A6C8",
    "content_filter": "#9D7660",
    "other": "#BAB0AC",
}
#: Colors for error types outside the taxonomy (protocol types), picked by a hash of the name.
EXTRA_COLORS: tuple[str, ...] = (
    "#499894", "#A0CBE8", "#F1CE63", "#79706E", "#D37295", "#2F4B7C", "#A05195",
    "#FABFD2", "#D7B5A6", "#665191", "#17BECF",
)  # fmt: skip
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
#: Order in which the ways of recognizing an error are shown.
STATUS_SOURCE_ORDER: tuple[str, ...] = ("explicit", "protocol", "inferred")
SOURCE_COLORS: dict[str, str] = {
    "explicit": "#636EFA",
    "protocol": "#00CC96",
    "inferred": "#FFA15A",
}


def error_type_color(error_type: str) -> str:
    """A stable color for an error type on every chart: the taxonomy's own color, else one of
    :data:`EXTRA_COLORS` by a hash of the name (never a taxonomy color)."""
    known = ERROR_TYPE_COLORS.get(error_type)
    if known is not None:
        return known
    return EXTRA_COLORS[zlib.crc32(error_type.encode()) % len(EXTRA_COLORS)]


def ordered_error_types(types: pd.Series) -> list[str]:
    """The distinct error types of ``types``: taxonomy order first, then others by name."""
    present = set(types.dropna().astype(str))
    known = [t for t in ERROR_TYPE_ORDER if t in present]
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
                name=error_type,
                y=[t for t in tools if t in counts],
                x=[int(counts[t]) for t in tools if t in counts],
                orientation="h",
                marker_color=error_type_color(error_type),
                hovertemplate="%{y}<br>" + error_type + ": %{x}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        xaxis={"title": "errors", "tickformat": ",d"},
        yaxis={"categoryorder": "array", "categoryarray": tools[::-1], "title": None},
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
                name=error_type,
                x=[str(b) for b in part["bucket"]],
                y=[int(n) for n in part["errors"]],
                marker_color=error_type_color(error_type),
            )
        )
    fig.update_layout(
        barmode="stack",
        xaxis={
            "type": "category",
            "categoryorder": "array",
            "categoryarray": [str(b) for b in buckets],
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
    sources = [s for s in STATUS_SOURCE_ORDER if s in totals.index]
    sources += sorted(set(totals.index) - set(sources))
    fig = go.Figure(
        go.Bar(
            x=sources,
            y=[int(totals[s]) for s in sources],
            text=[f"{int(totals[s]):,}" for s in sources],
            textposition="outside",
            cliponaxis=False,
            marker_color=[SOURCE_COLORS.get(s, "#B6B6B6") for s in sources],
        )
    )
    fig.update_layout(
        xaxis_title="recognized by",
        yaxis={"title": "errors", "tickformat": ",d"},
        height=280,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig
