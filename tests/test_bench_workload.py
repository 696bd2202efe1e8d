"""The benchmark workload generator: exact message counts, same bytes for the same seed."""

from __future__ import annotations

from pathlib import Path

import orjson

from benchmarks.workload import (
    RESULT_TAIL_MAX,
    ensure_workload,
    generate_traces,
    write_workload,
)


def test_generator_produces_exactly_the_requested_number_of_messages() -> None:
    for requested in (1, 7, 523, 2_000):
        traces = list(generate_traces(requested, seed=3))
        assert sum(len(t["messages"]) for t in traces) == requested


def test_same_seed_writes_the_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    first, second, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    write_workload(first, 1_500, seed=11)
    write_workload(second, 1_500, seed=11)
    write_workload(other, 1_500, seed=12)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()


def test_every_line_is_an_openai_chat_conversation_with_paired_tool_ids(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    stats = write_workload(path, 3_000, seed=5)
    lines = path.read_bytes().splitlines()
    assert len(lines) == stats.traces
    call_ids: set[str] = set()
    result_ids: set[str] = set()
    for line in lines:
        trace = orjson.loads(line)
        assert sorted(trace) == ["id", "messages", "model", "tools"]
        assert trace["messages"][0]["role"] == "system"
        for m in trace["messages"]:
            call_ids.update(c["id"] for c in m.get("tool_calls", ()))
            if m["role"] == "tool":
                result_ids.add(m["tool_call_id"])
    # Every result answers a call; only calls cut off at the end of a conversation go unanswered.
    assert result_ids <= call_ids
    assert len(call_ids - result_ids) <= stats.traces


def test_stats_count_the_tool_messages_and_bytes_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    stats = write_workload(path, 2_500, seed=8)
    roles = [m["role"] for line in path.open("rb") for m in orjson.loads(line)["messages"]]
    assert stats.messages == len(roles) == 2_500
    assert stats.tool_messages == roles.count("tool")
    assert stats.bytes == path.stat().st_size
    assert 0 < stats.error_results < stats.tool_messages


def test_tool_results_are_mostly_small_with_a_long_tail() -> None:
    sizes = sorted(
        len(m["content"])
        for t in generate_traces(20_000, seed=2)
        for m in t["messages"]
        if m["role"] == "tool"
    )
    median, p999 = sizes[len(sizes) // 2], sizes[int(len(sizes) * 0.999)]
    assert 50 <= median <= 500
    assert p999 >= 10_000
    # JSON results close their last row past the drawn size: at most a few hundred characters.
    assert max(sizes) < RESULT_TAIL_MAX + 1_000


def test_a_complete_cached_workload_is_reused_and_a_truncated_one_is_rebuilt(
    tmp_path: Path,
) -> None:
    path, stats = ensure_workload(tmp_path, 800, seed=4)
    original = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    assert ensure_workload(tmp_path, 800, seed=4) == (path, stats)
    assert path.stat().st_mtime_ns == mtime
    path.write_bytes(original[:100])
    rebuilt, again = ensure_workload(tmp_path, 800, seed=4)
    assert rebuilt.read_bytes() == original
    assert again == stats
