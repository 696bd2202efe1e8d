"""Chart builders for the Overview page: pure functions from DataFrames to Plotly figures.

Inputs are the frames of :mod:`db.queries.overview`; nothing here queries or renders. The four
small charts sit side by side, about 260 px wide each at 1,280–1,440 px: short titles with the
detail in a subtitle, horizontal bars where the labels are words, compact bin labels. Bars that
mark a problem (over budget, a loop at k) take the warning color, the rest stay neutral; error
types keep the colors they have on the Errors page.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard import palette
from dashboard.charts.plot_text import plot_text, plot_texts

#: Height of the small overview charts, in pixels.
SMALL_HEIGHT = 260
#: Longest category label on a small chart; longer ones are cut (the hover has them whole).
LABEL_CHARS = 17


def _small_layout(
    title: str,
    x_title: str,
    y_title: str,
    subtitle: str = "",
    *,
    xaxis: dict[str, Any] | None = None,
    yaxis: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The layout of a small chart, as one dict: a figure built in one constructor call costs
    a fifth of one updated property by property (``update_layout``, ``update_xaxes``)."""
    return {
        "title": {
            "text": title,
            "font": {"size": 14},
            "subtitle": {"text": subtitle, "font": {"size": 11}},
        },
        "height": SMALL_HEIGHT,
        "margin": {"l": 10, "r": 10, "t": 52 if subtitle else 36, "b": 10},
        "showlegend": False,
        "xaxis": {"title": {"text": x_title}, **(xaxis or {})},
        # Room for the category labels (a fixed 10 px margin cuts them at the left edge).
        "yaxis": {"title": {"text": y_title}, "automargin": True, **(yaxis or {})},
    }


def compact_number(n: float) -> str:
    """``950`` → ``"950"``, ``1000`` → ``"1k"``, ``2500`` → ``"2.5k"``, ``2_000_000`` → ``"2M"``.

    >>> compact_number(20000)
    '20k'
    """
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if abs(n) >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{n:g}"


def bin_label(lower: float, upper: float | None) -> str:
    """A short label for the token bin ``[lower, upper)``: ``"<100"``, ``"1k–2k"``, ``"≥20k"``.

    The query's bins end one past the budget (``1000–2000`` is ``[1000, 2001)``), so an upper
    bound ending in 1 is shown rounded down.
    """
    if upper is None or (isinstance(upper, float) and math.isnan(upper)):
        return f"≥{compact_number(lower)}"
    top = upper - 1 if upper % 10 == 1 else upper
    if lower == 0:
        return f"<{compact_number(top)}"
    low = lower - 1 if lower % 10 == 1 else lower
    return f"{compact_number(low)}–{compact_number(top)}"


def short_label(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (axis labels of narrow charts).

    >>> short_label("invalid_arguments_json")
    'invalid_argument…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def errors_by_type_chart(df: pd.DataFrame) -> go.Figure:
    """Horizontal bars of errors per error type (``error_type``, ``errors``), biggest on top,
    each in its error type's color."""
    data = df.iloc[::-1]  # Plotly draws the first category at the bottom.
    types = [str(t) for t in data["error_type"]]
    errors = [int(n) for n in data["errors"]]
    bars = go.Bar(
        x=errors,
        y=[plot_text(short_label(t)) for t in types],
        customdata=plot_texts(types),
        orientation="h",
        marker_color=[palette.color("error_type", t) for t in types],
        name="errors",
        text=[f"{n:,}" for n in errors],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{customdata}: %{x:,} errors<extra></extra>",
    )
    # The counts are on the bars; a count axis would crowd the narrow chart.
    counts_axis = {
        "showticklabels": False,
        "showgrid": False,
        "range": [0, max([*errors, 1]) * 1.25],
    }
    layout = _small_layout(
        "Errors by type", "", "", subtitle="error results, top 10", xaxis=counts_axis
    )
    return go.Figure(data=[bars], layout=layout)


def token_histogram_chart(df: pd.DataFrame, budget: int) -> go.Figure:
    """Tool Messages per token-size bin (``bin``, ``lower``, ``upper``, ``results``,
    ``over_budget``); bins over the budget in the problem color. The axis shows compact bin
    labels (:func:`bin_label`), the hover the exact bin."""
    colors = [palette.PROBLEM if over else palette.NEUTRAL for over in df["over_budget"]]
    bars = go.Bar(
        x=[bin_label(lo, up) for lo, up in zip(df["lower"], df["upper"], strict=True)],
        y=[int(n) for n in df["results"]],
        marker_color=colors,
        name="Tool Messages",
        customdata=[str(b) for b in df["bin"]],
        hovertemplate="%{customdata} tokens: %{y:,} results<extra></extra>",
    )
    layout = _small_layout(
        "Tool Message size",
        "",
        "results",
        subtitle=f"tokens; red: over {budget:,}",
        xaxis={"type": "category", "tickangle": -45},
        yaxis={"tickformat": ",d"},
    )
    return go.Figure(data=[bars], layout=layout)


def occurrence_chart(df: pd.DataFrame, k: int) -> go.Figure:
    """Calls per occurrence (``occurrence``, ``label``, ``calls``); the k-th time and later in
    the problem color (those repeats make a loop).

    First calls outnumber repeats by orders of magnitude, so the count axis is logarithmic
    (decades only) and every bar carries its count; the axis starts below 1 so that a single
    call still shows as a bar.
    """
    calls = [int(n) for n in df["calls"]]
    colors = [palette.PROBLEM if int(o) >= k else palette.NEUTRAL for o in df["occurrence"]]
    bars = go.Bar(
        x=plot_texts(df["label"]),
        y=calls,
        marker_color=colors,
        name="calls",
        text=[f"{n:,}" for n in calls],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{x}. time: %{y:,} calls<extra></extra>",
    )
    top = math.log10(max([*calls, 1]))
    layout = _small_layout(
        "Repeats of the same call",
        "n-th identical call",
        "calls",
        subtitle=f"red: loop (k = {k})",
        xaxis={"type": "category"},
        yaxis={"type": "log", "dtick": 1, "tickformat": ",d", "range": [-0.3, top + 0.5]},
    )
    return go.Figure(data=[bars], layout=layout)


def verdict_label(verdict: str) -> str:
    """``no_next_action`` → ``no next action``."""
    return verdict.replace("_", " ")


def verdict_chart(df: pd.DataFrame) -> go.Figure:
    """Suggestion verdicts (``verdict``, ``results``) as horizontal bars in ``df`` order from
    the top, each verdict in its own color and labelled in words."""
    data = df.iloc[::-1]
    verdicts = [str(v) for v in data["verdict"]]
    results = [int(n) for n in data["results"]]
    bars = go.Bar(
        x=results,
        y=[plot_text(verdict_label(v)) for v in verdicts],
        orientation="h",
        marker_color=[palette.color("verdict", v) for v in verdicts],
        name="results",
        text=[f"{n:,}" for n in results],
        textposition="auto",
        hovertemplate="%{y}: %{x:,}<extra></extra>",
    )
    layout = _small_layout(
        "Were suggestions followed?",
        "",
        "",
        subtitle="results with a suggestion",
        xaxis={"tickformat": ",d"},
    )
    return go.Figure(data=[bars], layout=layout)
