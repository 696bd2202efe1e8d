"""Derived facts: what ToolLens concludes about a trace (the contract between analysis and storage).

Everything here is computed by pure functions (``ingest.analysis.content`` for one result's text,
``ingest.analysis.trace`` for a whole trace) and stored beside the provided facts, so that
``toollens reanalyze`` can recompute it from the raw payloads when a rule improves. The closed sets
of values they take (statuses, pair states, verdicts …) are in ``db.contract.vocabulary``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from db.contract.vocabulary import (
    DurationSource,
    PairingMethod,
    PairState,
    Status,
    StatusSource,
    SuggestionKind,
    TokenCounts,
    Verdict,
)
from ingest.analysis.streaks import Streak


@dataclass(slots=True)
class ContentFacts:
    """What one Tool Message's content (plus its explicit flag) says, by rule."""

    status: Status
    status_source: StatusSource
    #: Taxonomy value (``vocabulary.ERROR_TYPES``) or a protocol-provided value kept verbatim.
    error_type: str | None = None
    #: Name of the rule that decided status/error type, e.g. ``http_429`` or ``is_error``;
    #: shown to users as the reason for an inferred value.
    rule: str | None = None
    summary: str | None = None
    suggestion: str | None = None
    #: One of ``db.contract.vocabulary.SUGGESTION_KINDS``, the same whether the advice came from the
    #: protocol or from text (see :attr:`suggestion_source`).
    suggestion_kind: SuggestionKind | None = None
    #: Machine-readable details of the suggestion: ``{"seconds": 6}``, ``{"tool": "x"}``,
    #: ``{"param": "city"}``.
    suggestion_detail: dict[str, Any] = field(default_factory=dict)
    #: True when the content is the structured Tool Message protocol (JSON with ``status``).
    is_protocol: bool = False
    #: Content-only findings: ``bare_status``, ``raw_exception``, ``error_without_suggestion``,
    #: ``empty_marked_error``.
    findings: list[str] = field(default_factory=list)

    @property
    def suggestion_source(self) -> str | None:
        """``protocol`` or ``text`` (``SUGGESTION_SOURCES``) for a result with a suggestion.

        Derived from :attr:`is_protocol`, so it needs no column of its own: advice in protocol
        content is protocol advice, whether it sits in ``suggestion`` or in ``summary``.

        >>> ContentFacts("error", "inferred", suggestion="Try again.").suggestion_source
        'text'
        """
        if self.suggestion is None:
            return None
        return "protocol" if self.is_protocol else "text"


@dataclass(slots=True)
class CallFacts:
    """Derived facts of one tool call, addressed by (message seq, call index)."""

    message_seq: int
    call_index: int
    #: ``tool name + ":" + sha1(canonical arguments)[:16]`` (sorted keys, no whitespace).
    signature: str
    occurrence: int
    run_length: int
    retry_after_error: bool
    pair_state: PairState
    pairing_method: PairingMethod | None
    #: Seq of the Tool Message paired with this call (``None`` when unanswered).
    result_seq: int | None
    name_mismatch: bool = False
    reused_id: bool = False
    #: ``unknown_tool`` | ``arguments_schema_violation`` | None (only when tools are declared).
    schema_issue: str | None = None
    schema_detail: str | None = None
    #: Part of an A-B-A-B ping-pong between two signatures.
    ping_pong: bool = False
    findings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ResultFacts:
    """Derived facts of one Tool Message, addressed by its message seq."""

    message_seq: int
    content: ContentFacts
    pair_state: PairState
    pairing_method: PairingMethod | None
    #: (message seq, call index) of the call it answers, when paired.
    call_ref: tuple[int, int] | None
    name_mismatch: bool = False
    #: Tokens of the text plus ``image_tokens``.
    tokens: int = 0
    #: Tokens of the images the result carries (``ingest.analysis.images``), and each image as
    #: stored.
    image_tokens: int = 0
    images: list[dict[str, Any]] = field(default_factory=list)
    #: The model call that read the result: the seq of the first assistant message after it
    #: (same branch) carrying usage, and that call's input tokens (``ingest.analysis.usage``).
    read_by_seq: int | None = None
    read_input_tokens: int | None = None
    #: What it adds to the model calls after it (``ingest.analysis.costs``): the calls that read it,
    #: the tokens of their reads after the first, of them cached reads (``None``: unknown, an
    #: estimate), whether the calls' usage measured it, and every read priced (nanodollars;
    #: ``None`` without a price for the model).
    later_calls: int = 0
    reread_tokens: int = 0
    reread_cached: int | None = None
    reread_measured: bool = False
    cost_nano_usd: int | None = None
    oversized: bool = False
    verdict: Verdict | None = None
    verdict_reason: str | None = None
    #: Did the next call of the same tool (after this result) succeed? ``None``: no such call.
    next_call_succeeded: bool | None = None
    findings: list[str] = field(default_factory=list)
    #: Execution time of the call it answers, in milliseconds (``ingest.analysis.durations``);
    #: negative when the result is stamped before its call; ``None`` when unknown.
    duration_ms: float | None = None
    duration_source: DurationSource | None = None


@dataclass(slots=True)
class TraceFacts:
    """All derived facts of one trace."""

    calls: list[CallFacts]
    results: list[ResultFacts]
    #: Tokens of all messages and of the Tool Messages only.
    total_tokens: int = 0
    tool_result_tokens: int = 0
    #: Tokens of results answering repeats (occurrence >= 2) of a signature.
    wasted_tokens: int = 0
    #: ``exact`` when the counts are the model's own tokenizer's
    #: (``ingest.analysis.token_accuracy``).
    token_counts: TokenCounts = "estimate"
    #: Error streaks of 2 or more calls (``ingest.analysis.streaks``), in the order of their first
    #: call.
    streaks: list[Streak] = field(default_factory=list)
