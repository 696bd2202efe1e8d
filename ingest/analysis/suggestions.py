"""Advice for the model's next step, extracted from a Tool Message's text.

A suggestion is what a result tells the model to do next: wait and retry, call another tool,
supply a parameter, ask the user, or a free-form hint. Each is found by a named pattern in
``PATTERNS``, tried in order; the first match wins, so the kinds whose follow-through can be
checked mechanically (``retry_after`` with seconds, ``missing_param`` with a name,
``use_instead`` with a tool) come before ``ask_user`` and the generic ``other`` hints. Only
``alternatives`` comes first: two conditional advices in a row ("To X, do A. To Y, do B.") are
one free-form advice, since either way out follows it.

:func:`extract_suggestion` returns the sentence holding the advice, its kind and the
machine-readable detail the follow-through analysis compares with the model's next action::

    >>> extract_suggestion("Rate limit exceeded. Please try again in 6.5s.")
    ('Please try again in 6.5s.', 'retry_after', {'seconds': 6.5})

Long texts are scanned through :func:`ingest.analysis.error_detection.scan_window` (first and last
16 KB).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from db.contract.vocabulary import SuggestionKind
from ingest.analysis.error_detection import rx, scan_window, split_words

#: Longest suggestion sentence kept; longer ones are cut with an ellipsis.
MAX_SENTENCE: Final = 300

_UNIT_SECONDS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_NAME = r"[`'\"]?([A-Za-z_][\w.\-]*[\w])[`'\"]?"
_PARAM = r"[`'\"]?([A-Za-z_]\w*)[`'\"]?"
# A compiler diagnostic ("x.c:12:5: warning: … did you mean 'y'?") advises on the code being
# compiled, not on which tool to call, so use_instead patterns skip such lines.
_DIAGNOSTIC_LINE = re.compile(r"^\S+:\d+:\d+: ")


class Suggestion(NamedTuple):
    """One extracted suggestion and the name of the pattern that found it."""

    sentence: str
    kind: SuggestionKind
    detail: dict[str, Any]
    pattern: str


@dataclass(frozen=True, slots=True)
class SuggestionPattern:
    """A named pattern for one way of phrasing advice."""

    name: str
    kind: SuggestionKind
    pattern: re.Pattern[str]
    #: Lowercase literals; every text the pattern matches contains one of them (a cheap
    #: substring test decides whether the regex runs at all).
    keywords: tuple[str, ...]
    #: Builds the detail dict from the match.
    detail: Callable[[re.Match[str]], dict[str, Any]]
    #: Group whose text is the suggestion itself (0: the sentence around the match).
    sentence_group: int = 0
    #: The match spans indented lines (pydantic's JSON); its sentence is joined into one line.
    one_line: bool = False


def _seconds(match: re.Match[str]) -> dict[str, Any]:
    amount = float(match.group("amount"))
    unit = (match.group("unit") or "s").lower()
    if unit.startswith("ms") or unit.startswith("milli"):
        factor = _UNIT_SECONDS["ms"]
    else:
        factor = _UNIT_SECONDS[unit[0]]
    return {"seconds": amount * factor}


def _tool(match: re.Match[str]) -> dict[str, Any]:
    return {"tool": match.group(1)}


def _param(match: re.Match[str]) -> dict[str, Any]:
    return {"param": match.group(1)}


def _nothing(match: re.Match[str]) -> dict[str, Any]:
    return {}


_DURATION = (
    r"(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?"
    r"|h|hrs?|hours?)\b"
)

_IMPERATIVE = (
    r"(?:please )?(?:set|use|pass|provide|add|remove|call|run|specify|include|supply|try|retry"
    r"|read|check|choose|select|change|give)\b"
)

PATTERNS: tuple[SuggestionPattern, ...] = (
    SuggestionPattern(
        "alternatives",
        "other",
        # Two conditional pieces of advice in a row are alternatives ("To replace all
        # occurrences, set replace_all to true. To replace only one occurrence, please provide
        # more context …"): either way out follows the advice, so neither one's detail is the
        # whole advice, and the pair is free-form advice.
        # Each clause after the comma opens with an imperative, so that narrative ("To be
        # precise, both are logs.") is not advice.
        re.compile(
            rf"(?:^|(?<=[.!?] ))To [^,.\n]{{1,80}}, {_IMPERATIVE}[^.!?\n]{{0,200}}[.!?]"
            rf" +To [^,.\n]{{1,80}}, {_IMPERATIVE}[^.!?\n]{{0,200}}[.!?]",
            re.MULTILINE,
        ),
        split_words(". to |! to |? to "),
        _nothing,
    ),
    SuggestionPattern(
        "retry_after_header",
        "retry_after",
        rx(r"\bRetry-After:\s*(?P<amount>\d+(?:\.\d+)?)(?P<unit>)\b"),
        split_words("retry-after"),
        _seconds,
    ),
    SuggestionPattern(
        "retry_after_text",
        "retry_after",
        rx(
            r"\b(?:retry|try again|wait)(?: (?:after|in|for))?(?: (?:about|at least|roughly))?"
            rf" {_DURATION}"
        ),
        split_words("retry|try again|wait"),
        _seconds,
    ),
    SuggestionPattern(
        "missing_positional_argument",
        "missing_param",
        rx(r"\bmissing \d+ required (?:positional |keyword-only )?arguments?: '(\w+)'"),
        split_words("missing"),
        _param,
    ),
    SuggestionPattern(
        "missing_required_parameter",
        "missing_param",
        rx(
            r"\bmissing (?:the )?(?:required )?(?:parameter|argument|field|property|key)s?"
            rf"(?: named)?:?\s+{_PARAM}"
        ),
        split_words("missing"),
        _param,
    ),
    SuggestionPattern(
        "required_property",
        "missing_param",
        rx(rf"(?<!\w){_PARAM} is a required (?:property|parameter|field|argument)\b"),
        split_words("required"),
        _param,
    ),
    SuggestionPattern(
        "pydantic_field_required",
        "missing_param",
        # pydantic prints the field name on its own line above "Field required".
        re.compile(r"^([A-Za-z_]\w*)\n[ \t]+Field required\b", re.MULTILINE),
        split_words("field required"),
        _param,
    ),
    SuggestionPattern(
        "pydantic_missing_loc",
        "missing_param",
        # pydantic's error list as JSON (pydantic-ai's retry prompt) or as a Python repr:
        # {"type": "missing", "loc": ["city"], "msg": "Field required"}.
        rx(
            r"""['"]type['"]\s*:\s*['"]missing['"]\s*,\s*['"]loc['"]\s*:\s*[\[(]\s*"""
            r"""['"]([A-Za-z_]\w*)['"]"""
        ),
        split_words("missing"),
        _param,
        one_line=True,
    ),
    SuggestionPattern(
        "provide_param",
        "missing_param",
        rx(
            rf"\b(?:provide|specify|supply|pass|include) (?:the |a |an )?{_PARAM}"
            r" (?:parameter|argument|field)\b"
        ),
        split_words("provide|specify|supply|pass|include"),
        _param,
    ),
    SuggestionPattern(
        "set_param",
        "missing_param",
        # "To replace all occurrences, set replace_all to true": names the parameter to add.
        rx(r"\b[Ss]et [`'\"]?([a-z_][a-z0-9_]*)[`'\"]? to\b", 0),
        split_words("set "),
        _param,
    ),
    SuggestionPattern(
        "use_instead",
        "use_instead",
        rx(rf"\buse (?:the )?{_NAME}(?: (?:tool|function|command))? instead\b"),
        split_words("instead"),
        _tool,
    ),
    SuggestionPattern(
        "did_you_mean",
        "use_instead",
        rx(rf"\bdid you mean {_NAME}\s*\?"),
        split_words("did you mean"),
        _tool,
    ),
    SuggestionPattern(
        "call_first",
        "use_instead",
        rx(rf"\b(?:call|use|run|invoke) {_NAME}(?: (?:tool|function))? first\b"),
        split_words("first"),
        _tool,
    ),
    SuggestionPattern(
        "ask_user",
        "ask_user",
        # "Confirm with the user", but also "confirm the dates with the user", "get explicit
        # confirmation from the user", "the user must confirm": advice whose only way to be
        # followed is a question to the user.
        rx(
            r"\b(?:ask|check with|confirm with|consult|clarify with|verify with|double-check with)"
            r" (?:the )?user\b"
            r"|\b(?:confirm|verify|check|clarify|discuss) [\w'\" -]{1,40}? with the user\b"
            r"|\b(?:get|obtain|request|seek|needs?|requires?) (?:explicit |the )?"
            r"(?:confirmation|approval|permission|consent|clarification) (?:from|of) the user\b"
            r"|\bthe user (?:must|needs? to|should|has to) (?:confirm|approve|choose|decide"
            r"|clarify)\b"
            r"|\bwait for the user\b|\bask (?:the user )?for (?:clarification|confirmation)\b"
        ),
        split_words("user|clarification|confirmation"),
        _nothing,
    ),
    SuggestionPattern(
        "hint_line",
        "other",
        rx(
            r"^[ \t]*(?:suggestion|hint|tip|advice)[ \t]*:[ \t]*(\S[^\n]*)",
            re.IGNORECASE | re.MULTILINE,
        ),
        split_words("suggestion|hint|tip|advice"),
        _nothing,
        sentence_group=1,
    ),
    SuggestionPattern(
        "try_sentence",
        "other",
        re.compile(r"(?:^|(?<=[.!?] ))Try (?:to |using |a |an |the |another |again|with )"),
        split_words("try "),
        _nothing,
    ),
    SuggestionPattern(
        "do_first",
        "other",
        # "Read it first before writing to it.": an imperative naming a prerequisite step.
        re.compile(r"(?:^|(?<=[.!?] ))[A-Z][a-z]+ (?:it|them|this|that|the [\w -]{1,30}) first\b"),
        split_words("first"),
        _nothing,
    ),
    SuggestionPattern(
        "fix_and_retry",
        "other",
        # pydantic-ai's retry prompt; a named field in it is found by pydantic_missing_loc first.
        rx(r"\bfix the errors and try again\b"),
        split_words("fix the errors"),
        _nothing,
    ),
    SuggestionPattern(
        "please_do",
        "other",
        rx(
            r"\bplease (?:provide|specify|supply|include|use|try|check|make sure|ensure|fix"
            r"|correct|add|remove|set|pass|read|select|choose|verify|retry)\b"
        ),
        split_words("please"),
        _nothing,
    ),
)

_SENTENCE_END_BEFORE = re.compile(r"[.!?](?:\s)")
_SENTENCE_END_AFTER = re.compile(r"[.!?](?=\s|$)")


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence (within its line) that contains ``text[start:end]``."""
    line_start = text.rfind("\n", 0, start) + 1
    begin = line_start
    for found in _SENTENCE_END_BEFORE.finditer(text, line_start, start):
        begin = found.end()
    line_end = text.find("\n", end)
    if line_end == -1:
        line_end = len(text)
    # A match that already ends the sentence ("did you mean x?") must not swallow the next one.
    if end > start and text[end - 1] in ".!?":
        return text[begin:end].strip()
    after = _SENTENCE_END_AFTER.search(text, end, line_end)
    return text[begin : after.end() if after else line_end].strip()


def _shorten(sentence: str) -> str:
    if len(sentence) <= MAX_SENTENCE:
        return sentence
    return sentence[: MAX_SENTENCE - 1].rstrip() + "…"


def _in_diagnostic_line(text: str, position: int) -> bool:
    line_start = text.rfind("\n", 0, position) + 1
    return bool(_DIAGNOSTIC_LINE.match(text, line_start))


def find_suggestion(text: str) -> Suggestion | None:
    """The first suggestion in ``text`` by pattern order, with the name of its pattern.

    >>> find_suggestion("Unknown tool. Did you mean get_user?").pattern
    'did_you_mean'
    """
    window = scan_window(text)
    lowered = window.lower()
    for spec in PATTERNS:
        if not any(keyword in lowered for keyword in spec.keywords):
            continue
        for match in spec.pattern.finditer(window):
            if spec.kind == "use_instead" and _in_diagnostic_line(window, match.start()):
                continue
            if spec.sentence_group:
                sentence = match.group(spec.sentence_group).strip()
            else:
                sentence = _sentence(window, match.start(), match.end())
            if spec.one_line:
                sentence = " ".join(sentence.split())
            return Suggestion(_shorten(sentence), spec.kind, spec.detail(match), spec.name)
    return None


def extract_suggestion(text: str) -> tuple[str, SuggestionKind, dict[str, Any]] | None:
    """``(sentence, kind, detail)`` of the advice in ``text``, or ``None`` when there is none.

    Kinds and details: ``retry_after`` ``{"seconds": float}``, ``use_instead``
    ``{"tool": name}``, ``missing_param`` ``{"param": name}``, ``ask_user`` and ``other`` ``{}``.

    >>> extract_suggestion("'city' is a required property")
    ("'city' is a required property", 'missing_param', {'param': 'city'})
    """
    found = find_suggestion(text)
    if found is None:
        return None
    return found.sentence, found.kind, found.detail
