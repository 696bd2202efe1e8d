"""``toollens lint``: Tool Message findings per tool, straight from files, no database.

Meant as a CI gate for teams that write tools: import nothing, analyze everything, print the
findings per tool, and fail when there are more than the team allows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from db.vocabulary import DEFAULT_LOOP_K
from ingest.analysis import analyze_trace
from ingest.model import Rejected, Trace
from ingest.reading import read_file, resolve_format
from ingest.tokens import count_many

#: The finding name lint adds for calls that belong to a loop at k.
LOOP_FINDING = "loop"


@dataclass
class LintReport:
    """Findings per tool over the linted files."""

    traces: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    by_tool: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    rejected: list[Rejected] = field(default_factory=list)

    @property
    def total_findings(self) -> int:
        """All findings of all tools (rejected records count as findings too)."""
        return sum(sum(c.values()) for c in self.by_tool.values()) + len(self.rejected)

    def text(self) -> str:
        """The report as printed by ``toollens lint``."""
        lines = [
            f"{self.traces} traces, {self.tool_calls} tool calls, {self.tool_results} tool results"
        ]
        for tool in sorted(self.by_tool, key=lambda t: (-sum(self.by_tool[t].values()), t)):
            counts = self.by_tool[tool]
            detail = ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
            lines.append(f"  {tool}: {sum(counts.values())} findings ({detail})")
        for r in self.rejected:
            lines.append(f"  {r.location()}: rejected: {r.reason}: {r.message}")
        lines.append(f"{self.total_findings} findings")
        return "\n".join(lines)

    def add(self, trace: Trace, loop_k: int) -> None:
        """Analyze one trace and add its findings."""
        tokens = count_many([m.content for m in trace.messages])
        facts = analyze_trace(trace, tokens)
        names = {(m.seq, c.call_index): c.name for m in trace.messages for c in m.tool_calls}
        self.traces += 1
        self.tool_calls += len(facts.calls)
        self.tool_results += len(facts.results)
        looping = {c.signature for c in facts.calls if c.occurrence >= loop_k}
        for call in facts.calls:
            tool = names[(call.message_seq, call.call_index)]
            self.by_tool[tool].update(call.findings)
            if call.signature in looping:
                self.by_tool[tool][LOOP_FINDING] += 1
        by_seq = {m.seq: m for m in trace.messages}
        for result in facts.results:
            answered = names.get(result.call_ref) if result.call_ref else None
            if answered is None:
                provided = by_seq[result.message_seq].tool_result
                answered = (provided.name if provided else None) or "(unknown)"
            self.by_tool[answered].update(result.findings)


def lint_paths(
    paths: Sequence[Path], *, format_name: str | None = None, loop_k: int = DEFAULT_LOOP_K
) -> LintReport:
    """Lint trace files; raises ``UnknownFormatError`` for a bad ``format_name``."""
    fmt = resolve_format(format_name)
    report = LintReport()
    for path in paths:
        for item in read_file(path, str(path), fmt):
            if isinstance(item, Rejected):
                report.rejected.append(item)
            else:
                report.add(item, loop_k)
    return report
