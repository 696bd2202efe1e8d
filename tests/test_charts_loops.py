"""Chart builders of the Loops page, without Streamlit.

Each builder takes the DataFrame its query returns; the assertions read the figure's trace data.
"""

from __future__ import annotations

import pandas as pd

from dashboard.charts import loops


def test_loops_by_tool_bars_carry_calls_and_wasted_tokens() -> None:
    df = pd.DataFrame(
        {"tool": ["get_weather", "read_file"], "loops": [2, 1], "calls": [7, 3],
         "wasted_tokens": [2510, 100]}
    )  # fmt: skip
    fig = loops.loops_by_tool_chart(df, 3)
    bar = fig.data[0]
    assert (bar.y, bar.x) == (("get_weather", "read_file"), (2, 1))
    assert [list(c) for c in bar.customdata] == [[7, 2510], [3, 100]]
    # Counts stay upright in thin bars (Plotly would turn them sideways).
    assert (bar.text, bar.textangle) == (("2", "1"), 0)
    assert fig.layout.xaxis.title.text == "signatures repeated ≥ 3 times in a trace"
    # Whole loops only: a tick per loop, no 0.5.
    assert (fig.layout.xaxis.dtick, fig.layout.xaxis.tickformat) == (1, ",d")


def test_loops_by_tool_leaves_tick_spacing_to_plotly_for_many_loops() -> None:
    df = pd.DataFrame({"tool": ["a"], "loops": [40], "calls": [120], "wasted_tokens": [9]})
    axis = loops.loops_by_tool_chart(df, 3).layout.xaxis
    assert (axis.dtick, axis.tickformat) == (None, ",d")
