"""Suggestion follow-through verdicts: every rule, followed and ignored, with its reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from db.contract.vocabulary import Status
from ingest.analysis.content import analyze_content
from ingest.analysis.facts import ContentFacts
from ingest.analysis.verdicts import (
    CallView,
    NextAction,
    claims_success,
    follow_verdict,
    next_call_succeeded,
)

T0 = datetime(2025, 7, 17, 16, 49, 29, tzinfo=UTC)


def advice(
    kind: str, suggestion: str = "advice", status: Status = "error", **detail: Any
) -> ContentFacts:
    return ContentFacts(
        status=status,
        status_source="protocol",
        error_type="invalid_params",
        suggestion=suggestion,
        suggestion_kind=kind,
        suggestion_detail=detail,
    )


def view(
    name: str,
    sig: str | None = None,
    arguments: Any = None,
    after: float | None = None,
    status: str | None = None,
) -> CallView:
    return CallView(
        name=name,
        signature=sig or f"{name}:0000",
        arguments=arguments if arguments is not None else {},
        timestamp=T0 + timedelta(seconds=after) if after is not None else None,
        status=status,
    )


FAILED = view("get_weather", "get_weather:aaaa", {"town": "Paris"})


#: (advice, the next action, the verdict and its reason): each rule followed, ignored and
#: unclear (``None``: the trace ends after the result).
CASES = {
    "a trace ending after the result has no next action": (
        advice("use_instead", tool="x"),
        None,
        ("no_next_action", "the trace ends after this result"),
    ),
    "use_instead is followed when a next call uses the suggested tool": (
        advice("use_instead", tool="get_forecast"),
        NextAction(calls=[view("get_forecast")]),
        ("followed", "next call used the suggested tool get_forecast"),
    ),
    "use_instead is unclear when the next call is some other tool": (
        advice("use_instead", tool="get_forecast"),
        NextAction(calls=[view("search")]),
        ("unclear", "next call search neither follows nor contradicts the suggestion"),
    ),
    "missing_param is followed when the next call supplies the parameter": (
        advice("missing_param", param="city"),
        NextAction(calls=[view("get_weather", "get_weather:bbbb", {"city": "Paris"})]),
        ("followed", "next call get_weather supplied missing parameter 'city'"),
    ),
    "missing_param is ignored when the identical failing call is repeated": (
        advice("missing_param", param="city"),
        NextAction(calls=[view("get_weather", "get_weather:aaaa", {"town": "Paris"})]),
        ("ignored", "repeated the identical failing call"),
    ),
    "missing_param is unclear when the same tool changes other arguments": (
        advice("missing_param", param="city"),
        NextAction(calls=[view("get_weather", "get_weather:cccc", {"town": "Lyon"})]),
        ("unclear", "next call get_weather changed its arguments but omits 'city'"),
    ),
    "ask_user is followed by a message without tool calls": (
        advice("ask_user"),
        NextAction(text="Which city do you mean?"),
        ("followed", "next message asked the user without calling a tool"),
    ),
    "ask_user is ignored when the model calls a tool instead": (
        advice("ask_user"),
        NextAction(text="Let me guess.", calls=[view("search")]),
        ("ignored", "next message called search instead of asking the user"),
    ),
    # Claude Code: "STOP … wait for the user", the user answers, the model then acts on it.
    "ask_user is followed when the user spoke before the next turn": (
        advice("ask_user"),
        NextAction(calls=[view("Read")], after_user=True),
        ("followed", "the model stopped and the user spoke before its next message"),
    ),
    "a success claim after the user spoke is not held against the model": (
        advice("protocol", "Install it."),
        NextAction(text="Excellent! CuPy has been successfully installed.", after_user=True),
        ("unclear", "next message made no tool call"),
    ),
    "protocol advice is followed by a different tool it names": (
        advice("other", "Call list_cities to find valid names."),
        NextAction(calls=[view("list_cities")]),
        ("followed", "next call used list_cities, named in the suggestion"),
    ),
    "text advice is followed by the same tool with different arguments": (
        advice("other", "Add the country."),
        NextAction(calls=[view("get_weather", "get_weather:dddd", {"town": "Paris, FR"})]),
        ("followed", "next call get_weather changed its arguments"),
    ),
    # A repeat outweighs a changed call made alongside it.
    "protocol advice is ignored when the failing call is repeated": (
        advice("protocol", "Add the country."),
        NextAction(
            calls=[
                view("get_weather", "get_weather:dddd", {"town": "Paris, FR"}),
                view("get_weather", "get_weather:aaaa"),
            ]
        ),
        ("ignored", "repeated the identical failing call"),
    ),
    "protocol advice is unclear when the next message only talks": (
        advice("protocol", "Add the country."),
        NextAction(text="I will look into the weather for you."),
        ("unclear", "next message made no tool call"),
    ),
}


@pytest.mark.parametrize(("suggested", "next_action", "expected"), CASES.values(), ids=CASES)
def test_the_verdict_of_each_rule(
    suggested: ContentFacts, next_action: NextAction | None, expected: tuple[str, str]
) -> None:
    assert follow_verdict(suggested, FAILED, next_action) == expected


def test_claiming_success_right_after_an_error_is_ignored_for_every_kind() -> None:
    claim = NextAction(text="Your booking has been completed successfully!")
    for kind in ("use_instead", "missing_param", "ask_user", "other"):
        assert follow_verdict(advice(kind), FAILED, claim) == (
            "ignored",
            "next message told the user it succeeded right after an error",
        )


def test_claims_success_does_not_count_admitted_failures() -> None:
    assert claims_success("Done! The flight is booked.") is True
    assert claims_success("Sorry, the booking could not be completed.") is False
    assert claims_success("Which city did you mean?") is False


def test_use_instead_is_ignored_when_the_next_call_repeats_the_failing_call() -> None:
    repeat = NextAction(calls=[view("get_weather", "get_weather:aaaa", after=1.2)])
    assert follow_verdict(
        advice("use_instead", tool="get_forecast"), FAILED, repeat, result_time=T0
    ) == ("ignored", "repeated the identical failing call 1.2 s later")


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        pytest.param(
            7,
            ("followed", "retried get_weather 7.0 s later (advised 6 s)"),
            id="followed when the retry waits the advised seconds",
        ),
        pytest.param(
            1.2,
            ("ignored", "repeated the identical failing call 1.2 s later (advised 6 s)"),
            id="ignored when the identical call comes sooner",
        ),
    ],
)
def test_retry_after_is_judged_by_the_wait_before_the_identical_call(
    after: float, expected: tuple[str, str]
) -> None:
    retry = view("get_weather", "get_weather:aaaa", after=after)
    verdict = follow_verdict(
        advice("retry_after", seconds=6),
        FAILED,
        NextAction(calls=[retry]),
        result_time=T0,
        later_same_tool=retry,
    )
    assert verdict == expected


def test_retry_after_is_unclear_without_timestamps() -> None:
    retry = view("get_weather", "get_weather:aaaa")
    verdict = follow_verdict(
        advice("retry_after", seconds=6), FAILED, NextAction(calls=[retry]), later_same_tool=retry
    )
    assert verdict == ("unclear", "no timestamps to measure the wait before retrying get_weather")


def test_retry_after_is_unclear_when_the_tool_is_never_called_again() -> None:
    verdict = follow_verdict(
        advice("retry_after", seconds=6), FAILED, NextAction(text="Let me check."), result_time=T0
    )
    assert verdict == ("unclear", "get_weather was not called again after the advice to wait")


def test_a_tool_name_inside_a_longer_word_is_not_named_by_the_suggestion() -> None:
    other = NextAction(calls=[view("list")])
    assert follow_verdict(advice("protocol", "Use list_cities."), FAILED, other)[0] == "unclear"


def test_next_call_succeeded_reads_the_status_of_the_next_call_of_the_tool() -> None:
    assert next_call_succeeded(view("get_weather", status="success")) is True
    assert next_call_succeeded(view("get_weather", status="error")) is False
    assert next_call_succeeded(view("get_weather", status=None)) is False
    assert next_call_succeeded(None) is None


@pytest.mark.parametrize(
    "text",
    [
        "Error: booking not changed. Please confirm with the user before cancelling.",
        "Error: two flights match. Confirm the departure date with the user.",
        "Error: refunds over $500 need explicit confirmation from the user.",
        "Error: the user must confirm the new seat before it is booked.",
        "Error: ambiguous city. Check with user which Paris is meant.",
    ],
)
def test_advice_to_confirm_with_the_user_is_followed_by_a_question_without_a_tool_call(
    text: str,
) -> None:
    content = analyze_content(text)
    assert content.suggestion_kind == "ask_user"
    question = NextAction(text="Before I go on: do you want me to cancel flight HAT170?")
    assert follow_verdict(content, FAILED, question) == (
        "followed",
        "next message asked the user without calling a tool",
    )
    assert follow_verdict(content, FAILED, NextAction(calls=[view("cancel")]))[0] == "ignored"
