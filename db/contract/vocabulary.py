"""The words ToolLens stores and shows: every closed set of values, and the analysis defaults.

Each set is a ``Literal`` type, so mypy checks the values written in code, and a tuple derived
from it (``typing.get_args``), in display order, for what iterates over the set: SQL counts,
filter choices, chart axes, the database's CHECK constraints (``db.schema``). Analysis
(``ingest``), storage (``db``) and the dashboard import these; nobody keeps a copy.

``error_type`` is the exception: the taxonomy below is what the text rules produce, but a
protocol-provided ``error_type`` is kept verbatim, so the stored column is an open set.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

#: Who runs a tool call: the agent's own code (``client``), the model provider inside the API
#: call (``server``: Anthropic ``server_tool_use`` such as web search or code execution), or an
#: MCP server the provider connects to (``mcp``: Anthropic ``mcp_tool_use``).
CallKind = Literal["client", "server", "mcp"]
CALL_KINDS: Final[tuple[CallKind, ...]] = get_args(CallKind)

#: Derived status of a Tool Message.
Status = Literal["success", "error", "partial", "unknown"]
STATUSES: Final[tuple[Status, ...]] = get_args(Status)

#: The statuses a structured Tool Message (the protocol, ``ingest.protocol``) may state.
ProtocolStatus = Literal["success", "error", "partial"]
PROTOCOL_STATUSES: Final[tuple[ProtocolStatus, ...]] = get_args(ProtocolStatus)

#: Which step decided the status: an explicit flag, the structured protocol, or a text rule.
StatusSource = Literal["explicit", "protocol", "inferred"]
STATUS_SOURCES: Final[tuple[StatusSource, ...]] = get_args(StatusSource)

#: How a call and a result relate after pairing.
PairState = Literal[
    "paired",
    "missing_result",
    "orphan_result",
    "duplicate_result",
    "result_before_call",
    "late_result",
]
PAIR_STATES: Final[tuple[PairState, ...]] = get_args(PairState)

#: How a result was matched to its call: by ``tool_call_id`` or by order and tool name.
PairingMethod = Literal["id", "position"]
PAIRING_METHODS: Final[tuple[PairingMethod, ...]] = get_args(PairingMethod)

#: What the model did with a suggestion.
Verdict = Literal["followed", "ignored", "unclear", "no_next_action"]
VERDICTS: Final[tuple[Verdict, ...]] = get_args(Verdict)

#: The error taxonomy the rules produce (DESIGN.md), in display order.
ErrorType = Literal[
    "rate_limit",
    "timeout",
    "unavailable",
    "auth",
    "not_found",
    "invalid_params",
    "invalid_arguments_json",
    "unknown_tool",
    "tool_exception",
    "conflict",
    "quota",
    "content_filter",
    "other",
]
ERROR_TYPES: Final[tuple[ErrorType, ...]] = get_args(ErrorType)

#: Named Tool Message problems: content findings, call findings, then the pairing states.
FindingKind = Literal[
    "bare_status",
    "raw_exception",
    "error_without_suggestion",
    "empty_marked_error",
    "name_mismatch",
    "oversized",
    "unparsed_arguments",
    "unknown_tool",
    "arguments_schema_violation",
    "undeclared_parameter",
    "missing_result",
    "orphan_result",
    "duplicate_result",
    "result_before_call",
    "late_result",
]
FINDING_KINDS: Final[tuple[FindingKind, ...]] = get_args(FindingKind)

#: How serious a finding is: an ``error`` is a broken contract (a call the schema forbids, a
#: result no call asked for), a ``warning`` something a tool author should look at. SARIF's
#: ``level`` and the JUnit output of ``toollens lint`` use it.
FindingLevel = Literal["error", "warning"]
FINDING_LEVELS: Final[tuple[FindingLevel, ...]] = get_args(FindingLevel)
FINDING_LEVEL: Final[dict[FindingKind, FindingLevel]] = {
    "bare_status": "warning",
    "raw_exception": "warning",
    "error_without_suggestion": "warning",
    "empty_marked_error": "warning",
    "name_mismatch": "error",
    "oversized": "warning",
    "unparsed_arguments": "error",
    "unknown_tool": "error",
    "arguments_schema_violation": "error",
    "undeclared_parameter": "warning",
    "missing_result": "error",
    "orphan_result": "error",
    "duplicate_result": "error",
    "result_before_call": "error",
    "late_result": "warning",
}


def finding_level(kind: str) -> FindingLevel:
    """The level of a finding kind; ``warning`` for kinds outside the vocabulary (lint's
    ``loop``).

    >>> finding_level("undeclared_parameter"), finding_level("unknown_tool")
    ('warning', 'error')
    """
    return _LEVEL_OF.get(kind, "warning")


_LEVEL_OF: Final[dict[str, FindingLevel]] = {str(k): v for k, v in FINDING_LEVEL.items()}
#: One line per finding kind: what it means, as lint output, SARIF rules and the Findings page
#: say it.
FINDING_DESCRIPTION: Final[dict[FindingKind, str]] = {
    "bare_status": "the Tool Message says only a status word (ok, error, done …)",
    "raw_exception": "an error Tool Message carries a raw exception or traceback",
    "error_without_suggestion": "an error Tool Message gives the model no advice",
    "empty_marked_error": "flagged as an error but says nothing more",
    "name_mismatch": "the Tool Message names another tool than the call it answers",
    "oversized": "the Tool Message is over the token budget",
    "unparsed_arguments": "the call's arguments are not valid JSON",
    "unknown_tool": "the call names a tool the trace does not declare",
    "arguments_schema_violation": "the call's arguments violate the tool's declared schema",
    "undeclared_parameter": "the call passes a parameter the tool's open schema does not declare",
    "missing_result": "no Tool Message answers the call",
    "orphan_result": "the Tool Message answers no call",
    "duplicate_result": "a second Tool Message answers the same call",
    "result_before_call": "the Tool Message comes before its call",
    "late_result": "the Tool Message comes after the model spoke again",
}


#: What makes a pair (a call with its Tool Message, or a Tool Message no call shows as its
#: answer) a *problem* on the Trace page: the same list for the Problems tile, the outline, the
#: previous / next problem buttons and the words on each pair's card. Besides these, every
#: finding kind (:data:`FINDING_KINDS`, which include the pairing states) is one.
PAIR_PROBLEMS: Final[tuple[str, ...]] = ("error", "loop", "ignored_advice")
#: Each problem in a few words, as a pair's card names it: the pair problems, then every
#: finding kind.
PROBLEM_LABEL: Final[dict[str, str]] = {
    "error": "error",
    "loop": "loop",
    "ignored_advice": "advice ignored",
    **{str(kind): str(kind).replace("_", " ") for kind in FINDING_KINDS},
}
#: Each problem in a sentence, as a pair's card explains it (``{k}``: the loop threshold).
PROBLEM_DESCRIPTION: Final[dict[str, str]] = {
    "error": "the Tool Message has status error",
    "loop": "the same tool with the same arguments, called at least {k} times so far in this trace",
    "ignored_advice": "the model did not follow the advice the Tool Message gave",
    **{str(kind): text for kind, text in FINDING_DESCRIPTION.items()},
}


def describe_finding(kind: str, detail: str | None = None) -> str:
    """The message of one occurrence: its own detail (the schema problem, the error's summary)
    when it has one, else what the kind means.

    >>> describe_finding("missing_result")
    'no Tool Message answers the call'
    >>> describe_finding("undeclared_parameter", "undeclared parameter 'page'")
    "undeclared parameter 'page'"
    """
    if detail and detail.strip():
        return " ".join(detail.split())
    return FINDING_DESCRIPTION.get(kind, kind)  # type: ignore[call-overload]


#: Findings whose detail is the call's stored schema detail.
_SCHEMA_FINDINGS = ("unknown_tool", "arguments_schema_violation", "undeclared_parameter")


def finding_message(
    kind: str,
    *,
    schema_issue: str | None = None,
    schema_detail: str | None = None,
    args_error: str | None = None,
    answered_name: str | None = None,
    tokens: int | None = None,
    summary: str | None = None,
) -> str:
    """The message of one occurrence from the stored facts it is about: the same sentence in
    ``toollens lint`` and on the Findings page.

    ``schema_issue`` / ``schema_detail`` / ``args_error`` are the call's, ``answered_name`` the
    name the answering Tool Message gave, ``tokens`` / ``summary`` the Tool Message's. A call
    with a violation and an undeclared parameter has one detail; its ``undeclared_parameter``
    finding keeps only the undeclared part.

    >>> finding_message("undeclared_parameter", schema_issue="arguments_schema_violation",
    ...                 schema_detail="missing required parameter 'q'; undeclared parameter 'p'")
    "undeclared parameter 'p'"
    >>> finding_message("oversized", tokens=5120)
    '5,120 tokens, over the token budget'
    """
    detail: str | None = None
    if kind in _SCHEMA_FINDINGS:
        detail = schema_detail
        if detail and kind != schema_issue:
            undeclared = [p for p in detail.split("; ") if p.startswith("undeclared parameter")]
            detail = "; ".join(undeclared) or None
    elif kind == "unparsed_arguments":
        detail = args_error
    elif kind == "name_mismatch" and answered_name:
        detail = f"answered by a Tool Message named '{answered_name}'"
    elif kind == "oversized" and tokens is not None:
        detail = f"{tokens:,} tokens, over the token budget"
    elif kind in ("raw_exception", "error_without_suggestion"):
        detail = summary
    return describe_finding(kind, detail)


#: What a suggestion asks of the model. The kinds before ``other`` have a detail the verdict
#: rules compare with the next action (``ingest.analysis.suggestions.extract_suggestion``).
SuggestionKind = Literal["retry_after", "missing_param", "use_instead", "ask_user", "other"]
SUGGESTION_KINDS: Final[tuple[SuggestionKind, ...]] = get_args(SuggestionKind)
#: Where a suggestion was written: in the Tool Message protocol (its ``suggestion`` field, or its
#: ``summary`` when it has none) or in free text. Not stored: ``tool_results.is_protocol`` says it.
SuggestionSource = Literal["protocol", "text"]
SUGGESTION_SOURCES: Final[tuple[SuggestionSource, ...]] = get_args(SuggestionSource)

#: Whether a trace's token counts are the model's own tokenizer's ("exact") or another's
#: ("estimate": a Claude trace counted with an OpenAI encoding, an unknown model).
TokenCounts = Literal["exact", "estimate"]
TOKEN_COUNTS: Final[tuple[TokenCounts, ...]] = get_args(TokenCounts)

#: Which provider's documented image-token rule an image was counted with
#: (``ingest.analysis.images``).
ImageRule = Literal["anthropic", "openai"]
IMAGE_RULES: Final[tuple[ImageRule, ...]] = get_args(ImageRule)

#: Where a tool's execution time came from: the tool span's own start and end, or the call's
#: and the result's message timestamps (``ingest.analysis.durations``).
DurationSource = Literal["span", "timestamps"]
DURATION_SOURCES: Final[tuple[DurationSource, ...]] = get_args(DurationSource)

#: Message roles of the canonical model.
Role = Literal["system", "user", "assistant", "tool"]
ROLES: Final[tuple[Role, ...]] = get_args(Role)

#: Tokenizer encodings whose data ships with the installed ``bpe-openai`` wheel (works offline).
Encoding = Literal["o200k_base", "cl100k_base"]
ENCODINGS: Final[tuple[Encoding, ...]] = get_args(Encoding)
DEFAULT_ENCODING: Final[Encoding] = "o200k_base"

#: Default token budget for one Tool Message; results above it get the ``oversized`` finding.
DEFAULT_TOKEN_BUDGET: Final = 2000
#: Default loop threshold k: a signature occurring k or more times in a trace is a loop.
DEFAULT_LOOP_K: Final = 3
#: Default error-streak threshold: k or more consecutive calls of one tool ending in the same
#: error fingerprint (``ingest.analysis.streaks``).
DEFAULT_STREAK_K: Final = 3


def counted(n: int, noun: str, many: str | None = None, *, thousands: bool = False) -> str:
    """``n`` and the noun as that many of it reads: ``"1 trace"``, ``"2 traces"``, ``"0
    traces"`` (``many`` where the plural is not ``noun + "s"``; ``thousands``: ``"1,024"``)."""
    number = f"{n:,}" if thousands else str(n)
    return f"{number} {noun if n == 1 else (many or noun + 's')}"
