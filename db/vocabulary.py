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
    "missing_result",
    "orphan_result",
    "duplicate_result",
    "result_before_call",
    "late_result",
]
FINDING_KINDS: Final[tuple[FindingKind, ...]] = get_args(FindingKind)

#: What a suggestion asks of the model. The kinds before ``other`` have a detail the verdict
#: rules compare with the next action (``ingest.suggestions.extract_suggestion``).
SuggestionKind = Literal["retry_after", "missing_param", "use_instead", "ask_user", "other"]
SUGGESTION_KINDS: Final[tuple[SuggestionKind, ...]] = get_args(SuggestionKind)
#: Where a suggestion was written: in the Tool Message protocol (its ``suggestion`` field, or its
#: ``summary`` when it has none) or in free text. Not stored: ``tool_results.is_protocol`` says it.
SuggestionSource = Literal["protocol", "text"]
SUGGESTION_SOURCES: Final[tuple[SuggestionSource, ...]] = get_args(SuggestionSource)

#: Where a tool's execution time came from: the tool span's own start and end, or the call's
#: and the result's message timestamps (``ingest.durations``).
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
#: error fingerprint (``ingest.streaks``).
DEFAULT_STREAK_K: Final = 3
