"""``toollens lint``: every Tool Message finding, straight from files, no database.

Meant as a CI gate for teams that write tools: import nothing, analyze everything, list each
finding (``file:line trace call: kind: message``; ``ingest.outputs.lint_output`` renders it as text,
JSON, SARIF 2.1.0 or JUnit XML) and fail when there are more than the team allows.

A name mismatch is one problem seen from both sides (the call and the Tool Message answering it
under another name); lint reports it once, on the call. Kinds in ``ignore`` are not reported and
do not count. Rejected records always count.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from db.contract.vocabulary import (
    DEFAULT_LOOP_K,
    FINDING_KINDS,
    FindingLevel,
    counted,
    finding_level,
    finding_message,
)
from ingest.analysis.tokens import count_many
from ingest.analysis.trace import analyze_trace
from ingest.input.reading import read_file, resolve_format
from ingest.model import Message, Rejected, Trace, display_id

#: The finding name lint adds for calls that belong to a loop at k.
LOOP_FINDING = "loop"
#: Every kind lint reports: the stored finding kinds and ``loop``.
LINT_KINDS: tuple[str, ...] = (*FINDING_KINDS, LOOP_FINDING)


@dataclass(slots=True, frozen=True)
class LintFinding:
    """One occurrence of a finding, located in its file."""

    file: str
    #: 1-based line of the message the finding is about (else of the trace), when known.
    line: int | None
    #: The trace's display id (external id, else 12 hex digits of its content hash).
    trace: str
    #: The call's ``tool_call_id``; ``#seq.index`` (call) or ``#seq`` (Tool Message) without one.
    call: str
    tool: str
    kind: str
    message: str

    @property
    def level(self) -> FindingLevel:
        """``error`` or ``warning`` (``contract.vocabulary.FINDING_LEVEL``; a loop is a warning)."""
        return finding_level(self.kind)

    @property
    def location(self) -> str:
        """``file:line``, or ``file`` when the line is unknown."""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def text(self) -> str:
        """The finding's line: ``file:line trace call: kind: message``."""
        return f"{self.location} {self.trace} {self.call}: {self.kind}: {self.message}"


@dataclass
class LintReport:
    """Every finding over the linted files, in file, trace and message order."""

    traces: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    findings: list[LintFinding] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    #: Kinds left out of the report (``--ignore``).
    ignore: frozenset[str] = frozenset()
    #: Display ids of the linted traces per file, in order (JUnit lists clean traces too).
    traces_by_file: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    #: Every tool called or answered, findings or not (the summary lists each).
    tools: set[str] = field(default_factory=set)

    @property
    def total_findings(self) -> int:
        """All findings of all tools (rejected records count as findings too)."""
        return len(self.findings) + len(self.rejected)

    @property
    def by_tool(self) -> dict[str, Counter[str]]:
        """Finding counts per tool and kind."""
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for finding in self.findings:
            counts[finding.tool][finding.kind] += 1
        return counts

    def summary_lines(self) -> list[str]:
        """The per-tool counts that close the text output."""
        lines = [
            f"{counted(self.traces, 'trace')}, {counted(self.tool_calls, 'tool call')}, "
            f"{counted(self.tool_results, 'tool result')}"
        ]
        by_tool = self.by_tool
        for tool in sorted(self.tools, key=lambda t: (-sum(by_tool[t].values()), t)):
            counts = by_tool[tool]
            detail = ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
            lines.append(f"  {tool}: {counted(sum(counts.values()), 'finding')} ({detail})")
        if self.ignore:
            lines.append(f"  ignored: {', '.join(sorted(self.ignore))}")
        lines.append(counted(self.total_findings, "finding"))
        return lines

    def add(self, trace: Trace, loop_k: int) -> None:
        """Analyze one trace and add its findings."""
        tokens = count_many([m.content for m in trace.messages])
        facts = analyze_trace(trace, tokens)
        trace_id = display_id(trace)
        self.traces += 1
        self.traces_by_file[trace.source_file].append(trace_id)
        self.tool_calls += len(facts.calls)
        self.tool_results += len(facts.results)
        by_seq = {m.seq: m for m in trace.messages}
        calls = {(m.seq, c.call_index): c for m in trace.messages for c in m.tool_calls}
        looping = {c.signature for c in facts.calls if c.occurrence >= loop_k}
        found: list[tuple[int, int, LintFinding]] = []

        def report(seq: int, order: int, message: Message, call: str, tool: str, kind: str,
                   text: str) -> None:  # fmt: skip
            self.tools.add(tool)
            if kind in self.ignore:
                return
            line = message.source_line if message.source_line is not None else trace.source_line
            finding = LintFinding(trace.source_file, line, trace_id, call, tool, kind, text)
            found.append((seq, order, finding))

        for cf in facts.calls:
            ref = (cf.message_seq, cf.call_index)
            call = calls[ref]
            call_id = call.tool_call_id or f"#{cf.message_seq}.{cf.call_index}"
            message = by_seq[cf.message_seq]
            self.tools.add(call.name)
            for kind in cf.findings:
                answer = by_seq[cf.result_seq].tool_result if cf.result_seq is not None else None
                text = finding_message(
                    kind,
                    schema_issue=cf.schema_issue,
                    schema_detail=cf.schema_detail,
                    args_error=call.args_error,
                    answered_name=answer.name if answer else None,
                )
                report(cf.message_seq, cf.call_index, message, call_id, call.name, kind, text)
            if cf.signature in looping:
                text = f"call {cf.occurrence} of the same tool and arguments (k = {loop_k})"
                report(cf.message_seq, cf.call_index, message, call_id, call.name, LOOP_FINDING,
                       text)  # fmt: skip
        for rf in facts.results:
            message = by_seq[rf.message_seq]
            provided = message.tool_result
            answered = calls.get(rf.call_ref) if rf.call_ref else None
            tool = (
                answered.name if answered else (provided.name if provided else None)
            ) or "(unknown)"
            given_id = (answered.tool_call_id if answered else None) or (
                provided.tool_call_id if provided else None
            )
            call_id = given_id or (
                f"#{rf.call_ref[0]}.{rf.call_ref[1]}" if rf.call_ref else f"#{rf.message_seq}"
            )
            self.tools.add(tool)
            for kind in rf.findings:
                if kind == "name_mismatch":
                    continue  # reported once, on the call
                text = finding_message(kind, tokens=rf.tokens, summary=rf.content.summary)
                report(rf.message_seq, 1_000_000, message, call_id, tool, kind, text)
        self.findings.extend(f for _, _, f in sorted(found, key=lambda item: item[:2]))


def lint_paths(
    paths: Sequence[Path],
    *,
    format_name: str | None = None,
    loop_k: int = DEFAULT_LOOP_K,
    ignore: Collection[str] = (),
) -> LintReport:
    """Lint trace files; raises ``UnknownFormatError`` for a bad ``format_name``."""
    fmt = resolve_format(format_name)
    report = LintReport(ignore=frozenset(ignore))
    for path in paths:
        report.traces_by_file.setdefault(str(path), [])
        for item in read_file(path, str(path), fmt):
            if isinstance(item, Rejected):
                report.rejected.append(item)
            else:
                report.add(item, loop_k)
    return report
