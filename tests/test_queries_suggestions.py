"""Queries of the Suggestions page, on SQLite and PostgreSQL: follow rates with their counts,
verdicts, recovery and examples.

On ``analysis_store``, so every value asserted here is exact.
"""

from __future__ import annotations

import sqlalchemy as sa
from page_support import rows

from db.queries import suggestions
from db.queries.filters import Filters
from db.rollups import upkeep as rollups
from db.rollups.read import base_tables
from db.schema import ToolResultRow


def test_follow_rate_by_tool_comes_with_its_counts(analysis_store: sa.Engine) -> None:
    assert rows(suggestions.follow_rates(analysis_store, by="tool")) == [
        ("get_weather", 2, 1, 1, 0, 0, 2, 0.5),
        ("write_file", 2, 0, 1, 0, 1, 1, 0.0),
        ("search", 1, 1, 0, 0, 0, 1, 1.0),
    ]


def test_follow_rate_by_error_type_uses_corrected_types_and_verdicts(
    analysis_store: sa.Engine,
) -> None:
    assert rows(suggestions.follow_rates(analysis_store, by="error_type")) == [
        ("conflict", 2, 0, 1, 0, 1, 1, 0.0),
        ("rate_limit", 2, 1, 1, 0, 0, 2, 0.5),
        ("invalid_params", 1, 1, 0, 0, 0, 1, 1.0),
    ]


def test_follow_rate_is_none_when_nothing_was_decided(analysis_store: sa.Engine) -> None:
    df = suggestions.follow_rates(analysis_store, Filters(tool="write_file"), by="tool")
    assert df["follow_rate"].iloc[0] == 0.0
    nothing = suggestions.follow_rates(analysis_store, Filters(tool="lookup"))
    assert nothing.empty


def test_verdict_breakdown_in_verdict_order(analysis_store: sa.Engine) -> None:
    assert rows(suggestions.verdict_breakdown(analysis_store)) == [
        ("followed", "retry_after", 1),
        ("followed", "use_instead", 1),
        ("ignored", "missing_param", 1),
        ("ignored", "retry_after", 1),
        ("no_next_action", "missing_param", 1),
    ]


def test_verdict_breakdown_under_a_filter_and_with_a_kind_outside_the_vocabulary(
    analysis_store: sa.Engine,
) -> None:
    assert rows(suggestions.verdict_breakdown(analysis_store, Filters(agent="support"))) == [
        ("followed", "retry_after", 1),
        ("followed", "use_instead", 1),
        ("ignored", "retry_after", 1),
    ]
    # Counted from the results per kind of the vocabulary in one pass; a kind outside it (and
    # a result without one) is counted by the grouped statement instead, in the same order.
    # The rows change behind the rollups' back: the base tables are read, then the rollups
    # are recounted and give the same.
    with analysis_store.begin() as conn:
        kinds = sa.select(ToolResultRow.id, ToolResultRow.suggestion_kind).where(
            ToolResultRow.suggestion_kind.is_not(None)
        )
        ids = [i for i, _ in conn.execute(kinds.order_by(ToolResultRow.id)).all()]
        conn.execute(
            sa.update(ToolResultRow).where(ToolResultRow.id == ids[0]).values(suggestion_kind=None)
        )
        conn.execute(
            sa.update(ToolResultRow)
            .where(ToolResultRow.id == ids[1])
            .values(suggestion_kind="from_the_docs")
        )
    expected = [
        ("followed", "from_the_docs", 1),
        ("followed", "use_instead", 1),
        ("ignored", "(none)", 1),
        ("ignored", "missing_param", 1),
        ("no_next_action", "missing_param", 1),
    ]
    with base_tables():
        assert rows(suggestions.verdict_breakdown(analysis_store)) == expected
    rollups.rebuild(analysis_store)
    assert rows(suggestions.verdict_breakdown(analysis_store)) == expected


def test_recovery_with_and_without_a_suggestion(analysis_store: sa.Engine) -> None:
    assert rows(suggestions.recovery_rates(analysis_store)) == [
        ("with suggestion", 5, 1, 2, 2, 0.3333),
        ("without suggestion", 1, 0, 0, 1, None),
    ]


def test_verdict_examples_show_the_advice_and_the_reason(analysis_store: sa.Engine) -> None:
    assert rows(suggestions.verdict_examples(analysis_store, "ignored")) == [
        ("run-a", "1:0", "get_weather", "rate_limit", "retry after 6s", "retry_after",
         "retried after 1 s, advised 6 s"),
        ("run-c", "3:0", "write_file", "conflict", "missing required parameter mode",
         "missing_param", "next call changed other arguments"),
    ]  # fmt: skip
    assert suggestions.verdict_examples(analysis_store, "unclear").empty
