"""The scenario generator: deterministic files of the documented shapes, a ground truth that adds
up, and an analysis that reproduces it exactly."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import orjson
import pytest

from db.contract.vocabulary import ERROR_TYPES, PAIR_STATES, STATUSES, VERDICTS
from ingest import formats
from ingest.analysis.tokens import count_many
from ingest.analysis.trace import analyze_trace, loops_at
from ingest.input.jsonstream import iter_records
from ingest.model import Trace
from ingest.scenarios import CATALOGUE, FORMATS, GroundTruth, build_scenarios, generate
from ingest.scenarios.truth import PairFact
from ingest.scenarios.writers import FILE_NAMES

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GroundTruth]:
    out = tmp_path_factory.mktemp("scenarios")
    return out, generate(out)


def _jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_the_same_seed_gives_byte_identical_files(
    generated: tuple[Path, GroundTruth], tmp_path: Path
) -> None:
    out, _ = generated
    generate(tmp_path)
    assert _files(tmp_path) == _files(out)


def test_another_seed_gives_other_files_with_the_same_scenarios(
    generated: tuple[Path, GroundTruth], tmp_path: Path
) -> None:
    out, truth = generated
    other = generate(tmp_path, seed=8)
    assert _files(tmp_path)["openai_chat.jsonl"] != _files(out)["openai_chat.jsonl"]
    assert Counter(t.scenario for t in other.trace_facts if t.category != "clean") == Counter(
        t.scenario for t in truth.trace_facts if t.category != "clean"
    )


def test_openai_chat_lines_have_the_documented_shape(generated: tuple[Path, GroundTruth]) -> None:
    out, truth = generated
    lines = _jsonl(out / "openai_chat.jsonl")
    assert len(lines) == truth.formats["openai_chat"]
    for line in lines:
        assert list(line) == ["id", "model", "tools", "messages"]
        assert [t["function"]["name"] for t in line["tools"]] == [
            "get_weather", "search_flights", "get_user", "book_flight", "read_file", "run_sql",
        ]  # fmt: skip
        for message in line["messages"]:
            assert message["role"] in ("system", "user", "assistant", "tool")
            if message["role"] == "tool":
                assert isinstance(message["tool_call_id"], str)
                assert isinstance(message["content"], str)
            for call in message.get("tool_calls", []):
                assert call["type"] == "function"
                assert isinstance(call["function"]["arguments"], str)


def test_anthropic_lines_have_the_documented_shape(generated: tuple[Path, GroundTruth]) -> None:
    out, truth = generated
    lines = _jsonl(out / "anthropic.jsonl")
    assert len(lines) == truth.formats["anthropic"]
    flags = Counter()
    for line in lines:
        assert list(line) == ["id", "model", "tools", "system", "messages"]
        assert all("input_schema" in tool for tool in line["tools"])
        for message in line["messages"]:
            assert message["role"] in ("user", "assistant")
            if isinstance(message["content"], str):
                continue
            kinds = {block["type"] for block in message["content"]}
            if message["role"] == "user":
                assert kinds == {"tool_result"}  # result blocks only, never mixed with text
                flags.update(str(block.get("is_error")) for block in message["content"])
            else:
                assert kinds <= {"text", "tool_use"}
    # is_error appears only as true, on explicitly flagged errors.
    assert set(flags) == {"None", "True"}


def test_langchain_file_is_an_array_of_langgraph_states(
    generated: tuple[Path, GroundTruth],
) -> None:
    out, truth = generated
    states = orjson.loads((out / "langchain.json").read_bytes())
    assert len(states) == truth.formats["langchain"]
    statuses = Counter()
    for state in states:
        assert list(state) == ["id", "messages"]
        for item in state["messages"]:
            assert item["type"] in ("system", "human", "ai", "tool")
            assert item["data"]["type"] == item["type"]
            if item["type"] == "tool":
                statuses[item["data"]["status"]] += 1
            if item["type"] == "ai":
                assert all(c["type"] == "tool_call" for c in item["data"]["tool_calls"])
    assert set(statuses) == {"success", "error"}


def test_every_message_carries_an_iso_timestamp(generated: tuple[Path, GroundTruth]) -> None:
    out, _ = generated
    stamps = [
        m["timestamp"] for line in _jsonl(out / "openai_chat.jsonl") for m in line["messages"]
    ]
    stamps += [m["timestamp"] for line in _jsonl(out / "anthropic.jsonl") for m in line["messages"]]
    states = orjson.loads((out / "langchain.json").read_bytes())
    stamps += [item["data"]["timestamp"] for s in states for item in s["messages"]]
    assert stamps and all(ISO_UTC.match(s) for s in stamps)


def test_the_ground_truth_file_holds_the_returned_truth(
    generated: tuple[Path, GroundTruth],
) -> None:
    out, truth = generated
    stored = GroundTruth.model_validate_json((out / "ground_truth.json").read_bytes())
    assert stored == truth


def _tally(pairs: list[PairFact]) -> dict[str, object]:
    """The totals that follow from per-pair facts alone (each result sits in one entry)."""
    results = [p for p in pairs if p.result_seq is not None]
    return {
        "tool_calls": sum(1 for p in pairs if p.call_seq is not None),
        "tool_results": len(results),
        "pair_states": {s: sum(1 for p in pairs if p.pair_state == s) for s in PAIR_STATES},
        "name_mismatch": sum(p.name_mismatch for p in pairs),
        "reused_id": sum(p.reused_id for p in pairs),
        "status": {s: sum(1 for p in results if p.status == s) for s in STATUSES},
        "error_types": dict(
            sorted(Counter(p.error_type for p in results if p.status == "error").items())
        ),
        "with_suggestion": sum(p.suggestion for p in results),
        "verdicts": {v: sum(1 for p in results if p.verdict == v) for v in VERDICTS},
        "loop_signatures": sum(1 for p in pairs if p.occurrence == 3),
        "ping_pong_calls": sum(1 for p in pairs if p.ping_pong),
        "schema_issues": {
            k: sum(1 for p in pairs if p.schema_issue == k)
            for k in ("unknown_tool", "arguments_schema_violation")
        },
        "oversized": sum(p.oversized for p in results),
    }  # fmt: skip


def _totals(truth: GroundTruth) -> dict[str, object]:
    return {
        "tool_calls": truth.tool_calls,
        "tool_results": truth.tool_results,
        "pair_states": truth.pair_states,
        "name_mismatch": truth.name_mismatch,
        "reused_id": truth.reused_id,
        "status": truth.status,
        "error_types": truth.error_types,
        "with_suggestion": truth.suggestions.with_suggestion,
        "verdicts": {v: getattr(truth.suggestions, v) for v in VERDICTS},
        "loop_signatures": truth.loops.signatures,
        "ping_pong_calls": truth.loops.ping_pong_calls,
        "schema_issues": truth.schema_issues,
        "oversized": truth.oversized,
    }


def test_ground_truth_totals_equal_the_sum_of_per_pair_facts(
    generated: tuple[Path, GroundTruth],
) -> None:
    _, truth = generated
    assert _tally(truth.pairs) == _totals(truth)
    assert truth.traces == len(truth.trace_facts) == sum(truth.formats.values())
    assert truth.messages == sum(t.messages for t in truth.trace_facts)


def test_every_situation_the_design_names_is_present(generated: tuple[Path, GroundTruth]) -> None:
    _, truth = generated
    assert all(truth.pair_states[s] >= 1 for s in PAIR_STATES)
    assert set(ERROR_TYPES) < set(truth.error_types)  # plus the verbatim 'payment_declined'
    assert truth.error_types["payment_declined"] == 1
    assert all(truth.status[s] >= 1 for s in ("success", "error", "partial"))
    assert truth.suggestions.model_dump() == {
        "with_suggestion": 14, "followed": 5, "ignored": 6, "unclear": 1, "no_next_action": 2,
    }  # fmt: skip
    assert (truth.loops.signatures, truth.loops.calls, truth.loops.ping_pong_calls) == (3, 12, 4)
    assert truth.schema_issues == {"unknown_tool": 3, "arguments_schema_violation": 2}
    assert (truth.name_mismatch, truth.reused_id, truth.oversized) == (1, 1, 1)


def test_every_format_covers_pairing_errors_loops_and_suggestions(
    generated: tuple[Path, GroundTruth],
) -> None:
    _, truth = generated
    placed = Counter((t.category, t.format) for t in truth.trace_facts)
    for category in ("pairing", "errors", "loops", "suggestions"):
        assert all(placed[(category, fmt)] >= 1 for fmt in FORMATS), category
    assert truth.formats == {"anthropic": 20, "langchain": 20, "openai_chat": 20}


def test_every_error_type_is_signalled_by_text_by_flag_and_by_protocol() -> None:
    convs = build_scenarios(7, len(CATALOGUE), FORMATS)
    by_channel: dict[str, set[str]] = {}
    for conv in convs:
        for event in conv.events:
            if event.result is not None and event.result.outcome.status == "error":
                outcome = event.result.outcome
                channel = "flagged" if outcome.channel == "explicit_only" else outcome.channel
                by_channel.setdefault(channel, set()).add(outcome.error_type or "")
    assert set(by_channel) == {"text", "flagged", "protocol"}
    assert all(set(ERROR_TYPES) <= types for types in by_channel.values())


def test_the_oversized_result_is_the_only_one_above_the_token_budget(
    generated: tuple[Path, GroundTruth],
) -> None:
    out, _ = generated
    contents = [
        m["content"]
        for line in _jsonl(out / "openai_chat.jsonl")
        for m in line["messages"]
        if m["role"] == "tool"
    ]
    contents += [
        b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
        for line in _jsonl(out / "anthropic.jsonl")
        for m in line["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    states = orjson.loads((out / "langchain.json").read_bytes())
    contents += [i["data"]["content"] for s in states for i in s["messages"] if i["type"] == "tool"]
    big = [n for n in count_many(contents) if n > 2000]
    assert len(big) == 1 and 11_000 < big[0] < 13_500


def test_too_few_traces_for_the_catalogue_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"traces must be at least \d+ to hold every scenario"):
        generate(tmp_path, traces=10)


def test_unknown_formats_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="formats must be a non-empty subset"):
        generate(tmp_path, formats=("openai_chat", "gemini"))


def test_one_format_gets_every_scenario_it_can_express(tmp_path: Path) -> None:
    truth = generate(tmp_path, traces=40, formats=("langchain",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ground_truth.json", "langchain.json"]
    assert truth.formats == {"langchain": 40}
    scenarios = {t.scenario for t in truth.trace_facts}
    # Protocol errors, unparsable arguments and undeclared tools need the other formats.
    assert {"late_result", "flagged_errors_4", "retry_after_ignored"} <= scenarios
    assert not scenarios & {"protocol_followed", "invalid_argument_json", "undeclared_tool"}


# --- the analysis reproduces the ground truth ------------------------------------------------


def _parse(out: Path) -> dict[str, Trace]:
    traces: dict[str, Trace] = {}
    for fmt in FORMATS:
        name = FILE_NAMES[fmt]
        with (out / name).open("rb") as stream:
            for item in formats.get_format(fmt).parse(iter_records(stream, name), name):
                assert isinstance(item, Trace), item
                assert item.external_id is not None
                traces[item.external_id] = item
    return traces


def _observed_pairs(trace_id: str, fmt: str, trace: Trace) -> list[PairFact]:
    """The analysis's facts of one trace in the ground truth's shape."""
    facts = analyze_trace(trace, count_many([m.content for m in trace.messages]))
    by_seq = {m.seq: m for m in trace.messages}
    results = {r.message_seq: (ordinal, r) for ordinal, r in enumerate(facts.results)}
    linked = {c.result_seq for c in facts.calls if c.result_seq is not None}
    entries: list[tuple[tuple[int, int], PairFact]] = []
    for ordinal, call in enumerate(facts.calls):
        message = by_seq[call.message_seq]
        provided = next(c for c in message.tool_calls if c.call_index == call.call_index)
        fact = PairFact(
            trace_id=trace_id, format=fmt, call_ordinal=ordinal, result_ordinal=None,
            call_seq=call.message_seq, call_index=call.call_index, result_seq=call.result_seq,
            call_id=provided.tool_call_id, tool=provided.name, pair_state=call.pair_state,
            name_mismatch=call.name_mismatch, reused_id=call.reused_id,
            occurrence=call.occurrence, run_length=call.run_length,
            retry_after_error=call.retry_after_error, ping_pong=call.ping_pong,
            schema_issue=call.schema_issue,
        )  # fmt: skip
        entries.append(((call.message_seq, call.call_index), fact))
    for seq, (ordinal, result) in results.items():
        provided_result = by_seq[seq].tool_result
        if seq not in linked:
            fact = PairFact(
                trace_id=trace_id, format=fmt, call_ordinal=None, result_ordinal=None,
                call_seq=None, call_index=None, result_seq=seq,
                call_id=provided_result.tool_call_id if provided_result else None,
                tool=provided_result.name if provided_result else None,
                pair_state=result.pair_state,
            )  # fmt: skip
            entries.append(((seq, -1), fact))
        else:
            fact = next(f for _, f in entries if f.result_seq == seq and f.call_seq is not None)
        content = result.content
        fact.result_ordinal, fact.status, fact.error_type = (
            ordinal,
            content.status,
            (content.error_type),
        )
        fact.suggestion = content.suggestion is not None or content.suggestion_kind is not None
        fact.verdict, fact.oversized = result.verdict, result.oversized
    return [fact for _, fact in sorted(entries, key=lambda entry: entry[0])]


def test_the_analysis_reproduces_the_ground_truth_exactly(
    generated: tuple[Path, GroundTruth],
) -> None:
    out, truth = generated
    traces = _parse(out)
    assert sorted(traces) == sorted(t.trace_id for t in truth.trace_facts)
    assert {t.trace_id: len(traces[t.trace_id].messages) for t in truth.trace_facts} == {
        t.trace_id: t.messages for t in truth.trace_facts
    }
    observed: list[PairFact] = []
    loop_signatures = loop_calls = 0
    for trace_truth in truth.trace_facts:
        trace = traces[trace_truth.trace_id]
        observed += _observed_pairs(trace_truth.trace_id, trace_truth.format, trace)
        facts = analyze_trace(trace, [10] * len(trace.messages))
        loops = loops_at(facts, truth.loops.k)
        loop_signatures, loop_calls = (
            loop_signatures + len(loops),
            loop_calls + sum(loop.count for loop in loops),
        )
    mismatches = [
        f"{want.trace_id} call#{want.call_ordinal} result#{want.result_ordinal} {field}: "
        f"expected {getattr(want, field)!r}, analysis gave {getattr(got, field)!r}"
        for want, got in zip(truth.pairs, observed, strict=False)
        for field in PairFact.model_fields
        if getattr(want, field) != getattr(got, field)
    ]
    assert len(observed) == len(truth.pairs)
    assert mismatches == []
    assert _tally(observed) == _totals(truth)
    assert (loop_signatures, loop_calls) == (truth.loops.signatures, truth.loops.calls)
