"""Sessions: the traces sharing a session or conversation thread are grouped.

The parsers read the session each source names (OTLP ``session.id``, else
``gen_ai.conversation.id``; Claude Code's and Langfuse's ``sessionId``; a LangSmith thread in
the root run's metadata, not its project ``session_id``; any other format's ``session_id``,
``thread_id`` or ``conversation_id`` metadata). The real Langfuse exports hold one
session of three traces (``session_abc``: the llama-index, autogen and pydantic-ai demos) and
three sessions of one. The Sessions page lists them with their counts, shows a session's traces,
and the Trace page links to its session, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from dbfixture import OpenPage
from formats_helpers import parse, recs
from page_support import captions, rows, select_row

from dashboard import pages
from db.engine import make_engine
from db.queries.sessions import count_sessions, list_sessions, session_of, session_traces
from db.queries.traces import find_trace
from ingest.importing.pipeline import import_paths
from ingest.input.reading import read_file
from ingest.model import Trace

GOLDEN = Path(__file__).parent / "golden" / "otlp"
SESSIONS = pages.SESSIONS.script
#: The three traces of ``session_abc`` in order of start: (display id, title, agent, start).
SESSION_ABC = [
    (
        "12ea412956f99347b0503c1144acd0ec",
        "What is Langfuse?",
        "llama-index-trace",
        datetime(2025, 6, 5, 15, 45, 52, 971000, tzinfo=UTC),
    ),
    (
        "1b72c51fabed12ae7df83bfd4a09f545",
        "Say 'Hello World!'",
        "autogen-chat-trace",
        datetime(2025, 6, 6, 11, 31, 33, 965000, tzinfo=UTC),
    ),
    (
        "25f4bdeebaab60e6e1bee7e8469554bc",
        "What is Langfuse?",
        "pydantic-ai-qa-trace",
        datetime(2025, 6, 6, 14, 40, 28, 562000, tzinfo=UTC),
    ),
]


def test_each_format_reads_the_session_its_source_names(realdata: Path, tmp_path: Path) -> None:
    langfuse = {
        p.name: [t.session_id for t in read_file(p) if isinstance(t, Trace)]
        for p in sorted((realdata / "langfuse-export").glob("*.json"))
    }
    assert {name: s for name, s in langfuse.items() if s != [None]} == {
        "ag2-2026-03-09.json": ["session_ag2_demo"],
        "agno-2025-06-11.json": ["35cc6c90-b657-4819-b66c-c931c03ad569"],
        "autogen-2025-06-06.json": ["session_abc"],
        "google-adk-2025-08-28.json": ["demo-session"],
        "llamaindex-2025-06-05.json": ["session_abc"],
        "pydantic-ai-trace-2025-06-06.json": ["session_abc"],
    }
    session = realdata / "claude-code" / "9b92ce83-1981-4cdc-9f5d-7f66c4b10389.jsonl"
    (claude,) = [t for t in read_file(session) if isinstance(t, Trace)]
    assert claude.session_id == "9b92ce83-1981-4cdc-9f5d-7f66c4b10389"
    # OTLP: without session.id, the GenAI conversation id names the session.
    export = orjson.loads((GOLDEN / "otel_genai" / "input.json").read_bytes())
    root = export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    root["attributes"].append({"key": "gen_ai.conversation.id", "value": {"stringValue": "c-9"}})
    source = tmp_path / "otlp.json"
    source.write_bytes(orjson.dumps(export))
    (otlp,) = [t for t in read_file(source) if isinstance(t, Trace)]
    assert otlp.session_id == "c-9"


def test_a_langsmith_trace_is_in_its_thread_not_its_project() -> None:
    def run(run_id: str, thread: dict[str, str]) -> dict[str, object]:
        return {
            "id": run_id, "run_type": "chain", "name": run_id, "trace_id": run_id,
            "session_id": "project-1", "extra": {"metadata": thread},
        }  # fmt: skip

    items = parse(
        "langsmith",
        recs(
            run("a", {"thread_id": "t-1", "session_id": "s-2"}),
            run("b", {"conversation_id": "c-3"}),
            run("c", {}),
        ),
    )
    assert [(t.external_id, t.session_id) for t in items if isinstance(t, Trace)] == [
        ("a", "t-1"),
        ("b", "c-3"),
        ("c", None),
    ]


@pytest.fixture
def langfuse_store(db_url: str, realdata: Path) -> str:
    """The real Langfuse exports imported into the test database; its URL."""
    engine = make_engine(db_url)
    files = sorted((realdata / "langfuse-export").glob("*.json"))
    summary = import_paths(engine, files, origin="cli")
    engine.dispose()
    assert (summary.traces, summary.rejected) == (15, 0)
    return db_url


def test_sessions_are_listed_with_their_traces_counts_and_times(langfuse_store: str) -> None:
    engine = make_engine(langfuse_store)
    assert (count_sessions(engine), count_sessions(engine, shared=True)) == (4, 1)
    assert count_sessions(engine, text="SESSION") == 3
    assert rows(list_sessions(engine, shared=True)) == [
        ("session_abc", 3, 8, 0, 0, 0, SESSION_ABC[0][3], SESSION_ABC[2][3])
    ]
    # The latest activity first.
    assert list(list_sessions(engine)["session"]) == [
        "session_ag2_demo",
        "demo-session",
        "35cc6c90-b657-4819-b66c-c931c03ad569",
        "session_abc",
    ]
    assert [tuple(r[:4]) for r in rows(session_traces(engine, "session_abc"))] == SESSION_ABC
    trace = find_trace(engine, SESSION_ABC[1][0])
    assert trace is not None
    assert session_of(engine, int(trace["id"])) == ("session_abc", 3)
    engine.dispose()


def test_the_sessions_page_lists_sessions_and_opens_one(
    open_page: OpenPage, langfuse_store: str
) -> None:
    at = open_page(langfuse_store, SESSIONS, {"shared": "true"})
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Sessions"]
    (table,) = at.dataframe
    assert list(table.value["session"]) == ["session_abc"]
    at = select_row(at, "sessions_table", 0)
    assert not at.exception
    assert at.query_params["session"] == "session_abc"
    assert "3 traces in order of start; select a row (or its link) to open the trace." in (
        captions(at)
    )
    (traces,) = at.dataframe
    assert list(traces.value["trace"]) == [t[0] for t in SESSION_ABC]
    assert list(traces.value["link"]) == [f"/trace?trace={t[0]}" for t in SESSION_ABC]


def test_the_trace_page_links_to_its_session(open_page: OpenPage, langfuse_store: str) -> None:
    trace = SESSION_ABC[1][0]
    at = open_page(langfuse_store, pages.TRACE.script, {"trace": trace})
    at.run()
    assert not at.exception
    (link,) = [p for p in at.get("page_link") if "session" in p.proto.label]
    assert link.proto.label == "Its session: 3 traces"
    assert link.proto.page.endswith("sessions") or "sessions" in link.proto.page
    box = next(e for e in at.expander if e.label == "Other traces of this session (2)")
    assert box is not None


def test_a_format_that_names_no_session_takes_it_from_a_metadata_key() -> None:
    def chat(trace_id: str, metadata: dict[str, object]) -> dict[str, object]:
        return {
            "id": trace_id,
            "metadata": metadata,
            "messages": [{"role": "user", "content": "hi"}],
        }

    items = parse(
        "openai_chat",
        recs(
            chat("a", {"session_id": "s-1", "thread_id": "t-1"}),
            chat("b", {"thread_id": "t-2"}),
            chat("c", {"conversation_id": "c-3"}),
            chat("d", {"session_id": 7, "user": "u"}),
        ),
    )
    assert [(t.external_id, t.session_id) for t in items if isinstance(t, Trace)] == [
        ("a", "s-1"),
        ("b", "t-2"),
        ("c", "c-3"),
        ("d", None),
    ]
