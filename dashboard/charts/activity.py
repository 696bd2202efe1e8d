"""Chart builder for activity over time (the Overview's time series): pure, from the frame of
:func:`db.queries.activity.activity_over_time` to a Plotly figure.

Three rows on one continuous time axis: Tool Messages per bucket (errors stacked on top in the
problem color), the error rate, and tokens. Each bar stands over its whole bucket, so a quiet
bucket is a visible gap. Dragging on the chart brushes a range (``dragmode="select"``, across
the time axis only); clicking a bar picks its bucket: every trace has one point per bucket, so a
point's index is its bucket's row.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard import palette

#: Height of the time series, in pixels.
HEIGHT = 380
#: Share of a bucket its bar covers (a thin gap between neighbours).
BAR_SHARE = 0.9
#: How the hover names a bucket of each size.
BUCKET_FORMAT = {
    "minute": "%Y-%m-%d %H:%M", "hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d",
    "week": "week of %Y-%m-%d",
}  # fmt: skip


def bucket_labels(starts: pd.Series, unit: str) -> list[str]:
    """How the hover names each bucket: ``2025-01-01 10:00`` (hours), ``week of …``."""
    return [pd.Timestamp(s).strftime(BUCKET_FORMAT[unit]) for s in starts]


def activity_chart(df: pd.DataFrame, unit: str) -> go.Figure:
    """Tool Messages (errors on top), error rate and tokens per ``unit`` bucket of ``df``
    (columns ``start``, ``end``, ``results``, ``errors``, ``error_rate``, ``tokens``)."""
    width_ms = (
        (pd.Timestamp(df["end"].iloc[0]) - pd.Timestamp(df["start"].iloc[0])).total_seconds() * 1000
        if not df.empty
        else 0
    )
    starts = pd.to_datetime(df["start"], utc=True).dt.tz_localize(None)
    middles = starts + pd.to_timedelta(width_ms / 2, unit="ms")
    labels = bucket_labels(starts, unit)
    results = [int(n) for n in df["results"]]
    errors = [int(n) for n in df["errors"]]
    ok = [r - e for r, e in zip(results, errors, strict=True)]
    rates = [None if pd.isna(r) else float(r) * 100 for r in df["error_rate"]]
    width = [width_ms * BAR_SHARE] * len(df)
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.5, 0.25, 0.25],
        vertical_spacing=0.06,
    )
    common = {"x": middles, "customdata": labels}
    fig.add_trace(
        go.Bar(
            **common,
            y=ok,
            width=width,
            name="ok",
            marker_color=palette.NEUTRAL,
            hovertemplate="%{customdata}: %{y:,} ok<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            **common,
            y=errors,
            width=width,
            name="errors",
            marker_color=palette.PROBLEM,
            hovertemplate="%{customdata}: %{y:,} errors<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            **common,
            y=rates,
            name="error rate",
            mode="lines+markers",
            connectgaps=False,
            line={"color": palette.PROBLEM},
            hovertemplate="%{customdata}: %{y:.1f}% errors<extra></extra>",
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            **common,
            y=[int(n) for n in df["tokens"]],
            width=width,
            name="tokens",
            marker_color=palette.GRAY.hex,
            hovertemplate="%{customdata}: %{y:,} tokens<extra></extra>",
        ),
        row=3,
        col=1,
    )
    fig.update_layout(
        barmode="stack",
        height=HEIGHT,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={
            "orientation": "h",
            "x": 0,
            "y": 1.0,
            "yanchor": "bottom",
            "traceorder": "normal",
        },
        dragmode="select",
        selectdirection="h",
        hovermode="closest",
    )
    fig.update_xaxes(type="date")
    fig.update_yaxes(title_text=f"per {unit}", tickformat=",d", row=1, col=1)
    fig.update_yaxes(title_text="error %", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(title_text="tokens", tickformat="~s", row=3, col=1)
    return fig
