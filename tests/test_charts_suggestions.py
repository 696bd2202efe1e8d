"""Chart builders of the Suggestions page, without Streamlit.

Each builder takes the DataFrame its query returns; the assertions read the figure's trace data.
"""

from __future__ import annotations

import pandas as pd

from dashboard.charts import suggestions


def test_rate_label_always_shows_the_counts() -> None:
    assert suggestions.rate_label(9, 12) == "9/12 (75 %)"
    assert suggestions.rate_label(0, 0) == "0 decided"


def test_follow_rate_bars_show_percent_and_counts_even_when_undecided() -> None:
    df = pd.DataFrame(
        {
            "tool": ["get_weather", "MultiEdit"],
            "followed": [1, 0],
            "decided": [2, 0],
            "follow_rate": pd.Series([0.5, None], dtype="object"),
        }
    )
    bar = suggestions.follow_rate_chart(df, "tool").data[0]
    assert (bar.y, bar.x, bar.text) == (
        ("get_weather", "MultiEdit"),
        (50.0, 0),
        ("1/2 (50 %)", "0 decided"),
    )


def test_verdict_chart_stacks_suggestion_kinds_in_verdict_order() -> None:
    df = pd.DataFrame(
        {
            "verdict": ["followed", "followed", "ignored", "no_next_action"],
            "suggestion_kind": ["retry_after", "use_instead", "retry_after", "missing_param"],
            "results": [1, 2, 3, 4],
        }
    )
    fig = suggestions.verdict_chart(df)
    assert [(t.name, t.x, t.y) for t in fig.data] == [
        ("missing_param", ("no_next_action",), (4,)),
        ("retry_after", ("followed", "ignored"), (1, 3)),
        ("use_instead", ("followed",), (2,)),
    ]
    assert fig.layout.xaxis.categoryarray == ("followed", "ignored", "no_next_action")
    assert fig.layout.xaxis.ticktext == ("followed", "ignored", "no next action")


def test_recovery_chart_stacks_outcomes_per_group() -> None:
    df = pd.DataFrame(
        {
            "group": ["with suggestion", "without suggestion"],
            "recovered": [1, 89],
            "not_recovered": [2, 102],
            "no_next_call": [2, 18],
        }
    )
    fig = suggestions.recovery_chart(df)
    assert [(t.name, t.y) for t in fig.data] == [
        ("next call of the tool succeeded", (1, 89)),
        ("next call failed", (2, 102)),
        ("no later call of the tool", (2, 18)),
    ]
    assert fig.data[0].x == ("with suggestion", "without suggestion")
