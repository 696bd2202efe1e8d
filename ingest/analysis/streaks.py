"""Error streaks: one tool failing the same way again and again, whatever its arguments (pure).

A loop (``ingest.analysis.loops``) needs identical arguments; an agent that keeps changing them a
little and keeps getting the same error is not a loop, yet it wastes as much. A **streak** is a
maximal run of *consecutive calls of one tool* in a trace whose results are all errors with the same
error fingerprint (``ingest.analysis.fingerprints.error_fingerprint``: the message with ids, numbers
and quoted values masked):

* *consecutive calls of that tool* means the tool's own calls in call order ((message seq, call
  index), the order ``ingest.analysis.loops`` uses); calls of other tools in between neither break
  nor join a streak. A call of the tool that succeeds, fails with another fingerprint or has no
  result (unanswered, or answered only by a duplicate) ends it.
* a *streak at k* is a streak of k or more calls (``contract.vocabulary.DEFAULT_STREAK_K`` = 3; the
  Loops page has a slider). Streaks of 2 or more are stored, so k is re-filtered in SQL.
* **wasted tokens**: of every call after the first, its result's tokens plus its arguments'
  tokens (the repeats the model paid for twice: writing the call and reading the error).
* **wasted time**: the sum of the execution times (``ingest.analysis.durations``) of the calls after
the
  first that have a known, non-negative one; ``None`` when none of them has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ingest.analysis.pairing import CallRef

#: Shortest streak stored (the threshold k can be set no lower).
MIN_STREAK = 2


@dataclass(slots=True, frozen=True)
class StreakCall:
    """What the streak rules need of one call, in call order."""

    ref: CallRef
    tool: str
    #: Fingerprint of its result when that result is an error; ``None`` otherwise (success,
    #: partial, unknown, or no result).
    fingerprint: str | None
    #: Tokens of its result plus tokens of its arguments.
    tokens: int = 0
    #: Execution time in milliseconds, when known.
    duration_ms: float | None = None


@dataclass(slots=True)
class Streak:
    """Consecutive calls of one tool ending in one error fingerprint."""

    tool: str
    fingerprint: str
    calls: list[CallRef] = field(default_factory=list)
    wasted_tokens: int = 0
    wasted_ms: float | None = None

    @property
    def length(self) -> int:
        """How many calls the streak holds."""
        return len(self.calls)


def find_streaks(calls: Sequence[StreakCall], min_length: int = MIN_STREAK) -> list[Streak]:
    """The streaks of ``min_length`` or more calls among ``calls`` (given in call order), in
    the order of their first call.

    >>> calls = [StreakCall((i, 0), "t", "t: boom", tokens=10) for i in range(3)]
    >>> [(s.length, s.wasted_tokens) for s in find_streaks(calls)]
    [(3, 20)]
    """
    if min_length < 1:
        raise ValueError(f"streak threshold must be at least 1, got {min_length}")
    by_tool: dict[str, list[StreakCall]] = {}
    for call in calls:
        by_tool.setdefault(call.tool, []).append(call)
    streaks: list[Streak] = []
    for tool, own in by_tool.items():
        start = 0
        for end in range(1, len(own) + 1):
            if (
                end < len(own)
                and own[end].fingerprint is not None
                and (own[end].fingerprint == own[start].fingerprint)
            ):
                continue
            run = own[start:end]
            fingerprint = run[0].fingerprint
            if fingerprint is not None and len(run) >= min_length:
                streaks.append(_streak(tool, fingerprint, run))
            start = end
    return sorted(streaks, key=lambda s: s.calls[0])


def _streak(tool: str, fingerprint: str, run: Sequence[StreakCall]) -> Streak:
    repeats = run[1:]
    times = [c.duration_ms for c in repeats if c.duration_ms is not None and c.duration_ms >= 0]
    return Streak(
        tool=tool,
        fingerprint=fingerprint,
        calls=[c.ref for c in run],
        wasted_tokens=sum(c.tokens for c in repeats),
        wasted_ms=sum(times) if times else None,
    )
