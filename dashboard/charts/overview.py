"""Chart builders for the Overview page: pure functions from DataFrames to Plotly figures.

Inputs are the frames of :mod:`db.queries.overview`; nothing here queries or renders. Bars that
mark a problem (over budget, a loop at k) take the warning color, the rest stay neutral.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

NEUTRAL = "#4C78A8"
PROBLEM = "#E45756"
ERROR = "#E45756"
VERDICT_COLORS: dict[str, str] = {
    "followed": "#54A24B",
    "ignored": "#E45756",
    "unclear": "#B8B8B8",
    "no_next_action": "#79706E",
}
#: Height of the small overview charts, in pixels.
SMALL_HEIGHT = 260


def _small_layout(fig: go.Figure, title: str, x_title: str, y_title: str) -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=SMALL_HEIGHT,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        showlegend=False,
        xaxis_title=x_title,
        yaxis_title=y_title,
    )
    return fig


def errors_by_type_chart(df: pd.DataFrame) -> go.Figure:
    """Horizontal bars of errors per error type (``error_type``, ``errors``), biggest on top."""
    data = df.iloc[::-1]  # Plotly draws the first category at the bottom.
    fig = go.Figure(
        go.Bar(
            x=data["errors"].tolist(),
            y=data["error_type"].tolist(),
            orientation="h",
            marker_color=ERROR,
            name="errors",
            hovertemplate="%{y}: %{x} errors<extra></extra>",
        )
    )
    return _small_layout(fig, "Errors by type", "error results", "")


def token_histogram_chart(df: pd.DataFrame, budget: int) -> go.Figure:
    """Tool Messages per token-size bin (``bin``, ``results``, ``over_budget``); bins over the
    budget in the problem color."""
    colors = [PROBLEM if over else NEUTRAL for over in df["over_budget"]]
    fig = go.Figure(
        go.Bar(
            x=df["bin"].tolist(),
            y=df["results"].tolist(),
            marker_color=colors,
            name="Tool Messages",
            hovertemplate="%{x} tokens: %{y} results<extra></extra>",
        )
    )
    fig.update_xaxes(type="category")
    return _small_layout(fig, f"Tool Message size (budget {budget:,} tokens)", "tokens", "results")


def occurrence_chart(df: pd.DataFrame, k: int) -> go.Figure:
    """Calls per occurrence (``occurrence``, ``label``, ``calls``); the k-th time and later in
    the problem color (those repeats make a loop)."""
    colors = [PROBLEM if int(o) >= k else NEUTRAL for o in df["occurrence"]]
    fig = go.Figure(
        go.Bar(
            x=df["label"].tolist(),
            y=df["calls"].tolist(),
            marker_color=colors,
            name="calls",
            hovertemplate="%{x}. time: %{y} calls<extra></extra>",
        )
    )
    fig.update_xaxes(type="category")
    return _small_layout(fig, f"Repeated calls (loop at k = {k})", "same call, n-th time", "calls")


def verdict_chart(df: pd.DataFrame) -> go.Figure:
    """Suggestion verdicts (``verdict``, ``results``), each verdict in its own color."""
    fig = go.Figure(
        go.Bar(
            x=df["verdict"].tolist(),
            y=df["results"].tolist(),
            marker_color=[VERDICT_COLORS.get(v, NEUTRAL) for v in df["verdict"]],
            name="results",
            hovertemplate="%{x}: %{y}<extra></extra>",
        )
    )
    fig.update_xaxes(type="category")
    return _small_layout(fig, "Were suggestions followed?", "verdict", "results")
