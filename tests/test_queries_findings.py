"""The Findings queries on the fixture store and on imported runs, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from dbfixture import build_fixture
from lint_runs import write_runs

from db.contract.vocabulary import FINDING_KINDS
from db.queries import findings as q
from db.queries import overview
from db.queries.filters import Filters
from ingest.importing.pipeline import import_paths
from ingest.outputs.lint import lint_paths


@pytest.fixture
def store(engine: sa.Engine) -> sa.Engine:
    build_fixture(engine)
    return engine


@pytest.fixture
def runs(engine: sa.Engine, tmp_path: Path) -> tuple[sa.Engine, Path]:
    path = write_runs(tmp_path / "runs.jsonl")
    import_paths(engine, [path], workers=1)
    return engine, path


def test_every_kind_is_counted_in_vocabulary_order_zeros_included(store: sa.Engine) -> None:
    counts = q.finding_kind_counts(store)
    assert counts["kind"].tolist() == list(FINDING_KINDS)
    found = counts[counts["occurrences"] > 0]
    assert found.to_dict("records") == [
        {"kind": k, "level": level, "occurrences": 1, "traces": 1, "tools": 1}
        for k, level in [
            ("bare_status", "warning"),
            ("error_without_suggestion", "warning"),
            ("oversized", "warning"),
            ("unparsed_arguments", "error"),
            ("missing_result", "error"),
            ("orphan_result", "error"),
            ("duplicate_result", "error"),
            ("late_result", "warning"),
        ]
    ]


def test_occurrences_name_the_trace_tool_call_and_message_with_the_pair_to_open(
    store: sa.Engine,
) -> None:
    title = "Where is order 7? [click](http://evil.example) <b>bold</b> :red[alarm]"
    assert q.finding_occurrences(store, "orphan_result").to_dict("records") == [
        {
            "trace": "orders-7",
            "title": title,
            "pair": "r3",
            "tool": "send_sms",
            "call_id": "zz9",
            "message": "the Tool Message answers no call",
        }
    ]
    assert q.finding_occurrences(store, "oversized").to_dict("records") == [
        {
            "trace": "weather-1",
            "title": "Weather in Paris?",
            "pair": "6:0",
            "tool": "get_weather",
            "call_id": "c3",
            "message": "3,000 tokens, over the token budget",
        }
    ]
    assert q.finding_occurrences(store, "missing_result")[["pair", "call_id"]].values.tolist() == [
        ["1:1", "t2"]
    ]
    empty = q.finding_occurrences(store, "unknown_tool")
    assert (list(empty.columns), len(empty)) == (list(q.OCCURRENCE_COLUMNS), 0)


def test_occurrences_follow_the_shared_filters_and_page(store: sa.Engine) -> None:
    assert q.finding_occurrence_count(store, "oversized") == 1
    assert q.finding_occurrence_count(store, "oversized", Filters(import_id=2)) == 0
    assert q.finding_occurrences(store, "oversized", Filters(import_id=2)).empty
    assert q.finding_occurrences(store, "oversized", offset=1).empty


def test_a_filtered_page_of_occurrences_keeps_the_order_and_the_limit(store: sa.Engine) -> None:
    first_import = Filters(import_id=1)
    assert q.finding_occurrences(store, "bare_status", first_import, limit=1)[
        ["trace", "pair", "tool", "call_id"]
    ].values.tolist() == [["orders-7", "4:0", "lookup_order", "t3"]]
    assert q.finding_occurrences(store, "bare_status", first_import, offset=1).empty
    assert q.finding_occurrences(store, "bare_status", Filters(agent="support-bot")).empty
    assert q.finding_occurrences(store, "oversized", Filters(model="gpt-4o"), limit=1)[
        ["trace", "pair", "message"]
    ].values.tolist() == [["weather-1", "6:0", "3,000 tokens, over the token budget"]]


def test_the_findings_page_says_what_lint_says_and_a_name_mismatch_counts_once(
    runs: tuple[sa.Engine, Path],
) -> None:
    engine, path = runs
    listed = {
        (row["trace"], row["call_id"], kind, row["message"])
        for kind in FINDING_KINDS
        for row in q.finding_occurrences(engine, kind).to_dict("records")
    }
    linted = {(f.trace, f.call, f.kind, f.message) for f in lint_paths([path]).findings}
    assert listed == linted
    assert len(listed) == 5
    counts = q.finding_kind_counts(engine).set_index("kind")["occurrences"]
    assert (counts["name_mismatch"], counts["undeclared_parameter"]) == (1, 1)
    assert q.finding_occurrences(engine, "undeclared_parameter").to_dict("records") == [
        {
            "trace": "run-1",
            "title": "Weather in Paris, and flights?",
            "pair": "1:0",
            "tool": "search",
            "call_id": "call_a",
            "message": "undeclared parameter 'page'",
        }
    ]


def test_the_scorecard_counts_findings_per_kind(runs: tuple[sa.Engine, Path]) -> None:
    engine, _ = runs
    card = overview.tool_scorecard(engine, 3, 2000).set_index("tool")
    assert card.loc["get_weather", "finding_kinds"] == {
        "error_without_suggestion": 1,
        "name_mismatch": 1,
        "arguments_schema_violation": 1,
    }
    assert card.loc["get_weather", "findings"] == 3
    assert card.loc["search", "finding_kinds"] == {"undeclared_parameter": 1}
    assert q.finding_counts_by_tool(engine).values.tolist() == [
        ["get_weather", "error_without_suggestion", 1],
        ["get_weather", "name_mismatch", 1],
        ["get_weather", "arguments_schema_violation", 1],
        ["lookup", "missing_result", 1],
        ["search", "undeclared_parameter", 1],
    ]
