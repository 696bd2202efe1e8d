"""Chart builders for the Tokens page: pure functions from DataFrames to Plotly figures."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.plot_text import plot_texts

BUDGET_COLOR = "#EF553B"


#: Where a 0-token quantile sits on a log axis (log 0 is undefined); hovers show the real value.
LOG_FLOOR = 1


def token_box_chart(df: pd.DataFrame, budget: int, *, log_x: bool = True) -> go.Figure:
    """Horizontal box plot of Tool Message tokens per tool from precomputed quantiles, with the
    budget as a dashed vertical line; tools top-down in ``df`` order.

    ``df`` has columns ``tool``, ``results``, ``min``, ``p25``, ``p50``, ``p75``, ``p95``,
    ``max``, ``mean`` (see ``db.queries.tokens.token_quantiles_by_tool``). Whiskers span min to
    max. Sizes span several orders of magnitude, so the token axis is logarithmic unless
    ``log_x`` is False; on it a quantile of 0 tokens is drawn at :data:`LOG_FLOOR`.
    """
    tools = plot_texts(df["tool"])
    floor = LOG_FLOOR if log_x else 0

    def values(column: str) -> list[int]:
        return [max(int(v), floor) for v in df[column]]

    box = go.Box(
        name="tokens",
        y=tools,
        q1=values("p25"),
        median=values("p50"),
        q3=values("p75"),
        lowerfence=values("min"),
        upperfence=values("max"),
        mean=[max(float(v), floor) for v in df["mean"]],
        orientation="h",
        boxpoints=False,
        customdata=[
            [int(n), int(a), int(b), int(c), int(d)]
            for n, a, b, c, d in zip(
                df["results"], df["min"], df["p50"], df["p95"], df["max"], strict=True
            )
        ],
        hovertemplate=(
            "%{y}<br>results: %{customdata[0]:,}<br>min: %{customdata[1]:,}"
            "<br>median: %{customdata[2]:,}<br>p95: %{customdata[3]:,}"
            "<br>max: %{customdata[4]:,}<extra></extra>"
        ),
    )
    # A dashed line at the budget. Annotations on a log axis take log10 positions (shapes take
    # values): a label placed like the line would sit at 10^budget, off the chart.
    budget_line = {
        "type": "line",
        "xref": "x",
        "yref": "y domain",
        "x0": budget,
        "x1": budget,
        "y0": 0,
        "y1": 1,
        "line": {"color": BUDGET_COLOR, "dash": "dash"},
    }
    budget_label = {
        "x": math.log10(max(budget, 1)) if log_x else budget,
        "y": 1,
        "yref": "paper",
        "text": f"budget {budget:,} tokens",
        "showarrow": False,
        "xanchor": "left",
        "yanchor": "bottom",
        "font": {"color": BUDGET_COLOR},
    }
    layout = {
        "shapes": [budget_line],
        "annotations": [budget_label],
        "showlegend": False,
        "xaxis": {
            "title": "tokens per Tool Message" + (" (log scale)" if log_x else ""),
            "type": "log" if log_x else "linear",
            # On the log axis: a tick per decade (1, 10, 100, 1k …), not 2s and 5s between.
            **({"dtick": 1, "tickformat": "~s"} if log_x else {"tickformat": ",d"}),
        },
        "yaxis": {"title": None, "categoryorder": "array", "categoryarray": tools[::-1]},
        "height": max(260, 30 * len(tools) + 110),
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
    }
    return go.Figure(data=[box], layout=layout)


def _share_layout(x_title: str, y_title: str) -> dict[str, Any]:
    """The layout of a histogram of shares: its bins as categories, counts on the y axis."""
    return {
        "xaxis": {"title": x_title, "type": "category"},
        "yaxis": {"title": y_title, "tickformat": ",d"},
        "bargap": 0.05,
        "height": 320,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }


def share_label(share_from: float, share_to: float) -> str:
    """``"30–40 %"`` for the bin [0.3, 0.4)."""
    return f"{round(share_from * 100)}–{round(share_to * 100)} %"


def trace_share_chart(df: pd.DataFrame) -> go.Figure:
    """Histogram bars: traces by the share of their tokens taken by tool results.

    ``df`` has columns ``share_from``, ``share_to``, ``traces`` (one row per bin).
    """
    labels = [share_label(a, b) for a, b in zip(df["share_from"], df["share_to"], strict=True)]
    bars = go.Bar(
        x=labels,
        y=[int(n) for n in df["traces"]],
        marker_color="#636EFA",
        hovertemplate="%{x} of tokens in tool results: %{y:,} traces<extra></extra>",
    )
    layout = _share_layout("share of the trace's tokens in Tool Messages", "traces")
    return go.Figure(data=[bars], layout=layout)


def input_share_label(share_from: float, share_to: float | None) -> str:
    """``"2–5 %"`` for the bin [0.02, 0.05); ``"≥ 100 %"`` for the open last bin.

    >>> input_share_label(0.02, 0.05), input_share_label(1.0, None)
    ('2–5 %', '≥ 100 %')
    """
    if share_to is None or pd.isna(share_to):
        return f"≥ {share_from * 100:g} %"
    return f"{share_from * 100:g}–{share_to * 100:g} %"


def input_share_chart(df: pd.DataFrame) -> go.Figure:
    """Histogram bars: Tool Messages by their share of the input tokens of the model call
    that read them.

    ``df`` has columns ``share_from``, ``share_to`` (None: open bin), ``results``.
    """
    labels = [
        input_share_label(a, b) for a, b in zip(df["share_from"], df["share_to"], strict=True)
    ]
    bars = go.Bar(
        x=labels,
        y=[int(n) for n in df["results"]],
        marker_color="#00CC96",
        hovertemplate="%{x} of the call's input: %{y:,} Tool Messages<extra></extra>",
    )
    layout = _share_layout(
        "share of the input tokens of the model call that read it", "Tool Messages"
    )
    return go.Figure(data=[bars], layout=layout)
