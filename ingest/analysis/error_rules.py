"""Error type rules: which ``error_type`` of the taxonomy does an error text have?

``RULES`` is an ordered table of named, compiled patterns mapping an error text to the
``error_type`` taxonomy (``vocabulary.ERROR_TYPES``): :func:`classify_error` returns the type
and the name of the first rule that matches, ``other`` when none does, so every inferred type
can be explained. Whether a text is an error at all is decided by the detection rules in
``ingest.analysis.error_detection`` (:func:`detect_error`, ``DETECTION_RULES``), whose shared
building blocks (the scan window, tracebacks, HTTP status patterns) the type rules reuse.

Long content: regexes only look at the first and last 16 KB (:func:`scan_window`).
Each type rule also lists ``keywords``, lowercase words one of which every text it matches
contains; a rule's regex runs only when one of them occurs. Python's ``re`` tries a
case-insensitive alternation at every position, which costs milliseconds on 32 KB, while a
substring test costs microseconds (a test checks the keywords against every example and the
real traces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ingest.analysis.error_detection import (
    CRASH,
    CRASH_KEYWORDS,
    RETRY_PROMPT,
    RETRY_PROMPT_KEYWORDS,
    TRACEBACK,
    TRACEBACK_KEYWORDS,
    http_status,
    rx,
    scan_window,
    split_words,
)


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


_HTTP_MARKER_WORDS = ("http", "status", "error")


def _http_rule(
    name: str, error_type: str, codes: str, reasons: tuple[str, ...], description: str
) -> ErrorRule:
    # Literal codes make the sharpest keywords; a code class like 5\d\d falls back to the
    # marker words and reason phrases, one of which every match contains.
    if codes.replace("|", "").isdigit():
        keywords = split_words(codes)
    else:
        keywords = _HTTP_MARKER_WORDS + tuple(reason.lower() for reason in reasons)
    return ErrorRule(name, error_type, http_status(codes, reasons), keywords, description)


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
# - compiler diagnostics before not_found: "cannot find value `x`" is about the code built.
# - dependency conflicts before unavailable: "unable to resolve dependency tree" is not DNS.
# - the framework retry prompt after every cause-naming family: it only says "fix it".
# - traceback and crash last: a traceback whose final line names a timeout or missing file is
#   more useful typed by that cause; what remains is a raw tool exception.
RULES: tuple[ErrorRule, ...] = (
    ErrorRule(
        "unknown_tool_text",
        "unknown_tool",
        rx(
            r"\b(?:tool|function)\s+['\"`]?[\w.\-]+['\"`]?\s+(?:is\s+)?(?:not found|does not exist"
            r"|doesn't exist|is not available|not available|is not registered)\b"
            r"|\bunknown (?:tool|function)\b|\bno such (?:tool|function)\b|\bnot a valid tool\b"
            r"|\binvalid tool(?: name)?\b|\b(?:tool|function) not found\b"
        ),
        split_words("tool|function"),
        "the model called a tool that does not exist",
    ),
    ErrorRule(
        "args_json_text",
        "invalid_arguments_json",
        rx(
            r"\binvalid json (?:in|for) (?:the )?(?:tool(?: call)? )?arguments\b"
            r"|\b(?:could not|couldn't|failed to|unable to) (?:parse|decode) (?:the )?"
            r"(?:tool(?: call)? )?arguments\b"
            r"|\barguments? (?:is|are) not valid json\b"
            # A JSONDecodeError is only about the arguments when they are mentioned: tools
            # also raise it when an upstream API returns garbage.
            r"|JSONDecodeError[\s\S]{0,300}argument|argument[\s\S]{0,300}JSONDecodeError"
        ),
        split_words("argument"),
        "the tool call's arguments were not valid JSON",
    ),
    ErrorRule(
        "validation_text",
        "invalid_params",
        rx(
            r"\bmissing (?:\d+ )?required (?:positional |keyword-only )?"
            r"(?:parameter|argument|field|property|key)s?\b"
            r"|\bis a required (?:property|parameter|field|argument)\b|\bfield required\b"
            r"|\bvalidation (?:errors?|failed)\b|\bunexpected keyword argument\b"
            r"|\bunrecognized (?:argument|option|parameter)s?\b|\badditional properties\b"
            r"|\bValidationException\b|^Input should be (?:a valid|less than|greater than)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
        split_words(
            "required|validation|unexpected|unrecognized|additional properties|input should be"
        ),
        "arguments failed schema validation: missing, extra or mistyped parameters",
    ),
    ErrorRule(
        "invalid_arguments_prompt",
        "invalid_params",
        # A validator or framework rejecting the call's arguments as a whole; its details may
        # say "not found" or "invalid date", but what the model must fix is its arguments.
        rx(
            r"^The arguments (?:you sent|you provided|provided to the tool|provided) (?:were|are)"
            r" invalid\b|^Invalid arguments for (?:the )?tool\b"
            r"|\bplease fix the above errors?\b|\bcorrect the (?:input|arguments?|parameters?)"
            r" and (?:call the tool again|try again|retry)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
        split_words("invalid|please fix|correct the"),
        "a validator or framework rejected the call's arguments and asks for a corrected call",
    ),
    ErrorRule(
        "ambiguous_edit_target",
        "invalid_params",
        # Claude Code's Edit: the old_string argument does not pick one place in the file.
        rx(
            r"\bfound \d+ matches of the string to replace\b"
            r"|\b(?:old_string|string to replace) (?:is not unique|(?:matches|appears|occurs)"
            r" (?:\d+|multiple) times)\b"
        ),
        split_words("matches|not unique|appears|occurs"),
        "the text to edit occurs several times and the call does not say which",
    ),
    ErrorRule(
        "compiler_error",
        "other",
        # A compiler's "cannot find value `x`" or "Cannot find name 'x'" is about the code being
        # built, not a missing resource: typing it here keeps not_found for what the tool looked
        # up. No taxonomy type fits a broken build, so it is ``other``, named.
        rx(
            r"^error\[E\d{4}\]: |^error: (?:could not compile|aborting due to)"
            # A missing include ("fatal error: x.h: No such file or directory") is a missing
            # file, left to not_found.
            r"|^[^\s:][^:\n]*:\d+:\d+: (?:fatal )?error: (?![^\n]*No such file or directory)"
            r"|\berror TS\d{4,5}: ",
            re.IGNORECASE | re.MULTILINE,
        ),
        (
            "error[e",
            "error: could not compile",
            "error: aborting",
            ": error: ",
            ": fatal error: ",
            "error ts",
        ),
        "a compiler diagnostic (rustc error[E…], gcc/clang file:line:col: error:, tsc error TS…)",
    ),
    ErrorRule(
        "content_filter_text",
        "content_filter",
        rx(
            r"\bcontent[ _-]?filter(?:ed|ing)?\b|\bcontent (?:management )?polic(?:y|ies)\b"
            r"|\bflagged by (?:the )?(?:moderation|safety|content)\b"
            r"|\bsafety (?:system|filter)s?\b|\bresponsible ai polic"
            r"|\bviolat(?:es|ed|ion of) (?:our|the) (?:usage |content )?polic"
        ),
        split_words("filter|polic|flagged|safety"),
        "a moderation or safety filter blocked the request or the output",
    ),
    ErrorRule(
        "quota_text",
        "quota",
        rx(
            r"\bquota\b[^.\n]{0,40}\b(?:exceeded|exhausted|reached)\b"
            r"|\bexceeded (?:your |the )?(?:current |daily |monthly )?quota\b"
            r"|\binsufficient[_ ](?:credits?|quota)\b|\bout of credits\b"
            r"|\bcredit balance is too low\b|\bpayment required\b|\b402\s+payment\b"
            r"|\bbilling (?:limit|hard limit|details|issue)\b|\bcheck your (?:plan and )?billing\b"
        ),
        split_words("quota|insufficient|credit|payment|billing"),
        "a usage quota, credit balance or billing limit is exhausted",
    ),
    _http_rule("http_429", "rate_limit", "429", ("Too Many Requests",), "HTTP 429"),
    ErrorRule(
        "rate_limit_text",
        "rate_limit",
        rx(r"\brate[ _-]?limit(?:ed|ing|s)?\b|\btoo many requests\b|\bthrottl(?:ed|ing)\b"),
        split_words("limit|too many|throttl"),
        "the service asks the caller to slow down",
    ),
    ErrorRule(
        "dependency_conflict",
        "conflict",
        # Before connection_error: npm's "unable to resolve dependency tree" is not a network
        # failure.
        rx(
            r"\bERESOLVE\b|\bunable to resolve dependency tree\b|\bconflicting (?:peer )?"
            r"dependenc(?:y|ies)\b|\bResolutionImpossible\b|\bdependency conflicts?\b"
        ),
        split_words("eresolve|dependency tree|dependenc|resolutionimpossible"),
        "package versions that cannot be installed together",
    ),
    _http_rule(
        "http_408_504",
        "timeout",
        "408|504",
        split_words("Request Timeout|Request Time-out|Gateway Timeout|Gateway Time-out"),
        "HTTP 408 Request Timeout or 504 Gateway Timeout",
    ),
    ErrorRule(
        "timeout_text",
        "timeout",
        rx(
            r"\btimed out\b|\btime[ -]?out (?:error|exceeded|expired|reached|occurred)\b"
            r"|\b(?:request|read|connect|connection|operation|gateway|socket|execution|command)"
            r" time[ -]?out\b|\bdeadline exceeded\b|\bTimeoutError\b|\bETIMEDOUT\b|^timeout\b"
            r"|\bReadTimeout\b|\bConnectTimeout\b"
            r"|\btime[ -]?out (?:after|of) \d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m"
            r"|mins?|minutes?|h|hours?)\b",
            re.IGNORECASE | re.MULTILINE,
        ),
        split_words("time|deadline"),
        "the operation ran out of time",
    ),
    _http_rule(
        "http_5xx",
        "unavailable",
        r"5\d\d",
        split_words("Internal Server Error|Bad Gateway|Service Unavailable"),
        "HTTP 5xx server error",
    ),
    ErrorRule(
        "db_client_auth",
        "auth",
        # Before connection_error: psql says "connection to server at … failed: FATAL: password
        # authentication failed": the server was reached and refused the credentials.
        rx(
            r"\bpassword authentication failed\b|\bAccess denied for user\b"
            r"|\bno pg_hba\.conf entry\b|\bauthentication failed for user\b"
            r"|\bLogin failed for user\b|\bSASL authentication failed\b|\bbad auth\b"
        ),
        split_words("authentication|access denied|pg_hba|login failed|bad auth"),
        "a database client's credentials were refused (psql, mysql, sqlcmd, MongoDB)",
    ),
    ErrorRule(
        "connection_error",
        "unavailable",
        rx(
            r"\bconnection (?:refused|reset|aborted|closed|error|failed)\b"
            r"|\bECONN(?:RESET|REFUSED|ABORTED)\b|\bENOTFOUND\b|\bEAI_AGAIN\b"
            r"|\bservice (?:is )?(?:temporarily )?(?:unavailable|not available)\b"
            r"|\btemporarily unavailable\b|\bbad gateway\b|\boverloaded\b"
            r"|\b(?:could not|couldn't|failed to|unable to) (?:connect|reach|resolve)\b"
            r"|\bnetwork (?:is )?unreachable\b|\bname or service not known\b"
            r"|\bmax retries exceeded\b|\bConnectionError\b|\bgetaddrinfo\b"
            r"|\btemporary failure in name resolution\b|\bnodename nor servname provided\b"
            r"|\bsocket hang up\b|\b(?:can[’']t|cannot|can not) connect\b"
            r"|\bconnection to server on socket [^\n]* failed\b|\bis the server running\b"
            r"|\bconnection to the server \S+ was refused\b|\bis the docker daemon running\b"
        ),
        split_words(
            "connect|econn|enotfound|eai_again|available|gateway|overloaded|reach|resolve"
            "|not known|retries|getaddrinfo|name resolution|servname|hang up|server running"
            "|was refused|daemon running"
        ),
        "the service could not be reached or is down",
    ),
    ErrorRule(
        "user_rejected",
        "auth",
        rx(
            r"\btool use was rejected\b|\b(?:denied|rejected) by (?:the )?user\b"
            r"|\buser (?:doesn't|does not|did not|didn't) (?:want|allow|approve)\b"
        ),
        split_words("rejected|user"),
        "the user denied permission for this tool call",
    ),
    _http_rule("http_401_403", "auth", "401|403", ("Unauthorized", "Forbidden"), "HTTP 401/403"),
    ErrorRule(
        "permission_text",
        "auth",
        rx(
            r"\bpermission denied\b|\baccess (?:is )?denied\b|\bnot (?:authorized|permitted)\b"
            r"|\bnot allowed to\b|\bunauthori[sz]ed\b|\bforbidden\b|\bEACCES\b|\bEPERM\b"
            r"|\b(?:invalid|missing|expired|incorrect|bad) (?:api[ _-]?key|token|credentials?"
            r"|access token)\b|\bauthentication (?:failed|required|error)\b"
            r"|\b(?:must be |not )logged in\b|\blogin required\b|\bpassword is required\b"
            r"|\bneeds? the ['\"]?[\w:-]+['\"]? scope\b|\binsufficient (?:permissions?|privileges?"
            r"|scopes?)\b|\bwas blocked\b|\bhost key verification failed\b"
        ),
        split_words(
            "permission|denied|authorized|permitted|allowed|unauthori|forbidden|eacces|eperm"
            "|api|token|credential|authentication|logged in|login|password|scope|privilege"
            "|blocked|host key"
        ),
        "credentials, permissions or scopes are missing or wrong",
    ),
    _http_rule("http_404", "not_found", "404|410", ("Not Found", "Gone"), "HTTP 404/410"),
    ErrorRule(
        "not_found_text",
        "not_found",
        rx(
            r"\bnot found\b|\bno such (?:file|directory|key|user|record|object|resource|table"
            r"|column|bucket|host|branch|ref)\b|\b(?:does not|doesn't|did not|didn't) exist\b"
            r"|\bENOENT\b|\b(?:cannot|can't|could not|couldn't|unable to) (?:find|locate|open file"
            r"|access)\b|\bno (?:\w+ ){0,2}(?:found|matching)\b|\bnot available (?:on|for|in|at)\b"
            r"|\bhas no installation candidate\b|\b(?:could not|cannot|can't) be found\b"
        ),
        split_words(
            "found|no such|exist|enoent|find|locate|open file|access|matching|not available"
            "|installation candidate"
        ),
        "the requested file, record or resource does not exist",
    ),
    ErrorRule(
        "stale_read",
        "conflict",
        # Claude Code's Write/Edit refuse a file the session has not read, or that changed since
        # it was read: the request is fine, the session's state does not allow it yet.
        rx(
            r"\bhas not been read yet\b|\bhas been (?:modified|changed) since (?:it was )?"
            r"(?:last )?read\b"
        ),
        split_words("been read|since"),
        "the file must be read (again) before it can be written",
    ),
    _http_rule("http_409", "conflict", "409", ("Conflict",), "HTTP 409 Conflict"),
    ErrorRule(
        "conflict_text",
        "conflict",
        # Besides edit conflicts, this covers requests the current state cannot satisfy
        # ("not enough seats", "balance is not enough"): HTTP 409's "conflicts with the
        # current state of the target resource". Not "conflicting": compilers say
        # "conflicting types for 'f'" about the code.
        rx(
            r"\bconflicts?\b|\bconflicted\b|\balready (?:exists|in use|taken|booked|cancell?ed"
            r"|registered)\b|\bduplicate (?:key|entry|record)\b|\bversion mismatch\b"
            r"|\bconcurrent (?:modification|update)\b|\bnon-fast-forward\b|\bstale info\b"
            r"|\bwould be overwritten\b|\bnot enough (?:available )?(?:seats|balance|funds|stock"
            r"|inventory|credit|space|capacity|rooms|tickets)\b|\b(?:balance|seats?|stock"
            r"|inventory|funds?) (?:is |are )?(?:not enough|insufficient)\b"
            r"|\binsufficient (?:funds|balance|stock|inventory|seats)\b"
            # git push refused: the remote has commits the local branch lacks.
            r"|\(fetch first\)|\bUpdates were rejected because\b"
        ),
        split_words(
            "conflict|already|duplicate|mismatch|concurrent|fast-forward|stale|overwritten"
            "|not enough|insufficient|fetch first|rejected"
        ),
        "the request conflicts with the current state (edit conflict, nothing left to book)",
    ),
    _http_rule(
        "http_400_422",
        "invalid_params",
        "400|422",
        split_words("Bad Request|Unprocessable Entity|Unprocessable Content"),
        "HTTP 400 Bad Request or 422 Unprocessable Entity",
    ),
    ErrorRule(
        "invalid_value_text",
        "invalid_params",
        rx(
            r"\binvalid (?:value|argument|parameter|input|request|type|format|choice|date"
            r"|option)s?\b|\bdoes not add up\b|\bcannot be used\b|\bout of range\b"
            r"|\bmust (?:be|not be|have|contain|match)\b|\bis not (?:a )?valid\b"
            r"|\bwrong (?:type|number of arguments)\b|^usage: "
            r"|\bunknown (?:service|option|parameter|argument|value|field)s?\b",
            re.IGNORECASE | re.MULTILINE,
        ),
        split_words("valid|add up|cannot be used|range|must|wrong|usage:|unknown"),
        "an argument value is not acceptable",
    ),
    ErrorRule(
        "retry_prompt",
        "invalid_params",
        # After the specific families: a tool's ModelRetry message ("no user named X … Fix the
        # errors and try again.") is better typed by its cause; what remains is the framework
        # rejecting the model's call or output.
        RETRY_PROMPT,
        RETRY_PROMPT_KEYWORDS,
        "a framework sent the call back to the model to fix (pydantic-ai's retry prompt)",
    ),
    ErrorRule("traceback", "tool_exception", TRACEBACK, TRACEBACK_KEYWORDS, "a raw traceback"),
    ErrorRule("crash_text", "tool_exception", CRASH, CRASH_KEYWORDS, "the tool process crashed"),
)

#: Rule name reported by :func:`classify_error` when no rule gives a type.
UNCLASSIFIED: Final = "unclassified"


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
