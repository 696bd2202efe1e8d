"""The Trace page reads long conversations in pages of 20 messages, the page in the URL and, by
default, the page of the selected pair; the blocks say advice in a few words.

Two long traces (101 messages each: a system and a user message, then 49 calls each answered
right away, then a last answer) are imported from an OpenAI chat file on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from dbfixture import BIG_RESULT, OpenPage, fixture_store
from formats_helpers import chat_call, chat_result
from page_support import page_caption
from streamlit.testing.v1 import AppTest

from dashboard import pages, render, trace_blocks
from db.engine import make_engine
from db.queries.traces import find_trace
from ingest.importing.pipeline import import_paths

TRACE = pages.TRACE.script
CALLS = 49
MESSAGES = 2 + 2 * CALLS + 1


def long_trace(trace_id: str) -> dict[str, Any]:
    """A trace whose call ``i`` sits at seq ``2 + 2i`` and its answer right after it."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You look things up."},
        {"role": "user", "content": "Look up 49 things."},
    ]
    for i in range(CALLS):
        call_id = f"call_{i}"
        messages.append(chat_call(call_id, "lookup", orjson.dumps({"n": i}).decode()))
        messages.append(chat_result(call_id, f"found {i}"))
    messages.append({"role": "assistant", "content": "Done."})
    return {"id": trace_id, "model": "gpt-4o", "messages": messages}


@pytest.fixture
def long_store(db_url: str, tmp_path: Path) -> str:
    """``long-a`` and ``long-b`` imported into the test database; its URL."""
    source = tmp_path / "long.jsonl"
    source.write_bytes(b"".join(orjson.dumps(long_trace(t)) + b"\n" for t in ("long-a", "long-b")))
    engine = make_engine(db_url)
    summary = import_paths(engine, [source], origin="cli")
    engine.dispose()
    assert (summary.traces, summary.rejected) == (2, 0)
    return db_url


def shown_seqs(at: Any) -> list[int]:
    """The seq of every message on screen, in order: message heads (``**#12**``) and the
    one-line Tool Messages shown beside their call (``#13 tool · …``)."""
    seqs = []
    for node in at.main:  # every element, depth first
        value = str(getattr(node, "value", ""))
        head = re.search(r"\*\*#(\d+)\*\*", value) if node.type == "markdown" else None
        line = re.match(r"#(\d+) tool · ", value) if node.type == "caption" else None
        if head or line:
            seqs.append(int((head or line).group(1)))  # type: ignore[union-attr]
    return seqs


def test_a_long_trace_opens_on_its_first_page_of_20_messages(
    open_page: OpenPage, long_store: str
) -> None:
    at = open_page(long_store, TRACE, {"trace": "long-a"})
    assert shown_seqs(at) == list(range(20))
    assert at.number_input(key="mpage").value == 1
    assert page_caption(at) == "Messages 1–20 of 101 · page 1 of 6"
    assert "mpage" not in at.query_params


def test_a_link_to_a_pair_opens_the_page_of_that_pair(open_page: OpenPage, long_store: str) -> None:
    at = open_page(long_store, TRACE, {"trace": "long-a", "pair": "60:0"})
    # The selected pair first (call and answer), then messages 60–79.
    assert shown_seqs(at)[-20:] == list(range(60, 80))
    assert at.number_input(key="mpage").value == 4
    assert page_caption(at) == "Messages 61–80 of 101 · page 4 of 6 (the selected pair's page)"
    # The pair's own page is the default: the URL stays as it was sent.
    assert "mpage" not in at.query_params


def test_the_page_in_the_url_wins_over_the_pairs_page(open_page: OpenPage, long_store: str) -> None:
    params = {"trace": "long-a", "pair": "60:0", "mpage": "6"}
    at = open_page(long_store, TRACE, params)
    assert shown_seqs(at)[-1:] == [100]
    assert page_caption(at) == "Messages 101–101 of 101 · page 6 of 6"


def test_a_pair_selected_on_a_later_page_keeps_that_page(
    open_page: OpenPage, long_store: str
) -> None:
    at = open_page(long_store, TRACE, {"trace": "long-a"})
    at.number_input(key="mpage").set_value(5).run()
    assert not at.exception
    # (The browser writes a bound widget's value into the URL; tests/test_browser.py checks.)
    assert shown_seqs(at) == list(range(80, 100))
    # Selecting a pair on this page shows it first and stays on its page.
    at.button(key="select_82:0").click().run()
    assert not at.exception
    assert at.query_params["pair"] == "82:0"
    assert at.number_input(key="mpage").value == 5
    assert shown_seqs(at)[-20:] == list(range(80, 100))


def test_opening_another_trace_from_the_picker_starts_on_its_first_page(
    open_page: OpenPage, long_store: str
) -> None:
    at = open_page(long_store, TRACE, {"trace": "long-a", "mpage": "3"})
    assert shown_seqs(at)[0] == 40
    # With a trace shown, the closed "Find a trace" box draws nothing until it is opened.
    assert [d.key for d in at.dataframe] == []
    at.session_state["trace_finder"] = True  # opens it (its key in views/trace.py)
    at.run()
    picker = at.dataframe(key="trace_picker").value
    row = picker["trace"].tolist().index("long-b")
    at.session_state["trace_picker"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert at.query_params["trace"] == "long-b"
    assert [w.value for w in at.warning] == []  # no Session State API warning either
    assert at.number_input(key="mpage").value == 1
    assert shown_seqs(at) == list(range(20))


# --- blocks -------------------------------------------------------------------------------


def test_advice_is_said_in_a_few_words_and_never_repeats_the_message() -> None:
    message = "Error: missing required parameter 'date'"
    assert trace_blocks.suggestion_text("missing_param", message, {"param": "date"}, message) == (
        "supply the parameter date"
    )
    assert (
        trace_blocks.suggestion_text(
            "retry_after", "retry after 30s", {"seconds": 30.0}, "HTTP 503; retry after 30s"
        )
        == "retry after 30 s"
    )
    assert trace_blocks.suggestion_text("retry_after", "wait 250ms", {"seconds": 0.25}, "") == (
        "retry after 250 ms"
    )
    assert trace_blocks.suggestion_text("retry_after", "in 5m", {"seconds": 300.0}, "") == (
        "retry after 5 min"
    )
    assert (
        trace_blocks.suggestion_text(
            "use_instead", "use search_flights instead", {"tool": "search_flights"}, "x"
        )
        == "use search_flights instead"
    )
    assert trace_blocks.suggestion_text("ask_user", "ask the user", None, "x") == "ask the user"
    hint = "Read it first before writing to it."
    assert trace_blocks.suggestion_text("text", hint, None, "Not read yet. " + hint) == hint
    # A hint that is the whole message is not shown twice.
    assert trace_blocks.suggestion_text("text", hint, None, hint + "\n") == ""


def test_the_advice_line_holds_the_advice_and_the_verdict_as_escaped_badges() -> None:
    result = pd.Series({
        "suggestion": "Error: order 7 not found. Use search_orders instead.",
        "suggestion_kind": "use_instead",
        "suggestion_detail": {"tool": "search_orders"},
        "content": "Error: order 7 not found. Use search_orders instead.",
        "verdict": "ignored",
        "verdict_corrected": None,
    })  # fmt: skip
    assert trace_blocks.advice_line(result) == (
        r":blue-badge[advice\: use search\_orders instead] :red-badge[verdict\: ignored]"
    )
    whole = result.copy()
    whole["suggestion_kind"], whole["suggestion_detail"], whole["verdict"] = "text", None, None
    assert trace_blocks.advice_line(whole) == r":blue-badge[advice\: the message below]"
    assert (
        trace_blocks.advice_line(pd.Series({"suggestion": None, "suggestion_kind": None})) is None
    )


# --- what the browser is spared -----------------------------------------------------------


@pytest.fixture
def fixture_url(db_url: str) -> str:
    """The dashboard fixture store (``tests/dbfixture.py``) in the test database; its URL."""
    return fixture_store(db_url)


def test_page_rows_look_up_calls_and_answers_by_place() -> None:
    calls = pd.DataFrame({"message_seq": [2, 2, 5], "call_index": [0, 1, 0], "tool": list("abc")})
    results = pd.DataFrame({
        "message_seq": [3, 4, 6, 7, 9],
        "call_seq": [2.0, 2.0, None, 2.0, 8.0],
        "call_index": [0.0, 1.0, None, 0.0, 0.0],
        "pair_state": ["paired", "paired", "orphan_result", "duplicate_result", "paired"],
    })  # fmt: skip
    rows = trace_blocks.PageRows.of(calls, results)
    assert {seq: [c["tool"] for c in cs] for seq, cs in rows.calls_at.items()} == {
        2: ["a", "b"], 5: ["c"],
    }  # fmt: skip
    assert [r["message_seq"] for r in rows.answers(2, 0)] == [3, 7]
    assert (rows.answers(5, 0), sorted(rows.result_at)) == ((), [3, 4, 6, 7, 9])
    assert (rows.shows_call(2, 1), rows.shows_call(5, 1), rows.shows_call(8, 0)) == (
        True, False, False,
    )  # fmt: skip
    assert trace_blocks.answered_here(4, rows) == "Result of the call 2:1, shown beside it above."
    # A lone result, a duplicate answer and the answer to a call on another page stand alone.
    assert [trace_blocks.answered_here(seq, rows) for seq in (6, 7, 9, 5)] == [None] * 4


def test_content_is_monospace_code_highlighted_only_when_it_is_json() -> None:
    def page() -> None:
        from dashboard import render

        render.show_content('{"a": [1, 2]}')
        render.show_content("Error: <b>no</b> [x](y)\n  at line 2")

    at = AppTest.from_function(page).run()
    # Code blocks show their text verbatim (never markdown or HTML), in a monospace font.
    assert [(c.value, c.language) for c in at.code] == [
        ('{\n  "a": [\n    1,\n    2\n  ]\n}', "json"),
        ("Error: <b>no</b> [x](y)\n  at line 2", "plaintext"),
    ]
    assert not at.text
    assert [m.value for m in at.markdown] == []


def test_a_long_json_result_is_folded_and_its_text_drawn_only_once_opened(
    open_page: OpenPage, fixture_url: str
) -> None:
    at = open_page(fixture_url, TRACE, {"trace": "weather-1"})
    label = f"Show as text ({len(BIG_RESULT):,} chars, 3,000 tokens)"
    pretty = render.pretty(BIG_RESULT)[0]
    assert [orjson.loads(j.value) for j in at.json] == [orjson.loads(BIG_RESULT)]
    assert [(j.proto.expanded, j.proto.max_expand_depth) for j in at.json] == [(True, 1)]
    summary = f"JSON object of 1 key, {len(BIG_RESULT):,} chars · folded: click a ▸ to open a level"
    assert summary in [c.value for c in at.caption]
    assert [c.value for c in next(e for e in at.expander if e.label == label).code] == []
    ctx = trace_blocks.BlockContext(k=3, budget=2000, trace="weather-1")
    at.session_state[trace_blocks.content_key(ctx, "page", 7, "text")] = True
    at.run()
    assert not at.exception
    assert [c.value for c in next(e for e in at.expander if e.label == label).code] == [pretty]


def test_select_buttons_have_no_tooltip_and_the_page_says_once_what_select_does(
    open_page: OpenPage, fixture_url: str
) -> None:
    at = open_page(fixture_url, TRACE, {"trace": "orders-7"})
    selects = [b for b in at.button if b.key and b.key.startswith("select_")]
    assert [(b.key, b.help) for b in selects] == [
        ("select_1:0", ""), ("select_1:1", ""), ("select_r3", ""), ("select_4:0", ""),
        ("select_r6", ""),
    ]  # fmt: skip
    assert [c.value for c in at.caption].count(trace_blocks.SELECT_HINT) == 1


def test_the_findings_box_draws_its_table_only_when_opened(
    open_page: OpenPage, fixture_url: str
) -> None:
    engine = make_engine(fixture_url)
    trace = find_trace(engine, "weather-1")
    engine.dispose()
    assert trace is not None
    at = open_page(fixture_url, TRACE, {"trace": "weather-1"})
    assert [e.label for e in at.expander if e.label.startswith("Findings")] == ["Findings (1)"]
    assert len(at.dataframe) == 0
    at.session_state[f"findings_{trace['id']}"] = True
    at.run()
    assert not at.exception
    # Named by message number and tool; it opens the call its Tool Message (#7) answers.
    assert at.dataframe[0].value[["name", "message", "tool", "pair"]].values.tolist() == [
        ["Oversized", "#7", "get_weather", "6:0"]
    ]


def test_a_long_duplicate_answer_shows_beside_its_call_and_on_its_own(
    open_page: OpenPage, db_url: str, tmp_path: Path
) -> None:
    long_text = "line of output\n" * 200
    call = {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    trace = {
        "id": "dup-1",
        "messages": [
            {"role": "user", "content": "Run it."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": long_text},
            {"role": "tool", "tool_call_id": "c1", "content": long_text},
        ],
    }
    source = tmp_path / "dup.jsonl"
    source.write_bytes(orjson.dumps(trace) + b"\n")
    engine = make_engine(db_url)
    assert import_paths(engine, [source], origin="cli").traces == 1
    engine.dispose()
    at = open_page(db_url, TRACE, {"trace": "dup-1"})
    label = f"Show all ({len(long_text):,} chars, "
    # Both answers beside the call, then the duplicate on its own: three boxes, three keys.
    assert [e.label.startswith(label) for e in at.expander].count(True) == 3
    duplicate = "Duplicate result: a second answer to the call at 1:0."
    assert [w.value for w in at.warning] == [duplicate]


def test_the_trace_metadata_shows_as_json_when_its_box_is_opened(
    open_page: OpenPage, db_url: str
) -> None:
    source = Path(__file__).parent / "golden" / "openai_chat" / "conversations" / "input.jsonl"
    engine = make_engine(db_url)
    import_paths(engine, [source], workers=0)
    trace = find_trace(engine, "conv-weather-1")
    engine.dispose()
    assert trace is not None
    at = open_page(db_url, TRACE, {"trace": "conv-weather-1"})
    label = "Trace metadata (2 fields)"
    assert [e.label for e in at.expander if e.label.startswith("Trace metadata")] == [label]
    assert len(at.json) == 0
    at.session_state[f"trace_metadata_{trace['id']}"] = True
    at.run()
    assert not at.exception
    box = next(e for e in at.expander if e.label == label)
    assert [orjson.loads(j.value) for j in box.json] == [{"user": "u-17", "env": "staging"}]
    # Untrusted text is never rendered as markdown there.
    assert len(box.markdown) == 0
