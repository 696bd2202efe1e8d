"""Queries of the Tokens page, on SQLite and PostgreSQL: per-tool quantiles, the budget, the
biggest results, trace shares and the encoding.

On ``analysis_store``, so every value asserted here is exact.
"""

from __future__ import annotations

import sqlalchemy as sa
from page_support import rows

from db.queries import histograms, tokens
from db.queries.filters import Filters
from db.queries.ranks import summed_counts


def test_token_quantiles_per_tool_are_nearest_rank_computed_in_sql(
    analysis_store: sa.Engine,
) -> None:
    df = tokens.token_quantiles_by_tool(analysis_store)
    assert rows(df)[:3] == [
        ("get_weather", 4, 10, 10, 10, 12, 2500, 2500, 633.0),
        ("read_file", 2, 100, 100, 100, 100, 100, 100, 100.0),
        ("write_file", 2, 40, 40, 40, 40, 40, 40, 40.0),
    ]
    assert list(df["tool"]) == [
        "get_weather", "read_file", "write_file", "(unknown)", "lookup", "search",
    ]  # fmt: skip


def test_token_quantiles_of_one_tool_use_every_result(analysis_store: sa.Engine) -> None:
    df = tokens.token_quantiles_by_tool(analysis_store, Filters(tool="get_weather"))
    assert rows(df) == [("get_weather", 4, 10, 10, 10, 12, 2500, 2500, 633.0)]


def test_token_quantiles_of_an_empty_selection_are_an_empty_frame(
    analysis_store: sa.Engine,
) -> None:
    df = tokens.token_quantiles_by_tool(analysis_store, Filters(agent="nobody"))
    assert df.empty and list(df.columns)[:3] == ["tool", "results", "min"]


def test_budget_excess_counts_results_strictly_above_the_budget(analysis_store: sa.Engine) -> None:
    assert tokens.budget_excess(analysis_store, 2000) == (1, 11)
    assert tokens.budget_excess(analysis_store, 100) == (2, 11)
    assert tokens.budget_excess(analysis_store, 2000, Filters(tool="lookup")) == (0, 1)


def test_biggest_results_come_largest_first_with_their_pair(analysis_store: sa.Engine) -> None:
    df = tokens.biggest_results(analysis_store, limit=3)
    assert rows(df[["trace", "pair", "tool", "tokens", "status"]]) == [
        ("run-a", "5:0", "get_weather", 2500, "success"),
        ("run-b", "3:0", "lookup", 500, "success"),
        ("run-c", "1:0", "read_file", 100, "success"),
    ]
    assert df["preview"].iloc[0] == ("sunny " * 500)[: tokens.PREVIEW_CHARS]


def test_unpaired_results_are_addressed_by_their_own_seq(analysis_store: sa.Engine) -> None:
    df = tokens.biggest_results(analysis_store, Filters(tool="(unknown)"))
    assert list(df["pair"]) == ["r10"]


def test_trace_share_histogram_has_every_bin_and_caps_at_the_last(
    analysis_store: sa.Engine,
) -> None:
    df = tokens.trace_share_histogram(analysis_store)
    assert list(df["traces"]) == [0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    assert (df["share_from"].iloc[2], df["share_to"].iloc[2]) == (0.2, 0.3)


def test_tool_result_share_and_encoding_of_the_latest_import(analysis_store: sa.Engine) -> None:
    assert tokens.tool_result_share(analysis_store) == {
        "traces": 3,
        "total_tokens": 7275,
        "tool_result_tokens": 3347,
    }
    assert tokens.latest_encoding(analysis_store) == "cl100k_base"


def test_latest_encoding_of_an_empty_store_is_none(engine: sa.Engine) -> None:
    assert tokens.latest_encoding(engine) is None


def test_rollup_rows_of_a_size_histogram_are_summed_per_tool_and_size_in_order() -> None:
    # Rows as a rollup range returns them: any order, a (tool, tokens) pair on several rows.
    summed = histograms._frame(
        *summed_counts(
            ["web", "bash", "web", "Bash", "bash", "web"], [40, 7, 3, 7, 7, 40], [1, 2, 5, 1, 3, 4]
        )
    )
    assert summed.to_dict("list") == {
        "tool": ["Bash", "bash", "web", "web"],
        "tokens": [7, 7, 3, 40],
        "results": [1, 5, 5, 5],
    }
    assert list(summed.dtypes.astype(str)) == ["object", "int64", "int64"]
    empty = histograms._frame(*summed_counts([], [], []))
    assert empty.empty
    assert list(empty.columns) == ["tool", "tokens", "results"]
