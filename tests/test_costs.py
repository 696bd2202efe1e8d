"""What each Tool Message costs (``ingest.analysis.costs``, ``ingest.analysis.prices``): generated
traces with known sizes, usage, caching and a compaction, analyzed with their token counts given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cost_traces import (
    MEASURED_TOKENS,
    anthropic,
    call,
    measured_session,
    say,
    stored_traces,
    tool,
)
from dbfixture import OpenPage

from ingest.analysis.facts import ResultFacts
from ingest.analysis.prices import DEFAULT_PRICES, PriceError, load, parse
from ingest.analysis.trace import analyze_trace
from ingest.model import Message, Trace

PRICES = parse(
    "[models.claude-sonnet-4-5]\ninput = 3\ncached_input = 0.30\ncache_write = 3.75\n"
    "output = 15\n[models.gpt-4o]\ninput = 2.50\ncached_input = 1.25\noutput = 10\n"
)


def _facts(model: str, messages: list[Message], tokens: list[int]) -> dict[int, ResultFacts]:
    trace = Trace(format="test", source_file="t.jsonl", model=model, messages=messages)
    facts = analyze_trace(trace, tokens, prices=PRICES)
    return {r.message_seq: r for r in facts.results}


def _figures(r: ResultFacts) -> tuple[Any, ...]:
    return (r.later_calls, r.reread_tokens, r.reread_cached, r.reread_measured, r.cost_nano_usd)


def test_reported_usage_measures_rereads_cached_reads_and_the_compaction() -> None:
    results = _facts(
        "claude-sonnet-4-5-20250929", measured_session(anthropic(5000)), MEASURED_TOKENS
    )
    # a spans [4,000, 5,000) of every input: read fresh by the call of 5,000, then twice inside
    # a 6,000-token cached prefix; gone from the call of 3,000. 1,000 × $3 + 2,000 × $0.30.
    assert _figures(results[2]) == (3, 2000, 2000, True, 3_600_000)
    # b ends where the call of 6,500 ends its input: [5,300, 6,500), 700 of it inside the cached
    # prefix of 6,000, twice: (700 × 0.30 + 500 × 3) × 2 = 3,420 millionths of a dollar.
    assert _figures(results[4]) == (2, 1200, 700, True, 3_420_000)
    # c is read once, by the call of 7,000 (past its cached prefix), then compacted away.
    assert _figures(results[6]) == (1, 0, 0, True, 900_000)
    # d is read by the call after the compaction, fresh.
    assert _figures(results[8]) == (1, 0, 0, True, 600_000)


def test_a_cache_write_is_priced_at_the_cache_write_price() -> None:
    # The first call writes 4,800 tokens to the cache after an empty prefix and reads 200
    # fresh: a's [4,000, 5,000) is 800 written ($3.75) and 200 fresh ($3), then cached twice.
    first = anthropic(200, written=4800)
    results = _facts("claude-sonnet-4-5", measured_session(first), MEASURED_TOKENS)
    assert _figures(results[2]) == (3, 2000, 2000, True, 3_000_000 + 600_000 + 600_000)


def test_without_usage_every_later_assistant_turn_is_an_estimated_fresh_read() -> None:
    messages = [
        Message(seq=0, role="user", content="task"),
        call(1, "search"),
        tool(2, 1, "search"),
        call(3, "fetch"),
        tool(4, 3, "fetch"),
        say(5),
        Message(seq=6, role="user", content="thanks"),
        say(7),
    ]
    results = _facts("gpt-4o-2024-08-06", messages, [10, 0, 100, 0, 40, 5, 3, 5])
    # search: read by three turns (3, 5, 7), at $2.50 a million: 100 × 3 × 2.50.
    assert _figures(results[2]) == (3, 200, None, False, 750_000)
    assert _figures(results[4]) == (2, 40, None, False, 200_000)


def test_openai_usage_tells_cached_prompt_tokens() -> None:
    def usage(prompt: int, cached: int) -> dict[str, Any]:
        return {"prompt_tokens": prompt, "prompt_tokens_details": {"cached_tokens": cached}}

    messages = [
        Message(seq=0, role="user", content="task"),
        call(1, "search", usage(1000, 0)),
        tool(2, 1, "search"),
        say(3, usage(1600, 1024)),
        Message(seq=4, role="user", content="more"),
        say(5, usage(1700, 1600)),
    ]
    results = _facts("gpt-4o", messages, [990, 0, 500, 80, 20, 10])
    # search spans [1,100, 1,600): past the first cached prefix (1,024), inside the second.
    # 500 × 2.50 + 500 × 1.25 = 1,875 millionths.
    assert _figures(results[2]) == (2, 500, 500, True, 1_875_000)


def test_a_model_without_a_price_shows_tokens_only() -> None:
    messages = [call(0, "search"), tool(1, 0, "search"), say(2), say(4), say(6)]
    messages.insert(4, Message(seq=3, role="user", content="go on"))
    results = _facts("some-inhouse-model", messages, [0, 70, 1, 1, 1, 1])
    assert _figures(results[1]) == (2, 70, None, False, None)


def test_a_response_split_around_its_tool_messages_is_onecall() -> None:
    # Claude Code writes each block of a response on its own line: the second call of the
    # same response (same message id) comes after the first call's Tool Message, yet did not
    # read it.
    messages = [
        Message(seq=0, role="user", content="task"),
        call(1, "a", anthropic(100), source_id="msg_1"),
        tool(2, 1, "a"),
        call(3, "b", source_id="msg_1"),
        tool(4, 3, "b"),
        say(5, anthropic(400), source_id="msg_2"),
    ]
    results = _facts("claude-sonnet-4-5", messages, [90, 0, 150, 0, 150, 1])
    assert _figures(results[2]) == (1, 0, 0, True, 450_000)
    assert _figures(results[4]) == (1, 0, 0, True, 450_000)


def test_a_sub_agents_turns_do_not_read_the_main_conversations_tool_messages() -> None:
    messages = [
        Message(seq=0, role="user", content="task"),
        call(1, "Task"),
        say(2, branch="side"),
        say(3, branch="side"),
        tool(4, 1, "Task"),
        say(5, branch="side"),
        say(6),
    ]
    results = _facts("gpt-4o", messages, [5, 0, 1, 1, 80, 1, 1])
    assert _figures(results[4]) == (1, 0, None, False, 200_000)


def test_a_synthetic_turn_reporting_no_input_is_not_a_modelcall() -> None:
    messages = [
        Message(seq=0, role="user", content="task"),
        call(1, "a", anthropic(100)),
        tool(2, 1, "a"),
        say(3, anthropic(0)),
        Message(seq=4, role="user", content="retry"),
        say(5, anthropic(300)),
    ]
    results = _facts("claude-sonnet-4-5", messages, [90, 0, 150, 0, 5, 1])
    assert _figures(results[2]) == (1, 0, 0, True, 450_000)


def test_the_last_tool_message_of_a_measured_trace_is_read_by_nocall() -> None:
    messages = [call(0, "a", anthropic(100)), tool(1, 0, "a")]
    assert _figures(_facts("claude-sonnet-4-5", messages, [0, 30])[1]) == (0, 0, 0, True, 0)


def test_the_default_price_table_names_its_date_and_sources() -> None:
    # Every entry names the page its prices were checked against.
    text = DEFAULT_PRICES.read_text(encoding="utf-8")
    parts = text.split("\n[models.")
    assert len(parts) == 1 + 19
    # The text before each entry ends with the comment naming its source.
    assert all(part.rstrip().splitlines()[-1].startswith("# ") for part in parts[:-1])
    table = load(str(DEFAULT_PRICES))
    assert table.source["checked"] == "2026-12-05"
    assert set(table.source) == {"checked", "how", "anthropic", "anthropic_models", "openai"}
    sonnet = table.price("claude-sonnet-4-20250514")
    assert sonnet is not None
    assert (sonnet.input, sonnet.cached_input, sonnet.cache_write, sonnet.output) == (
        3_000_000,
        300_000,
        3_750_000,
        15_000_000,
    )
    mini = table.price("openai/gpt-4o-mini-2024-07-18")
    assert mini is not None and mini.input == 150_000
    assert table.price("gpt-4o-mini-tts") is None  # a neighbour, not a dated gpt-4o-mini
    assert table.price("gemini-2.5-pro") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.m]\ninput = 1\noutput = 2\n", "p.toml: models.m: missing cached_input"),
        ("[models.m]\ninput = -1\ncached_input = 0\noutput = 2\n", "p.toml: models.m: a price"),
        ("[models.m]\ninput = 1\ncached_input = 0\noutput = 2\nbatch = 1\n", "unknown key batch"),
        ("models = 3\n", "p.toml: no [models.<id>] tables"),
        ("[models.m\n", "p.toml: "),
    ],
)
def test_a_price_file_that_is_not_a_price_table_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(PriceError, match=message.replace("[", r"\[").replace(".", r"\.")):
        parse(text, "p.toml")


# --- Stored, summed and listed (SQLite and PostgreSQL) -----------------------------------------


#: What the three traces' Tool Messages add (default price table: Sonnet 4.5 at $3 / $0.30 /
#: $3.75, GPT-4o at $2.50 / $1.25), as the summary gives it.
STORED_TOTALS = {
    "tokens_added": 2700 + 140 + 70,
    "later_calls": 7 + 5 + 2,
    "reread_tokens": 3200 + 240 + 70,
    "reread_cached": 2700,
    "cost_usd": 0.00947,
    "priced_results": 6,
    "measured_results": 4,
    "estimated_results": 3,
}


def test_costs_are_stored_summed_in_the_rollups_and_listed_with_the_pairs(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlalchemy as sa

    from db.queries.pairs import iter_pairs
    from db.queries.summary import summarize
    from db.rollups.read import base_tables
    from ingest.analysis.prices import PRICES_ENV
    from ingest.importing.pipeline import import_traces

    monkeypatch.delenv(PRICES_ENV, raising=False)
    import_traces(engine, stored_traces())
    with engine.connect() as conn:
        stored = conn.execute(
            sa.text(
                "SELECT t.external_id, r.message_seq, r.later_calls, r.reread_tokens,"
                " r.reread_cached, r.reread_measured, r.cost_nano_usd FROM tool_results r"
                " JOIN traces t ON t.id = r.trace_id ORDER BY t.external_id, r.message_seq"
            )
        ).all()
    assert [(*row[:5], bool(row[5]), row[6]) for row in stored] == [
        ("estimated", 2, 3, 200, None, False, 750_000),
        ("estimated", 4, 2, 40, None, False, 200_000),
        ("measured", 2, 3, 2000, 2000, True, 3_600_000),
        ("measured", 4, 2, 1200, 700, True, 3_420_000),
        ("measured", 6, 1, 0, 0, True, 900_000),
        ("measured", 8, 1, 0, 0, True, 600_000),
        ("unpriced", 1, 2, 70, None, False, None),
    ]
    assert summarize(engine)["tool_cost"] == STORED_TOTALS
    with base_tables():
        assert summarize(engine)["tool_cost"] == STORED_TOTALS
    pairs = {
        (p["trace"], p["tool"]): tuple(p[c] for c in ("later_calls", "reread_tokens",
                                                      "reread_cached", "cost_usd", "cost_basis"))
        for p in iter_pairs(engine)
    }  # fmt: skip
    assert pairs[("measured", "b")] == (2, 1200, 700, 0.00342, "usage")
    assert pairs[("estimated", "search")] == (3, 200, None, 0.00075, "estimate")
    assert pairs[("unpriced", "search")] == (2, 70, None, None, "estimate")


def test_the_tokens_page_shows_what_each_tool_costs_and_opens_the_most_expensive(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    from page_support import assert_opened, metrics, select_row

    from dashboard import pages
    from db.engine import make_engine
    from ingest.analysis.prices import PRICES_ENV
    from ingest.importing.pipeline import import_traces

    monkeypatch.delenv(PRICES_ENV, raising=False)
    engine = make_engine(sqlite_url)
    import_traces(engine, stored_traces())
    engine.dispose()
    params = {"tokens_tab": "What it costs"}
    at = open_page(sqlite_url, pages.TOKENS.script, params)
    shown = metrics(at)
    assert {k: shown[k] for k in ("Tokens added", "Tokens re-read", "Cost", "Measured")} == {
        "Tokens added": "2,910",
        "Tokens re-read": "3,510",
        "Cost": "$0.0095",
        "Measured": "57.1%",
    }
    by_tool = at.dataframe[0].value  # the table per tool (no selection, so no key)
    assert list(by_tool["tool"]) == ["a", "b", "c", "search", "d", "fetch"]
    assert list(by_tool["reread_tokens"]) == [2000, 1200, 0, 270, 0, 40]
    top = at.dataframe(key="costliest_table").value
    assert list(top["cost_usd"]) == [0.0036, 0.00342, 0.0009, 0.00075, 0.0006, 0.0002]
    select_row(at, "costliest_table", 1)
    assert_opened(at, "measured", "3:0")
    # The Trace page says the same beside the Tool Message.
    # (the badge's markdown escapes its punctuation)
    badge = r"read by 3 later calls · 2\,000 re\-read \(2\,000 cached\) · \$0\.003600"
    assert any(badge in m.value for m in at.markdown)
