"""Suggestion follow-through: did the model take the advice a Tool Message gave it?

For a result with a suggestion, the model's **next action** is the next assistant *turn* after
the result in seq order: the maximal run of consecutive assistant messages, because Claude Code
writes one response as several lines (text, then each tool call). Its tool calls and its text are
the evidence. The rules depend on the suggestion's *kind* only, never on its source: advice in
the protocol's ``suggestion`` field is judged exactly like the same advice in text. Rules,
applied in this order:

1. No assistant message after the result → ``no_next_action``.
2. Any kind: after an error result, a next turn *without tool calls* whose text claims success
   ("done", "successfully", "has been completed" …, and no failure words such as "unable",
   "sorry", "error") → ``ignored``: the model told the user it worked. Not when the user spoke
   in between: then the user may have reported the success (Claude Code users paste output).
The *next calls* are the model's calls up to and including its next call of the failing tool
(when it makes one before the user speaks), else the calls of the next turn: advice is often
taken after a look around (Grep, LS, Read), and the call of the failing tool again is where the
model shows what it made of it.

3. ``use_instead`` (detail ``tool``): a next call uses the suggested tool → ``followed``; a next
   call repeats the failing call's signature → ``ignored``; else ``unclear``.
4. ``missing_param`` (detail ``param``): a next call of the same tool supplies the parameter →
   ``followed``; a next call repeats the identical failing call → ``ignored``; else
   ``unclear``, also when the same tool is called with other changes but still without the
   parameter (advice offering alternatives, e.g. Claude Code's "set replace_all to true" or
   "provide more context", is of kind ``other``: see ``ingest.analysis.suggestions``).
5. ``retry_after`` (detail ``seconds``): the first later call of the same tool anywhere after the
   result (waiting may take several turns) is the retry; it happened at least the advised seconds
   after the result (message timestamps) → ``followed``; sooner → ``ignored``; no retry or no
   timestamps → ``unclear``.
6. ``ask_user``: the user spoke before the model's next turn (the model stopped, as Claude
   Code's "STOP … wait for the user" asks) → ``followed``; the next turn has text and no tool
   call → ``followed``; it calls a tool → ``ignored``; else ``unclear``.
7. Any other kind (``other``, or a value stored before kinds were read from protocol advice):
   a tool named in the suggestion was used before the failing tool was called again →
   ``followed`` (a prerequisite: "Read it first before writing to it"); a next call repeats
   the failing call's signature → ``ignored``; a next call uses a different tool named in the
   suggestion, or the same tool with different arguments → ``followed``; else ``unclear``.

Every verdict comes with a one-line reason naming its evidence, e.g.
``next call get_user supplied missing parameter 'city'`` or
``repeated the identical failing call 1.2 s later``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from db.contract.vocabulary import Verdict
from ingest.analysis.facts import ContentFacts


@dataclass(slots=True, frozen=True)
class CallView:
    """What verdict rules need to know about one call."""

    name: str
    signature: str
    arguments: Any = None
    #: Timestamp of the message holding the call, when known.
    timestamp: datetime | None = None
    #: Status of the call's result (``None``: unanswered).
    status: str | None = None


@dataclass(slots=True, frozen=True)
class NextAction:
    """The model's next assistant turn after a result: its text and its tool calls."""

    text: str = ""
    calls: Sequence[CallView] = field(default_factory=tuple)
    timestamp: datetime | None = None
    #: A user message came between the result and this turn (the model waited for the user).
    after_user: bool = False
    #: The model's calls from this turn up to and including its next call of the failing tool,
    #: when it calls that tool again before the user speaks (empty otherwise).
    until_retry: Sequence[CallView] = field(default_factory=tuple)


_SUCCESS_CLAIM = re.compile(
    r"\b(done|successfully|succeeded|(has|have) been (completed|processed|updated|booked|"
    r"cancell?ed|created|made|changed|applied)|all set|completed)\b",
    re.IGNORECASE,
)
_FAILURE_WORDS = re.compile(
    r"\b(error|errors|fail|failed|failure|unable|cannot|can't|couldn't|could not|not been|"
    r"wasn't|was not|isn't|unfortunately|sorry|issue|problem)\b",
    re.IGNORECASE,
)


def claims_success(text: str) -> bool:
    """Whether assistant text tells the user something worked (without admitting a failure).

    >>> claims_success("Your flight has been booked successfully.")
    True
    >>> claims_success("Sorry, the booking failed.")
    False
    """
    return bool(_SUCCESS_CLAIM.search(text)) and not _FAILURE_WORDS.search(text)


def _seconds(later: datetime | None, earlier: datetime | None) -> float | None:
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds()


def _delay_text(call: CallView, reference: datetime | None) -> str:
    gap = _seconds(call.timestamp, reference)
    return "" if gap is None else f" {gap:.1f} s later"


def _repeat(calls: Sequence[CallView], failed: CallView | None) -> CallView | None:
    if failed is None:
        return None
    return next((c for c in calls if c.signature == failed.signature), None)


def _names_tool(suggestion: str, tool: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(tool)}(?![\w-])", suggestion) is not None


def _use_instead(content: ContentFacts, calls: Sequence[CallView]) -> tuple[Verdict, str] | None:
    tool = content.suggestion_detail.get("tool")
    used = next((c for c in calls if tool is not None and c.name == tool), None)
    if used is not None:
        return "followed", f"next call used the suggested tool {tool}"
    return None


def _missing_param(
    content: ContentFacts, failed: CallView | None, calls: Sequence[CallView]
) -> tuple[Verdict, str] | None:
    param = content.suggestion_detail.get("param")
    tool = failed.name if failed is not None else None
    for call in calls:
        if call.name == tool and isinstance(call.arguments, dict) and param in call.arguments:
            return "followed", f"next call {call.name} supplied missing parameter '{param}'"
    if _repeat(calls, failed) is not None:
        return None  # the shared "identical failing call" rule words it
    for call in calls:
        if call.name == tool:
            return "unclear", f"next call {call.name} changed its arguments but omits '{param}'"
    return None


def _retry_after(
    content: ContentFacts,
    failed: CallView | None,
    result_time: datetime | None,
    later_same_tool: CallView | None,
) -> tuple[Verdict, str]:
    advised = content.suggestion_detail.get("seconds")
    tool = failed.name if failed is not None else "the tool"
    if later_same_tool is None:
        return "unclear", f"{tool} was not called again after the advice to wait"
    gap = _seconds(later_same_tool.timestamp, result_time)
    if gap is None or not isinstance(advised, int | float):
        return "unclear", f"no timestamps to measure the wait before retrying {tool}"
    waited = f"{gap:.1f} s later (advised {advised:g} s)"
    if gap >= advised:
        return "followed", f"retried {later_same_tool.name} {waited}"
    if failed is not None and later_same_tool.signature == failed.signature:
        return "ignored", f"repeated the identical failing call {waited}"
    return "ignored", f"retried {later_same_tool.name} {waited}"


def _other_tool_named(
    content: ContentFacts, failed: CallView | None, calls: Sequence[CallView]
) -> CallView | None:
    """The first of ``calls`` to a tool other than the failing one that the suggestion names."""
    suggestion = content.suggestion or ""
    for call in calls:
        if (failed is None or call.name != failed.name) and _names_tool(suggestion, call.name):
            return call
    return None


def _prerequisite(
    content: ContentFacts, failed: CallView | None, until_retry: Sequence[CallView]
) -> tuple[Verdict, str] | None:
    """A tool named in the advice was used before the failing tool was called again."""
    if failed is None:
        return None
    call = _other_tool_named(content, failed, until_retry[:-1])
    if call is not None:
        return (
            "followed",
            f"used {call.name}, named in the suggestion, before calling {failed.name} again",
        )
    return None


def _other_kind(
    content: ContentFacts, failed: CallView | None, calls: Sequence[CallView]
) -> tuple[Verdict, str] | None:
    named = _other_tool_named(content, failed, calls)
    if named is not None:
        return "followed", f"next call used {named.name}, named in the suggestion"
    if failed is not None:
        for call in calls:
            if call.name == failed.name and call.signature != failed.signature:
                return "followed", f"next call {call.name} changed its arguments"
    return None


def follow_verdict(
    content: ContentFacts,
    failed: CallView | None,
    next_action: NextAction | None,
    *,
    result_time: datetime | None = None,
    later_same_tool: CallView | None = None,
) -> tuple[Verdict, str]:
    """Verdict and one-line reason for a result with a suggestion (rules: module docstring).

    ``failed`` is the call the result answers (``None`` for an unpaired result),
    ``next_action`` the next assistant turn (``None`` when the trace ends there),
    ``result_time`` the result's timestamp and ``later_same_tool`` the first call of the same
    tool after the result, for ``retry_after``.

    >>> advice = ContentFacts(status="error", status_source="protocol", suggestion="ask the user",
    ...                       suggestion_kind="ask_user")
    >>> follow_verdict(advice, None, NextAction(text="Which city do you mean?"))
    ('followed', 'next message asked the user without calling a tool')
    """
    if next_action is None:
        return "no_next_action", "the trace ends after this result"
    calls = next_action.calls
    if (
        content.status == "error"
        and not calls
        and not next_action.after_user
        and claims_success(next_action.text)
    ):
        return "ignored", "next message told the user it succeeded right after an error"
    kind = content.suggestion_kind
    if kind == "retry_after":
        return _retry_after(content, failed, result_time, later_same_tool)
    if kind == "ask_user":
        if next_action.after_user:
            return "followed", "the model stopped and the user spoke before its next message"
        if calls:
            return "ignored", f"next message called {calls[0].name} instead of asking the user"
        if next_action.text.strip():
            return "followed", "next message asked the user without calling a tool"
        return "unclear", "next message has neither text nor a tool call"
    # The model often looks around first (Grep, LS, Read) and shows what it took from the
    # advice when it calls the failing tool again, so that call and those before it are the
    # evidence when it comes before the user speaks; else the next turn is.
    calls = next_action.until_retry or calls
    repeat = _repeat(calls, failed)
    if kind == "use_instead":
        decided = _use_instead(content, calls)
    elif kind == "missing_param":
        decided = _missing_param(content, failed, calls)
    else:
        # For free-form advice a repeat of the failing call outweighs any other next call,
        # unless a tool the advice names was used before it ("Read it first").
        decided = _prerequisite(content, failed, next_action.until_retry)
        if decided is None and repeat is None:
            decided = _other_kind(content, failed, calls)
    if decided is not None:
        return decided
    if repeat is not None:
        return "ignored", "repeated the identical failing call" + _delay_text(repeat, result_time)
    if not calls:
        return "unclear", "next message made no tool call"
    names = ", ".join(dict.fromkeys(c.name for c in calls))
    return "unclear", f"next call {names} neither follows nor contradicts the suggestion"


def next_call_succeeded(later_same_tool: CallView | None) -> bool | None:
    """Did the next call of the same tool succeed? ``None`` when there is no such call; an
    unanswered call or a non-success status counts as not succeeded."""
    if later_same_tool is None:
        return None
    return later_same_tool.status == "success"
