"""Chart builders of the Errors page, without Streamlit.

Each builder takes the DataFrame its query returns; the assertions read the figure's trace data.
"""

from __future__ import annotations

import pandas as pd

from dashboard import palette
from dashboard.charts import errors


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
