"""Content search: phrases found in arguments, results and messages on both databases, combined
with the shared filters, kept current by the import and by ``reanalyze``."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from db.migrate import downgrade, upgrade
from db.queries.filters import NO_FILTERS, Filters
from db.queries.search import HIT_COLUMNS, search_content
from db.schema import TraceRow
from ingest.importing.pipeline import import_traces
from ingest.importing.reanalyze import reanalyze
from ingest.importing.rows import trace_title
from ingest.model import Message, ToolCall, ToolResult, Trace

T0 = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)


def _trace(name: str, agent: str, customer: str, result: str) -> Trace:
    call = ToolCall(
        call_index=0,
        tool_call_id="c1",
        name="get_customer",
        arguments_raw=f'{{"id": "{customer}"}}',
        arguments={"id": customer},
    )
    return Trace(
        format="openai_chat",
        source_file=f"{name}.json",
        external_id=name,
        agent=agent,
        started_at=T0,
        messages=[
            Message(seq=0, role="user", content=f"Why was {customer}\n charged twice?"),
            Message(seq=1, role="assistant", content="", tool_calls=[call]),
            Message(seq=2, role="tool", content=result, tool_result=ToolResult(tool_call_id="c1")),
            Message(seq=3, role="assistant", content="I could not read the account."),
        ],
    )


def _store(engine: sa.Engine) -> None:
    traces = [
        _trace("t-1", "support", "customer_4711", "Error: permission denied for customer_4711"),
        _trace("t-2", "billing", "customer-4711", '{"status": "ok", "plan": "pro"}'),
        _trace("t-3", "billing", "customer_9", "Denied permission: ask an admin"),
    ]
    import_traces(engine, traces, origin="test", source="search")


def _hits(engine: sa.Engine, text: str, f: Filters = NO_FILTERS) -> list[tuple[object, ...]]:
    hits = search_content(engine, text, f).hits
    return [
        (trace, kind, pair if isinstance(pair, str) else None, int(seq))
        for trace, kind, pair, seq in hits[["trace", "kind", "pair", "seq"]].itertuples(False)
    ]


def test_an_identifier_is_found_in_arguments_results_and_messages(engine: sa.Engine) -> None:
    _store(engine)
    page = search_content(engine, "customer_4711")
    assert list(page.hits.columns) == list(HIT_COLUMNS)
    assert page.total == 5
    # Words, not characters: customer-4711 is the same two words as customer_4711.
    assert _hits(engine, "customer_4711") == [
        ("t-1", "message", None, 0),
        ("t-1", "arguments", "1:0", 1),
        ("t-1", "result", "1:0", 2),
        ("t-2", "message", None, 0),
        ("t-2", "arguments", "1:0", 1),
    ]


def test_a_phrase_needs_its_words_in_order(engine: sa.Engine) -> None:
    _store(engine)
    assert _hits(engine, "Permission DENIED") == [("t-1", "result", "1:0", 2)]
    assert _hits(engine, "denied permission") == [("t-3", "result", "1:0", 2)]
    assert _hits(engine, "permission") == [("t-1", "result", "1:0", 2), ("t-3", "result", "1:0", 2)]


def test_the_snippet_is_one_line_of_plain_text_marking_the_match(engine: sa.Engine) -> None:
    _store(engine)
    hits = search_content(engine, "charged twice").hits
    assert hits["snippet"].tolist() == [
        "Why was customer_4711 «charged twice»?",
        "Why was customer-4711 «charged twice»?",
        "Why was customer_9 «charged twice»?",
    ]
    assert hits["title"].tolist() == [
        "Why was customer_4711 charged twice?",
        "Why was customer-4711 charged twice?",
        "Why was customer_9 charged twice?",
    ]


def test_the_shared_filters_narrow_the_hits(engine: sa.Engine) -> None:
    _store(engine)
    assert _hits(engine, "4711", Filters(agent="billing")) == [
        ("t-2", "message", None, 0),
        ("t-2", "arguments", "1:0", 1),
    ]
    # The tool filter keeps that tool's calls and the Tool Messages answering them.
    assert _hits(engine, "4711", Filters(tool="get_customer")) == [
        ("t-1", "arguments", "1:0", 1),
        ("t-1", "result", "1:0", 2),
        ("t-2", "arguments", "1:0", 1),
    ]
    assert _hits(engine, "4711", Filters(tool="send_email")) == []


def test_pages_follow_the_trace_order_and_a_query_without_words_finds_nothing(
    engine: sa.Engine,
) -> None:
    _store(engine)
    first = search_content(engine, "charged", limit=2)
    second = search_content(engine, "charged", limit=2, offset=2)
    assert first.hits["trace"].tolist() == ["t-1", "t-2"]
    assert second.hits["trace"].tolist() == ["t-3"]
    assert (first.total, second.total) == (3, 3)
    assert search_content(engine, " !? ").total == 0


def test_reanalyze_keeps_the_arguments_findable(engine: sa.Engine) -> None:
    _store(engine)
    # The calls are deleted and written again: each is in the index once, under its new row.
    assert reanalyze(engine) == 3
    assert _hits(engine, "customer 9") == [
        ("t-3", "message", None, 0),
        ("t-3", "arguments", "1:0", 1),
    ]


def test_the_title_is_the_first_user_text_on_one_line_and_shortened() -> None:
    long = Message(seq=1, role="user", content="word " * 40)
    assert (
        trace_title([Message(seq=0, role="user", content=" \n "), long])
        == ("word " * 16).strip()[:79].rstrip() + "…"
    )
    assert len(trace_title([long]) or "") == 80
    assert trace_title([Message(seq=0, role="system", content="You are")]) is None


def test_the_migration_titles_and_indexes_traces_already_stored(engine: sa.Engine) -> None:
    _store(engine)
    downgrade(engine, "0007")
    upgrade(engine)
    with engine.connect() as conn:
        titles = conn.execute(sa.select(TraceRow.title).order_by(TraceRow.id)).scalars().all()
    assert titles == [
        "Why was customer_4711 charged twice?",
        "Why was customer-4711 charged twice?",
        "Why was customer_9 charged twice?",
    ]
    assert _hits(engine, "customer 9") == [
        ("t-3", "message", None, 0),
        ("t-3", "arguments", "1:0", 1),
    ]
