"""A large JSON result is shown folded and pretty, with its size, opened level by level, never
as markup: a 21 KB result (read whole with its window) and a 207 KB one (past the 200,000
characters a window reads: read whole once its box is opened), on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from dbfixture import OpenPage
from page_support import captions

from dashboard import pages, render, trace_blocks
from db.engine import make_engine
from db.queries.traces import CONTENT_CHARS, find_trace, message_text
from ingest.importing.pipeline import import_paths

MARKUP = "<img src=x onerror=alert(1)> [link](http://evil.example) **bold**"


def big_json(items: int) -> str:
    """A JSON object of two keys whose ``items`` list holds ``items`` records."""
    value = {
        "items": [
            {"id": i, "name": f"item {i}", "tags": ["a", "b"], "note": MARKUP} for i in range(items)
        ],
        "total": items,
    }
    return orjson.dumps(value).decode()


SMALL = big_json(180)
LARGE = big_json(1700)


def json_trace_file(folder: Path) -> Path:
    """A file of one trace, ``json-1``: a call answered by :data:`SMALL` (``1:0``) and one by
    :data:`LARGE` (``3:0``)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "List everything."}]
    for i, content in enumerate((SMALL, LARGE)):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "list", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": content},
        ]
    source = folder / "json.jsonl"
    source.write_bytes(orjson.dumps({"id": "json-1", "messages": messages}) + b"\n")
    return source


@pytest.fixture
def json_store(db_url: str, tmp_path: Path) -> str:
    """:func:`json_trace_file` imported into the test database; its URL."""
    engine = make_engine(db_url)
    assert import_paths(engine, [json_trace_file(tmp_path)], origin="cli").traces == 1
    engine.dispose()
    return db_url


def test_the_results_are_20_and_200_kb_and_the_large_one_is_past_what_a_window_reads() -> None:
    assert (len(SMALL), len(LARGE)) == (21_583, 206_904)
    assert len(SMALL) < CONTENT_CHARS < len(LARGE)


def test_a_20_kb_json_result_is_folded_with_its_size(open_page: OpenPage, json_store: str) -> None:
    at = open_page(json_store, pages.TRACE.script, {"trace": "json-1", "pair": "1:0"})
    box = next(e for e in at.expander if e.label == "Selected pair")
    assert [orjson.loads(j.value) for j in box.json] == [orjson.loads(SMALL)]
    assert [(j.proto.expanded, j.proto.max_expand_depth) for j in box.json] == [(True, 1)]
    summary = "JSON object of 2 keys, 21,583 chars · folded: click a ▸ to open a level"
    assert summary in [c.value for c in box.caption]
    # Its text is one click away, drawn only once opened; nothing of it is markdown.
    labels = [e.label for e in box.expander]
    assert any(label.startswith("Show as text (21,583 chars, ") for label in labels)
    assert not any(MARKUP in m.value for m in at.markdown)


def test_a_200_kb_json_result_is_read_whole_and_folded_once_opened(
    open_page: OpenPage, json_store: str
) -> None:
    engine = make_engine(json_store)
    trace = find_trace(engine, "json-1")
    assert trace is not None
    assert message_text(engine, int(trace["id"]), 4) == LARGE
    engine.dispose()
    at = open_page(json_store, pages.TRACE.script, {"trace": "json-1", "pair": "3:0"})
    box = next(e for e in at.expander if e.label == "Selected pair")
    (whole,) = [e for e in box.expander if e.label.startswith("Open all of it, folded if JSON")]
    assert whole.label.startswith("Open all of it, folded if JSON (206,904 chars, ")
    # Closed, none of it is sent: its start alone would be one unbroken line.
    assert len(box.json) == 0
    assert not any(c.value.startswith('{"items"') for c in box.code)
    assert "Starts like JSON; 206,904 chars, more than a page reads." in captions(at)
    ctx = trace_blocks.BlockContext(k=3, budget=2000, trace="json-1")
    at.session_state[trace_blocks.content_key(ctx, "sel", 4, "text")] = True
    at.run()
    assert not at.exception
    box = next(e for e in at.expander if e.label == "Selected pair")
    assert [orjson.loads(j.value) for j in box.json] == [orjson.loads(LARGE)]
    assert [j.proto.max_expand_depth for j in box.json] == [1]
    summary = "JSON object of 2 keys, 206,904 chars · folded: click a ▸ to open a level"
    assert summary in captions(at)
    assert not any(MARKUP in m.value for m in at.markdown)


def test_the_json_summary_names_kind_and_size() -> None:
    assert render.json_summary(orjson.loads(LARGE), len(LARGE)) == (
        "JSON object of 2 keys, 206,904 chars"
    )
    assert render.json_summary([1, 2, 3], 7) == "JSON array of 3 items, 7 chars"
