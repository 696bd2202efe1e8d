"""The HTML rendering of an incident report, and the key-figure rows every rendering shows.

Trace content is untrusted: :func:`to_html` escapes every character that could open markup and
defuses URLs and CSS references, so the file runs no script and loads nothing from anywhere (it
also forbids that by CSP). :func:`figures_lines` gives the figure table's rows to the HTML and
the Markdown renderer (``ingest.outputs.report``) alike.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ingest.outputs.cost_text import message_cost_text, total_cost_text


def _line(line: int | None) -> str:
    return f":{line}" if line else ""


def figures_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's key figures as (label, value) rows, in the order both renderings show."""
    f, t = report["figures"], report["trace"]
    share = f["tool_result_share"]
    return [
        ("Trace", str(t["display_id"])),
        ("Source", f"{t['source_file']}{_line(t['source_line'])} ({t['format']})"),
        ("Agent / model", f"{t['agent'] or '-'} / {t['model'] or '-'}"),
        ("Started", str(t["started_at"] or "unknown")),
        (
            "Messages / tool calls / results",
            f"{f['messages']} / {f['tool_calls']} / {f['tool_results']}",
        ),
        ("Errors", str(f["errors"])),
        ("Problems (severity)", str(f["problems"])),
        (
            "Tokens",
            f"{f['total_tokens']} total, {f['tool_result_tokens']} in tool results"
            + (f" ({share:.1%})" if share is not None else ""),
        ),
        ("Wasted tokens (repeats)", str(f["wasted_tokens"])),
        (
            "What the Tool Messages cost (read again by later calls)",
            "not derived for this trace yet (toollens reanalyze derives it)"
            if f["tool_cost"] is None
            else total_cost_text(f["tool_cost"]),
        ),
        (
            "Flagged pairs / corrections / notes",
            f"{f['flagged_pairs']} / {f['corrections']} / {f['annotations']}",
        ),
        ("Reviewed", f"{t['reviewed_at']} by {t['reviewed_by']}" if t["reviewed_at"] else "no"),
    ]


#: Nothing may load from anywhere, scripts least of all; only the inline stylesheet applies.
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;color:#222}
h1{font-size:1.5rem}h2{margin-top:2rem;border-bottom:1px solid #ddd}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:.2rem .6rem;text-align:left;vertical-align:top}
pre{background:#f6f6f6;padding:.6rem;white-space:pre-wrap;word-break:break-word;margin:.3rem 0}
.tag{display:inline-block;background:#fde8e8;color:#a11;border-radius:3px;padding:0 .4rem;
margin:0 .2rem .2rem 0}
.note{background:#fff8db;border-left:3px solid #e0b000;padding:.3rem .6rem;margin:.4rem 0}
.msg{border:1px solid #e4e4e4;border-radius:4px;padding:.4rem .8rem;margin:.5rem 0}
.muted{color:#666}"""
#: Spelled out harmlessly even as text, so that no scanner (or human) mistakes content for a
#: reference to something outside the file.
_DEFUSE = (
    (re.compile(r"://"), "&#58;//"),
    (re.compile(r"url\(", re.IGNORECASE), "url&#40;"),
    (re.compile(r"@import", re.IGNORECASE), "&#64;import"),
    (re.compile(r"\b(src|href|action|srcset)=", re.IGNORECASE), r"\1&#61;"),
)


def _h(text: Any) -> str:
    """Untrusted text as inert HTML text: escaped, and URLs and CSS references defused."""
    out = html.escape("" if text is None else str(text), quote=True)
    for pattern, replacement in _DEFUSE:
        out = pattern.sub(replacement, out)
    return out


_MORE = "<span class=muted>\n…</span>"


def _pre(text: str, truncated: bool = False) -> str:
    return f"<pre>{_h(text)}{_MORE if truncated else ''}</pre>"


def _tags(items: list[str]) -> str:
    return "".join(f"<span class=tag>{_h(i)}</span>" for i in items)


def _html_note(n: dict[str, Any]) -> str:
    who = f"<b>{_h(n['label'])}</b> on {_h(n['on'])} · {_h(n['author'])} · {_h(n['created_at'])}"
    return f"<div class=note>{who}{_pre(n['note']) if n['note'] else ''}</div>"


def _html_pair(p: dict[str, Any]) -> str:
    tool = p.get("call", p.get("result", {})).get("tool")
    parts = [f"<h3>Pair {_h(p['pair'])} · {_h(tool)}</h3>", _tags(p["reasons"])]
    if "call" in p:
        parts += ["<div class=muted>Call arguments</div>", _pre(p["call"]["arguments"] or "")]
    if "result" in p:
        r = p["result"]
        parts.append(
            f"<div class=muted>Result seq {r['seq']} · {_h(r['status'])} · "
            f"{r['tokens']} tokens</div>"
        )
        parts.append(_pre(r["content"], r["truncated"]))
        cost = result_cost(r)
        if cost:
            parts.append(f"<div class=muted>Cost: {_h(cost)}</div>")
        if r["suggestion"]:
            parts.append(
                f"<p>Suggestion: {_h(r['suggestion'])} — verdict <b>{_h(r['verdict'])}</b>"
                f" ({_h(r['verdict_reason'])})</p>"
            )
        changes = corrections_made(r)
        if changes:
            changed = ", ".join(f"{what} {_h(a)} → {_h(b)}" for what, a, b in changes)
            parts.append(f"<p>Corrected by {_h(r['corrected_by'])}: {changed}</p>")
    parts += [_html_note(n) for n in p["notes"]]
    return "<section>" + "".join(parts) + "</section>"


def _html_message(m: dict[str, Any]) -> str:
    parts = [
        f"<div class=msg><b>#{m['seq']} {_h(m['role'])}</b> "
        f"<span class=muted>{m['tokens']} tokens {_h(m['timestamp'] or '')}</span>"
    ]
    if m["content"]:
        parts.append(_pre(m["content"], m["truncated"]))
    for c in m["calls"]:
        parts.append(
            f"<div>calls <b>{_h(c['tool'])}</b> ({_h(c['pair'])}, {_h(c['pair_state'])})"
            f"</div>{_pre(c['arguments'] or '')}"
        )
    if "result" in m:
        r = m["result"]
        what = ", ".join(_h(v) for v in (r["status"], r["error_type"], r["pair_state"]) if v)
        cost = result_cost(r)
        parts.append(
            f"<div>result of {_h(r['pair'])} <b>{_h(r['tool'])}</b>: {what}"
            + (f" <span class=muted>· {_h(cost)}</span>" if cost else "")
            + "</div>"
        )
    return "".join(parts) + "</div>"


def _view_link(url: str | None) -> str:
    """The one link of the file, back to the dashboard view the report was made from (an
    http(s) address the dashboard gave, never trace content); nothing without one. A link
    loads nothing until it is followed, so the file stays self-contained."""
    if not url:
        return ""
    if not re.match(r"https?://", url):
        raise ValueError(f"not a web address: {url!r}")
    href = html.escape(url, quote=True)
    return f'<p><a href="{href}" rel="noreferrer">Open this view in ToolLens</a></p>'


def result_cost(result: dict[str, Any]) -> str | None:
    """A report's result's cost figures in words (``ingest.outputs.cost_text``); ``None`` when
    it has none."""
    return message_cost_text(
        result["later_calls"],
        result["reread_tokens"],
        result["reread_cached"],
        bool(result["reread_measured"]),
        result["cost_usd"],
    )


def corrections_made(result: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """What a reviewer's correction of ``result`` (a report's result) changed: ``(what,
    derived, corrected)`` for the error type and the verdict, each only where the corrected
    value differs from the derived one (a correction that confirms a value changes nothing).

    >>> corrections_made({"error_type_derived": "not_found", "error_type_corrected": "not_found",
    ...                   "verdict_derived": "ignored", "verdict_corrected": "followed"})
    [('verdict', 'ignored', 'followed')]
    """
    return [
        (what, result[f"{field}_derived"], result[f"{field}_corrected"])
        for what, field in (("error type", "error_type"), ("verdict", "verdict"))
        if result[f"{field}_corrected"] is not None
        and result[f"{field}_corrected"] != result[f"{field}_derived"]
    ]


def to_html(report: dict[str, Any]) -> str:
    """The report as one HTML file: inline CSS, no script, no reference that loads anything
    (the link back to the dashboard view, when known, loads only when followed)."""
    title = f"Incident report: {_h(report['trace']['display_id'])}"
    figures = "".join(
        f"<tr><th>{_h(k)}</th><td>{_h(v)}</td></tr>" for k, v in figures_lines(report)
    )
    body = [
        f"<h1>{title}</h1>",
        f"<p class=muted>Generated {_h(report['generated_at'])} by ToolLens "
        f"(loop k={report['loop_k']}).</p>",
        _view_link(report.get("view_url")),
        f"<table>{figures}</table>",
        f"<h2>Notes ({len(report['annotations'])})</h2>",
        "".join(_html_note(n) for n in report["annotations"]) or "<p class=muted>None.</p>",
        f"<h2>Flagged pairs ({len(report['flagged'])})</h2>",
        "".join(_html_pair(p) for p in report["flagged"]) or "<p class=muted>None.</p>",
        "<h2>Conversation</h2>",
        "".join(_html_message(m) for m in report["conversation"]),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{title}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
