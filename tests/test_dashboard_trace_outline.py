"""The Trace page's outline of a long trace: one marker per pair from one query, clicking a mark
or "next problem" opens the pair on its messages page, highlighted where it stands, and the
trace's findings open their pair.

The trace (OpenAI chat, imported on SQLite and PostgreSQL) has a pair of every kind: a plain
call (2:0), an error (4:0), a call never answered (6:0) beside an answered one (6:1), an orphan
result (r8), and the same call three times (9:0, 11:0, 13:0: a loop at k = 3), then 30 plain
calls so that the trace spans several pages of 20 messages.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from dbfixture import OpenPage
from page_support import captions, metrics, page_caption, rows

from dashboard import pages, trace_blocks, trace_outline
from dashboard.charts.trace import outline_chart
from db.engine import make_engine
from db.queries.traces import find_trace, trace_markers
from ingest.importing.pipeline import import_paths

TRACE = pages.TRACE.script
PLAIN_CALLS = 30


def _call(call_id: str, args: dict[str, Any], name: str = "lookup") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": orjson.dumps(args).decode()},
    }


def _assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def _tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def problem_trace(
    trace_id: str = "problems-1",
    plain_calls: int = PLAIN_CALLS,
    errors_at: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """The trace of the module docstring (message seq = position, from 0), with ``plain_calls``
    calls at the end, the ones numbered in ``errors_at`` failing (call n at seq 15 + 2n)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You look things up."},
        {"role": "user", "content": "Look things up."},
        _assistant(_call("a", {"n": 0})),
        _tool("a", "found 0 rows"),
        _assistant(_call("b", {"n": 1})),
        _tool("b", "Error: 500 Internal Server Error"),
        _assistant(_call("c", {"n": 2}), _call("d", {"n": 3}, "fetch")),
        _tool("d", "fetched 3 rows"),
        _tool("nobody", "stray answer text"),
    ]
    for n in range(3):
        messages += [_assistant(_call(f"loop{n}", {"q": 1})), _tool(f"loop{n}", "found 1 row")]
    for n in range(plain_calls):
        answer = "Error: 500 Internal Server Error" if n in errors_at else f"found {n} rows"
        messages += [_assistant(_call(f"p{n}", {"n": 100 + n})), _tool(f"p{n}", answer)]
    messages.append({"role": "assistant", "content": "Done."})
    return {"id": trace_id, "model": "gpt-4o", "messages": messages}


#: Messages of :func:`problem_trace`.
MESSAGES = 9 + 6 + 2 * PLAIN_CALLS + 1


def _store_of(db_url: str, source: Path, trace: dict[str, Any]) -> str:
    """``trace`` written as the JSON lines file ``source`` and imported into the database at
    ``db_url``; its URL."""
    source.write_bytes(orjson.dumps(trace) + b"\n")
    engine = make_engine(db_url)
    summary = import_paths(engine, [source], origin="cli")
    engine.dispose()
    assert (summary.traces, summary.rejected) == (1, 0)
    return db_url


@pytest.fixture
def problem_store(db_url: str, tmp_path: Path) -> str:
    """:func:`problem_trace` imported into the test database; its URL."""
    return _store_of(db_url, tmp_path / "problems.jsonl", problem_trace())


def _trace_id(url: str) -> int:
    engine = make_engine(url)
    trace = find_trace(engine, "problems-1")
    engine.dispose()
    assert trace is not None
    assert trace["message_count"] == MESSAGES
    return int(trace["id"])


def test_the_markers_are_every_pair_with_its_worst_problem(problem_store: str) -> None:
    engine = make_engine(problem_store)
    markers = trace_markers(engine, _trace_id(problem_store), loop_k=3)
    at_k4 = trace_markers(engine, _trace_id(problem_store), loop_k=4)
    engine.dispose()
    plain = [(seq, 0, f"{seq}:0", "lookup", "call", False, ()) for seq in range(15, 75, 2)]
    assert rows(markers.astype(object).where(markers.notna(), None)) == [
        (2, 0, "2:0", "lookup", "call", False, ()),
        (4, 0, "4:0", "lookup", "error", True, ("error", "error_without_suggestion")),
        (6, 0, "6:0", "lookup", "missing_result", True, ("missing_result",)),
        (6, 1, "6:1", "fetch", "call", False, ()),
        (8, None, "r8", "(unknown)", "lone_result", True, ("orphan_result",)),
        (9, 0, "9:0", "lookup", "call", False, ()),
        (11, 0, "11:0", "lookup", "call", False, ()),
        (13, 0, "13:0", "lookup", "loop", True, ("loop",)),
        *plain,
    ]
    # k is a page setting: at k = 4 the third repeat is a plain call.
    assert at_k4.loc[at_k4["pair"] == "13:0", ["kind", "problems"]].values.tolist() == [
        ["call", ()]
    ]


def test_problem_neighbours_step_over_plain_calls(problem_store: str) -> None:
    engine = make_engine(problem_store)
    markers = trace_markers(engine, _trace_id(problem_store), loop_k=3)
    engine.dispose()
    assert trace_outline.neighbours(markers, (6, 0)) == ("4:0", "r8")
    assert trace_outline.neighbours(markers, (8, -1)) == ("6:0", "13:0")
    assert trace_outline.neighbours(markers, (13, 0)) == ("r8", None)
    assert trace_outline.neighbours(markers, (4, 0), inclusive=True) == (None, "4:0")
    assert trace_outline.neighbours(markers, (0, -1), inclusive=True) == (None, "4:0")


def test_the_outline_chart_has_a_row_per_kind_in_palette_colors_and_rings_the_selection(
    problem_store: str,
) -> None:
    engine = make_engine(problem_store)
    markers = trace_markers(engine, _trace_id(problem_store), loop_k=3)
    engine.dispose()
    fig = outline_chart(markers, MESSAGES, "6:0")
    shown = [(t.name, list(t.x), t.marker.color) for t in fig.data]
    assert shown == [
        ("error", [4], "#E45756"),
        ("no result", [6], "#E45756"),
        ("lone result", [8], "#F58518"),
        ("loop call", [13], "#AB63FA"),
        ("call", [2, 6, 9, 11, *range(15, 75, 2)], "#B8B8B8"),
        ("selected", [6], "rgba(0,0,0,0)"),
    ]
    assert [d[0] for d in fig.data[0].customdata] == ["4:0"]
    assert list(fig.layout.xaxis.range) == [-0.5, MESSAGES - 0.5]


def _highlighted(at: Any) -> list[str]:
    """Keys of the highlighted boxes around the selected pair among the messages."""
    return [key for key in _keys(at) if key.startswith(trace_blocks.HERE_KEY)]


def _keys(at: Any) -> list[str]:
    keys = []
    stack = list(at._tree.children.values())
    while stack:
        node = stack.pop(0)
        key = getattr(node, "key", None)
        if node.type == "flex_container" and key:
            keys.append(str(key))
        stack.extend(getattr(node, "children", {}).values())
    return keys


def test_next_problem_opens_the_pair_on_its_page_highlighted(
    open_page: OpenPage, problem_store: str
) -> None:
    at = open_page(problem_store, TRACE, {"trace": "problems-1"})
    assert at.button(key="problem_previous").disabled
    # No pair yet: "next" is the first problem from the page shown (page 1).
    at.button(key="problem_next").click().run()
    assert at.query_params["pair"] == "4:0"
    assert _highlighted(at) == ["here_4_0"]
    at.button(key="problem_next").click().run()
    at.button(key="problem_next").click().run()
    at.button(key="problem_next").click().run()
    assert at.query_params["pair"] == "13:0"
    assert at.button(key="problem_next").disabled
    assert page_caption(at) == (
        f"Messages 1–20 of {MESSAGES} · page 1 of 4 (the selected pair's page)"
    )
    at.button(key="problem_previous").click().run()
    assert at.query_params["pair"] == "r8"
    assert _highlighted(at) == ["here_r8"]
    assert not at.exception


def test_clicking_an_outline_mark_opens_its_pair_once(
    open_page: OpenPage, problem_store: str
) -> None:
    trace_id = _trace_id(problem_store)
    at = open_page(problem_store, TRACE, {"trace": "problems-1"})
    key = f"outline_{trace_id}"
    point = {"curve_number": 4, "point_number": 20, "point_index": 20, "x": 45,
             "y": "call", "customdata": ["45:0", "lookup"]}  # fmt: skip
    at.session_state[key] = {"selection": {"points": [point], "point_indices": [20],
                                           "box": [], "lasso": []}}  # fmt: skip
    at.run()
    assert not at.exception
    assert at.query_params["pair"] == "45:0"
    assert page_caption(at) == (
        f"Messages 41–60 of {MESSAGES} · page 3 of 4 (the selected pair's page)"
    )
    assert _highlighted(at) == ["here_45_0"]
    # The click outlives its rerun; a later "previous problem" is not undone by it.
    at.button(key="problem_previous").click().run()
    assert at.query_params["pair"] == "13:0"
    at.run()
    assert at.query_params["pair"] == "13:0"


def test_selecting_a_finding_opens_its_pair(open_page: OpenPage, problem_store: str) -> None:
    trace_id = _trace_id(problem_store)
    at = open_page(problem_store, TRACE, {"trace": "problems-1"})
    at.session_state[f"findings_{trace_id}"] = True
    at.run()
    table = at.dataframe[0].value
    assert table[["name", "message", "tool", "pair"]].values.tolist() == [
        ["Error without suggestion", "#5", "lookup", "4:0"],
        ["Missing result", "#6", "lookup", "6:0"],
        ["Orphan result", "#8", "(unknown)", "r8"],
    ]
    at.session_state[f"findings_table_{trace_id}"] = {
        "selection": {"rows": [1], "columns": [], "cells": []}
    }
    at.run()
    assert not at.exception
    assert at.query_params["pair"] == "6:0"
    assert _highlighted(at) == ["here_6_0"]


def findings_trace() -> dict[str, Any]:
    """Pairs whose only problems are findings on their Tool Message (message seq = position):
    a bare "ok" (2:0), a protocol error that says nothing more (4:0), a result over the token
    budget (6:0), a plain answer (8:0), and an error whose advice the model ignored, twice (10:0
    and 12:0: the same call again)."""
    return {
        "id": "findings-1",
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You look things up."},
            {"role": "user", "content": "Look things up."},
            _assistant(_call("a", {"n": 0})),
            _tool("a", "ok"),
            _assistant(_call("b", {"n": 1})),
            _tool("b", '{"status": "error"}'),
            _assistant(_call("c", {"n": 2})),
            _tool("c", "row " * 2500),
            _assistant(_call("d", {"n": 3})),
            _tool("d", "found 3 rows"),
            _assistant(_call("e", {"city": "Paris"}, "weather")),
            _tool("e", "Error: missing required parameter 'units'"),
            _assistant(_call("f", {"city": "Paris"}, "weather")),
            _tool("f", "Error: missing required parameter 'units'"),
            {"role": "assistant", "content": "Done."},
        ],
    }


@pytest.fixture
def findings_store(db_url: str, tmp_path: Path) -> str:
    """:func:`findings_trace` imported into the test database; its URL."""
    return _store_of(db_url, tmp_path / "findings.jsonl", findings_trace())


def test_findings_alone_make_a_pair_a_problem(findings_store: str) -> None:
    engine = make_engine(findings_store)
    trace = find_trace(engine, "findings-1")
    assert trace is not None
    markers = trace_markers(engine, int(trace["id"]), loop_k=3)
    engine.dispose()
    assert markers[["pair", "kind", "problems"]].values.tolist() == [
        ["2:0", "finding", ("bare_status",)],
        [
            "4:0",
            "error",
            ("error", "bare_status", "error_without_suggestion", "empty_marked_error"),
        ],
        ["6:0", "finding", ("oversized",)],
        ["8:0", "call", ()],
        ["10:0", "error", ("error", "ignored_advice")],
        ["12:0", "error", ("error", "ignored_advice")],
    ]


def _card_problems(at: Any) -> list[str]:
    """The problems line of each pair card shown, as the reader sees it (escapes removed)."""
    shown = [str(m.value) for m in at.markdown]
    return [
        re.sub(r"\\(.)", r"\1", text) for text in shown if re.match(r"\*\*\d+ problems?:", text)
    ]


def test_the_tile_the_outline_and_next_problem_count_the_same_pairs_each_named_on_its_card(
    open_page: OpenPage, findings_store: str
) -> None:
    at = open_page(findings_store, TRACE, {"trace": "findings-1"})
    assert metrics(at)["Problems"] == "5"
    outline = (
        "Outline by message number: 5 of 6 pairs have a problem. Click a mark to open its pair."
    )
    assert outline in captions(at)
    # Every pair with a problem names each one on its card, on the messages page.
    error = "error (the Tool Message has status error)"
    bare = "bare status (the Tool Message says only a status word (ok, error, done …))"
    ignored = "advice ignored (the model did not follow the advice the Tool Message gave)"
    assert _card_problems(at) == [
        f"**1 problem:** {bare}",
        f"**4 problems:** {error}; {bare}; error without suggestion (an error Tool Message "
        "gives the model no advice); empty marked error (flagged as an error but says nothing "
        "more)",
        "**1 problem:** oversized (the Tool Message is over the token budget)",
        f"**2 problems:** {error}; {ignored}",
        f"**2 problems:** {error}; {ignored}",
    ]
    visited = []
    while not at.button(key="problem_next").disabled:
        at.button(key="problem_next").click().run()
        visited.append(at.query_params["pair"])
    assert visited == ["2:0", "4:0", "6:0", "10:0", "12:0"]
    assert not at.exception
