"""Chart builders of the Errors, Tokens, Loops and Suggestions pages, without Streamlit.

Each builder takes the DataFrame its query returns; the assertions read the figure's trace data.
"""

from __future__ import annotations

import math

import pandas as pd

from dashboard import palette
from dashboard.charts import errors, loops, suggestions, tokens


def test_error_types_by_tool_stack_one_trace_per_type_in_taxonomy_order() -> None:
    df = pd.DataFrame(
        {
            "tool": ["get_weather", "get_weather", "search"],
            "error_type": ["rate_limit", "my_protocol_type", "timeout"],
            "errors": [3, 1, 2],
        }
    )
    fig = errors.error_types_by_tool_chart(df)
    assert [(t.name, t.y, t.x) for t in fig.data] == [
        ("rate_limit", ("get_weather",), (3,)),
        ("timeout", ("search",), (2,)),
        ("my_protocol_type", ("get_weather",), (1,)),
    ]
    assert fig.layout.barmode == "stack"
    # The tool with the most errors is drawn on top (plotly draws categories bottom-up).
    assert fig.layout.yaxis.categoryarray == ("search", "get_weather")


def test_an_error_type_has_the_same_color_on_every_chart() -> None:
    by_tool = errors.error_types_by_tool_chart(
        pd.DataFrame({"tool": ["a"], "error_type": ["timeout"], "errors": [1]})
    )
    over_time = errors.errors_over_time_chart(
        pd.DataFrame({"bucket": ["d1", "d1"], "error_type": ["auth", "timeout"], "errors": [1, 1]}),
        "day",
    )
    timeout = palette.color("error_type", "timeout")
    assert by_tool.data[0].marker.color == timeout
    assert [t.marker.color for t in over_time.data] == [
        timeout,
        palette.color("error_type", "auth"),
    ]
    assert palette.color("error_type", "auth") != timeout
    assert palette.color("error_type", "custom") == palette.color("error_type", "custom")


def test_errors_over_time_keep_the_bucket_order_of_the_query() -> None:
    df = pd.DataFrame(
        {
            "bucket": ["import 2", "import 2", "import 10"],
            "error_type": ["auth", "timeout", "auth"],
            "errors": [1, 2, 5],
        }
    )
    fig = errors.errors_over_time_chart(df, "import")
    assert [(t.name, t.x, t.y) for t in fig.data] == [
        ("timeout", ("import 2",), (2,)),
        ("auth", ("import 2", "import 10"), (1, 5)),
    ]
    assert fig.layout.xaxis.categoryarray == ("import 2", "import 10")
    assert fig.layout.xaxis.title.text == "import"


def test_error_sources_sum_rules_per_source_in_a_fixed_order() -> None:
    df = pd.DataFrame(
        {
            "status_source": ["inferred", "explicit", "inferred", "protocol"],
            "rule": ["http_429", "is_error", "not_found_text", "protocol_status"],
            "errors": [2, 4, 1, 3],
        }
    )
    bar = errors.error_sources_chart(df).data[0]
    assert (bar.x, bar.y) == (("explicit", "protocol", "inferred"), (4, 3, 3))


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
