"""The Overview chart builders: pure functions, checked by the data they put in the figure."""

from __future__ import annotations

import pandas as pd

from dashboard.charts import overview as charts


def test_errors_by_type_chart_draws_the_biggest_type_on_top() -> None:
    df = pd.DataFrame({"error_type": ["not_found", "rate_limit"], "errors": [2, 1]})
    fig = charts.errors_by_type_chart(df)
    (bar,) = fig.data
    assert bar.orientation == "h"
    # Plotly draws the first category at the bottom, so the order is reversed.
    assert list(bar.y) == ["rate_limit", "not_found"]
    assert list(bar.x) == [1, 2]
    assert fig.layout.title.text == "Errors by type"


def test_token_histogram_chart_colors_the_bins_over_budget() -> None:
    df = pd.DataFrame(
        {
            "bin": ["0–99", "1000–2000", "2001–4999"],
            "results": [8, 0, 1],
            "over_budget": [False, False, True],
        }
    )
    fig = charts.token_histogram_chart(df, 2000)
    (bar,) = fig.data
    assert list(bar.x) == ["0–99", "1000–2000", "2001–4999"]
    assert list(bar.y) == [8, 0, 1]
    assert list(bar.marker.color) == [charts.NEUTRAL, charts.NEUTRAL, charts.PROBLEM]
    assert fig.layout.title.text == "Tool Message size (budget 2,000 tokens)"
    assert fig.layout.xaxis.type == "category"


def test_occurrence_chart_colors_repeats_from_k_on() -> None:
    df = pd.DataFrame({"occurrence": [1, 2, 3, 10], "label": ["1", "2", "3", "10+"]})
    df["calls"] = [5, 2, 1, 4]
    fig = charts.occurrence_chart(df, 3)
    (bar,) = fig.data
    assert list(bar.x) == ["1", "2", "3", "10+"]
    assert list(bar.y) == [5, 2, 1, 4]
    assert list(bar.marker.color) == [
        charts.NEUTRAL,
        charts.NEUTRAL,
        charts.PROBLEM,
        charts.PROBLEM,
    ]
    assert fig.layout.title.text == "Repeated calls (loop at k = 3)"


def test_verdict_chart_gives_each_verdict_its_color() -> None:
    df = pd.DataFrame(
        {"verdict": ["followed", "ignored", "unclear", "no_next_action"], "results": [1, 1, 1, 0]}
    )
    fig = charts.verdict_chart(df)
    (bar,) = fig.data
    assert list(bar.x) == ["followed", "ignored", "unclear", "no_next_action"]
    assert list(bar.y) == [1, 1, 1, 0]
    assert list(bar.marker.color) == [
        charts.VERDICT_COLORS["followed"],
        charts.VERDICT_COLORS["ignored"],
        charts.VERDICT_COLORS["unclear"],
        charts.VERDICT_COLORS["no_next_action"],
    ]


def test_small_charts_share_one_height_and_hide_the_legend() -> None:
    df = pd.DataFrame({"verdict": ["followed"], "results": [1]})
    fig = charts.verdict_chart(df)
    assert fig.layout.height == charts.SMALL_HEIGHT
    assert fig.layout.showlegend is False
