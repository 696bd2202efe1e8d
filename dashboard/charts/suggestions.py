"""Chart builders for the Suggestions page: pure functions from DataFrames to Plotly figures.

A follow rate is never drawn without its counts: every bar carries ``followed/decided`` as text.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard import palette
from dashboard.charts.plot_text import plot_text, plot_texts
from dashboard.charts.stacked import segment_bars
from db.contract.vocabulary import VERDICTS

#: What followed an error: the next call's status colors (no later call: grey).
OUTCOME_COLORS: dict[str, str] = {
    "recovered": palette.color("status", "success"),
    "not_recovered": palette.color("status", "error"),
    "no_next_call": palette.GRAY.hex,
}


def rate_label(followed: int, decided: int) -> str:
    """``"9/12 (75 %)"``, or ``"0 decided"`` when there is no followed or ignored verdict."""
    if decided == 0:
        return "0 decided"
    return f"{followed}/{decided} ({round(100 * followed / decided)} %)"


def verdict_chart(df: pd.DataFrame) -> go.Figure:
    """Stacked bars: results per verdict, one segment per suggestion kind.

    ``df`` has columns ``verdict``, ``suggestion_kind``, ``results``.
    """
    present = set(df["verdict"])
    verdicts = [v for v in VERDICTS if v in present] + sorted(present - set(VERDICTS))
    kinds = sorted(set(df["suggestion_kind"]))
    traces = segment_bars(df, by="suggestion_kind", groups=kinds, x="verdict", y="results")
    layout = {
        "barmode": "stack",
        "xaxis": {
            "categoryorder": "array",
            "categoryarray": plot_texts(verdicts),
            "title": "verdict",
            # The verdicts in words on the axis ("no next action"); the data keeps the names.
            "tickvals": plot_texts(verdicts),
            "ticktext": [plot_text(v.replace("_", " ")) for v in verdicts],
        },
        "yaxis": {"title": {"text": "results with a suggestion"}},
        "legend": {"title": {"text": "suggestion kind"}},
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }
    return go.Figure(data=traces, layout=layout)


def follow_rate_chart(df: pd.DataFrame, key: str) -> go.Figure:
    """Horizontal bars: follow rate (%) per ``key`` (``tool`` or ``error_type``) with counts.

    ``df`` has columns ``key``, ``followed``, ``decided``, ``follow_rate``; rows without decided
    verdicts get an empty bar and the text ``0 decided``.
    """
    names = plot_texts(df[key])
    rates = [None if pd.isna(r) else round(float(r) * 100, 1) for r in df["follow_rate"]]
    texts = [rate_label(int(f), int(d)) for f, d in zip(df["followed"], df["decided"], strict=True)]
    bars = go.Bar(
        y=names,
        x=[0 if r is None else r for r in rates],
        orientation="h",
        text=texts,
        textposition="outside",
        marker_color=palette.color("verdict", "followed"),
        hovertemplate="%{y}: %{text}<extra></extra>",
    )
    layout = {
        "xaxis": {"title": "follow rate (%)", "range": [0, 115]},
        "yaxis": {"categoryorder": "array", "categoryarray": names[::-1], "title": None},
        "height": max(240, 34 * len(names) + 110),
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }
    return go.Figure(data=[bars], layout=layout)


def recovery_chart(df: pd.DataFrame) -> go.Figure:
    """Stacked bars: what followed error results, with vs without a suggestion.

    ``df`` has columns ``group``, ``recovered``, ``not_recovered``, ``no_next_call``.
    """
    groups = plot_texts(df["group"])
    traces = [
        go.Bar(
            name=label,
            x=groups,
            y=[int(n) for n in df[outcome]],
            marker_color=OUTCOME_COLORS[outcome],
        )
        for outcome, label in (
            ("recovered", "next call of the tool succeeded"),
            ("not_recovered", "next call failed"),
            ("no_next_call", "no later call of the tool"),
        )
    ]
    layout = {
        "barmode": "stack",
        "yaxis": {"title": {"text": "error results"}},
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    }
    return go.Figure(data=traces, layout=layout)
