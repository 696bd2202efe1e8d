"""Incident reports: one trace as a self-contained document for the people who own the tool.

:func:`build_report` gathers a trace's key figures, its flagged pairs (errors, pairing
problems, loops, ignored advice, findings, corrections, notes), the reviewers' annotations and
the conversation into one plain dict; :func:`to_markdown`, :func:`to_html` and :func:`to_json`
render it. Trace content is untrusted: Markdown puts it in code fences longer than any backtick
run inside it, and the HTML escapes every character that could open markup and defuses URLs, so
the file runs no script and loads nothing from anywhere (it also forbids that by CSP).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import orjson
import pandas as pd
from sqlalchemy import Engine

from db.contract.vocabulary import DEFAULT_LOOP_K, PAIR_STATES
from db.queries.summary import trace_tool_cost, usd
from db.queries.traces import trace_findings, trace_window
from db.writes.annotations import trace_annotations
from db.writes.review import trace_header
from ingest.outputs.report_html import corrections_made, figures_lines, result_cost, to_html

#: Characters of one message kept in a report (0 = everything); the rest is counted, not shown.
DEFAULT_MAX_CHARS = 4000
REPORT_VERSION = 1
REPORT_FORMATS = ("md", "html", "json")
MIME_TYPES = {"md": "text/markdown", "html": "text/html", "json": "application/json"}
#: Findings already said by the pair's own reasons.
_SAID = {
    *(state for state in PAIR_STATES if state != "paired"),
    "name_mismatch",
    "oversized",
    "unparsed_arguments",
}


class UnknownTraceError(LookupError):
    """No stored trace has the id asked for."""


def _native(value: Any) -> Any:
    """Plain JSON-ready Python: NaN/NaT -> None, timestamps -> ISO text, numpy -> int/float."""
    if value is None or isinstance(value, list | dict):
        return value
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    if pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _native(v) for k, v in row.items()} for row in df.to_dict("records")]


def _cut(text: str | None, max_chars: int) -> dict[str, Any]:
    text = text or ""
    if max_chars and len(text) > max_chars:
        return {"content": text[:max_chars], "chars": len(text), "truncated": True}
    return {"content": text, "chars": len(text), "truncated": False}


def _ref(seq: int, call_index: int | None) -> str:
    """The Trace page's ``pair`` value: ``"12:0"`` for a call, ``"r12"`` for a lone result."""
    return f"r{seq}" if call_index is None else f"{seq}:{call_index}"


def _reasons(call: dict[str, Any] | None, result: dict[str, Any] | None, k: int) -> list[str]:
    out: list[str] = []
    if call is not None:
        if call["pair_state"] != "paired":
            out.append(call["pair_state"])
        if call["occurrence"] >= k:
            out.append(f"loop: identical call #{call['occurrence']} (k={k})")
        if call["retry_after_error"]:
            out.append("retry after error")
        if call["ping_pong"]:
            out.append("ping-pong")
        if call["name_mismatch"]:
            out.append("name_mismatch")
        if not call["args_valid"]:
            out.append("unparsed_arguments")
        if call["schema_issue"]:
            out.append(f"schema: {call['schema_issue']}")
    if result is not None:
        if result["status"] == "error":
            out.append(f"error: {result['error_type'] or 'unclassified'}")
        if result["verdict"] == "ignored":
            out.append("ignored suggestion")
        if result["oversized"]:
            out.append(f"oversized: {result['tokens']} tokens")
        if call is None:
            out.append(result["pair_state"])
    return out


def _pair(
    call: dict[str, Any] | None, result: dict[str, Any] | None, k: int, max_chars: int
) -> dict[str, Any]:
    out: dict[str, Any] = {"reasons": _reasons(call, result, k), "findings": []}
    #: (message_seq, call_index) of the rows this pair's findings are stored under.
    keys: set[tuple[int, int | None]] = set()
    if call is not None:
        out["pair"] = _ref(call["message_seq"], call["call_index"])
        out["call"] = {
            "seq": call["message_seq"],
            "index": call["call_index"],
            "tool": call["tool_name"],
            "id": call["tool_call_id"],
            "arguments": call["arguments_raw"],
            "pair_state": call["pair_state"],
            "occurrence": call["occurrence"],
        }
        keys.add((call["message_seq"], call["call_index"]))
    if result is not None:
        out.setdefault("pair", _ref(result["message_seq"], None))
        keys.add((result["message_seq"], None))
        out["result"] = {
            "seq": result["message_seq"],
            "tool": result["tool"],
            "status": result["status"],
            "status_source": result["status_source"],
            "error_type": result["error_type"],
            "error_type_derived": result["derived_error_type"],
            "error_type_corrected": result["error_type_corrected"],
            "suggestion": result["suggestion"],
            "verdict": result["verdict"],
            "verdict_derived": result["derived_verdict"],
            "verdict_corrected": result["verdict_corrected"],
            "verdict_reason": result["verdict_reason"],
            "corrected_by": result["corrected_by"],
            "tokens": result["tokens"],
            **_cost(result),
            **_cut(result["content"], max_chars),
        }
    out["keys"] = keys
    return out


def _cost(result: dict[str, Any]) -> dict[str, Any]:
    """What a Tool Message adds to the model calls after it (``ingest.analysis.costs``): the
    later calls that read it, the tokens of the reads after the first (of them cached: ``None``
    for an estimate), whether that is measured from the calls' usage, and every read priced in
    dollars (``None``: the model has no price, tokens only). All ``None`` for a result stored
    before they were derived (until ``toollens reanalyze``)."""

    def whole(key: str) -> int | None:
        # A frame column with a missing value holds floats.
        return None if result[key] is None else int(result[key])

    measured, nano = result["reread_measured"], whole("cost_nano_usd")
    return {
        "later_calls": whole("later_calls"),
        "reread_tokens": whole("reread_tokens"),
        "reread_cached": whole("reread_cached"),
        "reread_measured": None if measured is None else bool(measured),
        "cost_usd": None if nano is None else usd(nano),
    }


def _pairs(
    calls: list[dict[str, Any]], results: list[dict[str, Any]], k: int, max_chars: int
) -> list[dict[str, Any]]:
    by_seq = {r["message_seq"]: r for r in results}
    pairs = [_pair(c, by_seq.get(c["result_seq"]), k, max_chars) for c in calls]
    # Results that answer no call, and second answers to an answered call, stand on their own.
    lone = [r for r in results if r["call_seq"] is None or r["pair_state"] == "duplicate_result"]
    pairs += [_pair(None, r, k, max_chars) for r in lone]
    return pairs


#: Longest title part of a report's file name (characters).
FILE_TITLE_CHARS = 60


def _file_safe(text: str) -> str:
    """``text`` in ASCII letters and digits (accents dropped: ``Ä`` → ``A``), every other run
    of characters, and every run of ``.``, ``_`` and ``-``, one ``-``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    dashed = re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_text)
    return re.sub(r"[-._]{2,}", "-", dashed).strip("-._")


def report_file_name(title: str | None, display_id: str, day: date | None, fmt: str) -> str:
    """The file name of a trace's report: ``toollens-<title>-<day>.<fmt>``, the title (else
    the trace's id) cut to :data:`FILE_TITLE_CHARS` and reduced to letters, digits, ``.``,
    ``_`` and ``-`` (safe on every file system and in a download header), the day the trace
    started (else none).

    >>> report_file_name("Why is order #7 / item 3 missing?", "t-1", date(2026, 11, 30), "md")
    'toollens-Why-is-order-7-item-3-missing-2026-11-30.md'
    >>> report_file_name(None, "../../etc/passwd", None, "html")
    'toollens-etc-passwd.html'
    """
    stem = _file_safe(title or "")[:FILE_TITLE_CHARS].strip("-._") or _file_safe(display_id)
    parts = ["toollens", stem[:FILE_TITLE_CHARS].strip("-._") or "trace"]
    if day is not None:
        parts.append(day.isoformat())
    return "-".join(parts) + f".{fmt}"


def build_report(
    engine: Engine,
    trace: int | str,
    *,
    loop_k: int = DEFAULT_LOOP_K,
    max_chars: int = DEFAULT_MAX_CHARS,
    now: datetime | None = None,
    view_url: str | None = None,
) -> dict[str, Any]:
    """The incident report of one trace (by id, or by display id: the first imported wins).
    ``view_url``: the dashboard's address of the view the report is made from, linked from
    the report (none when the address is not known).

    Raises :class:`UnknownTraceError` when no trace matches.
    """
    header = trace_header(engine, trace)
    if header is None:
        raise UnknownTraceError(f"no trace with id {trace!r}")
    trace_id = int(header["id"])
    window = trace_window(engine, trace_id, page=0, size=max(1, int(header["message_count"])))
    calls, results = _records(window.calls), _records(window.results)
    findings = _records(trace_findings(engine, trace_id))
    notes = [
        {
            "id": a.id,
            "on": "trace" if a.message_seq is None else _ref(a.message_seq, a.call_index),
            "label": a.label,
            "note": a.note,
            "author": a.author,
            "created_at": _native(a.created_at),
            "updated_at": _native(a.updated_at),
            "updated_by": a.updated_by,
            "version": a.version,
        }
        for a in trace_annotations(engine, trace_id)
    ]
    pairs = _pairs(calls, results, loop_k, max_chars)
    for pair in pairs:
        keys = pair.pop("keys")
        pair["findings"] = sorted(
            {f["name"] for f in findings if (f["message_seq"], f["call_index"]) in keys} - _SAID
        )
        pair["reasons"] += [f"finding: {name}" for name in pair["findings"]]
        pair["notes"] = [n for n in notes if n["on"] == pair["pair"]]
        corrected = "result" in pair and bool(corrections_made(pair["result"]))
        pair["flagged"] = bool(pair["reasons"] or pair["notes"] or corrected)
    flagged = [p for p in pairs if p["flagged"]]
    # The trace's own metadata stays in (as stored, a JSON object); tool definitions and tags
    # are not part of an incident report.
    header_out = {k: _native(v) for k, v in header.items() if k not in ("tools", "tags")}
    total, results_tokens = int(header["total_tokens"]), int(header["tool_result_tokens"])
    return {
        "report": "toollens incident report",
        "version": REPORT_VERSION,
        "generated_at": _native(now or datetime.now(UTC)),
        "view_url": view_url,
        "loop_k": loop_k,
        "max_chars": max_chars,
        "trace": header_out,
        "figures": {
            "messages": header["message_count"],
            "tool_calls": header["tool_call_count"],
            "tool_results": header["tool_result_count"],
            "errors": header["error_count"],
            "problems": header["problem_count"],
            "total_tokens": total,
            "tool_result_tokens": results_tokens,
            "tool_result_share": round(results_tokens / total, 4) if total else None,
            "wasted_tokens": header["wasted_tokens"],
            "max_occurrence": header["max_occurrence"],
            # None for a trace stored before the figures were derived (until reanalyze).
            "tool_cost": trace_tool_cost(engine, trace_id)
            if any(r["later_calls"] is not None for r in results) or not results
            else None,
            "flagged_pairs": len(flagged),
            "corrections": sum(1 for p in pairs if "result" in p and corrections_made(p["result"])),
            "annotations": len(notes),
        },
        "flagged": flagged,
        "annotations": notes,
        "conversation": _conversation(_records(window.messages), calls, results, max_chars),
    }


def _conversation(
    messages: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    results: list[dict[str, Any]],
    max_chars: int,
) -> list[dict[str, Any]]:
    by_result = {r["message_seq"]: r for r in results}
    out = []
    for m in messages:
        item: dict[str, Any] = {
            "seq": m["seq"],
            "role": m["role"],
            "timestamp": m["timestamp"],
            "tokens": m["tokens"],
            **_cut(m["content"], max_chars),
        }
        item["chars"] = max(item["chars"], int(m["chars"] or 0))
        item["calls"] = [
            {
                "pair": _ref(c["message_seq"], c["call_index"]),
                "tool": c["tool_name"],
                "arguments": c["arguments_raw"],
                "pair_state": c["pair_state"],
            }
            for c in calls
            if c["message_seq"] == m["seq"]
        ]
        r = by_result.get(m["seq"])
        if r is not None:
            lone = r["call_seq"] is None or r["pair_state"] == "duplicate_result"
            item["result"] = {
                "pair": _ref(r["message_seq"], None)
                if lone
                else _ref(r["call_seq"], r["call_index"]),
                "tool": r["tool"],
                "status": r["status"],
                "error_type": r["error_type"],
                "verdict": r["verdict"],
                "pair_state": r["pair_state"],
                **_cost(r),
            }
        out.append(item)
    return out


def to_json(report: dict[str, Any]) -> str:
    """The report as indented JSON (trace content verbatim: it is data here)."""
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


# --- Markdown --------------------------------------------------------------------------------


def _md(text: Any) -> str:
    """Untrusted text as one Markdown code span: shown literally, never a link, image or HTML.

    >>> _md("[x](http://e.x)")
    '`[x](http://e.x)`'
    """
    flat = " ".join(str("" if text is None else text).split())
    if not flat:
        return ""
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def _link(url: str) -> str:
    """The dashboard's own address as a Markdown autolink: only an http(s) URL, its ``<``,
    ``>`` and spaces percent-encoded so that it stays one link."""
    if not re.match(r"https?://", url):
        raise ValueError(f"not a web address: {url!r}")
    return url.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20")


def _cell(text: Any) -> str:
    """A table cell: a code span whose pipes are escaped (GFM splits cells on them)."""
    return _md(text).replace("|", "\\|")


def _fence(text: str, language: str = "text") -> str:
    """A code block that no backtick run inside ``text`` can close early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def to_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown; trace content sits in code fences, other text is escaped."""
    lines = [f"# Incident report: {_md(report['trace']['display_id'])}", ""]
    lines += [
        f"Generated {_md(report['generated_at'])} by ToolLens (loop k={report['loop_k']}).",
        "",
    ]
    if report.get("view_url"):
        lines += [f"Made from this view: <{_link(report['view_url'])}>", ""]
    lines += ["| Figure | Value |", "|---|---|"]
    lines += [f"| {k} | {_cell(v)} |" for k, v in figures_lines(report)]
    lines += ["", f"## Notes ({len(report['annotations'])})", ""]
    for n in report["annotations"]:
        who = f"by {_md(n['author'])}, {_md(n['created_at'])}"
        lines.append(f"- **{_md(n['label'])}** on {_md(n['on'])} {who}")
        if n["note"]:
            lines += ["", _fence(n["note"]), ""]
    lines += ["", f"## Flagged pairs ({len(report['flagged'])})", ""]
    for p in report["flagged"]:
        tool = p.get("call", p.get("result", {})).get("tool")
        lines += [f"### Pair {_md(p['pair'])} · {_md(tool)}", ""]
        lines += [f"- {_md(reason)}" for reason in p["reasons"]]
        if "call" in p:
            lines += ["", "Call arguments:", "", _fence(p["call"]["arguments"] or "", "json")]
        if "result" in p:
            r = p["result"]
            lines += ["", f"Result (seq {r['seq']}, {_md(r['status'])}, {r['tokens']} tokens):", ""]
            lines += [_fence(r["content"] + ("\n…" if r["truncated"] else ""))]
            cost = result_cost(r)
            if cost:
                lines += ["", f"Cost: {_md(cost)}"]
            if r["suggestion"]:
                lines += [
                    "",
                    f"Suggestion: {_md(r['suggestion'])}; verdict {_md(r['verdict'])} "
                    f"({_md(r['verdict_reason'])})",
                ]
            changes = corrections_made(r)
            if changes:
                changed = ", ".join(f"{what} {_md(a)} → {_md(b)}" for what, a, b in changes)
                lines += ["", f"Corrected by {_md(r['corrected_by'])}: {changed}"]
        for n in p["notes"]:
            lines += ["", f"Note ({_md(n['label'])}, {_md(n['author'])}): {_md(n['note'])}"]
        lines.append("")
    lines += ["## Conversation", ""]
    for m in report["conversation"]:
        lines += [f"**#{m['seq']} {_md(m['role'])}** · {m['tokens']} tokens", ""]
        if m["content"]:
            lines += [_fence(m["content"] + ("\n…" if m["truncated"] else "")), ""]
        for c in m["calls"]:
            lines += [f"- calls {_md(c['tool'])} ({_md(c['pair'])}, {_md(c['pair_state'])}):", ""]
            lines += [_fence(c["arguments"] or "", "json"), ""]
        if "result" in m:
            r = m["result"]
            what = ", ".join(_md(v) for v in (r["status"], r["error_type"], r["pair_state"]) if v)
            cost = result_cost(r)
            lines += [
                f"- result of {_md(r['pair'])} {_md(r['tool'])}: {what}"
                + (f" · {_md(cost)}" if cost else ""),
                "",
            ]
    return "\n".join(lines).rstrip() + "\n"


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "md": to_markdown,
    "html": to_html,
    "json": to_json,
}


def render(report: dict[str, Any], fmt: str) -> str:
    """The report in ``fmt`` (``md``, ``html`` or ``json``)."""
    try:
        return RENDERERS[fmt](report)
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; use md, html or json") from None
