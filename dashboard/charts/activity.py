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
    common = {"x": middles, "customdata": labels}

    def bars(y: list[int], name: str, color: str, row: str) -> go.Bar:
        """Counts per bucket in the row ``row`` ("" for the first, "3" for the third)."""
        return go.Bar(
            **common,
            y=y,
            width=width,
            name=name,
            marker_color=color,
            hovertemplate=f"%{{customdata}}: %{{y:,}} {name}<extra></extra>",
            xaxis=f"x{row}",
            yaxis=f"y{row}",
        )

    traces = [
        bars(ok, "ok", palette.NEUTRAL, ""),
        bars(errors, "errors", palette.PROBLEM, ""),
        go.Scatter(
            **common,
            y=rates,
            name="error rate",
            mode="lines+markers",
            connectgaps=False,
            line={"color": palette.PROBLEM},
            hovertemplate="%{customdata}: %{y:.1f}% errors<extra></extra>",
            xaxis="x2",
            yaxis="y2",
        ),
        bars([int(n) for n in df["tokens"]], "tokens", palette.GRAY.hex, "3"),
    ]
    # Three rows on one time axis (what ``make_subplots(rows=3, shared_xaxes=True)`` lays out),
    # written out: one constructor call costs a fraction of adding traces and axes one by one.
    time_axis = {"domain": [0.0, 1.0], "type": "date"}
    layout = {
        "xaxis": {**time_axis, "anchor": "y", "matches": "x3", "showticklabels": False},
        "xaxis2": {**time_axis, "anchor": "y2", "matches": "x3", "showticklabels": False},
        "xaxis3": {**time_axis, "anchor": "y3"},
        "yaxis": {
            "anchor": "x",
            "domain": [0.56, 1.0],
            "title": {"text": f"per {unit}"},
            "tickformat": ",d",
        },
        "yaxis2": {
            "anchor": "x2",
            "domain": [0.28, 0.5],
            "title": {"text": "error %"},
            "rangemode": "tozero",
        },
        "yaxis3": {
            "anchor": "x3",
            "domain": [0.0, 0.22],
            "title": {"text": "tokens"},
            "tickformat": "~s",
        },
        "barmode": "stack",
        "height": HEIGHT,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
        "legend": {
            "orientation": "h",
            "x": 0,
            "y": 1.0,
            "yanchor": "bottom",
            "traceorder": "normal",
        },
        "dragmode": "select",
        "selectdirection": "h",
        "hovermode": "closest",
    }
    return go.Figure(data=traces, layout=layout)
