"""Tool execution time: how long a tool took to answer a call (pure).

A result's *duration* is, in this order:

1. the source's own measure, the tool span's end − start (``ToolResult.duration_ms``: OTLP and
   Langfuse traces), source ``span``;
2. else the result message's timestamp − the call message's timestamp (Claude Code, Anthropic
   and OpenAI logs that carry times), source ``timestamps``;
3. else none (a message without a time, or times with and without a zone, which do not compare).

A span's measure counts for every result that has one; times are compared only for a result
that answers a call (paired, late or before its call; not an orphan or a duplicate answer). A
negative duration (the result is stamped before its call: clocks, or a log that re-ordered its
lines) is kept as it is so that it can be counted, and left out of every statistic
(``db.queries.durations``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from db.contract.vocabulary import DurationSource

_MICROSECOND = timedelta(microseconds=1)


def milliseconds(delta: timedelta) -> float:
    """``delta`` in milliseconds, exact to the microsecond (whole microseconds / 1000).

    >>> milliseconds(timedelta(seconds=1, microseconds=295_000))
    1295.0
    """
    return (delta // _MICROSECOND) / 1000


def tool_duration(
    call_time: datetime | None, result_time: datetime | None, span_ms: float | None
) -> tuple[float | None, DurationSource | None]:
    """The duration of one answered call in milliseconds, and where it came from.

    >>> from datetime import UTC
    >>> t = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
    >>> tool_duration(t, t + timedelta(seconds=2), None)
    (2000.0, 'timestamps')
    >>> tool_duration(t, t + timedelta(seconds=2), 1500.25)
    (1500.25, 'span')
    >>> tool_duration(t, None, None)
    (None, None)
    """
    if span_ms is not None:
        return span_ms, "span"
    if call_time is None or result_time is None:
        return None, None
    if (call_time.tzinfo is None) != (result_time.tzinfo is None):
        return None, None
    return milliseconds(result_time - call_time), "timestamps"
