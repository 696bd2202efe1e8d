"""Chart builders for the Tokens page: pure functions from DataFrames to Plotly figures."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

BUDGET_COLOR = "#EF553B"


def token_box_chart(df: pd.DataFrame, budget: int, *, log_y: bool = False) -> go.Figure:
    """Box plot of Tool Message tokens per tool from precomputed quantiles, with the budget line.

    ``df`` has columns ``tool``, ``results``, ``min``, ``p25``, ``p50``, ``p75``, ``p95``,
    ``max``, ``mean`` (see ``db.queries.tokens.token_quantiles_by_tool``). Whiskers span min to
    max; the budget is a dashed horizontal line.
    """
    tools = [str(t) for t in df["tool"]]
    fig = go.Figure(
        go.Box(
            name="tokens",
            x=tools,
            q1=[int(v) for v in df["p25"]],
            median=[int(v) for v in df["p50"]],
            q3=[int(v) for v in df["p75"]],
            lowerfence=[int(v) for v in df["min"]],
            upperfence=[int(v) for v in df["max"]],
            mean=[float(v) for v in df["mean"]],
            boxpoints=False,
            customdata=[[int(n), int(p)] for n, p in zip(df["results"], df["p95"], strict=True)],
            hovertemplate=(
                "%{x}<br>results: %{customdata[0]}<br>median: %{median}<br>"
                "p95: %{customdata[1]}<br>max: %{upperfence}<extra></extra>"
            ),
        )
    )
    fig.add_hline(
        y=budget,
        line_dash="dash",
        line_color=BUDGET_COLOR,
        annotation_text=f"budget {budget:,} tokens",
        annotation_position="top left",
    )
    fig.update_layout(
        showlegend=False,
        yaxis={"title": "tokens per Tool Message", "type": "log" if log_y else "linear"},
        xaxis={"title": None, "categoryorder": "array", "categoryarray": tools},
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig


def share_label(share_from: float, share_to: float) -> str:
    """``"30–40 %"`` for the bin [0.3, 0.4)."""
    return f"{round(share_from * 100)}–{round(share_to * 100)} %"


def trace_share_chart(df: pd.DataFrame) -> go.Figure:
    """Histogram bars: traces by the share of their tokens taken by tool results.

    ``df`` has columns ``share_from``, ``share_to``, ``traces`` (one row per bin).
    """
    labels = [share_label(a, b) for a, b in zip(df["share_from"], df["share_to"], strict=True)]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[int(n) for n in df["traces"]],
            marker_color="#636EFA",
            hovertemplate="%{x} of tokens in tool results: %{y} traces<extra></extra>",
        )
    )
    fig.update_layout(
        xaxis={"title": "share of the trace's tokens in Tool Messages", "type": "category"},
        yaxis_title="traces",
        bargap=0.05,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig
