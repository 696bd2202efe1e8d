"""Loop facts: signatures, occurrences, runs, retries after errors, ping-pong, loops at k."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ingest.analysis.loops import (
    find_loops,
    loop_facts,
    occurrences,
    ping_pong_flags,
    run_lengths,
    signature,
    signature_tool,
)

TAU_BENCH = "openai-chat/tau-bench-gpt-4o-airline.json"


def test_signature_is_tool_name_and_16_hex_digits_of_sha1_of_sorted_compact_arguments() -> None:
    # sha1(b'{"city":"Paris"}') starts with e90b431dc9cac01d.
    assert signature("get_weather", {"city": "Paris"}, None) == "get_weather:e90b431dc9cac01d"


def test_signature_ignores_key_order_and_whitespace_of_the_raw_text() -> None:
    assert signature("f", {"b": 1, "a": 2}, '{"b": 1, "a": 2}') == signature(
        "f", {"a": 2, "b": 1}, '{"a":2,"b":1}'
    )


def test_signature_differs_by_tool_name_and_by_argument_values() -> None:
    assert signature("f", {"a": 1}, None) != signature("g", {"a": 1}, None)
    assert signature("f", {"a": 1}, None) != signature("f", {"a": 2}, None)


def test_unparsable_arguments_hash_the_raw_text_stripped_of_whitespace() -> None:
    assert signature("f", None, '{"a": 1') == signature("f", None, '{ "a" :1\n')
    assert signature("f", None, '{"a": 1') != signature("f", None, '{"a": 2')


def test_signature_tool_keeps_colons_inside_tool_names() -> None:
    assert signature_tool(signature("mcp:github:search", {}, "{}")) == "mcp:github:search"


def test_occurrence_counts_each_signature_so_far_in_call_order() -> None:
    assert occurrences(["a", "b", "a", "a", "b"]) == [1, 1, 2, 3, 2]


def test_run_length_is_the_length_of_the_consecutive_identical_run() -> None:
    assert run_lengths(["a", "a", "b", "a", "a", "a"]) == [2, 2, 1, 3, 3, 3]
    assert run_lengths([]) == []


def test_retry_after_error_looks_at_the_previous_call_with_the_same_signature() -> None:
    facts = loop_facts(["a", "b", "a", "a", "b"], [True, False, False, True, False])
    assert [f.retry_after_error for f in facts] == [False, False, True, False, False]


def test_ping_pong_needs_an_alternation_of_four_calls() -> None:
    assert ping_pong_flags(["a", "b", "a"]) == [False, False, False]
    assert ping_pong_flags(["c", "a", "b", "a", "b", "c"]) == [False, True, True, True, True, False]


def test_ping_pong_is_not_a_run_of_one_signature_nor_three_signatures_rotating() -> None:
    assert ping_pong_flags(["a", "a", "a", "a"]) == [False] * 4
    assert ping_pong_flags(["a", "b", "c", "a", "b", "c"]) == [False] * 6


def test_loop_facts_refuse_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="same length"):
        loop_facts(["a"], [])


def test_loops_at_k_list_all_calls_of_signatures_seen_k_times() -> None:
    calls = [((0, 0), "f:1"), ((2, 0), "g:2"), ((4, 0), "f:1"), ((6, 0), "f:1"), ((8, 0), "g:2")]
    loops = find_loops(calls, k=3)
    assert [(loop.signature, loop.tool, loop.calls) for loop in loops] == [
        ("f:1", "f", [(0, 0), (4, 0), (6, 0)])
    ]
    assert [(loop.signature, loop.count) for loop in find_loops(calls, k=2)] == [
        ("f:1", 3),
        ("g:2", 2),
    ]


def test_loops_at_k_refuse_a_threshold_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        find_loops([], k=0)


@pytest.mark.realdata
def test_tau_bench_has_5_loop_signatures_covering_16_calls_at_k_3(realdata: Path) -> None:
    signatures = 0
    loop_calls = 0
    for run in orjson.loads((realdata / TAU_BENCH).read_bytes()):
        calls = [
            (
                (seq, index),
                signature(
                    tc["function"]["name"],
                    orjson.loads(tc["function"]["arguments"]),
                    tc["function"]["arguments"],
                ),
            )
            for seq, message in enumerate(run["traj"])
            for index, tc in enumerate(message.get("tool_calls") or [])
        ]
        loops = find_loops(calls, k=3)
        signatures += len(loops)
        loop_calls += sum(loop.count for loop in loops)
    assert (signatures, loop_calls) == (5, 16)
