"""Pairing of tool calls with Tool Messages: every pair state, reused ids, position pairing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest
from tau_bench import TAU_BENCH, tau_bench_traces

from ingest.analysis.pairing import pair_trace
from ingest.model import Message, ToolCall, ToolResult, Trace


def call(index: int, call_id: str | None, name: str) -> ToolCall:
    return ToolCall(call_index=index, tool_call_id=call_id, name=name, arguments={})


def assistant(seq: int, *calls: ToolCall, text: str = "") -> Message:
    return Message(seq=seq, role="assistant", content=text, tool_calls=list(calls))


def result(seq: int, call_id: str | None, name: str | None = None) -> Message:
    return Message(
        seq=seq, role="tool", content="ok", tool_result=ToolResult(tool_call_id=call_id, name=name)
    )


def trace(*messages: Message) -> Trace:
    return Trace(format="test", source_file="t.json", messages=list(messages))


def test_a_result_pairs_with_the_call_carrying_its_id() -> None:
    pairing = pair_trace(trace(assistant(0, call(0, "c1", "get_user")), result(1, "c1")))
    assert pairing.calls[(0, 0)].pair_state == "paired"
    assert pairing.calls[(0, 0)].pairing_method == "id"
    assert pairing.calls[(0, 0)].result_seq == 1
    assert pairing.results[1].pair_state == "paired"
    assert pairing.results[1].call_ref == (0, 0)


def test_reused_ids_pair_with_most_recent_unanswered_call() -> None:
    # The tau-bench shape: one id used for get_user_details, then again for calculate.
    pairing = pair_trace(
        trace(
            assistant(0, call(0, "call_oIHaz", "get_user_details")),
            result(1, "call_oIHaz", "get_user_details"),
            assistant(2, call(0, "call_oIHaz", "calculate")),
            result(3, "call_oIHaz", "calculate"),
        )
    )
    assert pairing.results[1].call_ref == (0, 0)
    assert pairing.results[3].call_ref == (2, 0)
    assert [c.reused_id for c in pairing.calls.values()] == [False, True]
    assert [r.name_mismatch for r in pairing.results.values()] == [False, False]


def test_two_open_calls_with_one_id_are_answered_newest_first() -> None:
    pairing = pair_trace(
        trace(
            assistant(0, call(0, "x", "a"), call(1, "x", "a")),
            result(1, "x"),
            result(2, "x"),
        )
    )
    assert pairing.results[1].call_ref == (0, 1)
    assert pairing.results[2].call_ref == (0, 0)


def test_parallel_calls_answered_out_of_order_pair_by_id() -> None:
    pairing = pair_trace(
        trace(
            assistant(0, call(0, "a", "search"), call(1, "b", "fetch"), call(2, "c", "read")),
            result(1, "c", "read"),
            result(2, "a", "search"),
            result(3, "b", "fetch"),
        )
    )
    assert {seq: r.call_ref for seq, r in pairing.results.items()} == {
        1: (0, 2),
        2: (0, 0),
        3: (0, 1),
    }
    assert {c.pair_state for c in pairing.calls.values()} == {"paired"}


def test_a_call_never_answered_is_missing_result() -> None:
    pairing = pair_trace(trace(assistant(0, call(0, "c1", "Finish")), assistant(1, text="bye")))
    assert pairing.calls[(0, 0)].pair_state == "missing_result"
    assert pairing.calls[(0, 0)].result_seq is None
    assert pairing.calls[(0, 0)].pairing_method is None


def test_a_result_whose_id_no_call_has_is_orphan_result() -> None:
    pairing = pair_trace(trace(assistant(0, call(0, "c1", "a")), result(1, "c1"), result(2, "zz")))
    assert pairing.results[2].pair_state == "orphan_result"
    assert pairing.results[2].call_ref is None
    assert pairing.results[2].pairing_method is None


def test_a_second_answer_to_an_answered_call_is_duplicate_result() -> None:
    pairing = pair_trace(trace(assistant(0, call(0, "c1", "a")), result(1, "c1"), result(2, "c1")))
    assert pairing.results[2].pair_state == "duplicate_result"
    assert pairing.results[2].call_ref == (0, 0)
    # The call keeps its first answer.
    assert pairing.calls[(0, 0)].pair_state == "paired"
    assert pairing.calls[(0, 0)].result_seq == 1


def test_a_result_before_its_unanswered_call_links_both_as_result_before_call() -> None:
    pairing = pair_trace(trace(result(0, "c1", "a"), assistant(1, call(0, "c1", "a"))))
    assert pairing.results[0].pair_state == "result_before_call"
    assert pairing.results[0].call_ref == (1, 0)
    assert pairing.calls[(1, 0)].pair_state == "result_before_call"
    assert pairing.calls[(1, 0)].result_seq == 0


def test_a_result_before_a_call_that_is_answered_later_stays_unlinked() -> None:
    pairing = pair_trace(trace(result(0, "c1"), assistant(1, call(0, "c1", "a")), result(2, "c1")))
    assert pairing.results[0].pair_state == "result_before_call"
    assert pairing.results[0].call_ref is None
    assert pairing.calls[(1, 0)].pair_state == "paired"
    assert pairing.calls[(1, 0)].result_seq == 2


def test_a_result_after_the_model_spoke_again_is_late_for_result_and_call() -> None:
    pairing = pair_trace(
        trace(
            assistant(0, call(0, "c1", "a")),
            Message(seq=1, role="user", content="hurry"),
            assistant(2, text="still waiting"),
            result(3, "c1"),
        )
    )
    assert pairing.results[3].pair_state == "late_result"
    assert pairing.results[3].call_ref == (0, 0)
    assert pairing.calls[(0, 0)].pair_state == "late_result"
    assert pairing.calls[(0, 0)].result_seq == 3


def test_assistant_lines_of_one_turn_do_not_make_a_result_late() -> None:
    # Claude Code writes parallel tool_use blocks of one response as separate assistant lines.
    pairing = pair_trace(
        trace(
            assistant(0, text="Reading both files."),
            assistant(1, call(0, "t1", "Read")),
            assistant(2, call(0, "t2", "Read")),
            result(3, "t1"),
            result(4, "t2"),
        )
    )
    assert [r.pair_state for r in pairing.results.values()] == ["paired", "paired"]


def test_a_result_named_differently_from_its_call_flags_name_mismatch_on_both() -> None:
    pairing = pair_trace(trace(assistant(0, call(0, "c1", "get_user")), result(1, "c1", "calc")))
    assert pairing.results[1].pair_state == "paired"
    assert pairing.results[1].name_mismatch is True
    assert pairing.calls[(0, 0)].name_mismatch is True


def test_id_less_results_pair_by_position_and_name() -> None:
    pairing = pair_trace(
        trace(
            assistant(0, call(0, None, "search"), call(1, None, "fetch")),
            result(1, None, "fetch"),
            result(2, None, "search"),
        )
    )
    assert pairing.results[1].call_ref == (0, 1)
    assert pairing.results[2].call_ref == (0, 0)
    assert {r.pairing_method for r in pairing.results.values()} == {"position"}
    assert pairing.calls[(0, 0)].pairing_method == "position"


def test_an_id_less_result_with_an_unknown_name_takes_the_earliest_open_id_less_call() -> None:
    pairing = pair_trace(
        trace(
            assistant(0, call(0, None, "search")),
            assistant(1, call(0, None, "fetch")),
            result(2, None, "lookup"),
        )
    )
    assert pairing.results[2].call_ref == (0, 0)
    assert pairing.results[2].name_mismatch is True
    assert pairing.calls[(1, 0)].pair_state == "missing_result"


def test_an_id_less_result_with_no_open_call_is_orphan_result() -> None:
    pairing = pair_trace(
        trace(assistant(0, call(0, None, "a")), result(1, None, "a"), result(2, None, "a"))
    )
    assert pairing.results[2].pair_state == "orphan_result"


def test_mixed_traces_pair_ids_by_id_and_id_less_results_by_name() -> None:
    pairing = pair_trace(
        trace(
            assistant(0, call(0, "c1", "get_user"), call(1, None, "say_hello")),
            result(1, None, "say_hello"),
            result(2, "c1", "get_user"),
        )
    )
    assert pairing.results[1].call_ref == (0, 1)
    assert pairing.results[1].pairing_method == "position"
    assert pairing.results[2].call_ref == (0, 0)
    assert pairing.results[2].pairing_method == "id"


def test_an_id_less_result_answers_an_open_call_with_an_id_of_the_same_name() -> None:
    pairing = pair_trace(
        trace(assistant(0, call(0, "c1", "say_hello")), result(1, None, "say_hello"))
    )
    assert pairing.results[1].call_ref == (0, 0)
    assert pairing.results[1].pairing_method == "position"


@pytest.mark.realdata
def test_tau_bench_pairs_every_call_and_counts_73_reused_ids(realdata: Path) -> None:
    states: Counter[str] = Counter()
    result_states: Counter[str] = Counter()
    reused = 0
    for item in tau_bench_traces(realdata):
        pairing = pair_trace(item)
        states.update(c.pair_state for c in pairing.calls.values())
        result_states.update(r.pair_state for r in pairing.results.values())
        reused += sum(c.reused_id for c in pairing.calls.values())
    assert states == Counter({"paired": 1164})
    assert result_states == Counter({"paired": 1164})
    assert reused == 73


@pytest.mark.realdata
def test_tau_bench_reused_id_pairs_each_result_with_its_own_tool(realdata: Path) -> None:
    first = tau_bench_traces(realdata)[0]
    pairing = pair_trace(first)
    assert pairing.results[7].call_ref == (6, 0)
    assert pairing.results[17].call_ref == (16, 0)
    assert pairing.calls[(16, 0)].name == "calculate"
    assert pairing.calls[(16, 0)].reused_id is True
    assert pairing.results[17].name_mismatch is False


@pytest.mark.realdata
def test_tau_bench_parsed_by_the_openai_chat_format_pairs_the_same_way(realdata: Path) -> None:
    from ingest.formats import openai_chat
    from ingest.input.records import Record

    runs = orjson.loads((realdata / TAU_BENCH).read_bytes())
    records = [Record(TAU_BENCH, i + 1, 0, orjson.dumps(run), run) for i, run in enumerate(runs)]
    traces = [t for t in openai_chat.FORMAT.parse(records, TAU_BENCH) if isinstance(t, Trace)]
    states: Counter[str] = Counter()
    reused = 0
    for item in traces:
        pairing = pair_trace(item)
        states.update(c.pair_state for c in pairing.calls.values())
        states.update(r.pair_state for r in pairing.results.values())
        reused += sum(c.reused_id for c in pairing.calls.values())
    assert len(traces) == 200
    assert states == Counter({"paired": 2328})
    assert reused == 73


def test_a_sub_agent_speaking_does_not_make_the_main_result_late() -> None:
    sub_call = call(0, "sub_1", "Read")
    sub_call_msg = assistant(1, sub_call).model_copy(update={"branch": "side"})
    sub_result = result(2, "sub_1").model_copy(update={"branch": "side"})
    sub_text = assistant(3, text="found it").model_copy(update={"branch": "side"})
    t = trace(
        assistant(0, call(0, "task_1", "Task")),
        sub_call_msg,
        sub_result,
        sub_text,
        result(4, "task_1"),
    )
    pairing = pair_trace(t)
    assert pairing.results[4].pair_state == "paired"
    assert pairing.calls[(0, 0)].pair_state == "paired"
    assert pairing.results[2].pair_state == "paired"


def test_the_main_model_speaking_again_in_its_own_branch_still_makes_a_result_late() -> None:
    t = trace(
        assistant(0, call(0, "task_1", "Task")),
        result(1, "other"),
        assistant(2, text="still waiting"),
        result(3, "task_1"),
    )
    assert pair_trace(t).results[3].pair_state == "late_result"
