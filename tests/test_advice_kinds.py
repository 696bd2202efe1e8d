"""Advice kinds: the same advice, in the protocol or in text, gets the same kind and verdict.

Each case runs the whole analysis (``analyze_trace`` on a trace whose Tool Message content is
either a protocol object or plain error text) so that kind, source, detail, verdict and reason
are what an import stores.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from ingest.analysis.facts import ResultFacts
from ingest.analysis.trace import analyze_trace
from ingest.model import Message, ToolCall, ToolResult, Trace
from ingest.protocol import ToolMessage

T0 = datetime(2025, 7, 17, 16, 0, 0, tzinfo=UTC)


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(
        call_index=0,
        tool_call_id=call_id,
        name=name,
        arguments=arguments,
        arguments_raw=orjson.dumps(arguments).decode(),
    )


def _assistant(seq: int, at: float, text: str = "", *calls: ToolCall) -> Message:
    return Message(
        seq=seq,
        role="assistant",
        content=text,
        tool_calls=list(calls),
        timestamp=T0 + timedelta(seconds=at),
    )


def _tool(seq: int, at: float, call_id: str, content: str) -> Message:
    return Message(
        seq=seq,
        role="tool",
        content=content,
        tool_result=ToolResult(tool_call_id=call_id),
        timestamp=T0 + timedelta(seconds=at),
    )


def _advice_result(content: str, *after: Message) -> ResultFacts:
    """Facts of the first Tool Message: a failing ``get_weather`` call answered by ``content``."""
    messages = [
        _assistant(0, 0.0, "", _call("c1", "get_weather", {"town": "Paris"})),
        _tool(1, 1.0, "c1", content),
        *after,
    ]
    trace = Trace(format="test", source_file="t.json", messages=messages)
    return analyze_trace(trace, [1] * len(messages)).results[0]


def _protocol(summary: str, suggestion: str) -> str:
    return ToolMessage.error("other", summary, suggestion).to_content()


def _text(summary: str, suggestion: str) -> str:
    return f"Error: {summary} {suggestion}"


RETRY_LATER = (_assistant(2, 41.0, "", _call("c2", "get_weather", {"town": "Paris"})),)
RETRY_SOON = (_assistant(2, 6.0, "", _call("c2", "get_weather", {"town": "Paris"})),)
QUESTION = (_assistant(2, 5.0, "Which Paris do you mean, France or Texas?"),)
OTHER_TOOL = (_assistant(2, 5.0, "", _call("c2", "geocode", {"q": "Paris"})),)
WITH_CITY = (_assistant(2, 5.0, "", _call("c2", "get_weather", {"city": "Paris"})),)
SAME_CALL = (_assistant(2, 5.0, "", _call("c2", "get_weather", {"town": "Paris"})),)
CHANGED = (_assistant(2, 5.0, "", _call("c2", "get_weather", {"town": "Paris, FR"})),)

# kind, summary, suggestion, detail, what the model did next, verdict, reason
CASES: list[tuple[str, str, str, dict[str, Any], tuple[Message, ...], str, str]] = [
    (
        "retry_after",
        "Rate limited.",
        "Retry after 30 seconds.",
        {"seconds": 30.0},
        RETRY_LATER,
        "followed",
        "retried get_weather 40.0 s later (advised 30 s)",
    ),
    (
        "retry_after",
        "Rate limited.",
        "Retry after 30 seconds.",
        {"seconds": 30.0},
        RETRY_SOON,
        "ignored",
        "repeated the identical failing call 5.0 s later (advised 30 s)",
    ),
    (
        "ask_user",
        "The town is ambiguous.",
        "Ask the user which country they mean.",
        {},
        QUESTION,
        "followed",
        "next message asked the user without calling a tool",
    ),
    (
        "ask_user",
        "The town is ambiguous.",
        "Ask the user which country they mean.",
        {},
        OTHER_TOOL,
        "ignored",
        "next message called geocode instead of asking the user",
    ),
    (
        "use_instead",
        "Towns are not supported.",
        "Use geocode instead.",
        {"tool": "geocode"},
        OTHER_TOOL,
        "followed",
        "next call used the suggested tool geocode",
    ),
    (
        "use_instead",
        "Towns are not supported.",
        "Use geocode instead.",
        {"tool": "geocode"},
        SAME_CALL,
        "ignored",
        "repeated the identical failing call 4.0 s later",
    ),
    (
        "missing_param",
        "Bad arguments.",
        "Missing required parameter 'city'.",
        {"param": "city"},
        WITH_CITY,
        "followed",
        "next call get_weather supplied missing parameter 'city'",
    ),
    (
        "missing_param",
        "Bad arguments.",
        "Missing required parameter 'city'.",
        {"param": "city"},
        SAME_CALL,
        "ignored",
        "repeated the identical failing call 4.0 s later",
    ),
    (
        "other",
        "No data for that town.",
        "Try a nearby larger town.",
        {},
        CHANGED,
        "followed",
        "next call get_weather changed its arguments",
    ),
    (
        "other",
        "No data for that town.",
        "Try a nearby larger town.",
        {},
        SAME_CALL,
        "ignored",
        "repeated the identical failing call 4.0 s later",
    ),
]


@pytest.mark.parametrize("source", ["protocol", "text"])
@pytest.mark.parametrize(
    ("kind", "summary", "suggestion", "detail", "after", "verdict", "reason"),
    CASES,
    ids=[f"{case[0]}-{case[5]}" for case in CASES],
)
def test_advice_gets_its_kind_and_verdict_whatever_its_source(
    source: str,
    kind: str,
    summary: str,
    suggestion: str,
    detail: dict[str, Any],
    after: tuple[Message, ...],
    verdict: str,
    reason: str,
) -> None:
    write = _protocol if source == "protocol" else _text
    facts = _advice_result(write(summary, suggestion), *after)
    content = facts.content
    assert (content.status, content.suggestion, content.suggestion_source) == (
        "error",
        suggestion,
        source,
    )
    assert (content.suggestion_kind, content.suggestion_detail) == (kind, detail)
    assert (facts.verdict, facts.verdict_reason) == (verdict, reason)


def test_a_result_without_advice_has_no_suggestion_source() -> None:
    facts = _advice_result("Error: no data for that town.", *CHANGED)
    assert (facts.content.suggestion, facts.content.suggestion_source, facts.verdict) == (
        None,
        None,
        None,
    )
