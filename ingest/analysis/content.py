"""What one Tool Message says about itself: status, error type, summary, suggestion, findings.

:func:`analyze_content` reads a result's text plus the explicit error flag its source gave
(Anthropic ``is_error``, LangChain ``status``, tau2 ``error`` …) and returns
:class:`ingest.analysis.facts.ContentFacts`. It is pure: same input, same facts, so ``toollens
reanalyze`` can rerun it when a rule improves.

**Status precedence** (``status_source`` says which step decided):

1. ``explicit`` — the source's flag. ``True``: ``error``; ``rule`` is the flag's name
   (``is_error``) or ``explicit_flag``. ``False``: ``success`` — unless the content says the
   result is incomplete: a protocol ``partial`` (source ``protocol``) or a truncation marker
   (source ``inferred``, rule ``partial_text``). The flag only tells error from not-error, and
   "[336 lines truncated]" refines success rather than contradicting it.
2. ``protocol`` — the content is a JSON object with a valid ``status`` (``ingest.protocol``);
   ``rule`` is ``protocol``. A protocol ``error_type`` is kept verbatim.
3. ``inferred`` — text rules (``ingest.analysis.error_rules``). An error's ``rule`` is the name of
the
   rule that typed it (``http_429``) or, when no type rule fits (``other``), of the rule that
   detected it (``error_prefix``). A non-error with an explicit partial marker ("partial
   results", "[67 lines truncated]", "showing first 50 of …") is ``partial``, rule
   ``partial_text``.

Errors whose type is not given by the protocol are typed by the text rules; ``other`` when none
fits.

**Success and unknown.** An empty result set is a success (rule ``empty_result``): ``""``,
whitespace, ``[]``, ``{}``, ``null``, ``None``, "No results", "0 results". Any other content no
rule flags is a success too (rule ``no_error_signal``): a result that says nothing alarming is a
result. ``unknown`` is kept for content that is not plausibly a result at all: a value the
runtime failed to render (``undefined``, ``[object Object]``, ``NaN``, ``<coroutine object …>``,
``<… object at 0x…>``), rule ``unrendered_object``. The text then describes the tool runtime's
bug, not the tool's outcome.

**Findings** (content only, in ``db.contract.vocabulary.FINDING_KINDS`` order):

* ``bare_status`` — the content, trimmed and without quotes or final punctuation, is one of
  ``BARE_WORDS`` or is empty, or it is a JSON object whose single status-like key (``status``,
  ``result``, ``success``, ``ok``, ``message``, ``state``) holds such a word or a boolean
  (``{"status": "ok"}``). The empty string *is* bare: it tells the model even less than
  "ok". ``[]``, ``null`` and "No results" are not: they say "nothing matched".
* ``raw_exception`` — an error whose text carries a traceback, stack frames, an exception line
  or a crash, and no protocol ``error_type``.
* ``error_without_suggestion`` — status ``error`` and no suggestion found.
* ``empty_marked_error`` — flagged as an error (explicitly or by the protocol) but the content
  adds nothing beyond that: bare or empty text, or a protocol object with only ``status``.

**Summary**: the protocol ``summary``; else, for errors and unknowns, the error message of a JSON
error object or the first line of the text, at most ``MAX_SUMMARY`` characters.

**Suggestion**: the protocol ``suggestion`` (its kind and detail are what
:func:`ingest.analysis.suggestions.extract_suggestion` finds in it, ``other`` when no pattern fits);
else, for errors, partial and unknown results only, advice found in the text (in the protocol
``summary`` for protocol content). ``ContentFacts.suggestion_source`` tells the two apart. Text
of successful results is data, and advice-like phrases inside data are not addressed to the
model.

**Long content**: regexes read only the first and last 16 KB
(``ingest.analysis.error_detection.scan_window``); JSON is parsed once, whole, because ``orjson``
does that at hundreds of MB/s.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

from db.contract.vocabulary import FINDING_KINDS, Status, StatusSource
from ingest.analysis.error_detection import (
    HEAD_CHARS,
    NOT_JSON,
    detect_error,
    first_line,
    parse_json,
    scan_window,
)
from ingest.analysis.error_rules import classify_error, is_exception_text
from ingest.analysis.facts import ContentFacts
from ingest.analysis.suggestions import extract_suggestion
from ingest.protocol import ToolMessage, protocol_from_object

#: Longest summary kept; longer first lines are cut with an ellipsis.
MAX_SUMMARY: Final = 200
#: The findings a result's content alone decides (the first of ``FINDING_KINDS``, in that order).
CONTENT_FINDINGS: Final = FINDING_KINDS[:4]
#: Words that, alone, make a result a bare status (besides the empty text).
BARE_WORDS: tuple[str, ...] = (
    "success",
    "successful",
    "succeeded",
    "ok",
    "okay",
    "done",
    "complete",
    "completed",
    "error",
    "errors",
    "failed",
    "failure",
    "fail",
    "true",
    "false",
)

# These three read the stripped text of short content only (see _compact).
_BARE = re.compile(rf"[\"'`]*(?:{'|'.join(BARE_WORDS)})?[\"'`.!]*", re.IGNORECASE)
_EMPTY_RESULT = re.compile(
    r"(?:\[\s*\]|\{\s*\}|null|none|nil|\"\"|''"
    r"|(?:no|0) (?:results?|matches|records|items|rows|data)(?: found)?)?[.!]?",
    re.IGNORECASE,
)
_UNRENDERED = re.compile(
    r"undefined|\[object Object\]|NaN|<[\w.]+ object at 0x[0-9a-fA-F]+>"
    r"|<(?:coroutine|generator|async_generator) object [^>\n]*>"
    r"|<(?:bound method|function) [^>\n]*>"
)
# Explicit markers only: a bare "truncated" also occurs in data and compiler warnings
# ("output may be truncated"), while "[336 lines truncated]" is how runtimes cut a result.
# _PARTIAL runs only around hits of _PARTIAL_KEYWORD (and only when a substring test finds a
# keyword at all), which keeps it linear and cheap on any input.
_PARTIAL_KEYWORDS: Final = ("truncat", "partial", "showing", "omitted", "not shown")
_PARTIAL_KEYWORD = re.compile("|".join(_PARTIAL_KEYWORDS), re.IGNORECASE)
_PARTIAL_REACH: Final = 80
_PARTIAL_MAX_HITS: Final = 32
_PARTIAL = re.compile(
    r"\[[^\]\n]{0,40}\btruncated\b[^\]\n]{0,40}\]|<truncated>|\((?:output )?truncated\)"
    r"|\.\.\. ?truncated\b|\btruncated (?:to|at|after) (?:the first )?\d+"
    r"|\b(?:output|results?|response|content|list|text) (?:was |were |has been |is )?truncated\b"
    r"|\bpartial (?:results?|response|output)\b"
    r"|\bshowing (?:only )?(?:the )?first \d+ (?:of|results|items|rows|lines|entries)\b"
    r"|\b(?:more|remaining) (?:results|lines|items|rows|entries) (?:omitted|not shown)\b",
    re.IGNORECASE,
)
_TRUNCATED_ERROR = re.compile(r'\A\s*\{\s*"error"\s*:\s*"((?:[^"\\\n]|\\.)+)"')
# A one-key object under one of these keys is a status, not data ({"available": false} is data).
_STATUS_KEYS: Final = frozenset({"status", "result", "success", "ok", "message", "state"})
# Texts longer than this are never a bare status, an empty result or a placeholder unless they
# are blank; checking the length first keeps megabyte results from being copied by strip().
_SHORT: Final = 256


def analyze_content(
    content: str, explicit_error: bool | None = None, explicit_source: str | None = None
) -> ContentFacts:
    """Derive the content facts of one Tool Message (see the module docstring for the rules).

    >>> facts = analyze_content("Error: gift card balance is not enough")
    >>> (facts.status, facts.status_source, facts.error_type, facts.rule)
    ('error', 'inferred', 'conflict', 'conflict_text')
    >>> analyze_content("File does not exist.", True, "is_error").error_type
    'not_found'
    """
    parsed = parse_json(content)
    protocol = protocol_from_object(parsed)
    status, source, error_type, rule = _decide(content, parsed, protocol, explicit_error)
    if explicit_error is not None and source == "explicit":
        rule = explicit_source or "explicit_flag"
    facts = ContentFacts(
        status=status,
        status_source=source,
        error_type=error_type,
        rule=rule,
        summary=_summary(content, parsed, protocol, status),
        is_protocol=protocol is not None,
    )
    _add_suggestion(facts, content, protocol)
    facts.findings = _findings(facts, content, parsed, protocol, explicit_error)
    return facts


def _decide(
    content: str, parsed: Any, protocol: ToolMessage | None, explicit_error: bool | None
) -> tuple[Status, StatusSource, str | None, str | None]:
    """``(status, status_source, error_type, rule)``: explicit flag, then protocol, then text."""
    if explicit_error is True:
        error_type = protocol.error_type if protocol and protocol.error_type else None
        return "error", "explicit", error_type or _error_type(content, parsed), None
    if explicit_error is False:
        if protocol is not None and protocol.status == "partial":
            return "partial", "protocol", None, "protocol"
        if protocol is None and _partial_marker(content):
            return "partial", "inferred", None, "partial_text"
        return "success", "explicit", None, None
    if protocol is not None:
        if protocol.status != "error":
            return protocol.status, "protocol", None, "protocol"
        return "error", "protocol", protocol.error_type or _error_type(content, parsed), "protocol"
    detected = detect_error(content, parsed)
    if detected is not None:
        error_type, type_rule = _classify(content, parsed)
        return "error", "inferred", error_type, type_rule if error_type != "other" else detected
    compact = _compact(content)
    if compact is not None and _UNRENDERED.fullmatch(compact):
        return "unknown", "inferred", None, "unrendered_object"
    if compact is not None and _EMPTY_RESULT.fullmatch(compact):
        return "success", "inferred", None, "empty_result"
    if _partial_marker(content):
        return "partial", "inferred", None, "partial_text"
    return "success", "inferred", None, "no_error_signal"


def _classify(content: str, parsed: Any) -> tuple[str, str]:
    """Type an error; a JSON error object is typed by its message before its other fields."""
    message = _json_message(parsed, content)
    if message is not None:
        error_type, rule = classify_error(message)
        if error_type != "other":
            return error_type, rule
    return classify_error(content)


def _error_type(content: str, parsed: Any) -> str:
    return _classify(content, parsed)[0]


def _json_message(parsed: Any, content: str = "") -> str | None:
    """The human-readable error message of a JSON error object, if it has one.

    Content cut off mid-object (ToolBench keeps 1,024 characters) still yields its leading
    ``"error"`` string.
    """
    if parsed is NOT_JSON:
        head = _TRUNCATED_ERROR.match(content[:HEAD_CHARS])
        if head is None:
            return None
        try:
            message = orjson.loads(f'"{head.group(1)}"')
        except orjson.JSONDecodeError:
            return None
        return message if isinstance(message, str) and message.strip() else None
    if not isinstance(parsed, dict):
        return None
    error = parsed.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    for candidate in (error, parsed.get("message"), parsed.get("detail")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate
    return None


def _compact(content: str) -> str | None:
    """The stripped content when it is short (or blank), else ``None``."""
    if len(content) <= _SHORT:
        return content.strip()
    return "" if content.isspace() else None


def _partial_marker(content: str) -> bool:
    window = scan_window(content)
    lowered = window.lower()
    if not any(keyword in lowered for keyword in _PARTIAL_KEYWORDS):
        return False
    for hit, keyword in enumerate(_PARTIAL_KEYWORD.finditer(window)):
        if hit == _PARTIAL_MAX_HITS:
            break
        start = max(0, keyword.start() - _PARTIAL_REACH)
        if _PARTIAL.search(window, start, keyword.end() + _PARTIAL_REACH):
            return True
    return False


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _summary(content: str, parsed: Any, protocol: ToolMessage | None, status: Status) -> str | None:
    if protocol is not None and protocol.summary and protocol.summary.strip():
        return _cut(first_line(protocol.summary), MAX_SUMMARY)
    if status not in ("error", "unknown"):
        return None
    message = _json_message(parsed, content)
    line = first_line(message if message is not None else content)
    return _cut(line, MAX_SUMMARY) if line else None


def _add_suggestion(facts: ContentFacts, content: str, protocol: ToolMessage | None) -> None:
    if protocol is not None and protocol.suggestion and protocol.suggestion.strip():
        # The protocol field is advice by definition; its wording still says which kind, and
        # the kind (not the channel) decides how the follow-through is judged.
        facts.suggestion = protocol.suggestion.strip()
        found = extract_suggestion(facts.suggestion)
        facts.suggestion_kind, facts.suggestion_detail = (
            (found[1], found[2]) if found else ("other", {})
        )
        return
    if facts.status == "success":
        return
    source = (protocol.summary or "") if protocol is not None else content
    found = extract_suggestion(source)
    if found is not None:
        facts.suggestion, facts.suggestion_kind, facts.suggestion_detail = found


def _is_bare(content: str, parsed: Any) -> bool:
    if isinstance(parsed, dict) and len(parsed) == 1:
        ((key, value),) = parsed.items()
        if key not in _STATUS_KEYS:
            return False
        if isinstance(value, str):
            value = _compact(value)
        return isinstance(value, bool) or (isinstance(value, str) and bool(_BARE.fullmatch(value)))
    compact = _compact(content)
    return compact is not None and bool(_BARE.fullmatch(compact))


def _protocol_is_empty(parsed: Any) -> bool:
    """Only ``status`` carries a value: nothing tells the model what went wrong."""
    if not isinstance(parsed, dict):
        return False
    return all(value in (None, "", [], {}) for key, value in parsed.items() if key != "status")


def _findings(
    facts: ContentFacts,
    content: str,
    parsed: Any,
    protocol: ToolMessage | None,
    explicit_error: bool | None,
) -> list[str]:
    found: set[str] = set()
    bare = _is_bare(content, parsed)
    if bare:
        found.add("bare_status")
    if facts.status == "error":
        if is_exception_text(content) and not (protocol is not None and protocol.error_type):
            found.add("raw_exception")
        if facts.suggestion is None:
            found.add("error_without_suggestion")
        marked = explicit_error is True or (protocol is not None and protocol.status == "error")
        if marked and (bare or (protocol is not None and _protocol_is_empty(parsed))):
            found.add("empty_marked_error")
    return [name for name in CONTENT_FINDINGS if name in found]
