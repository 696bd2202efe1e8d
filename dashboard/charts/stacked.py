"""Stacked bars from a long table: one bar trace (one segment of every stack) per group."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import plotly.graph_objects as go

from dashboard import palette
from dashboard.charts.plot_text import plot_text, plot_texts


def segment_bars(
    df: pd.DataFrame,
    *,
    by: str,
    groups: Iterable[str],
    x: str,
    y: str,
    color: palette.Kind | None = None,
) -> list[go.Bar]:
    """A bar trace for each of ``groups`` (values of the column ``by``, in this order): its rows'
    ``x`` as (escaped) categories, their ``y`` as whole numbers, named by the group; colored by
    the palette's ``color`` category when given, else by the figure's color sequence."""
    traces: list[go.Bar] = []
    for group in groups:
        part = df[df[by] == group]
        colored = {} if color is None else {"marker_color": palette.color(color, group)}
        traces.append(
            go.Bar(
                name=plot_text(group),
                x=plot_texts(part[x]),
                y=[int(n) for n in part[y]],
                **colored,
            )
        )
    return traces
