"""Error detection: does a Tool Message's text read as an error at all?

``DETECTION_RULES`` (plus the JSON rules named in ``JSON_DETECTION_RULES``) is an ordered table
of named, compiled patterns; :func:`detect_error` returns the name of the first that fires, so
every inferred error can be explained. Which ``error_type`` an error has is decided separately,
by the type rules in ``ingest.analysis.error_rules``, which reuse the traceback, crash and HTTP
status patterns defined here.

False positives matter more than misses here: a successful result that merely *mentions*
"error" in its data must stay a success. So detection rules anchor at the start of the text or
on its first line, or need a marker that only errors carry (``Traceback (most recent call
last):``, ``HTTP 503``); content that parses as a JSON object or array is judged by its
top-level keys only, never by words inside its values.

A non-zero exit code, a package manager's or a compiler's failure report marks an error but says
nothing about its cause: the type rules read the rest of the text (a missing file, a refused
connection, a dependency conflict), and what they cannot type stays ``other`` with the detection
rule (``exit_code``, ``build_failure``) as its explanation. They are not ``tool_exception``:
the tool ran the command correctly and reported its outcome; ``tool_exception`` is kept for a
tool that crashed (traceback, panic), a bug in the tool rather than in what the model asked.

Long content: regexes only look at the first and last 16 KB (:func:`scan_window`). Errors
announce themselves at the start (``Error: …``) or the end (a traceback's last line), and
scanning a multi-megabyte file dump would cost more than the whole import of the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson
from ahocorasick_rs import AhoCorasick, MatchKind

#: Characters kept from each end of a long text before regexes run over it.
SCAN_EDGE: Final = 16_384
#: Characters of the start of a text that ``head`` detection rules look at.
HEAD_CHARS: Final = 500

Region = Literal["first_line", "head", "edges"]
#: Non-blank lines at each end of a text that ``edges`` detection rules look at.
EDGE_LINES: Final = 3


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
    #: Lowercase literals, every text the pattern matches contains one of them; the regex runs
    #: only when one occurs in the region (a substring test is ~50x cheaper than a
    #: case-insensitive alternation). Empty: the regex always runs.
    keywords: tuple[str, ...] = ()

    def matches(self, region: str, lowered: str) -> bool:
        """Does the rule fire on ``region`` (``lowered`` is ``region.lower()``)?"""
        if self.keywords and not any(keyword in lowered for keyword in self.keywords):
            return False
        return self.pattern.search(region) is not None


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
    r"|\berror[ _-]?code[ :=]*|\berror (?=\d)|\bURL returned error:?\s*)"
)


def http_status(codes: str, reasons: tuple[str, ...]) -> re.Pattern[str]:
    """An HTTP status written with a marker ("HTTP 429", "status_code=429") or reason phrase.

    A bare number is never enough: "429 results" or "area code 415" are not HTTP statuses.
    """
    phrases = "|".join(re.escape(reason) for reason in reasons)
    return re.compile(
        rf"{_HTTP_MARKER}(?:{codes})\b|\b(?:{codes})\s+(?:{phrases})\b", re.IGNORECASE
    )


def rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    """A rule's compiled pattern: case-insensitive unless ``flags`` say otherwise."""
    return re.compile(pattern, flags)


def split_words(keywords: str) -> tuple[str, ...]:
    """The alternatives of ``"a|b|c"`` as a tuple: how rule tables write word lists."""
    return tuple(keywords.split("|"))


_PY_EXCEPTION_LINE = (
    # ``ValueError: x`` / ``requests.exceptions.ReadTimeout: x`` at a line start; a plain
    # ``Error:`` is a message prefix, not an exception class, so it is excluded.
    r"^(?:[A-Za-z_]\w*\.)*(?!Error\b|Exception\b)[A-Z]\w*(?:Error|Exception)\b(?::|$)"
)
#: A traceback header, a stack frame (Python, Java, JavaScript) or an exception line.
TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):"
    r"|^Exception in thread \"[^\"\n]*\""
    r"|^[ \t]+at [\w$.<>]+\([\w$]+\.(?:java|kt|scala|groovy):\d+\)"
    r"|^[ \t]+at (?:[^\s()]+ \()?(?:file://|/|[A-Za-z]:\\|node:|<anonymous>)[^\n]*:\d+:\d+\)?$"
    rf"|{_PY_EXCEPTION_LINE}",
    re.MULTILINE,
)
#: A crashed process: segmentation fault, core dump, Go or Rust panic, fatal runtime error.
#: Lowercase literals one of which every traceback / crash match contains.
TRACEBACK_KEYWORDS = ("traceback", "exception", "error", " at ", "\tat ")
CRASH_KEYWORDS = ("segmentation", "core dumped", "panic", "goroutine", "fatal")
CRASH = rx(
    r"\bsegmentation fault\b|\bcore dumped\b|\bpanicked at\b|^panic: |\bgoroutine \d+ \[running\]"
    r"|\bfatal (?:python )?error: (?:runtime|out of memory)",
    re.IGNORECASE | re.MULTILINE,
)

#: A duration with its unit ("30s", "2.5 minutes"), as timeouts and retry advice write it.
_DURATION = r"\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b"
_CONNECTION_KEYWORDS = split_words(
    "econn|enotfound|eai_again|getaddrinfo|not known|name resolution|servname|reset by peer|hang up"
    "|was refused"
)
#: Failure reports of package managers and compilers, at a line start: npm's ``npm ERR!`` /
#: ``npm error``, pip's ``ERROR: Could not …``, rustc's ``error[E0425]:``, gcc/clang's
#: ``file.c:3:5: error:``, tsc's ``error TS2322:``, make's ``make: ***``.
_BUILD_FAILURE = re.compile(
    r"^npm (?:ERR!|error) "
    r"|^ERROR: (?:Could not (?:find|install|build|open)|No matching distribution"
    r"|Failed building|Cannot install|ResolutionImpossible)"
    r"|^error\[E\d{4}\]: |^error: (?:could not compile|aborting due to)"
    r"|^[^\s:][^:\n]*:\d+:\d+: (?:fatal )?error: "
    r"|\berror TS\d{4,5}: "
    r"|^make(?:\[\d+\])?: \*\*\* ",
    re.MULTILINE,
)
_BUILD_FAILURE_KEYWORDS = ("npm err", "npm error", "error:", "error[e", "error ts", "make")
#: What agent frameworks and validators write when they send a failed call back to the model:
#: pydantic-ai's ``RetryPromptPart`` ("Fix the errors and try again.", "Validation feedback:"),
#: LangChain's ToolNode and structured output ("Please fix your mistakes."), opencode-style
#: invalid-tool results ("The arguments provided to the tool are invalid: …"), and validators
#: asking for a corrected call ("Validation failed: … Please correct the input and call the
#: tool again", "The arguments you sent were invalid: … Please fix the above errors and retry").
#: A bare "call the tool again" is not enough: a paginated success says it too.
RETRY_PROMPT = re.compile(
    r"\bFix the errors and try again\b|^Validation feedback:"
    r"|\bplease fix (?:the above errors?|your mistakes|the errors?)\b"
    r"|\b(?:correct|fix) the (?:input|arguments?|parameters?|call) and (?:call the tool again"
    r"|try again|retry)\b"
    r"|^The arguments (?:you sent|you provided|provided to the tool|provided) (?:were|are)"
    r" invalid\b"
    r"|^Invalid arguments for (?:the )?tool\b|^Validation failed\b",
    re.IGNORECASE | re.MULTILINE,
)
RETRY_PROMPT_KEYWORDS = (
    "fix the errors and try again", "validation feedback:", "please fix", " and call the tool",
    " and try again", " and retry", "invalid", "validation failed",
)  # fmt: skip
#: A command-line client's own failure line, as it opens its output: ``psql: error: …``,
#: ``docker: Error response from daemon: …``, ``curl: (7) Failed to connect …``, apt's
#: ``E: Unable to locate package …``, MySQL's ``ERROR 1045 (28000): …``.
_CLI_FAILURE = re.compile(
    r"\A[\w.+-]{1,40}: (?:error|fatal|Error|ERROR|FATAL)(?::| response\b| from\b)"
    r"|\Acurl: \(\d+\) |\AE: [A-Z]|\AERROR \d{3,4} \([0-9A-Z]{5}\)"
)
#: Failure lines command-line clients print at the start or end of their output: git's
#: ``fatal: …`` and ``error: failed to push some refs``, kubectl's ``error: You must be logged
#: in``, ssh's ``Permission denied (publickey).`` and ``Host key verification failed.``.
_CLI_FAILURE_LINE = re.compile(
    r"^fatal: \S"
    r"|^error: (?:failed|unable|could not|cannot|src refspec|pathspec|you must|the following"
    r"|RPC failed|externally-managed)"
    r"|^[\w@.-]+: Permission denied \(|^Permission denied \(|^Host key verification failed\b",
    re.IGNORECASE | re.MULTILINE,
)

_BARE_ERROR_WORDS = r"error|errors|errored|failed|failure|fail"
_HTTP_ERROR_REASONS = split_words(
    "Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Method Not Allowed"
    "|Request Timeout|Conflict|Gone|Unprocessable Entity|Too Many Requests"
    "|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout"
)
_FAILURE_OPENERS = "failed to|failed:|unable to|could not|couldn't|cannot|can't"
_FAILURE_PHRASES = (
    "timed out|connection refused|service unavailable|rate limit exceeded|too many requests"
    "|quota exceeded|access denied|authentication failed|could not be found|cannot be found"
)
_SHELL_ERRORS = "command not found|no such file or directory|permission denied"

DETECTION_RULES: tuple[DetectionRule, ...] = (
    DetectionRule(
        "bare_error_word",
        rx(rf"\A\W*(?:{_BARE_ERROR_WORDS})\W*\Z"),
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
        "traceback",
        TRACEBACK,
        "edges",
        "a traceback, stack frames or an exception line",
        TRACEBACK_KEYWORDS,
    ),
    DetectionRule(
        "crash_text",
        CRASH,
        "edges",
        "segmentation fault, core dump or panic",
        CRASH_KEYWORDS,
    ),
    DetectionRule(
        "http_error_status",
        http_status(
            r"[45]\d\d",
            _HTTP_ERROR_REASONS,
        ),
        "head",
        'an HTTP status >= 400 near the start ("HTTP 503", "status code 500", "404 Not Found")',
        ("http", "status", "error", *(reason.lower() for reason in _HTTP_ERROR_REASONS)),
    ),
    DetectionRule(
        "failure_phrase",
        # Verbs of failure open the line, optionally after a "program:" prefix the way
        # command-line tools report; the phrases after them never describe a successful result.
        rx(
            rf"\A(?:[\w./ -]{{1,60}}:\s*)?(?:{_FAILURE_OPENERS})\b"
            rf"|\b(?:{_FAILURE_PHRASES})\b"
        ),
        "first_line",
        'the first line says "failed to", "could not", "timed out", "access denied" …',
        split_words(f"{_FAILURE_OPENERS}|{_FAILURE_PHRASES}"),
    ),
    DetectionRule(
        "shell_error",
        rx(rf"\b(?:{_SHELL_ERRORS})\b"),
        "first_line",
        'the first line is a shell error ("command not found", "No such file or directory")',
        split_words(_SHELL_ERRORS),
    ),
    DetectionRule(
        "exception_text",
        rx(r"\bexception\b"),
        "first_line",
        'the first line mentions an "exception"',
        ("exception",),
    ),
    DetectionRule(
        "timeout_duration",
        # The duration ends the phrase ("… after 30s.", "… of 2000ms exceeded"): "timeout of
        # 30 s for uploads" describes a setting.
        rx(
            rf"\btime[ -]?out (?:after|of) {_DURATION}"
            r"(?:\s+(?:exceeded|reached|expired|elapsed))?\s*(?:[.!:;,)]|$)"
        ),
        "first_line",
        'the first line gives up after a duration ("timeout after 30s")',
        ("timeout", "time out", "time-out"),
    ),
    DetectionRule(
        "connection_error",
        # Node's error codes open its message ("connect ECONNREFUSED 127.0.0.1:3000"); libc's
        # resolver and socket messages are error texts wherever they stand in the line.
        rx(
            r"\A\s*(?:(?:connect|read|write|getaddrinfo|querySrv|socket)\s+)?"
            r"(?:ECONN(?:REFUSED|RESET|ABORTED)|ENOTFOUND|EAI_AGAIN)\b"
            r"|\bname or service not known\b|\btemporary failure in name resolution\b"
            r"|\bnodename nor servname provided\b|\bconnection reset by peer\b"
            r"|\bsocket hang up\b|\bconnection to the server \S+ was refused\b"
        ),
        "first_line",
        "the first line is a connection error (ECONNREFUSED, getaddrinfo, Name or service …)",
        _CONNECTION_KEYWORDS,
    ),
    DetectionRule(
        "exit_code",
        # The last lines are where runners report a process's status; "exit code 0" is not a
        # failure, so only non-zero codes count.
        rx(
            r"^\s*exit (?:code|status)\s*[:=]?\s*[1-9]\d*\b"
            r"|\b(?:exited|finished|failed|terminated|completed) with (?:exit )?(?:code|status)"
            r" [1-9]\d*\b"
            r"|\bnon-zero exit (?:code|status)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
        "edges",
        'a non-zero exit code ("Exit code 1", "exited with code 2", "non-zero exit status")',
        ("exit",),
    ),
    DetectionRule(
        "build_failure",
        _BUILD_FAILURE,
        "edges",
        "a package manager or compiler failed (npm ERR!, pip ERROR:, error[E0425], error TS2322,"
        " file.c:3:5: error:, make: ***)",
        _BUILD_FAILURE_KEYWORDS,
    ),
    DetectionRule(
        "cli_failure",
        _CLI_FAILURE,
        "first_line",
        "a command-line client's failure opens the output (psql: error:, curl: (7), E: …,"
        " ERROR 1045 (28000):)",
        ("error", "fatal", "curl: (", "e: "),
    ),
    DetectionRule(
        "cli_failure_line",
        _CLI_FAILURE_LINE,
        "edges",
        "a command-line client's failure line (git's fatal:, error: failed to push, ssh's"
        " Permission denied (publickey))",
        ("fatal: ", "error: ", "permission denied (", "host key verification"),
    ),
    DetectionRule(
        "retry_prompt",
        RETRY_PROMPT,
        "edges",
        "a framework's prompt asking the model to fix its call (pydantic-ai's \"Fix the errors"
        ' and try again.")',
        RETRY_PROMPT_KEYWORDS,
    ),
    DetectionRule(
        "validation_phrase",
        rx(
            r"\bmissing (?:\d+ )?required (?:positional |keyword-only )?"
            r"(?:parameter|argument|field|property|key)s?\b|\b\d+ validation errors?\b"
            r"|\bfield required\b|\bis a required (?:property|parameter|field|argument)\b"
            # pydantic v2's message line ("Input should be a valid boolean, unable to …").
            r"|\AInput should be (?:a valid|less than|greater than)\b"
        ),
        "first_line",
        'the first line reports invalid arguments ("missing required parameter", "1 validation'
        ' error for")',
        ("required", "validation", "input should be"),
    ),
)

#: Names of the rules that read content parsed as JSON (only top-level keys count).
JSON_DETECTION_RULES: tuple[str, ...] = (
    "json_error_field",
    "json_status_error",
    "json_success_false",
    "json_response_error",
)

# ToolBench wraps the API's answer as a Python repr in a "response" string and leaves "error"
# empty when the call went through, also when the API answered with an error: an object that is
# only a "message" ({'message': "Endpoint '/x' does not exist"}), that opens with a non-empty
# "error", or that carries an HTTP error status near its start (an RFC 7807 problem document).
_RESPONSE_ERROR = re.compile(
    r"""\A\{\s*['"]message['"]\s*:\s*(?:'[^'\n]*'|"[^"\n]*")\s*\}\Z"""
    r"""|\A\{\s*['"]error['"]\s*:\s*['"](?!['"])"""
    r"""|\A\{[^\n]{0,200}?['"](?:status|statusCode|status_code)['"]\s*:\s*[45]\d\d\b"""
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
    response = value.get("response")
    if error == "" and isinstance(response, str) and _RESPONSE_ERROR.search(response[:HEAD_CHARS]):
        return "json_response_error"
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
    # Several rules look at the same region: cut each region once, and find which rules'
    # keywords it holds in one pass (not a substring test per keyword per rule).
    regions: dict[str, tuple[str, frozenset[int]]] = {}
    for rule, wanted in zip(DETECTION_RULES, _RULE_KEYWORDS, strict=True):
        cut = regions.get(rule.region)
        if cut is None:
            region = _region(text, rule.region)
            found = _KEYWORD_SCAN.find_matches_as_indexes(region.lower(), overlapping=True)
            cut = regions[rule.region] = (region, frozenset(i for i, _, _ in found))
        region, present = cut
        if wanted and wanted.isdisjoint(present):
            continue
        if rule.pattern.search(region) is not None:
            return rule.name
    return None


#: Every detection rule's keywords, and per rule the indexes of its own (empty: none, the
#: regex always runs): :func:`detect_error` finds all that occur in a region in one pass.
_KEYWORDS: Final = tuple(sorted({k for rule in DETECTION_RULES for k in rule.keywords}))
_KEYWORD_SCAN: Final = AhoCorasick(list(_KEYWORDS), matchkind=MatchKind.Standard)
_RULE_KEYWORDS: Final = tuple(
    frozenset(_KEYWORDS.index(k) for k in rule.keywords) for rule in DETECTION_RULES
)
