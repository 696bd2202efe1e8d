"""The output formats of ``toollens lint``: text, JSON, SARIF 2.1.0 and JUnit XML.

* ``text``: one line per finding (``file:line trace call: kind: message``), one per rejected
  record (``file:line: rejected: reason: message``), then the counts per tool and the total.
* ``json``: one object: the counts, ``findings`` (every field of ``LintFinding`` plus
  ``level``), ``rejected``, ``by_tool`` and ``total``.
* ``sarif``: a SARIF 2.1.0 log (OASIS standard; what GitHub code scanning and most CI
  annotators read): one run, a rule per finding kind with its description and default level,
  one result per finding located at its file and line, the trace and call as its logical
  location. Rejected records are results of the rule ``rejected``.
* ``junit``: JUnit XML, a ``testsuite`` per file and a ``testcase`` per trace, failed with one
  ``failure`` listing the trace's findings as text lines; a rejected record is a failed
  ``testcase`` of its own. CI systems show it as a test report.

Trace content reaches the messages (error summaries), so XML output drops the characters XML
1.0 cannot hold (``ElementTree`` would write them and produce a file no parser reads).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import metadata
from typing import Any, Final, Literal, get_args
from urllib.parse import quote
from xml.etree import ElementTree as ET

import orjson

from db.contract.vocabulary import FINDING_DESCRIPTION, FINDING_LEVEL, counted
from ingest.model import Rejected
from ingest.outputs.lint import LOOP_FINDING, LintFinding, LintReport

OutputFormat = Literal["text", "json", "sarif", "junit"]
OUTPUT_FORMATS: Final[tuple[OutputFormat, ...]] = get_args(OutputFormat)

SARIF_VERSION: Final = "2.1.0"
SARIF_SCHEMA: Final = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
#: The rule a rejected record is reported under.
REJECTED_RULE: Final = "rejected"
_RULE_DESCRIPTION: Final[dict[str, str]] = {
    **{str(kind): text for kind, text in FINDING_DESCRIPTION.items()},
    LOOP_FINDING: "the same call (tool and arguments) repeated k or more times in a trace",
    REJECTED_RULE: "an input record ToolLens could not read as part of a trace",
}
_RULE_LEVEL: Final[dict[str, str]] = {
    **{str(kind): level for kind, level in FINDING_LEVEL.items()},
    LOOP_FINDING: "warning",
    REJECTED_RULE: "error",
}
# Characters XML 1.0 does not allow (C0 controls but tab, LF, CR; surrogates; U+FFFE/U+FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def render(report: LintReport, output: str) -> str:
    """``report`` in one of :data:`OUTPUT_FORMATS`, ending with a newline; raises ``KeyError``
    for another ``output``."""
    renderers: dict[str, Callable[[LintReport], str]] = {
        "text": text,
        "json": json,
        "sarif": sarif,
        "junit": junit,
    }
    return renderers[output](report)


def _rejected_line(rejected: Rejected) -> str:
    return f"{rejected.location()}: {REJECTED_RULE}: {rejected.reason}: {rejected.message}"


def text(report: LintReport) -> str:
    """One line per finding and rejected record, then the counts per tool."""
    lines = [finding.text() for finding in report.findings]
    lines += [_rejected_line(r) for r in report.rejected]
    lines += report.summary_lines()
    return "\n".join(lines) + "\n"


#: The keys of a finding in the JSON report, in order: each the finding's attribute of its name.
FINDING_KEYS: Final = ("file", "line", "trace", "call", "tool", "kind", "level", "message")


def _finding_dict(finding: LintFinding) -> dict[str, Any]:
    return {key: getattr(finding, key) for key in FINDING_KEYS}


def json(report: LintReport) -> str:
    """The report as one JSON object (see the module docstring)."""
    document = {
        "traces": report.traces,
        "tool_calls": report.tool_calls,
        "tool_results": report.tool_results,
        "findings": [_finding_dict(f) for f in report.findings],
        "rejected": [
            {"file": r.source_file, "line": r.line, "reason": r.reason, "message": r.message}
            for r in report.rejected
        ],
        "by_tool": {tool: dict(sorted(c.items())) for tool, c in sorted(report.by_tool.items())},
        "ignored": sorted(report.ignore),
        "total": report.total_findings,
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def _uri(path: str) -> str:
    """A file path as a SARIF ``uri`` (a URI reference: forward slashes, escaped)."""
    return quote(path.replace("\\", "/"), safe="/:@-._~")


def _location(file: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(file)}}
    if line is not None and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def sarif(report: LintReport) -> str:
    """The report as a SARIF 2.1.0 log."""
    used = [f.kind for f in report.findings] + [REJECTED_RULE] * bool(report.rejected)
    rule_ids = [kind for kind in _RULE_DESCRIPTION if kind in set(used)]
    index = {rule: i for i, rule in enumerate(rule_ids)}
    results: list[dict[str, Any]] = []
    for finding in report.findings:
        location = _location(finding.file, finding.line)
        location["logicalLocations"] = [
            {
                "name": finding.call,
                "fullyQualifiedName": f"{finding.trace}/{finding.call}",
                "kind": "function",
            }
        ]
        results.append(
            {
                "ruleId": finding.kind,
                "ruleIndex": index[finding.kind],
                "level": finding.level,
                "message": {"text": f"{finding.tool}: {finding.message}"},
                "locations": [location],
                "properties": {"trace": finding.trace, "call": finding.call, "tool": finding.tool},
            }
        )
    for rejected in report.rejected:
        results.append(
            {
                "ruleId": REJECTED_RULE,
                "ruleIndex": index[REJECTED_RULE],
                "level": "error",
                "message": {"text": f"{rejected.reason}: {rejected.message}"},
                "locations": [_location(rejected.source_file, rejected.line)],
            }
        )
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ToolLens",
                        "version": _version(),
                        "rules": [
                            {
                                "id": rule,
                                "shortDescription": {"text": _RULE_DESCRIPTION[rule]},
                                "defaultConfiguration": {"level": _RULE_LEVEL[rule]},
                            }
                            for rule in rule_ids
                        ],
                    }
                },
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
    return orjson.dumps(log, option=orjson.OPT_INDENT_2).decode() + "\n"


def _version() -> str:
    try:
        return metadata.version("toollens")
    except metadata.PackageNotFoundError:
        return "unknown"


def _xml_text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def junit(report: LintReport) -> str:
    """The report as JUnit XML: a testsuite per file, a testcase per trace."""
    by_trace: dict[tuple[str, str], list[LintFinding]] = {}
    for finding in report.findings:
        by_trace.setdefault((finding.file, finding.trace), []).append(finding)
    rejected_by_file: dict[str, list[Rejected]] = {}
    for rejected in report.rejected:
        rejected_by_file.setdefault(rejected.source_file, []).append(rejected)
    files = list(dict.fromkeys([*report.traces_by_file, *rejected_by_file]))
    root = ET.Element("testsuites", name="toollens lint")
    total_tests = total_failures = 0
    for file in files:
        suite = ET.SubElement(root, "testsuite", name=_xml_text(file))
        tests = failures = 0
        for trace in dict.fromkeys(report.traces_by_file.get(file, [])):
            tests += 1
            case = ET.SubElement(
                suite, "testcase", classname=_xml_text(file), name=_xml_text(trace)
            )
            found = by_trace.get((file, trace), [])
            if found:
                failures += 1
                kinds = sorted({f.kind for f in found})
                failure = ET.SubElement(
                    case,
                    "failure",
                    message=_xml_text(f"{counted(len(found), 'finding')}: {', '.join(kinds)}"),
                    type="toollens.lint",
                )
                failure.text = _xml_text("\n".join(f.text() for f in found))
        for rejected in rejected_by_file.get(file, []):
            tests += 1
            failures += 1
            case = ET.SubElement(
                suite, "testcase", classname=_xml_text(file), name=f"line {rejected.line}"
            )
            failure = ET.SubElement(
                case, "failure", message=_xml_text(rejected.reason), type=REJECTED_RULE
            )
            failure.text = _xml_text(_rejected_line(rejected))
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        total_tests += tests
        total_failures += failures
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
