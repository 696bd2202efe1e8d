"""Per-trace analysis: every CallFacts/ResultFacts field, findings, tokens, verdicts, real data."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from tau_bench import tau_bench_traces

from ingest.analysis.facts import ContentFacts, TraceFacts
from ingest.analysis.loops import signature
from ingest.analysis.trace import analyze_trace, loops_at
from ingest.model import Message, ToolCall, ToolDef, ToolResult, Trace

T0 = datetime(2025, 7, 17, 16, 0, 0, tzinfo=UTC)
OK = ContentFacts(status="success", status_source="inferred")
FAILED = ContentFacts(status="error", status_source="inferred", error_type="other")


def call(index: int, call_id: str | None, name: str, arguments: Any = None) -> ToolCall:
    arguments = {} if arguments is None else arguments
    return ToolCall(
        call_index=index,
        tool_call_id=call_id,
        name=name,
        arguments=arguments,
        arguments_raw=orjson.dumps(arguments).decode(),
    )


def assistant(seq: int, *calls: ToolCall, text: str = "", at: float | None = None) -> Message:
    return Message(
        seq=seq,
        role="assistant",
        content=text,
        tool_calls=list(calls),
        timestamp=T0 + timedelta(seconds=at) if at is not None else None,
    )


def result(
    seq: int, call_id: str | None, name: str | None = None, at: float | None = None
) -> Message:
    return Message(
        seq=seq,
        role="tool",
        content="result",
        tool_result=ToolResult(tool_call_id=call_id, name=name),
        timestamp=T0 + timedelta(seconds=at) if at is not None else None,
    )


def analyze(
    messages: list[Message],
    contents: dict[int, ContentFacts] | None = None,
    tokens: list[int] | None = None,
    tools: list[ToolDef] | None = None,
    budget: int = 2000,
) -> TraceFacts:
    """Analyze hand-built messages; tool messages without given content facts succeed."""
    contents = contents or {}
    facts = [contents.get(m.seq, OK) if m.role == "tool" else None for m in messages]
    return analyze_trace(
        Trace(format="test", source_file="t.json", messages=messages, tools=tools or []),
        tokens if tokens is not None else [10] * len(messages),
        budget=budget,
        content_facts=facts,
    )


def test_repeated_calls_get_occurrence_run_length_and_retry_after_error() -> None:
    facts = analyze(
        [
            assistant(0, call(0, "c1", "search", {"q": "x"})),
            result(1, "c1"),
            assistant(2, call(0, "c2", "search", {"q": "x"})),
            result(3, "c2"),
            assistant(4, call(0, "c3", "search", {"q": "x"})),
            result(5, "c3"),
        ],
        contents={1: FAILED, 3: OK},
    )
    assert [c.signature for c in facts.calls] == [signature("search", {"q": "x"}, None)] * 3
    assert [c.occurrence for c in facts.calls] == [1, 2, 3]
    assert [c.run_length for c in facts.calls] == [3, 3, 3]
    assert [c.retry_after_error for c in facts.calls] == [False, True, False]
    assert [(c.pair_state, c.pairing_method, c.result_seq) for c in facts.calls] == [
        ("paired", "id", 1),
        ("paired", "id", 3),
        ("paired", "id", 5),
    ]
    assert [r.call_ref for r in facts.results] == [(0, 0), (2, 0), (4, 0)]


def test_tokens_are_totalled_and_repeats_count_as_wasted() -> None:
    facts = analyze(
        [
            Message(seq=0, role="user", content="hi"),
            assistant(1, call(0, "c1", "search", {"q": "x"})),
            result(2, "c1"),
            assistant(3, call(0, "c2", "search", {"q": "x"})),
            result(4, "c2"),
            result(5, "c2"),
        ],
        tokens=[5, 7, 100, 7, 120, 50],
    )
    assert facts.total_tokens == 289
    assert facts.tool_result_tokens == 270
    # The duplicate answer (seq 5) answers nothing new, so only seq 4 is wasted.
    assert facts.wasted_tokens == 120
    assert [r.tokens for r in facts.results] == [100, 120, 50]


def test_call_findings_name_every_problem_of_the_call() -> None:
    broken = ToolCall(
        call_index=0,
        tool_call_id="c1",
        name="get_weather",
        arguments_raw='{"city": ',
        args_valid=False,
        args_error="unexpected end of input",
    )
    facts = analyze(
        [
            assistant(0, broken, call(1, "c2", "get_weather", {"days": 2}), call(2, "c3", "fly")),
            result(1, "c1", "get_forecast"),
            result(2, "c2"),
        ],
        tools=[
            ToolDef(
                name="get_weather",
                parameters={"type": "object", "required": ["city"]},
            )
        ],
    )
    assert [c.findings for c in facts.calls] == [
        ["unparsed_arguments", "name_mismatch"],
        ["arguments_schema_violation"],
        ["unknown_tool", "missing_result"],
    ]
    assert facts.calls[1].schema_detail == "missing required parameter 'city'"
    assert facts.calls[2].schema_issue == "unknown_tool"
    assert facts.calls[0].signature == signature("get_weather", None, '{"city": ')


def test_result_findings_join_content_findings_size_and_pairing_problems() -> None:
    bare = ContentFacts(status="success", status_source="inferred", findings=["bare_status"])
    facts = analyze(
        [
            assistant(0, call(0, "c1", "a"), call(1, "c2", "b")),
            result(1, "c1", "a"),
            result(2, "c2", "x"),
            result(3, "zz"),
        ],
        contents={1: bare},
        tokens=[1, 2500, 10, 10],
    )
    assert [r.findings for r in facts.results] == [
        ["bare_status", "oversized"],
        ["name_mismatch"],
        ["orphan_result"],
    ]
    assert [r.oversized for r in facts.results] == [True, False, False]
    assert facts.results[2].call_ref is None


def test_late_results_are_flagged_on_the_result_and_the_call() -> None:
    facts = analyze(
        [
            assistant(0, call(0, "c1", "a")),
            Message(seq=1, role="user", content="?"),
            assistant(2, text="waiting"),
            result(3, "c1"),
        ]
    )
    assert facts.calls[0].pair_state == "late_result"
    assert facts.results[0].findings == ["late_result"]


def test_a_suggestion_gets_a_verdict_from_the_next_assistant_turn() -> None:
    advice = ContentFacts(
        status="error",
        status_source="protocol",
        suggestion="Pass the city.",
        suggestion_kind="missing_param",
        suggestion_detail={"param": "city"},
    )
    facts = analyze(
        [
            assistant(0, call(0, "c1", "get_weather", {"town": "Paris"})),
            result(1, "c1"),
            assistant(2, text="Retrying with the city."),
            assistant(3, call(0, "c2", "get_weather", {"city": "Paris"})),
            result(4, "c2"),
        ],
        contents={1: advice, 4: OK},
    )
    first, second = facts.results
    assert (first.verdict, first.verdict_reason) == (
        "followed",
        "next call get_weather supplied missing parameter 'city'",
    )
    assert first.next_call_succeeded is True
    assert (second.verdict, second.verdict_reason, second.next_call_succeeded) == (None, None, None)


def test_retry_after_advice_is_judged_from_message_timestamps() -> None:
    wait = ContentFacts(
        status="error",
        status_source="inferred",
        error_type="rate_limit",
        suggestion="retry after 6s",
        suggestion_kind="retry_after",
        suggestion_detail={"seconds": 6},
    )
    facts = analyze(
        [
            assistant(0, call(0, "c1", "search", {"q": "x"}), at=0),
            result(1, "c1", at=0.5),
            assistant(2, call(0, "c2", "search", {"q": "x"}), at=1.7),
            result(3, "c2", at=2.0),
        ],
        contents={1: wait, 3: FAILED},
    )
    assert (facts.results[0].verdict, facts.results[0].verdict_reason) == (
        "ignored",
        "repeated the identical failing call 1.2 s later (advised 6 s)",
    )
    assert facts.results[0].next_call_succeeded is False


def test_a_user_message_before_the_next_turn_counts_as_waiting_for_the_user() -> None:
    stop = ContentFacts(
        status="error",
        status_source="explicit",
        suggestion="STOP and wait for the user",
        suggestion_kind="ask_user",
    )
    facts = analyze(
        [
            assistant(0, call(0, "c1", "Edit")),
            result(1, "c1"),
            Message(seq=2, role="user", content="Just read the bench files"),
            assistant(3, call(0, "c2", "Read")),
            result(4, "c2"),
        ],
        contents={1: stop},
    )
    assert (facts.results[0].verdict, facts.results[0].verdict_reason) == (
        "followed",
        "the model stopped and the user spoke before its next message",
    )


def test_advice_at_the_end_of_a_trace_has_no_next_action() -> None:
    advice = ContentFacts(
        status="error", status_source="protocol", suggestion="ask", suggestion_kind="ask_user"
    )
    facts = analyze([assistant(0, call(0, "c1", "a")), result(1, "c1")], contents={1: advice})
    assert facts.results[0].verdict == "no_next_action"


def test_ping_pong_between_two_signatures_is_flagged() -> None:
    messages: list[Message] = []
    for step, name in enumerate(["open", "close", "open", "close"]):
        messages += [
            assistant(2 * step, call(0, f"c{step}", name)),
            result(2 * step + 1, f"c{step}"),
        ]
    facts = analyze(messages)
    assert [c.ping_pong for c in facts.calls] == [True, True, True, True]


def test_loops_at_k_read_analyzed_facts_without_reanalysis() -> None:
    messages: list[Message] = []
    for step in range(3):
        messages += [assistant(2 * step, call(0, "same", "poll")), result(2 * step + 1, "same")]
    facts = analyze(messages)
    assert [(loop.tool, loop.calls) for loop in loops_at(facts, 3)] == [
        ("poll", [(0, 0), (2, 0), (4, 0)])
    ]
    assert [c.reused_id for c in facts.calls] == [False, True, True]
    assert loops_at(facts, 4) == []


def test_token_and_content_fact_lists_must_match_the_messages() -> None:
    trace = Trace(format="test", source_file="t.json", messages=[assistant(0, text="hi")])
    with pytest.raises(ValueError, match="tokens has 2 entries for 1 messages"):
        analyze_trace(trace, [1, 2])
    with pytest.raises(ValueError, match="content_facts has 0 entries for 1 messages"):
        analyze_trace(trace, [1], content_facts=[])


def test_content_facts_are_computed_when_not_given() -> None:
    protocol = '{"status": "error", "error_type": "not_found", "summary": "no such city"}'
    trace = Trace(
        format="test",
        source_file="t.json",
        messages=[
            assistant(0, call(0, "c1", "get_weather")),
            Message(
                seq=1, role="tool", content=protocol, tool_result=ToolResult(tool_call_id="c1")
            ),
        ],
    )
    facts = analyze_trace(trace, [3, 9])
    assert facts.results[0].content.status == "error"
    assert facts.results[0].content.error_type == "not_found"


@pytest.mark.realdata
def test_tau_bench_facts_pair_everything_and_find_5_loops_over_16_calls(realdata: Path) -> None:
    call_states: Counter[str] = Counter()
    result_states: Counter[str] = Counter()
    reused = loop_signatures = loop_calls = 0
    for item in tau_bench_traces(realdata):
        facts = analyze_trace(item, [1] * len(item.messages))
        call_states.update(c.pair_state for c in facts.calls)
        result_states.update(r.pair_state for r in facts.results)
        reused += sum(c.reused_id for c in facts.calls)
        loops = loops_at(facts, 3)
        loop_signatures += len(loops)
        loop_calls += sum(loop.count for loop in loops)
    assert call_states == Counter({"paired": 1164})
    assert result_states == Counter({"paired": 1164})
    assert reused == 73
    assert (loop_signatures, loop_calls) == (5, 16)


def _read_first() -> ContentFacts:
    return ContentFacts(
        status="error",
        status_source="explicit",
        error_type="conflict",
        suggestion="Read it first before writing to it.",
        suggestion_kind="other",
    )


def _write_grep_read_write(user_says: str | None) -> list[Message]:
    """A Write refused with "read it first", a Grep, what the user says (if anything), a Read,
    and the identical Write again."""
    write = {"file_path": "a.c", "content": "x"}
    messages = [
        assistant(0, call(0, "c1", "Write", write)),
        result(1, "c1"),
        assistant(2, call(0, "c2", "Grep", {"pattern": "main"})),
        result(3, "c2"),
    ]
    if user_says is not None:
        messages.append(Message(seq=4, role="user", content=user_says))
    seq = len(messages)
    return [
        *messages,
        assistant(seq, call(0, "c3", "Read", {"file_path": "a.c"})),
        result(seq + 1, "c3"),
        assistant(seq + 2, call(0, "c4", "Write", write)),
        result(seq + 3, "c4"),
    ]


@pytest.mark.parametrize(
    ("user_says", "verdict"),
    [
        # A prerequisite named in the advice counts when used before the retry: the identical
        # call is right once the file has been read.
        (None, ("followed", "used Read, named in the suggestion, before calling Write again")),
        # The calls before the retry do not count once the user has spoken.
        (
            "Now read a.c and write it again",
            ("unclear", "next call Grep neither follows nor contradicts the suggestion"),
        ),
    ],
    ids=["prerequisite_used_before_the_retry", "user_spoke_before_the_retry"],
)
def test_a_prerequisite_named_in_the_advice_counts_unless_the_user_spoke_since(
    user_says: str | None, verdict: tuple[str, str]
) -> None:
    facts = analyze(_write_grep_read_write(user_says), contents={1: _read_first()})
    assert (facts.results[0].verdict, facts.results[0].verdict_reason) == verdict


def test_alternative_advice_is_followed_by_a_changed_call_after_a_look_around() -> None:
    edit = {"file_path": "a.c", "old_string": "return 0;", "new_string": "return 1;"}
    wider = {**edit, "old_string": "  x = 2;\n  return 0;"}
    text = (
        "Found 2 matches of the string to replace, but replace_all is false. To replace all "
        "occurrences, set replace_all to true. To replace only one occurrence, please provide "
        "more context to uniquely identify the instance."
    )
    messages = [
        assistant(0, call(0, "c1", "Edit", edit)),
        Message(
            seq=1,
            role="tool",
            content=text,
            # Claude Code flags it: the text alone reads as a report, not as an error.
            tool_result=ToolResult(
                tool_call_id="c1", explicit_error=True, explicit_source="is_error"
            ),
        ),
        assistant(2, call(0, "c2", "Read", {"file_path": "a.c"})),
        result(3, "c2"),
        assistant(4, call(0, "c3", "Edit", wider)),
        result(5, "c3"),
    ]
    trace = Trace(format="test", source_file="t.json", messages=messages)
    first = analyze_trace(trace, [1] * len(messages)).results[0]
    assert (first.content.error_type, first.content.suggestion_kind) == ("invalid_params", "other")
    assert (first.verdict, first.verdict_reason) == (
        "followed",
        "next call Edit changed its arguments",
    )
