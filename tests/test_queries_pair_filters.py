"""The Tool calls filters other pages open (a token range, a finding kind), on SQLite and
PostgreSQL, over ``analysis_store`` (``dbfixture.build_pages2_database``; result tokens 10, 10,
2,500 | 30, 500, 12 | 100, 40, 100, 40, 5; run-a's 2,500-token result has the one finding,
``oversized``)."""

from __future__ import annotations

import sqlalchemy as sa

from db.queries.filters import Filters
from db.queries.pairs import PairQuery, count_pairs, list_pairs


def test_a_token_range_keeps_the_tool_messages_inside_it(analysis_store: sa.Engine) -> None:
    assert count_pairs(analysis_store, query=PairQuery(min_tokens=0, max_tokens=100)) == 7
    assert count_pairs(analysis_store, query=PairQuery(min_tokens=100, max_tokens=501)) == 3
    assert count_pairs(analysis_store, query=PairQuery(min_tokens=2001)) == 1
    biggest = list_pairs(
        analysis_store, query=PairQuery(min_tokens=100, sort="tokens", descending=True)
    )
    assert biggest["tokens"].tolist() == [2500, 500, 100, 100]
    assert count_pairs(analysis_store, Filters(tool="get_weather"), PairQuery(max_tokens=11)) == 2


def test_a_finding_keeps_the_pairs_it_was_found_on(analysis_store: sa.Engine) -> None:
    oversized = list_pairs(analysis_store, query=PairQuery(finding="oversized"))
    assert oversized[["trace", "pair", "tokens"]].values.tolist() == [["run-a", "5:0", 2500]]
    assert count_pairs(analysis_store, query=PairQuery(finding="oversized")) == 1
    assert count_pairs(analysis_store, query=PairQuery(finding="unknown_tool")) == 0


def test_how_an_error_was_recognized_keeps_those_results(analysis_store: sa.Engine) -> None:
    explicit = PairQuery(status="error", status_source="explicit")
    assert count_pairs(analysis_store, query=explicit) == 4
    inferred = list_pairs(analysis_store, query=PairQuery(status="error", status_source="inferred"))
    assert inferred[["trace", "pair"]].values.tolist() == [["run-b", "1:0"], ["run-b", "5:0"]]
