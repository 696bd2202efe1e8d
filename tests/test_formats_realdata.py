"""Format parsers on real traces (``../shared/realdata``): exact figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from formats_helpers import accounted, records_of

from ingest import formats
from ingest.model import Rejected, Trace

# ---------------------------------------------------------------------------------------------
# Real data (../shared/realdata): exact figures

REAL_FOLDERS = [
    # folder, format, traces, tool calls, tool results
    ("openai-chat", "openai_chat", 200, 1164, 1164),
    ("claude-code", "claude_code", 15, 1092, 1091),
    ("openai-legacy", "toolbench", 15, 50, 37),
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
        assert getattr(module, "NAME", None) == fmt, path.name


@pytest.mark.realdata
def test_langfuse_exports_are_not_claimed_by_any_message_format(realdata: Path) -> None:
    for path in sorted((realdata / "langfuse-export").iterdir()):
        assert formats.sniff_format(path.read_bytes()[:65536]) is None, path.name


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
