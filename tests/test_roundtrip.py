"""Stored equals parsed: a trace read back from the store is the trace the parser produced.

Every golden case and every real trace file is parsed, imported and rebuilt from its stored rows
(:func:`ingest.importing.rebuild.trace_from_stored`, the function ``toollens reanalyze`` runs on),
on SQLite and PostgreSQL, and the two canonical traces must be equal field for field: metadata,
branches, timestamps with their zone, tool definitions, raw arguments, raw payloads, usage,
source ids and lines, tags. And ``reanalyze`` on an unchanged store changes nothing.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from formats_helpers import GOLDEN_CASES

from db.bulk.stored import iter_trace_id_batches, load_traces
from db.engine import make_engine
from db.schema import Base
from ingest.importing.pipeline import import_paths
from ingest.importing.reanalyze import reanalyze
from ingest.importing.rebuild import trace_from_stored
from ingest.input.reading import read_file
from ingest.model import Trace

REAL_FOLDERS = ["openai-chat", "claude-code", "openai-legacy", "langfuse-export"]


def _stored_traces(engine: sa.Engine) -> dict[str, Trace]:
    """Every stored trace rebuilt as a canonical trace, by dedupe key."""
    out: dict[str, Trace] = {}
    for ids in iter_trace_id_batches(engine):
        for stored in load_traces(engine, ids):
            trace, tokens = trace_from_stored(stored)
            assert len(tokens) == len(trace.messages)
            out[stored.trace.dedupe_key] = trace
    return out


def _parsed_traces(paths: list[Path]) -> dict[str, Trace]:
    """The traces the import parses from ``paths`` (as it names them), the first of each key."""
    out: dict[str, Trace] = {}
    for path in paths:
        for item in read_file(path, str(path)):
            if isinstance(item, Trace):
                out.setdefault(item.dedupe_key(), item)
    return out


def _timestamps(trace: Trace) -> list[datetime | None]:
    return [trace.started_at, *(m.timestamp for m in trace.messages)]


def _assert_same(parsed: Trace, stored: Trace) -> None:
    # Python values (types included: a float stays a float, a bool a bool) …
    assert stored.model_dump() == parsed.model_dump()
    # … and the JSON form, where a timestamp is its instant *and* its zone.
    assert stored.model_dump(mode="json") == parsed.model_dump(mode="json")
    for got, expected in zip(_timestamps(stored), _timestamps(parsed), strict=True):
        assert (got is None) == (expected is None)
        if got is not None and expected is not None:
            assert got.tzinfo is not None and got.utcoffset() == expected.utcoffset()


def _assert_roundtrip(url: str, paths: list[Path]) -> dict[str, Trace]:
    engine = make_engine(url)
    try:
        summary = import_paths(engine, paths, workers=0)
        stored = _stored_traces(engine)
    finally:
        engine.dispose()
    parsed = _parsed_traces(paths)
    assert summary.rejected == 0
    assert sorted(stored) == sorted(parsed)
    for key, trace in parsed.items():
        _assert_same(trace, stored[key])
    return parsed


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_golden_trace_reads_back_from_the_store_as_it_was_parsed(case: Path, db_url: str) -> None:
    _assert_roundtrip(db_url, [next(case.glob("input.json*"))])


@pytest.mark.realdata
@pytest.mark.parametrize("folder", REAL_FOLDERS)
def test_real_traces_read_back_from_the_store_as_they_were_parsed(
    realdata: Path, folder: str, db_url: str
) -> None:
    paths = sorted((realdata / folder).iterdir())
    parsed = _assert_roundtrip(db_url, paths)
    assert len(parsed) > 0


def test_a_timestamp_in_another_zone_reads_back_as_parsed(tmp_path: Path, db_url: str) -> None:
    # The store keeps instants in UTC; the parser gives UTC too, so nothing changes on the way.
    line = {
        "id": "zoned",
        "metadata": {"team": "ops"},
        "messages": [
            {"role": "user", "content": "hi", "timestamp": "2024-06-10T06:13:20+02:00"},
            {"role": "assistant", "content": "hello", "timestamp": "2024-06-10T06:13:21"},
            {"role": "tool", "tool_call_id": "c1", "content": "ok", "timestamp": 1718000000123},
        ],
    }
    path = tmp_path / "zoned.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    parsed = _assert_roundtrip(db_url, [path])
    stamps = [m.timestamp for m in parsed["openai_chat:id:zoned"].messages]
    assert [s.isoformat() if s else None for s in stamps] == [
        "2024-06-10T04:13:20+00:00",
        "2024-06-10T06:13:21+00:00",
        "2024-06-10T06:13:20.123000+00:00",
    ]


def test_the_golden_cases_carry_what_the_roundtrip_must_keep() -> None:
    """The fields at risk are present in the golden inputs, so the roundtrip tests them."""
    parsed = _parsed_traces([next(case.glob("input.json*")) for case in GOLDEN_CASES])
    traces = list(parsed.values())
    messages = [m for t in traces for m in t.messages]
    calls = [c for m in messages for c in m.tool_calls]
    assert any(t.metadata for t in traces)
    assert any(t.tools for t in traces)
    assert any(t.tags for t in traces)
    assert any(m.branch for m in messages)
    assert any(m.usage for m in messages)
    assert any(m.source_id for m in messages)
    assert any(m.source_line for m in messages)
    assert any(m.timestamp for m in messages)
    assert any(not c.args_valid for c in calls)
    assert any(m.tool_result and m.tool_result.explicit_error for m in messages)


# ---------------------------------------------------------------------------------------------
# reanalyze on an unchanged store


def _snapshot(engine: sa.Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows without surrogate ids and ``summary`` JSON, in a stable order."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            columns = [c for c in table.c if c.name not in ("id", "summary")]
            rows = conn.execute(sa.select(*columns)).all()
            out[table.name] = sorted((tuple(r) for r in rows), key=repr)
    return out


def test_reanalyzing_an_unchanged_store_changes_no_row(db_url: str) -> None:
    paths = [next(case.glob("input.json*")) for case in GOLDEN_CASES]
    engine = make_engine(db_url)
    try:
        import_paths(engine, paths, workers=0)
        before = _snapshot(engine)
        assert reanalyze(engine) == len(before["traces"])
        after = _snapshot(engine)
    finally:
        engine.dispose()
    assert {t: len(rows) for t, rows in after.items()} == {
        t: len(rows) for t, rows in before.items()
    }
    assert after == before


def _pair_states(engine: sa.Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        calls = conn.exec_driver_sql(
            "SELECT message_seq, call_index, pair_state FROM tool_calls "
            "ORDER BY message_seq, call_index"
        ).all()
        results = conn.exec_driver_sql(
            "SELECT message_seq, pair_state FROM tool_results ORDER BY message_seq"
        ).all()
    return [tuple(r) for r in calls] + [tuple(r) for r in results]


#: A real Claude Code session whose sub-agents answer calls after the main model spoke again.
SUB_AGENT_SESSION = "claude-code/5f8cbb78-38d3-47e9-9504-baa93bb166c9.jsonl"


@pytest.mark.realdata
def test_a_sub_agent_keeps_its_paired_results_through_reanalyze(
    realdata: Path, db_url: str
) -> None:
    # 208 calls, all paired within their branch; 3 of them would be late results if the
    # branches were lost (the main model speaks between a sub-agent's call and its result).
    engine = make_engine(db_url)
    try:
        import_paths(engine, [realdata / SUB_AGENT_SESSION], workers=0)
        before, imported = _snapshot(engine), _pair_states(engine)
        reanalyze(engine)
        after, again = _snapshot(engine), _pair_states(engine)
    finally:
        engine.dispose()
    assert again == imported
    assert after == before
    assert Counter(state for *_, state in imported) == {"paired": 208 + 208}
