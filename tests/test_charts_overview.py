"""The Overview chart builders: pure functions, checked by the data they put in the figure."""

from __future__ import annotations

import math

import pandas as pd

from dashboard import palette
from dashboard.charts import overview as charts


def test_errors_by_type_chart_draws_the_biggest_type_on_top() -> None:
    df = pd.DataFrame({"error_type": ["not_found", "rate_limit"], "errors": [2, 1]})
    fig = charts.errors_by_type_chart(df)
    (bar,) = fig.data
    assert bar.orientation == "h"
    # Plotly draws the first category at the bottom, so the order is reversed.
    assert list(bar.y) == ["rate_limit", "not_found"]
    assert list(bar.customdata) == ["rate_limit", "not_found"]
    assert list(bar.x) == [1, 2]
    assert list(bar.text) == ["1", "2"]
    assert fig.layout.title.text == "Errors by type"
    # Each type in the color it has on the Errors page.
    assert list(bar.marker.color) == [
        palette.color("error_type", "rate_limit"),
        palette.color("error_type", "not_found"),
    ]


def test_token_histogram_chart_colors_the_bins_over_budget() -> None:
    df = pd.DataFrame(
        {
            "bin": ["0–99", "1000–2000", "2001–4999", "20000+"],
            "lower": [0, 1000, 2001, 20000],
            "upper": [100.0, 2001.0, 5000.0, float("nan")],
            "results": [8, 0, 1, 2],
            "over_budget": [False, False, True, True],
        }
    )
    fig = charts.token_histogram_chart(df, 2000)
    (bar,) = fig.data
    # Compact labels on the narrow axis, the exact bin in the hover.
    assert list(bar.x) == ["<100", "1k–2k", "2k–5k", "≥20k"]
    assert list(bar.customdata) == ["0–99", "1000–2000", "2001–4999", "20000+"]
    assert list(bar.y) == [8, 0, 1, 2]
    assert list(bar.marker.color) == [
        palette.NEUTRAL, palette.NEUTRAL, palette.PROBLEM, palette.PROBLEM,
    ]  # fmt: skip
    assert fig.layout.title.text == "Tool Message size"
    assert fig.layout.title.subtitle.text == "tokens; red: over 2,000"
    assert fig.layout.xaxis.type == "category"


def test_bin_labels_are_compact() -> None:
    assert [charts.bin_label(lo, up) for lo, up in [(0, 100), (100, 250), (500, 1000),
            (1000, 1501), (1501, 2500), (10000, 20000), (20000, None)]] == [
        "<100", "100–250", "500–1k", "1k–1.5k", "1.5k–2.5k", "10k–20k", "≥20k",
    ]  # fmt: skip
    assert [charts.compact_number(n) for n in (0, 999, 1000, 2500, 1_500_000)] == [
        "0", "999", "1k", "2.5k", "1.5M",
    ]  # fmt: skip


def test_occurrence_chart_colors_repeats_from_k_on() -> None:
    df = pd.DataFrame({"occurrence": [1, 2, 3, 10], "label": ["1", "2", "3", "10+"]})
    df["calls"] = [5, 2, 1, 4]
    fig = charts.occurrence_chart(df, 3)
    (bar,) = fig.data
    assert list(bar.x) == ["1", "2", "3", "10+"]
    assert list(bar.y) == [5, 2, 1, 4]
    assert list(bar.marker.color) == [
        palette.NEUTRAL,
        palette.NEUTRAL,
        palette.PROBLEM,
        palette.PROBLEM,
    ]
    assert fig.layout.title.text == "Repeats of the same call"
    assert fig.layout.title.subtitle.text == "red: loop (k = 3)"
    assert list(bar.text) == ["5", "2", "1", "4"]


def test_occurrence_chart_counts_on_a_log_axis_that_still_shows_a_single_call() -> None:
    df = pd.DataFrame({"occurrence": [1, 2], "label": ["1", "2"], "calls": [2362, 1]})
    axis = charts.occurrence_chart(df, 3).layout.yaxis
    assert (axis.type, axis.dtick, axis.tickformat) == ("log", 1, ",d")
    # log10(1) = 0: the axis starts below it, so the bar of one call has a height.
    assert axis.range[0] == -0.3
    assert round(axis.range[1], 3) == round(math.log10(2362) + 0.5, 3)


def test_verdict_chart_gives_each_verdict_its_color() -> None:
    df = pd.DataFrame(
        {"verdict": ["followed", "ignored", "unclear", "no_next_action"], "results": [1, 1, 1, 0]}
    )
    fig = charts.verdict_chart(df)
    (bar,) = fig.data
    # Horizontal, first verdict on top (plotly draws the first category at the bottom).
    assert bar.orientation == "h"
    assert list(bar.y) == ["no next action", "unclear", "ignored", "followed"]
    assert list(bar.x) == [0, 1, 1, 1]
    assert list(bar.marker.color) == [
        palette.color("verdict", "no_next_action"),
        palette.color("verdict", "unclear"),
        palette.color("verdict", "ignored"),
        palette.color("verdict", "followed"),
    ]


def test_small_charts_share_one_height_and_hide_the_legend() -> None:
    df = pd.DataFrame({"verdict": ["followed"], "results": [1]})
    fig = charts.verdict_chart(df)
    assert fig.layout.height == charts.SMALL_HEIGHT
    assert fig.layout.showlegend is False


def test_long_error_types_are_cut_on_the_axis_and_whole_in_the_hover() -> None:
    df = pd.DataFrame({"error_type": ["invalid_arguments_json"], "errors": [4]})
    (bar,) = charts.errors_by_type_chart(df).data
    assert (list(bar.y), list(bar.customdata)) == (
        ["invalid_argument…"],
        ["invalid_arguments_json"],
    )
    assert len(bar.y[0]) == charts.LABEL_CHARS
