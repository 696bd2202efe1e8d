"""Odd values cost only themselves: ids, names and timestamps a column cannot hold are fitted,
on SQLite and PostgreSQL alike, and the import goes on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from formats_helpers import chat_call, chat_result

from db.contract.bounds import fit_key, storable_time
from db.engine import make_engine
from db.schema import MessageRow, ToolCallRow, TraceRow
from ingest.importing.pipeline import import_paths


def conversation(conv_id: str, **fields: Any) -> dict[str, Any]:
    """A one-call OpenAI chat conversation with ``fields`` overriding its top level."""
    return {
        "id": conv_id,
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "hi"},
            chat_call("call_1", "get", "{}"),
            chat_result("call_1", "ok"),
        ],
    } | fields


def import_lines(db_url: str, tmp_path: Path, convs: list[dict[str, Any]]) -> sa.Engine:
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in convs))
    engine = make_engine(db_url)
    summary = import_paths(engine, [path])
    assert (summary.traces, summary.rejected) == (len(convs), 0)
    return engine


def test_long_ids_models_and_tool_names_are_fitted_and_kept_whole(
    db_url: str, tmp_path: Path
) -> None:
    long_a, long_b = "x" * 500, "x" * 499 + "y"
    tool = "t" * 500
    long_tool = conversation("tool-conv")
    long_tool["messages"][1]["tool_calls"][0]["function"]["name"] = tool
    engine = import_lines(
        db_url,
        tmp_path,
        [conversation(long_a), conversation(long_b), conversation("m", model="m" * 300), long_tool],
    )
    with engine.connect() as conn:
        traces = {
            r.display_id: r
            for r in conn.execute(sa.select(TraceRow.external_id, TraceRow.display_id,
                                            TraceRow.dedupe_key, TraceRow.model,
                                            TraceRow.meta))
        }  # fmt: skip
        names = conn.execute(sa.select(ToolCallRow.tool_name)).scalars().all()
    engine.dispose()
    digest_a = hashlib.sha256(long_a.encode()).hexdigest()[:16]
    shown_a = "x" * (400 - 17) + "~" + digest_a
    assert len(traces) == 4
    assert traces[shown_a].external_id == shown_a
    assert (
        traces[shown_a].dedupe_key
        == "openai_chat:id:"
        + "x" * (200 - 17 - 15)
        + "~"
        + (hashlib.sha256(f"openai_chat:id:{long_a}".encode()).hexdigest()[:16])
    )
    assert traces[shown_a].metadata == {"full_values": {"external_id": long_a}}
    assert traces["m"].model == "m" * 199 + "…"
    assert traces["m"].metadata == {"full_values": {"model": "m" * 300}}
    tool_digest = hashlib.sha256(tool.encode()).hexdigest()[:16]
    assert sorted(names) == ["get", "get", "get", "t" * 383 + "~" + tool_digest]


def test_timestamps_outside_the_storable_years_are_dropped_and_kept_in_raw(
    db_url: str, tmp_path: Path
) -> None:
    conv = conversation("ts", created_at="0001-01-01T00:00:00-14:00")
    conv["messages"][0]["timestamp"] = "0001-01-01T00:00:00-14:00"
    conv["messages"][2]["timestamp"] = "2025-03-01T10:00:00+00:00"
    engine = import_lines(db_url, tmp_path, [conv])
    with engine.connect() as conn:
        stamps = conn.execute(sa.select(MessageRow.timestamp, MessageRow.raw).order_by(
            MessageRow.seq)).all()  # fmt: skip
        started = conn.execute(sa.select(TraceRow.started_at)).scalar_one()
    engine.dispose()
    assert stamps[0].timestamp is None
    assert stamps[0].raw["timestamp"] == "0001-01-01T00:00:00-14:00"
    assert stamps[2].timestamp.isoformat() == "2025-03-01T10:00:00+00:00"
    assert started.isoformat() == "2025-03-01T10:00:00+00:00"


def test_fit_key_keeps_short_values_and_separates_long_ones() -> None:
    assert fit_key("traces", "dedupe_key", "short") == "short"
    a, b = fit_key("traces", "dedupe_key", "k" * 250), fit_key("traces", "dedupe_key", "k" * 251)
    assert (len(a), len(b), a == b) == (200, 200, False)


def test_storable_time_rejects_the_edges_of_the_range() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    plus14 = timezone(timedelta(hours=14))
    assert storable_time(datetime(1900, 1, 1, 13, tzinfo=plus14)) is None
    assert storable_time(datetime(1900, 1, 1, 15, tzinfo=plus14)) == datetime(
        1900, 1, 1, 1, tzinfo=UTC
    )
    assert storable_time(datetime(9999, 12, 31, tzinfo=UTC)) is None
    assert storable_time(datetime(1, 1, 1, tzinfo=plus14)) is None


def test_integers_past_64_bits_in_a_record_are_stored_exactly(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = (
        b'{"id": "big", "messages": [{"role": "user", "content": "x", '
        b'"usage": {"input_tokens": 123456789012345678901234567890, "output_tokens": 7}}]}\n'
    )
    path.write_bytes(line)
    engine = make_engine(db_url)
    summary = import_paths(engine, [path])
    with engine.connect() as conn:
        usage = conn.execute(sa.select(MessageRow.usage)).scalar_one()
    engine.dispose()
    assert (summary.traces, summary.rejected) == (1, 0)
    assert usage == {"input_tokens": 123456789012345678901234567890, "output_tokens": 7}


def test_otlp_times_past_the_datetime_range_are_dropped() -> None:
    from ingest.formats.otlp import _time

    assert (_time(10**30), _time(0), _time(1_700_000_000_000_000_000).year) == (None, None, 2023)


def test_a_trace_with_cut_values_is_rebuilt_whole_for_reanalysis(
    db_url: str, tmp_path: Path
) -> None:
    from db.bulk.stored import iter_trace_id_batches, load_traces
    from ingest.importing.rebuild import trace_from_stored

    engine = import_lines(
        db_url, tmp_path, [conversation("i" * 450, model="m" * 250, metadata={"env": "ci"})]
    )
    [stored] = [s for ids in iter_trace_id_batches(engine) for s in load_traces(engine, ids)]
    engine.dispose()
    trace, _ = trace_from_stored(stored)
    assert (trace.external_id, trace.model, trace.metadata) == ("i" * 450, "m" * 250, {"env": "ci"})


def nul_arguments_conversation(conv_id: str) -> dict[str, Any]:
    """A conversation whose tool call's arguments string escapes a NUL (``"a\\u0000b"``)."""
    conv = conversation(conv_id)
    conv["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"k": "a\\u0000b"}'
    return conv


def test_an_escaped_nul_in_arguments_is_stored_as_the_replacement_character(
    db_url: str, tmp_path: Path
) -> None:
    engine = import_lines(
        db_url, tmp_path, [nul_arguments_conversation("nul"), conversation("after")]
    )
    with engine.connect() as conn:
        calls = conn.execute(
            sa.select(TraceRow.display_id, ToolCallRow.arguments_raw, ToolCallRow.arguments)
            .join(TraceRow, TraceRow.id == ToolCallRow.trace_id)
            .order_by(TraceRow.display_id)
        ).all()
    engine.dispose()
    # The arguments as written (their text holds the escape, not a NUL) are kept as they came;
    # the parsed value holds U+FFFD where the NUL was.
    assert [tuple(c) for c in calls] == [
        ("after", "{}", {}),
        ("nul", '{"k": "a\\u0000b"}', {"k": "a\ufffdb"}),
    ]


def test_nul_characters_in_any_text_or_json_value_are_stored_replaced(db_url: str) -> None:
    from dbfixture import _trace, message

    from db.writes.traces import TraceRows, start_import, write_traces

    rows = TraceRows(
        trace=_trace(
            "n\x00ul", format="f", title="t\x00itle", model="m\x00", metadata={"k\x00": ["v\x00"]}
        ),
        messages=[message(0, "user", "a\x00b", 3, None)],
    )
    engine = make_engine(db_url)
    import_id = start_import(engine, origin="cli", paths=[], encoding="o200k_base")
    result = write_traces(engine, import_id, [rows])
    with engine.connect() as conn:
        trace = conn.execute(sa.select(TraceRow.display_id, TraceRow.title, TraceRow.model,
                                       TraceRow.meta)).one()  # fmt: skip
        content = conn.execute(sa.select(MessageRow.content)).scalar_one()
    engine.dispose()
    assert (result.imported, result.refused) == (1, [])
    assert tuple(trace) == ("n\ufffdul", "t\ufffditle", "m\ufffd", {"k\ufffd": ["v\ufffd"]})
    assert content == "a\ufffdb"


def test_a_trace_the_database_refuses_costs_only_itself(db_url: str) -> None:
    from dbfixture import _trace, message

    from db.writes.traces import TraceRows, start_import, write_traces
    from ingest.importing.batches import refused_rejections

    def rows(name: str, seq: int = 0) -> TraceRows:
        return TraceRows(
            trace=_trace(name, format="f"), messages=[message(seq, "user", name, 1, None)]
        )

    engine = make_engine(db_url)
    import_id = start_import(engine, origin="cli", paths=[], encoding="o200k_base")
    # A position no integer column holds: SQLite and PostgreSQL both refuse it.
    result = write_traces(engine, import_id, [rows("a"), rows("b"), rows("big", 2**63), rows("c")])
    with engine.connect() as conn:
        stored = conn.execute(sa.select(TraceRow.display_id).order_by(TraceRow.display_id))
        names = stored.scalars().all()
    engine.dispose()
    assert names == ["a", "b", "c"]
    assert (result.imported, result.messages, len(result.refused)) == (3, 3, 1)
    (rejection,) = refused_rejections(result)
    assert (rejection.location(), rejection.reason) == ("big.jsonl:1", "store_refused")
    assert rejection.message.startswith("trace big: the database refused it (")
