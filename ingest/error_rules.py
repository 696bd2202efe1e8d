"""Text rules: does a Tool Message read as an error, and of which type?

Two ordered tables of named, compiled patterns, so every inferred value can be explained by the
name of the rule that produced it:

* ``DETECTION_RULES`` (plus the JSON rules in ``JSON_DETECTION_RULES``) decide whether a text
  is an error at all: :func:`detect_error`.
* ``RULES`` map an error text to the ``error_type`` taxonomy (``ingest.facts.ERROR_TYPES``):
  :func:`classify_error`. The first matching rule wins; ``other`` when none matches.

False positives matter more than misses here: a successful result that merely *mentions*
"error" in its data must stay a success. So detection rules anchor at the start of the text or
on its first line, or need a marker that only errors carry (``Traceback (most recent call
last):``, ``HTTP 503``); content that parses as a JSON object or array is judged by its
top-level keys only, never by words inside its values.

Long content: regexes only look at the first and last 16 KB (:func:`scan_window`). Errors
announce themselves at the start (``Error: …``) or the end (a traceback's last line), and
scanning a multi-megabyte file dump would cost more than the whole import of the message.
Each type rule also lists ``keywords``, lowercase words one of which every text it matches
contains; a rule's regex runs only when one of them occurs. Python's ``re`` tries a
case-insensitive alternation at every position, which costs milliseconds on 32 KB, while a
substring test costs microseconds (a test checks the keywords against every example and the
real traces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

#: Characters kept from each end of a long text before regexes run over it.
SCAN_EDGE: Final = 16_384
#: Characters of the start of a text that ``head`` detection rules look at.
HEAD_CHARS: Final = 500

Region = Literal["first_line", "head", "edges"]
#: Non-blank lines at each end of a text that ``edges`` detection rules look at.
EDGE_LINES: Final = 3


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """A named pattern that gives an error text its ``error_type``."""

    name: str
    error_type: str
    pattern: re.Pattern[str]
    #: Lowercase literals; every text the pattern matches contains at least one of them.
    keywords: tuple[str, ...]
    description: str

    def matches(self, window: str, lowered: str) -> bool:
        """Does the rule match ``window`` (``lowered`` is ``window.lower()``)?"""
        if not any(keyword in lowered for keyword in self.keywords):
            return False
        return self.pattern.search(window) is not None


@dataclass(frozen=True, slots=True)
class DetectionRule:
    """A named pattern that marks a text as an error, and which part of the text it reads."""

    name: str
    pattern: re.Pattern[str]
    #: ``first_line``: the first non-blank line; ``head``: the first ``HEAD_CHARS`` characters;
    #: ``edges``: the first and last ``EDGE_LINES`` non-blank lines, where tool runtimes put
    #: their own messages (a traceback header, an exception's last line, a crash report) while
    #: the middle is the tool's output and may quote anything.
    region: Region
    description: str


def scan_window(text: str) -> str:
    """The part of ``text`` regexes look at: all of it, or its first and last ``SCAN_EDGE`` chars.

    The two ends are joined with a newline so that a line-anchored rule cannot match across the
    cut. Applying it twice changes nothing.

    >>> len(scan_window("x" * 100_000))
    32769
    """
    if len(text) <= 2 * SCAN_EDGE + 1:
        return text
    return text[:SCAN_EDGE] + "\n" + text[-SCAN_EDGE:]


_HTTP_MARKER = (
    r"(?:\bHTTP(?:/\d(?:\.\d)?)?[ :]*(?:error[ :]*)?"
    r"|\bstatus(?:[ _-]?code)?['\"]?[ \t]*(?:[:=][ \t]*)?['\"]?"
    # "Error 404" and "error code: 500", but not "Error: 400 miles is too far".
    r"|\berror[ _-]?code[ :=]*|\berror (?=\d))"
)
_HTTP_MARKER_WORDS = ("http", "status", "error")


def _http_status(codes: str, reasons: tuple[str, ...]) -> re.Pattern[str]:
    """An HTTP status written with a marker ("HTTP 429", "status_code=429") or reason phrase.

    A bare number is never enough: "429 results" or "area code 415" are not HTTP statuses.
    """
    phrases = "|".join(re.escape(reason) for reason in reasons)
    return re.compile(
        rf"{_HTTP_MARKER}(?:{codes})\b|\b(?:{codes})\s+(?:{phrases})\b", re.IGNORECASE
    )


def _http_rule(
    name: str, error_type: str, codes: str, reasons: tuple[str, ...], description: str
) -> ErrorRule:
    # Literal codes make the sharpest keywords; a code class like 5\d\d falls back to the
    # marker words and reason phrases, one of which every match contains.
    if codes.replace("|", "").isdigit():
        keywords = _words(codes)
    else:
        keywords = _HTTP_MARKER_WORDS + tuple(reason.lower() for reason in reasons)
    return ErrorRule(name, error_type, _http_status(codes, reasons), keywords, description)


def _rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _words(keywords: str) -> tuple[str, ...]:
    return tuple(keywords.split("|"))


_PY_EXCEPTION_LINE = (
    # ``ValueError: x`` / ``requests.exceptions.ReadTimeout: x`` at a line start; a plain
    # ``Error:`` is a message prefix, not an exception class, so it is excluded.
    r"^(?:[A-Za-z_]\w*\.)*(?!Error\b|Exception\b)[A-Z]\w*(?:Error|Exception)\b(?::|$)"
)
_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):"
    r"|^Exception in thread \"[^\"\n]*\""
    r"|^[ \t]+at [\w$.<>]+\([\w$]+\.(?:java|kt|scala|groovy):\d+\)"
    r"|^[ \t]+at (?:[^\s()]+ \()?(?:file://|/|[A-Za-z]:\\|node:|<anonymous>)[^\n]*:\d+:\d+\)?$"
    rf"|{_PY_EXCEPTION_LINE}",
    re.MULTILINE,
)
_TRACEBACK_WORDS = _words("traceback|exception|error| at |\tat ")
_CRASH = _rx(
    r"\bsegmentation fault\b|\bcore dumped\b|\bpanicked at\b|^panic: |\bgoroutine \d+ \[running\]"
    r"|\bfatal (?:python )?error: (?:runtime|out of memory)",
    re.IGNORECASE | re.MULTILINE,
)
_CRASH_WORDS = _words("segmentation|core dumped|panic|goroutine|fatal")

# Order matters: the first match wins, so a rule that is a special case of a later one comes
# first. Why each block sits where it does:
# - unknown_tool before not_found: "Tool 'x' not found" is about the tool, not a resource.
# - argument JSON and parameter validation early: they name what the *model* got wrong and are
#   phrased precisely, while "not found" or "invalid" also occur in their explanations.
# - content_filter before auth: filters say "blocked" and "policy" too.
# - quota before rate_limit: providers answer an exhausted quota with HTTP 429 as well.
# - timeout before unavailable: "HTTPConnectionPool … Read timed out" and "504 Gateway
#   Timeout" are timeouts first; connection and 5xx rules would also match them.
# - auth before not_found: GitHub answers a missing token scope with 404; "permission denied"
#   explains a co-occurring "not found" better than the reverse.
# - generic "invalid value" wording after not_found/conflict: it is the vaguest family.
# - traceback and crash last: a traceback whose final line names a timeout or missing file is
#   more useful typed by that cause; what remains is a raw tool exception.
RULES: tuple[ErrorRule, ...] = (
    ErrorRule(
        "unknown_tool_text",
        "unknown_tool",
        _rx(
            r"\b(?:tool|function)\s+['\"`]?[\w.\-]+['\"`]?\s+(?:is\s+)?(?:not found|does not exist"
            r"|doesn't exist|is not available|not available|is not registered)\b"
            r"|\bunknown (?:tool|function)\b|\bno such (?:tool|function)\b|\bnot a valid tool\b"
            r"|\binvalid tool(?: name)?\b|\b(?:tool|function) not found\b"
        ),
        _words("tool|function"),
        "the model called a tool that does not exist",
    ),
    ErrorRule(
        "args_json_text",
        "invalid_arguments_json",
        _rx(
            r"\binvalid json (?:in|for) (?:the )?(?:tool(?: call)? )?arguments\b"
            r"|\b(?:could not|couldn't|failed to|unable to) (?:parse|decode) (?:the )?"
            r"(?:tool(?: call)? )?arguments\b"
            r"|\barguments? (?:is|are) not valid json\b"
            # A JSONDecodeError is only about the arguments when they are mentioned: tools
            # also raise it when an upstream API returns garbage.
            r"|JSONDecodeError[\s\S]{0,300}argument|argument[\s\S]{0,300}JSONDecodeError"
        ),
        _words("argument"),
        "the tool call's arguments were not valid JSON",
    ),
    ErrorRule(
        "validation_text",
        "invalid_params",
        _rx(
            r"\bmissing (?:\d+ )?required (?:positional |keyword-only )?"
            r"(?:parameter|argument|field|property|key)s?\b"
            r"|\bis a required (?:property|parameter|field|argument)\b|\bfield required\b"
            r"|\bvalidation (?:error|failed)\b|\bunexpected keyword argument\b"
            r"|\bunrecognized (?:argument|option|parameter)s?\b|\badditional properties\b"
        ),
        _words("required|validation|unexpected|unrecognized|additional properties"),
        "arguments failed schema validation: missing, extra or mistyped parameters",
    ),
    ErrorRule(
        "content_filter_text",
        "content_filter",
        _rx(
            r"\bcontent[ _-]?filter(?:ed|ing)?\b|\bcontent (?:management )?polic(?:y|ies)\b"
            r"|\bflagged by (?:the )?(?:moderation|safety|content)\b"
            r"|\bsafety (?:system|filter)s?\b|\bresponsible ai polic"
            r"|\bviolat(?:es|ed|ion of) (?:our|the) (?:usage |content )?polic"
        ),
        _words("filter|polic|flagged|safety"),
        "a moderation or safety filter blocked the request or the output",
    ),
    ErrorRule(
        "quota_text",
        "quota",
        _rx(
            r"\bquota\b[^.\n]{0,40}\b(?:exceeded|exhausted|reached)\b"
            r"|\bexceeded (?:your |the )?(?:current |daily |monthly )?quota\b"
            r"|\binsufficient[_ ](?:credits?|quota)\b|\bout of credits\b"
            r"|\bcredit balance is too low\b|\bpayment required\b|\b402\s+payment\b"
            r"|\bbilling (?:limit|hard limit|details|issue)\b|\bcheck your (?:plan and )?billing\b"
        ),
        _words("quota|insufficient|credit|payment|billing"),
        "a usage quota, credit balance or billing limit is exhausted",
    ),
    _http_rule("http_429", "rate_limit", "429", ("Too Many Requests",), "HTTP 429"),
    ErrorRule(
        "rate_limit_text",
        "rate_limit",
        _rx(r"\brate[ _-]?limit(?:ed|ing|s)?\b|\btoo many requests\b|\bthrottl(?:ed|ing)\b"),
        _words("limit|too many|throttl"),
        "the service asks the caller to slow down",
    ),
    _http_rule(
        "http_408_504",
        "timeout",
        "408|504",
        _words("Request Timeout|Request Time-out|Gateway Timeout|Gateway Time-out"),
        "HTTP 408 Request Timeout or 504 Gateway Timeout",
    ),
    ErrorRule(
        "timeout_text",
        "timeout",
        _rx(
            r"\btimed out\b|\btime[ -]?out (?:error|exceeded|expired|reached|occurred)\b"
            r"|\b(?:request|read|connect|connection|operation|gateway|socket|execution|command)"
            r" time[ -]?out\b|\bdeadline exceeded\b|\bTimeoutError\b|\bETIMEDOUT\b|^timeout\b"
            r"|\bReadTimeout\b|\bConnectTimeout\b",
            re.IGNORECASE | re.MULTILINE,
        ),
        _words("time|deadline"),
        "the operation ran out of time",
    ),
    _http_rule(
        "http_5xx",
        "unavailable",
        r"5\d\d",
        _words("Internal Server Error|Bad Gateway|Service Unavailable"),
        "HTTP 5xx server error",
    ),
    ErrorRule(
        "connection_error",
        "unavailable",
        _rx(
            r"\bconnection (?:refused|reset|aborted|closed|error|failed)\b"
            r"|\bECONN(?:RESET|REFUSED|ABORTED)\b|\bENOTFOUND\b|\bEAI_AGAIN\b"
            r"|\bservice (?:is )?(?:temporarily )?(?:unavailable|not available)\b"
            r"|\btemporarily unavailable\b|\bbad gateway\b|\boverloaded\b"
            r"|\b(?:could not|couldn't|failed to|unable to) (?:connect|reach|resolve)\b"
            r"|\bnetwork (?:is )?unreachable\b|\bname or service not known\b"
            r"|\bmax retries exceeded\b|\bConnectionError\b"
        ),
        _words(
            "connect|econn|enotfound|eai_again|available|gateway|overloaded|reach|resolve"
            "|not known|retries"
        ),
        "the service could not be reached or is down",
    ),
    ErrorRule(
        "user_rejected",
        "auth",
        _rx(
            r"\btool use was rejected\b|\b(?:denied|rejected) by (?:the )?user\b"
            r"|\buser (?:doesn't|does not|did not|didn't) (?:want|allow|approve)\b"
        ),
        _words("rejected|user"),
        "the user denied permission for this tool call",
    ),
    _http_rule("http_401_403", "auth", "401|403", ("Unauthorized", "Forbidden"), "HTTP 401/403"),
    ErrorRule(
        "permission_text",
        "auth",
        _rx(
            r"\bpermission denied\b|\baccess (?:is )?denied\b|\bnot (?:authorized|permitted)\b"
            r"|\bnot allowed to\b|\bunauthori[sz]ed\b|\bforbidden\b|\bEACCES\b|\bEPERM\b"
            r"|\b(?:invalid|missing|expired|incorrect|bad) (?:api[ _-]?key|token|credentials?"
            r"|access token)\b|\bauthentication (?:failed|required|error)\b"
            r"|\b(?:must be |not )logged in\b|\blogin required\b|\bpassword is required\b"
            r"|\bneeds? the ['\"]?[\w:-]+['\"]? scope\b|\binsufficient (?:permissions?|privileges?"
            r"|scopes?)\b|\bwas blocked\b"
        ),
        _words(
            "permission|denied|authorized|permitted|allowed|unauthori|forbidden|eacces|eperm"
            "|api|token|credential|authentication|logged in|login|password|scope|privilege"
            "|blocked"
        ),
        "credentials, permissions or scopes are missing or wrong",
    ),
    _http_rule("http_404", "not_found", "404|410", ("Not Found", "Gone"), "HTTP 404/410"),
    ErrorRule(
        "not_found_text",
        "not_found",
        _rx(
            r"\bnot found\b|\bno such (?:file|directory|key|user|record|object|resource|table"
            r"|column|bucket|host|branch|ref)\b|\b(?:does not|doesn't|did not|didn't) exist\b"
            r"|\bENOENT\b|\b(?:cannot|can't|could not|couldn't|unable to) (?:find|locate|open file"
            r"|access)\b|\bno (?:\w+ ){0,2}(?:found|matching)\b|\bnot available (?:on|for|in|at)\b"
        ),
        _words("found|no such|exist|enoent|find|locate|open file|access|matching|not available"),
        "the requested file, record or resource does not exist",
    ),
    _http_rule("http_409", "conflict", "409", ("Conflict",), "HTTP 409 Conflict"),
    ErrorRule(
        "conflict_text",
        "conflict",
        # Besides edit conflicts, this covers requests the current state cannot satisfy
        # ("not enough seats", "balance is not enough"): HTTP 409's "conflicts with the
        # current state of the target resource". Not "conflicting": compilers say
        # "conflicting types for 'f'" about the code.
        _rx(
            r"\bconflicts?\b|\bconflicted\b|\balready (?:exists|in use|taken|booked|cancell?ed"
            r"|registered)\b|\bduplicate (?:key|entry|record)\b|\bversion mismatch\b"
            r"|\bconcurrent (?:modification|update)\b|\bnon-fast-forward\b|\bstale info\b"
            r"|\bwould be overwritten\b|\bnot enough (?:available )?(?:seats|balance|funds|stock"
            r"|inventory|credit|space|capacity|rooms|tickets)\b|\b(?:balance|seats?|stock"
            r"|inventory|funds?) (?:is |are )?(?:not enough|insufficient)\b"
            r"|\binsufficient (?:funds|balance|stock|inventory|seats)\b"
        ),
        _words(
            "conflict|already|duplicate|mismatch|concurrent|fast-forward|stale|overwritten"
            "|not enough|insufficient"
        ),
        "the request conflicts with the current state (edit conflict, nothing left to book)",
    ),
    _http_rule(
        "http_400_422",
        "invalid_params",
        "400|422",
        _words("Bad Request|Unprocessable Entity|Unprocessable Content"),
        "HTTP 400 Bad Request or 422 Unprocessable Entity",
    ),
    ErrorRule(
        "invalid_value_text",
        "invalid_params",
        _rx(
            r"\binvalid (?:value|argument|parameter|input|request|type|format|choice|date"
            r"|option)s?\b|\bdoes not add up\b|\bcannot be used\b|\bout of range\b"
            r"|\bmust (?:be|not be|have|contain|match)\b|\bis not (?:a )?valid\b"
            r"|\bwrong (?:type|number of arguments)\b|^usage: ",
            re.IGNORECASE | re.MULTILINE,
        ),
        _words("valid|add up|cannot be used|range|must|wrong|usage:"),
        "an argument value is not acceptable",
    ),
    ErrorRule("traceback", "tool_exception", _TRACEBACK, _TRACEBACK_WORDS, "a raw traceback"),
    ErrorRule("crash_text", "tool_exception", _CRASH, _CRASH_WORDS, "the tool process crashed"),
)

#: Rule name reported by :func:`classify_error` when no rule gives a type.
UNCLASSIFIED: Final = "unclassified"

_BARE_ERROR_WORDS = r"error|errors|errored|failed|failure|fail"

DETECTION_RULES: tuple[DetectionRule, ...] = (
    DetectionRule(
        "bare_error_word",
        _rx(rf"\A\W*(?:{_BARE_ERROR_WORDS})\W*\Z"),
        "head",
        'the whole content is "error", "failed" …',
    ),
    DetectionRule(
        "error_prefix",
        # "Error rate: 2%" or "Error handling docs" start with the word but are not errors.
        re.compile(
            r"\A\s*(?:\[?ERROR\]?\b|Error(?!\s+(?:rates?|counts?|budgets?|logs?|handling"
            r"|analysis|reports?|summary|bars?)\b)\b|error:|(?:fatal|FATAL)(?: error)?:)"
        ),
        "head",
        'the text starts with "Error", "ERROR", "error:" or "fatal:"',
    ),
    DetectionRule(
        "traceback", _TRACEBACK, "edges", "a traceback, stack frames or an exception line"
    ),
    DetectionRule("crash_text", _CRASH, "edges", "segmentation fault, core dump or panic"),
    DetectionRule(
        "http_error_status",
        _http_status(
            r"[45]\d\d",
            _words(
                "Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Method Not Allowed"
                "|Request Timeout|Conflict|Gone|Unprocessable Entity|Too Many Requests"
                "|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout"
            ),
        ),
        "head",
        'an HTTP status >= 400 near the start ("HTTP 503", "status code 500", "404 Not Found")',
    ),
    DetectionRule(
        "failure_phrase",
        # Verbs of failure open the line, optionally after a "program:" prefix the way
        # command-line tools report; the phrases after them never describe a successful result.
        _rx(
            r"\A(?:[\w./ -]{1,60}:\s*)?(?:failed to|failed:|unable to|could not"
            r"|couldn't|cannot|can't)\b"
            r"|\b(?:timed out|connection refused|service unavailable|rate limit exceeded"
            r"|too many requests|quota exceeded|access denied)\b"
        ),
        "first_line",
        'the first line says "failed to", "could not", "timed out", "access denied" …',
    ),
    DetectionRule(
        "shell_error",
        _rx(r"\b(?:command not found|no such file or directory|permission denied)\b"),
        "first_line",
        'the first line is a shell error ("command not found", "No such file or directory")',
    ),
    DetectionRule(
        "exception_text",
        _rx(r"\bexception\b"),
        "first_line",
        'the first line mentions an "exception"',
    ),
)

#: Names of the rules that read content parsed as JSON (only top-level keys count).
JSON_DETECTION_RULES: tuple[str, ...] = (
    "json_error_field",
    "json_status_error",
    "json_success_false",
)

_ERROR_STATUS_WORDS = frozenset({"error", "errored", "fail", "failed", "failure"})
# A truncated or otherwise unparsable object that still opens with a non-empty "error" field
# (ToolBench observations are cut at 1,024 characters).
_JSON_ERROR_HEAD = re.compile(r'\A\s*\{\s*"error"\s*:\s*(?:"(?!")|\{\s*")')

#: Returned by :func:`parse_json` for text that is not a JSON document.
NOT_JSON: Final[Any] = object()
_NOT_PARSED: Final[Any] = object()


def parse_json(text: str) -> Any:
    """The JSON value of ``text``, or ``NOT_JSON`` when it is not a JSON document.

    >>> parse_json('{"a": 1}')
    {'a': 1}
    >>> parse_json("Error: x") is NOT_JSON
    True
    """
    if _head(text)[:1] not in ("{", "[", '"'):
        return NOT_JSON
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return NOT_JSON


def _json_error_rule(value: dict[str, Any]) -> str | None:
    error = value.get("error")
    # ToolBench writes {"error": "", "response": …} for every success, so only a non-empty
    # error counts.
    if (
        error is True
        or (isinstance(error, str) and error.strip())
        or (isinstance(error, dict | list) and error)
    ):
        return "json_error_field"
    for key in ("status", "statusCode", "status_code"):
        status = value.get(key)
        if isinstance(status, str) and status.strip().lower() in _ERROR_STATUS_WORDS:
            return "json_status_error"
        if isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599:
            return "json_status_error"
    if value.get("success") is False or value.get("ok") is False:
        return "json_success_false"
    return None


def _head(text: str) -> str:
    # Leading whitespace is skipped within the scanned window only, so a megabyte of blanks
    # costs no more than 16 KB.
    return text[:SCAN_EDGE].lstrip()[:HEAD_CHARS]


def first_line(text: str) -> str:
    r"""The first non-blank line of ``text``, stripped and cut to ``HEAD_CHARS`` characters.

    >>> first_line("\n  Error: boom\nmore")
    'Error: boom'
    """
    return _head(text).split("\n", 1)[0].strip()


def edge_lines(text: str, count: int = EDGE_LINES) -> str:
    r"""The first and last ``count`` non-blank lines of ``text`` (all of them if few), joined.

    >>> edge_lines("a\n\nb\nc\nd\ne\nf\ng", 2)
    'a\nb\nf\ng'
    """
    window = scan_window(text)
    if window.count("\n") < 4 * count:
        lines = [line for line in window.splitlines() if line.strip()]
    else:
        # Only the ends are split, so a 32 KB window does not become thousands of strings.
        head = [line for line in window[: HEAD_CHARS * count].splitlines() if line.strip()]
        tail = [line for line in window[-HEAD_CHARS * count :].splitlines() if line.strip()]
        lines = head[:count] + tail[-count:]
    if len(lines) > 2 * count:
        lines = lines[:count] + lines[-count:]
    # Runtime messages are short; cutting each line keeps a one-line megabyte result cheap.
    return "\n".join(line[:HEAD_CHARS] for line in lines)


def _region(text: str, region: Region) -> str:
    if region == "first_line":
        return first_line(text)
    if region == "head":
        return _head(text)
    return edge_lines(text)


def detect_error(text: str, parsed: Any = _NOT_PARSED) -> str | None:
    """Name of the first detection rule by which ``text`` reads as an error, else ``None``.

    ``parsed`` may pass the result of :func:`parse_json` for ``text`` when the caller already
    has it, so that large JSON content is parsed once.

    >>> detect_error("Error: flight HAT030 not available on date 2024-05-13")
    'error_prefix'
    >>> detect_error('{"error": "", "response": "[]"}') is None
    True
    """
    value = parse_json(text) if parsed is _NOT_PARSED else parsed
    if isinstance(value, dict):
        return _json_error_rule(value)
    if isinstance(value, list):
        return None
    if isinstance(value, str):
        # A JSON-encoded string is judged by the text it encodes.
        text = value
    elif _JSON_ERROR_HEAD.search(_head(text)):
        return "json_error_field"
    for rule in DETECTION_RULES:
        if rule.pattern.search(_region(text, rule.region)):
            return rule.name
    return None


def classify_error(text: str) -> tuple[str, str]:
    """``(error_type, rule name)`` of an error text; ``("other", "unclassified")`` if no rule fits.

    >>> classify_error("Error: payment method certificate_7504069 not found")
    ('not_found', 'not_found_text')
    >>> classify_error("HTTP 429: slow down")
    ('rate_limit', 'http_429')
    """
    window = scan_window(text)
    lowered = window.lower()
    for rule in RULES:
        if rule.matches(window, lowered):
            return rule.error_type, rule.name
    return "other", UNCLASSIFIED


def is_exception_text(text: str) -> bool:
    """True when ``text`` carries a traceback, stack frames, an exception line or a crash."""
    window = scan_window(text)
    lowered = window.lower()
    return any(rule.matches(window, lowered) for rule in RULES[-2:])
