"""Chart builders of the Tokens page, without Streamlit.

Each builder takes the DataFrame its query returns; the assertions read the figure's trace data.
"""

from __future__ import annotations

import math

import pandas as pd

from dashboard.charts import tokens


def quantiles() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "tool": ["get_weather", "lookup"],
            "results": [4, 1],
            "min": [10, 500],
            "p25": [10, 500],
            "p50": [10, 500],
            "p75": [12, 500],
            "p95": [2500, 500],
            "max": [2500, 500],
            "mean": [633.0, 500.0],
        }
    )


def test_token_box_is_drawn_from_precomputed_quantiles_with_the_budget_line() -> None:
    fig = tokens.token_box_chart(quantiles(), 2000)
    box = fig.data[0]
    # Horizontal boxes, the first tool on top.
    assert (box.orientation, box.y) == ("h", ("get_weather", "lookup"))
    assert fig.layout.yaxis.categoryarray == ("lookup", "get_weather")
    assert (box.lowerfence, box.q1, box.median, box.q3, box.upperfence) == (
        (10, 500),
        (10, 500),
        (10, 500),
        (12, 500),
        (2500, 500),
    )
    assert [list(c) for c in box.customdata] == [[4, 10, 10, 2500, 2500], [1, 500, 500, 500, 500]]
    line = fig.layout.shapes[0]
    assert (line.x0, line.x1, line.line.dash) == (2000, 2000, "dash")
    label = fig.layout.annotations[0]
    # On the log axis the label sits at log10(budget), where the line is.
    assert (label.text, label.x) == ("budget 2,000 tokens", math.log10(2000))
    linear = tokens.token_box_chart(quantiles(), 2000, log_x=False).layout.annotations[0]
    assert linear.x == 2000


def test_token_box_defaults_to_a_log_axis_with_a_tick_per_decade() -> None:
    axis = tokens.token_box_chart(quantiles(), 500).layout.xaxis
    assert (axis.type, axis.dtick, axis.title.text) == (
        "log",
        1,
        "tokens per Tool Message (log scale)",
    )
    linear = tokens.token_box_chart(quantiles(), 500, log_x=False).layout.xaxis
    assert (linear.type, linear.title.text) == ("linear", "tokens per Tool Message")


def test_token_box_draws_empty_results_at_1_on_the_log_axis_and_hovers_the_truth() -> None:
    df = quantiles().assign(min=[0, 500], p25=[0, 500])
    box = tokens.token_box_chart(df, 500).data[0]
    assert (box.lowerfence, box.q1) == ((1, 500), (1, 500))
    assert box.customdata[0][1] == 0  # min as it is
    assert tokens.token_box_chart(df, 500, log_x=False).data[0].lowerfence == (0, 500)


def test_trace_share_bars_are_labelled_with_percent_ranges() -> None:
    df = pd.DataFrame({"share_from": [0.0, 0.5], "share_to": [0.5, 1.0], "traces": [3, 7]})
    bar = tokens.trace_share_chart(df).data[0]
    assert (bar.x, bar.y) == (("0–50 %", "50–100 %"), (3, 7))
