"""Every Tool Message of ``../shared/realdata``, parsed and analyzed without a database.

Shared by the rule-change check (``test_realdata_rule_changes``) and the labelled agreement
test: both need the canonical pipeline (``ingest.formats`` then ``ingest.analysis.trace``) over the
real files, with a stable locator per Tool Message.

A locator is ``(file relative to realdata, trace index in the file, message seq)``; the trace
index counts the traces the file's parser yields, in order, so it stays put as long as the file
and its parser do.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from formats_helpers import records_of

from ingest import formats
from ingest.analysis.facts import ResultFacts, TraceFacts
from ingest.analysis.trace import analyze_trace
from ingest.model import Message, Trace

#: Folders of realdata and the format of every file in them.
FOLDERS: tuple[tuple[str, str], ...] = (
    ("openai-chat", "openai_chat"),
    ("claude-code", "claude_code"),
    ("openai-legacy", "toolbench"),
    ("langfuse-export", "langfuse"),
)


@dataclass(frozen=True, slots=True)
class RealResult:
    """One real Tool Message with its trace and the facts ToolLens derives for it."""

    file: str
    trace_index: int
    trace: Trace
    message: Message
    facts: ResultFacts
    trace_facts: TraceFacts

    @property
    def locator(self) -> tuple[str, int, int]:
        """``(file, trace index, message seq)``."""
        return (self.file, self.trace_index, self.message.seq)


def traces_of(realdata: Path, file: str) -> list[Trace]:
    """The traces of one realdata file (``file`` relative to ``realdata``)."""
    fmt = dict(FOLDERS)[file.split("/", 1)[0]]
    module = formats.get_format(fmt)
    path = realdata / file
    return [t for t in module.parse(records_of(path), path.name) if isinstance(t, Trace)]


def real_results(realdata: Path) -> Iterator[RealResult]:
    """Every Tool Message of every realdata file, in file, trace and seq order."""
    for folder, _ in FOLDERS:
        for path in sorted((realdata / folder).iterdir()):
            file = f"{folder}/{path.name}"
            for index, trace in enumerate(traces_of(realdata, file)):
                facts = analyze_trace(trace, [0] * len(trace.messages))
                by_seq = {m.seq: m for m in trace.messages}
                for result in facts.results:
                    message = by_seq[result.message_seq]
                    yield RealResult(file, index, trace, message, result, facts)
