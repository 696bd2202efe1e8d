"""The Trace page's timeline: model calls and tool calls on a time axis, nested by thread, each
bar opening its pair; a trace without times says so in one line.

The timeline of an OTel GenAI run (``tests/golden/otlp/otel_genai``: a chat span 5–300 ms that
asks for ``get_weather``, the tool span of 40 ms, a chat span 360–600 ms) is read back from
SQLite and PostgreSQL; the figure is built without Streamlit from a hand-made frame.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from dbfixture import OpenPage
from formats_helpers import chat_call, chat_result
from page_support import captions, chart_spec

from dashboard import pages, trace_timeline
from dashboard.charts.trace import BRANCH_CHARS, MIN_BAR_SHARE, timeline_chart, timeline_rows
from db.engine import make_engine
from db.queries.timeline import TIMELINE_COLUMNS
from db.queries.timeline import trace_timeline as read_timeline
from db.queries.traces import find_trace
from ingest.importing.pipeline import import_paths

GOLDEN = Path(__file__).parent / "golden" / "otlp"
#: The OTel GenAI run's first span starts at 2026-01-05 10:00:00 UTC.
RUN_START = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
GENAI_TRACE = "000000000000000000000000000000b2"


def at_ms(ms: float) -> datetime:
    return RUN_START + timedelta(milliseconds=ms)


@pytest.fixture
def otlp_store(db_url: str) -> str:
    """The OTel GenAI run imported into the test database (its URL)."""
    engine = make_engine(db_url)
    summary = import_paths(engine, [GOLDEN / "otel_genai" / "input.json"], origin="cli")
    engine.dispose()
    assert (summary.traces, summary.rejected) == (1, 0)
    return db_url


def test_the_timeline_of_a_span_trace_has_each_call_from_its_start_for_its_duration(
    otlp_store: str,
) -> None:
    engine = make_engine(otlp_store)
    trace = find_trace(engine, GENAI_TRACE)
    assert trace is not None
    timeline = read_timeline(engine, int(trace["id"]))
    engine.dispose()
    assert (timeline.messages, timeline.timed_messages, timeline.untimed_calls) == (5, 5, 0)
    bars = timeline.bars
    assert tuple(bars.columns) == TIMELINE_COLUMNS
    got = [
        (kind, label, start, end, ms, pair if isinstance(pair, str) else None, status, seq)
        for kind, _branch, label, start, end, ms, pair, status, seq in bars.itertuples(index=False)
    ]
    # The first model call: from the user's message (the chat span's start, 5 ms) to its answer
    # (the span's end, 300 ms); it opens the call it made. The tool call: from its call message
    # for the tool span's 40 ms. The last model call: 360–600 ms, no tool call to open.
    assert [
        (k, lbl, s, e, ms, p, st if isinstance(st, str) else None, q)
        for k, lbl, s, e, ms, p, st, q in got
    ] == [
        ("model", "model call", at_ms(5), at_ms(300), 295.0, "2:0", None, 2),
        ("tool", "get_weather", at_ms(300), at_ms(340), 40.0, "2:0", "success", 2),
        ("model", "model call", at_ms(360), at_ms(600), 240.0, None, None, 4),
    ]
    assert bars["branch"].isna().all()


def test_the_timeline_of_a_claude_code_session_nests_its_side_chains(
    realdata: Path, sqlite_url: str
) -> None:
    engine = make_engine(sqlite_url)
    session = realdata / "claude-code" / "9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl"
    import_paths(engine, [session], origin="cli")
    trace = find_trace(engine, "9034225e-c367-4ab6-b1eb-1f478a7ae27a")
    assert trace is not None
    timeline = read_timeline(engine, int(trace["id"]))
    engine.dispose()
    bars = timeline.bars
    assert (timeline.messages, timeline.timed_messages, timeline.untimed_calls) == (612, 612, 0)
    assert dict(bars["kind"].value_counts()) == {"model": 229, "tool": 219}
    assert timeline_rows(bars) == [
        "model calls",
        "tool calls",
        "↳ b5a46c14-5fa…: model calls",
        "↳ b5a46c14-5fa…: tool calls",
        "↳ eb4ca870-8a4…: model calls",
        "↳ eb4ca870-8a4…: tool calls",
    ]
    # Every bar ends where it starts plus its duration, and the bars come in time order.
    assert (
        (bars["end"] - bars["start"]).dt.total_seconds() * 1000 - bars["duration_ms"]
    ).abs().max() < 0.01
    assert bars["start"].is_monotonic_increasing


def _bars(*rows: tuple[Any, ...]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(TIMELINE_COLUMNS))


def test_the_timeline_chart_draws_a_bar_per_call_colored_by_its_answer() -> None:
    t = RUN_START
    s = timedelta(seconds=1)
    bars = _bars(
        ("model", None, "model call", t, t + 2 * s, 2000.0, "1:0", None, 1),
        ("tool", None, "search", t + 2 * s, t + 10 * s, 8000.0, "1:0", "success", 1),
        ("tool", None, "<b>fetch</b>", t + 2 * s, t + 2001 * s / 1000, 1.0, "1:1", "error", 1),
        ("model", "<i>helper</i>", "model call", t + 3 * s, t + 4 * s, 1000.0, None, None, 5),
    )
    fig = timeline_chart(bars, selected="1:1")
    assert [trace.name for trace in fig.data] == ["model call", "tool call", "tool call: error"]
    model, success, error = fig.data
    # One row per kind of call and thread; a thread's name escaped, nested under the main rows.
    helper = "↳ &lt;i&gt;helper&lt;/i&gt;: model calls"
    assert list(model.y) == ["model calls", helper]
    assert list(fig.layout.yaxis.categoryarray) == [helper, "tool calls", "model calls"]
    assert list(model.base) == ["2026-01-05T10:00:00+00:00", "2026-01-05T10:00:03+00:00"]
    assert list(model.x) == [2000.0, 1000.0]
    assert [list(c) for c in model.customdata] == [
        ["1:0", "#1 model call: 2.00 s"],
        ["", "#5 model call: 1.00 s"],
    ]
    # A 1 ms call in a 10 s trace is drawn 40 ms wide (0.4% of the axis); its hover says 1 ms.
    assert list(error.x) == [10_000 * MIN_BAR_SHARE]
    assert [list(c) for c in error.customdata] == [["1:1", "#1 &lt;b&gt;fetch&lt;/b&gt;: 1 ms"]]
    assert error.marker.color == "#E45756"
    # The selected pair's bar is outlined, the others are not.
    assert list(error.marker.line.width) == [2]
    assert list(success.marker.line.width) == [0]
    assert list(success.x) == [8000.0]
    assert fig.layout.xaxis.type == "date"


def test_a_long_thread_name_is_cut_in_its_row_label() -> None:
    t = RUN_START
    name = "x" * 40
    bars = _bars(("tool", name, "ls", t, t, 0.0, "0:0", "success", 0))
    assert timeline_rows(bars) == ["↳ " + "x" * (BRANCH_CHARS - 1) + "…: tool calls"]


def test_the_trace_page_draws_the_timeline_and_a_bar_opens_its_pair(
    open_page: OpenPage, otlp_store: str
) -> None:
    at = open_page(otlp_store, pages.TRACE.script, {"trace": GENAI_TRACE})
    at.run()
    assert not at.exception
    assert "Time in UTC; 3 bars. Click a bar to open its pair." in captions(at)
    spec = chart_spec(at, 1)
    assert [d["name"] for d in spec["data"]] == ["model call", "tool call"]
    assert spec["data"][1]["customdata"] == [["2:0", "#2 get_weather: 40 ms"]]
    # A click on the tool call's bar, as the browser reports it, opens its pair.
    key = f"timeline_{int(find_trace(make_engine(otlp_store), GENAI_TRACE)['id'])}"  # type: ignore[index]
    at.session_state[key] = {
        "selection": {
            "points": [{"customdata": ["2:0", "#2 get_weather: 40 ms"]}],
            "point_indices": [0],
            "box": [],
            "lasso": [],
        }
    }
    at.run()
    assert not at.exception
    assert at.query_params["pair"] == "2:0"


def test_a_trace_without_times_says_so_in_one_line(
    open_page: OpenPage, db_url: str, tmp_path: Path
) -> None:
    source = tmp_path / "chat.jsonl"
    source.write_bytes(
        orjson.dumps(
            {
                "id": "untimed",
                "messages": [
                    {"role": "user", "content": "Hi"},
                    chat_call("c1", "ping", "{}"),
                    chat_result("c1", "pong"),
                ],
            }
        )
        + b"\n"
    )
    engine = make_engine(db_url)
    import_paths(engine, [source], origin="cli")
    engine.dispose()
    at = open_page(db_url, pages.TRACE.script, {"trace": "untimed"})
    at.run()
    assert not at.exception
    assert trace_timeline.caption(0, 0, 1) in captions(at)
    assert "No timeline: nothing in this trace carries a time." in captions(at)
    # The outline is the page's only chart.
    assert len(at.get("plotly_chart")) == 1
