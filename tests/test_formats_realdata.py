"""Format parsers on real traces (``../shared/realdata``): exact figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from formats_helpers import accounted, records_of

from db.engine import make_engine
from db.queries.summary import summarize
from ingest import formats
from ingest.analysis.pairing import pair_trace
from ingest.importing.pipeline import import_paths
from ingest.model import Rejected, Trace

# ---------------------------------------------------------------------------------------------
# Real data (../shared/realdata): exact figures

REAL_FOLDERS = [
    # folder, format, traces, tool calls, tool results
    ("openai-chat", "openai_chat", 200, 1164, 1164),
    ("claude-code", "claude_code", 15, 1092, 1091),
    ("openai-legacy", "toolbench", 15, 50, 37),
    ("langfuse-export", "langfuse", 15, 14, 14),
]


def _parse_folder(folder: Path, fmt: str) -> tuple[list[Trace], int, int]:
    """Traces of every file in ``folder``, how many records they had, how many were rejected."""
    module = formats.get_format(fmt)
    traces, record_total, rejected = [], 0, 0
    for path in sorted(folder.iterdir()):
        records = list(records_of(path))
        items = list(module.parse(iter(records), path.name))
        assert accounted(items) == len(records), path.name
        record_total += len(records)
        rejected += sum(1 for i in items if isinstance(i, Rejected))
        traces += [i for i in items if isinstance(i, Trace)]
    return traces, record_total, rejected


@pytest.mark.realdata
@pytest.mark.parametrize(("folder", "fmt", "traces", "calls", "results"), REAL_FOLDERS)
def test_real_traces_give_the_known_counts_of_traces_calls_and_results(
    realdata: Path, folder: str, fmt: str, traces: int, calls: int, results: int
) -> None:
    parsed, _, rejected = _parse_folder(realdata / folder, fmt)
    assert rejected == 0
    assert len(parsed) == traces
    assert sum(len(m.tool_calls) for t in parsed for m in t.messages) == calls
    assert sum(1 for t in parsed for m in t.messages if m.tool_result is not None) == results


@pytest.mark.realdata
@pytest.mark.parametrize(("folder", "fmt"), [(f, fmt) for f, fmt, *_ in REAL_FOLDERS])
def test_every_real_file_is_sniffed_as_its_format(realdata: Path, folder: str, fmt: str) -> None:
    for path in sorted((realdata / folder).iterdir()):
        module = formats.sniff_format(path.read_bytes()[:65536])
        assert getattr(module, "name", None) == fmt, path.name


# Langfuse exports of 15 agent frameworks, counted by hand from the observations: per file the
# messages of the rebuilt conversation, tool calls, tool results, results flagged as errors.
LANGFUSE_FILES = [
    ("ag2-2026-03-09.json", 5, 1, 1, 0),
    ("agno-2025-06-11.json", 5, 1, 1, 0),
    ("autogen-2025-06-06.json", 3, 0, 0, 0),
    ("beeai-2025-08-01.json", 8, 2, 2, 0),
    ("google-adk-2025-08-28.json", 5, 1, 1, 0),
    ("google-gemini-2025-08-01.json", 2, 0, 0, 0),
    ("google-vertex-tools-langchain-2025-09-19.json", 6, 0, 0, 0),
    ("koog-2025-08-26.json", 7, 2, 2, 0),
    ("langgraph-2025-08-22.json", 5, 1, 1, 0),
    ("llamaindex-2025-06-05.json", 2, 0, 0, 0),
    ("microsoft-agent-2025-10-14.json", 4, 1, 1, 0),
    ("openai-agents-2025-09-30.json", 5, 1, 1, 0),
    ("openai-assistants-2024-05-29.json", 3, 0, 0, 0),
    ("pydantic-ai-tools-2025-12-04.json", 13, 4, 4, 0),
    ("pydantic-ai-trace-2025-06-06.json", 3, 0, 0, 0),
]


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("name", "messages", "calls", "results", "errors"),
    LANGFUSE_FILES,
    ids=[row[0].rsplit("-20", 1)[0] for row in LANGFUSE_FILES],
)
def test_each_langfuse_export_gives_one_trace_with_its_calls_paired_to_their_results(
    realdata: Path, name: str, messages: int, calls: int, results: int, errors: int
) -> None:
    path = realdata / "langfuse-export" / name
    items = list(formats.langfuse.FORMAT.parse(records_of(path), name))
    assert len(items) == 1 and isinstance(items[0], Trace), items
    trace = items[0]
    flagged = [m for m in trace.messages if m.tool_result and m.tool_result.explicit_error]
    assert len(trace.messages) == messages
    assert sum(len(m.tool_calls) for m in trace.messages) == calls
    assert sum(1 for m in trace.messages if m.tool_result is not None) == results
    assert len(flagged) == errors
    pairing = pair_trace(trace)
    assert [c.pair_state for c in pairing.calls.values()] == ["paired"] * calls
    assert trace.external_id is not None and trace.started_at is not None


@pytest.mark.realdata
def test_langfuse_exports_fit_langfuse_before_any_other_format(realdata: Path) -> None:
    for path in sorted((realdata / "langfuse-export").iterdir()):
        head = path.read_bytes()[:65536]
        assert [f.name for f in formats.fitting(head)][:1] == ["langfuse"], path.name


@pytest.mark.realdata
def test_langfuse_exports_declare_their_tools_and_keep_them_apart_from_results(
    realdata: Path,
) -> None:
    folder = realdata / "langfuse-export"
    vertex = "google-vertex-tools-langchain-2025-09-19.json"
    trace = next(formats.langfuse.FORMAT.parse(records_of(folder / vertex), vertex))
    assert isinstance(trace, Trace)
    assert [t.name for t in trace.tools] == [
        "transition_to_service_a",
        "transition_to_service_b",
        "transition_to_service_c",
        "get_customer_info",
        "escalate_to_human",
    ]
    assert [m.role for m in trace.messages] == [
        "system",
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


@pytest.mark.realdata
def test_all_langfuse_exports_import_into_the_database_with_every_call_paired(
    db_url: str, realdata: Path
) -> None:
    engine = make_engine(db_url)
    files = sorted((realdata / "langfuse-export").glob("*.json"))
    summary = import_paths(engine, files)
    data = summarize(engine)
    engine.dispose()
    assert (summary.files, summary.records, summary.traces, summary.rejected) == (15, 15, 15, 0)
    assert summary.messages == 76
    assert (data["traces"], data["messages"], data["tool_calls"], data["tool_results"]) == (
        15,
        76,
        14,
        14,
    )
    assert data["pair_states"]["paired"] == 14
    assert sum(data["pair_states"].values()) == 14


@pytest.mark.realdata
def test_real_claude_code_sessions_keep_every_line_and_flag_149_errors(realdata: Path) -> None:
    parsed, records, _ = _parse_folder(realdata / "claude-code", "claude_code")
    assert sum(t.record_count for t in parsed) == records == 3096
    flagged = [
        m for t in parsed for m in t.messages if m.tool_result and m.tool_result.explicit_error
    ]
    assert len(flagged) == 149
    assert sum(1 for t in parsed if not t.messages) == 1  # the file of summary lines only
    assert sum(1 for t in parsed for m in t.messages if m.branch is not None) == 384
    usages = [m.usage for t in parsed for m in t.messages if m.usage is not None]
    assert len(usages) == 1118  # one per distinct message.id
    assert sum(u["output_tokens"] for u in usages) == 138636


@pytest.mark.realdata
def test_real_tau_bench_conversations_reuse_73_call_ids(realdata: Path) -> None:
    parsed, _, _ = _parse_folder(realdata / "openai-chat", "openai_chat")
    reused = 0
    for trace in parsed:
        seen: set[str | None] = set()
        for call in (c for m in trace.messages for c in m.tool_calls):
            reused += call.tool_call_id in seen
            seen.add(call.tool_call_id)
    assert reused == 73
