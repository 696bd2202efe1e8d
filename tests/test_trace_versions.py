"""Logs that grow (issue 10): a trace imported again is unchanged or a new version that replaces
the stored one, with reviewers' notes and corrections following their pairs; rejected records
are kept once; every record read is accounted for, per import and per file, on both databases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from formats_helpers import GOLDEN_CASES, chat_call, chat_result

from benchmarks.workload import generate_traces
from db.engine import make_engine
from db.migrate import downgrade, upgrade
from db.queries import imports
from db.queries.summary import summarize
from db.schema import (
    Base,
    ImportFile,
    ImportRun,
    RejectedRecord,
    ToolCallRow,
    ToolResultRow,
    TraceRow,
)
from db.writes.annotations import add_annotation, trace_annotations
from db.writes.corrections import correct_result
from ingest.importing import batches
from ingest.importing.pipeline import import_paths, import_traces
from ingest.input.reading import read_file
from ingest.model import Message, ToolCall, ToolResult, Trace

SESSION = "claude-code/069508a5-1193-487c-a9b5-a6f5f3ae4f98.jsonl"
SESSION_ID = "069508a5-1193-487c-a9b5-a6f5f3ae4f98"


def _trace_id(engine: sa.Engine, display_id: str) -> int:
    with engine.connect() as conn:
        stmt = sa.select(TraceRow.id).where(TraceRow.display_id == display_id)
        return int(conn.execute(stmt).scalar_one())


def _call_id_at(engine: sa.Engine, trace_id: int, seq: int, index: int) -> str | None:
    c = ToolCallRow
    with engine.connect() as conn:
        stmt = sa.select(c.tool_call_id).where(
            c.trace_id == trace_id, c.message_seq == seq, c.call_index == index
        )
        return conn.execute(stmt).scalar_one()


def _snapshot(engine: sa.Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the trace tables and notes, ids included, in id order."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for name in ("traces", "messages", "tool_calls", "tool_results", "findings", "annotations"):
            table = Base.metadata.tables[name]
            out[name] = [tuple(r) for r in conn.execute(sa.select(table).order_by(table.c.id))]
    return out


def _counts(engine: sa.Engine) -> tuple[int, int, int, int]:
    data = summarize(engine)
    return (data["traces"], data["messages"], data["tool_calls"], data["tool_results"])


def _files(engine: sa.Engine, import_id: int) -> list[tuple[Any, ...]]:
    f = ImportFile
    stmt = (
        sa.select(f.path, f.records, f.imported, f.updated, f.unchanged, f.rejected)
        .where(f.import_id == import_id)
        .order_by(f.id)
    )
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(stmt)]


def _balanced(engine: sa.Engine) -> None:
    """records == imported + updated + unchanged + rejected for every import and every file."""
    with engine.connect() as conn:
        imports, files_table = Base.metadata.tables["imports"], Base.metadata.tables["import_files"]
        for run in conn.execute(sa.select(imports)):
            outcomes = run.records_imported + run.records_updated + run.records_unchanged
            assert run.records == outcomes + run.rejected, run.id
            assert run.rejected == run.rejected_new + run.rejected_known, run.id
            files = conn.execute(sa.select(files_table).where(files_table.c.import_id == run.id))
            total = 0
            for f in files:
                assert f.records == f.imported + f.updated + f.unchanged + f.rejected, f.path
                total += f.records
            assert total == run.records, run.id


@pytest.mark.realdata
def test_a_session_that_grew_stores_the_whole_file_and_keeps_its_notes(
    db_url: str, realdata: Path, tmp_path: Path
) -> None:
    whole = (realdata / SESSION).read_bytes()
    lines = whole.splitlines(keepends=True)
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines[:30]))
    engine = make_engine(db_url)
    first = import_paths(engine, [path])
    assert (first.traces, first.updated, first.unchanged, first.rejected) == (1, 0, 0, 0)
    assert _counts(engine) == (1, 23, 11, 10)
    trace_id = _trace_id(engine, SESSION_ID)
    bash_id = _call_id_at(engine, trace_id, 4, 0)
    note = add_annotation(engine, trace_id, label="tool-bug", note="n", author="mia",
                          message_seq=4, call_index=0)  # fmt: skip
    waiting = add_annotation(engine, trace_id, label="needs-fix", note="w", author="mia",
                             message_seq=21, call_index=1)  # fmt: skip
    path.write_bytes(whole)
    grown = import_paths(engine, [path])
    assert grown.line().startswith(
        "1 file, 0 traces imported, 1 updated (+34 -0 messages), 0 unchanged, 0 rejected"
    )
    assert (grown.records, grown.records_updated) == (64, 64)
    fresh = next(t for t in read_file(realdata / SESSION) if isinstance(t, Trace))
    fresh_calls = sum(len(m.tool_calls) for m in fresh.messages)
    fresh_results = sum(1 for m in fresh.messages if m.tool_result is not None)
    assert (len(fresh.messages), fresh_calls, fresh_results) == (57, 22, 22)
    assert _counts(engine) == (1, 57, 22, 22)
    assert _trace_id(engine, SESSION_ID) == trace_id
    notes = {n.id: n for n in trace_annotations(engine, trace_id)}
    moved = notes[note.id]
    assert (moved.stale, moved.stale_reason) == (False, None)
    assert moved.message_seq is not None and moved.call_index is not None
    assert _call_id_at(engine, trace_id, moved.message_seq, moved.call_index) == bash_id
    # The call waiting for its result at line 30 got it: not stale either.
    assert (notes[waiting.id].stale, notes[waiting.id].message_seq) == (False, 21)
    with engine.connect() as conn:
        version, import_id = conn.execute(
            sa.select(TraceRow.version, TraceRow.import_id).where(TraceRow.id == trace_id)
        ).one()
        update = conn.execute(sa.select(Base.metadata.tables["trace_updates"])).one()
    assert (version, import_id) == (2, grown.import_id)
    assert (update.import_id, update.trace_id, update.source_file) == (
        grown.import_id, trace_id, str(path),
    )  # fmt: skip
    assert (update.old_messages, update.new_messages) == (23, 57)
    assert _files(engine, grown.import_id) == [(str(path), 64, 0, 64, 0, 0)]
    again = import_paths(engine, [path])
    assert (again.traces, again.updated, again.unchanged) == (0, 0, 1)
    _balanced(engine)
    engine.dispose()


def _run(results: list[str], *, extra_error: bool = False) -> Trace:
    """A trace given programmatically (as a receiver would): three calls and their results."""
    messages = [Message(seq=0, role="user", content="go")]
    for n, content in enumerate(results):
        call = ToolCall(call_index=0, tool_call_id=f"c{n}", name="lookup",
                        arguments_raw=f'{{"n":{n}}}', arguments={"n": n})  # fmt: skip
        messages.append(Message(seq=len(messages), role="assistant", tool_calls=[call]))
        messages.append(
            Message(seq=len(messages), role="tool", content=content,
                    tool_result=ToolResult(tool_call_id=f"c{n}", name="lookup"))
        )  # fmt: skip
    if extra_error:
        call = ToolCall(call_index=0, tool_call_id="c9", name="lookup", arguments_raw="{}",
                        arguments={})  # fmt: skip
        messages.append(Message(seq=len(messages), role="assistant", tool_calls=[call]))
        messages.append(
            Message(seq=len(messages), role="tool", content="Error: lookup failed",
                    tool_result=ToolResult(tool_call_id="c9", name="lookup"))
        )  # fmt: skip
    return Trace(format="otel", source_file="otlp", external_id="run-7", messages=messages)


def test_a_changed_result_makes_its_note_stale_and_a_lost_correction_becomes_a_note(
    engine: sa.Engine,
) -> None:
    first = import_traces(engine, [_run(["ok", "Error: not found", "Error: denied"])])
    assert (first.traces, first.updated, first.records) == (1, 0, 1)
    trace_id = _trace_id(engine, "run-7")
    kept = add_annotation(engine, trace_id, label="root-cause", note="fine", author="ann",
                          message_seq=3, call_index=0)  # fmt: skip
    changed = add_annotation(engine, trace_id, label="tool-bug", note="ok?", author="ann",
                             message_seq=1, call_index=0)  # fmt: skip
    with engine.connect() as conn:
        result_ids = dict(
            conn.execute(
                sa.select(ToolResultRow.message_seq, ToolResultRow.id).where(
                    ToolResultRow.trace_id == trace_id
                )
            ).all()
        )
    correct_result(engine, result_ids[4], author="bob", error_type="auth")
    correct_result(engine, result_ids[6], author="bob", error_type="quota")
    # Exported again: the first result changed, the third call is gone, a new error arrived.
    second = import_traces(engine, [_run(["changed", "Error: not found"], extra_error=True)])
    assert second.line().startswith(
        "1 file, 0 traces imported, 1 updated (+5 -5 messages), 0 unchanged"
    )
    notes = {n.id: n for n in trace_annotations(engine, trace_id)}
    assert (notes[kept.id].stale, notes[kept.id].message_seq) == (False, 3)
    assert notes[changed.id].stale
    assert notes[changed.id].stale_reason == (
        "the result of the call with id 'c0' (#1) changed in the new version"
    )
    lost = [n for n in notes.values() if n.label == "correction"]
    assert [(n.note, n.author, n.stale, n.message_seq) for n in lost] == [
        ("Correction of a lookup result by bob: error type -> quota.", "bob", True, None)
    ]
    assert (
        lost[0].stale_reason == "the result of the call with id 'c2' (#1) is not in the new version"
    )
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(ToolResultRow.message_seq, ToolResultRow.status,
                      ToolResultRow.error_type_corrected, ToolResultRow.corrected_by)
            .where(ToolResultRow.trace_id == trace_id)
            .order_by(ToolResultRow.message_seq)
        ).all()  # fmt: skip
        errors = conn.execute(sa.select(TraceRow.error_count)).scalar_one()
    assert [tuple(r) for r in rows] == [
        (2, "success", None, None),
        (4, "error", "auth", "bob"),
        (6, "error", None, None),
    ]
    assert errors == 2


def test_reimporting_unchanged_data_changes_no_row(engine: sa.Engine, tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(t) for t in generate_traces(40, seed=3)) + b"\n")
    first = import_paths(engine, [path])
    trace_id = _trace_id(engine, _first_display_id(engine))
    add_annotation(engine, trace_id, label="root-cause", note="x", author="ann")
    before = _snapshot(engine)
    again = import_paths(engine, [path, path], display_names=[str(path), "copy/runs.jsonl"])
    assert (again.traces, again.updated, again.unchanged) == (0, 0, 2 * first.traces)
    assert _snapshot(engine) == before
    _balanced(engine)


def _first_display_id(engine: sa.Engine) -> str:
    with engine.connect() as conn:
        stmt = sa.select(TraceRow.display_id).order_by(TraceRow.id).limit(1)
        return str(conn.execute(stmt).scalar_one())


CONVERSATION = {
    "id": "conv-1",
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        chat_call("call_1", "get_weather", '{"city":"Paris"}'),
        chat_result("call_1", "rainy, 12C"),
    ],
}


def test_an_export_redone_with_a_new_error_result_is_updated(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes(json.dumps(CONVERSATION).encode() + b"\n")
    import_paths(engine, [path])
    path.write_bytes(json.dumps(_redone()).encode() + b"\n")
    summary = import_paths(engine, [path])
    assert (summary.traces, summary.updated, summary.unchanged) == (0, 1, 0)
    _assert_redone_stored(engine)


def test_a_conversation_redone_later_in_the_same_batch_stores_the_later_version(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes(json.dumps(CONVERSATION).encode() + b"\n" + json.dumps(_redone()).encode())
    summary = import_paths(engine, [path])
    assert (summary.traces, summary.updated, summary.unchanged) == (1, 1, 0)
    _assert_redone_stored(engine)


def _redone() -> dict[str, Any]:
    """:data:`CONVERSATION` exported again with a second call, whose result is an error."""
    redone: dict[str, Any] = json.loads(json.dumps(CONVERSATION))
    redone["messages"][1]["tool_calls"].append(
        {"id": "call_2", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city":"Lyon"}'}}
    )  # fmt: skip
    redone["messages"].append(
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: service unavailable (503)"}
    )
    return redone


def _assert_redone_stored(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                ToolResultRow.tool_call_id, ToolResultRow.status, ToolResultRow.error_type
            ).order_by(ToolResultRow.message_seq)
        ).all()
    assert [tuple(r) for r in rows] == [
        ("call_1", "success", None),
        ("call_2", "error", "unavailable"),
    ]
    assert _counts(engine) == (1, 4, 2, 2)


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small batches, so that several are in flight at once (see tests/test_batches.py).
    monkeypatch.setattr(batches, "BATCH_MESSAGES", 300)


def _grown_workload(tmp_path: Path) -> tuple[Path, Path, int]:
    """A file of runs (about 1,500 messages), the same file a day later (every third run got a
    new last message, and one run is repeated at the end), and how many runs there are."""
    runs = list(generate_traces(1_500, seed=11))
    old = tmp_path / "day1.jsonl"
    old.write_bytes(b"\n".join(orjson.dumps(t) for t in runs) + b"\n")
    grown = []
    for n, run in enumerate(runs):
        if n % 3 == 0:
            run = {**run, "messages": [*run["messages"], {"role": "user", "content": "and?"}]}
        grown.append(orjson.dumps(run))
    grown.append(grown[1])
    new = tmp_path / "day2.jsonl"
    new.write_bytes(b"\n".join(grown) + b"\n")
    return old, new, len(runs)


def _versions(url: str) -> list[tuple[Any, ...]]:
    engine = make_engine(url)
    with engine.connect() as conn:
        stmt = sa.select(
            TraceRow.dedupe_key, TraceRow.content_hash, TraceRow.version, TraceRow.message_count
        ).order_by(TraceRow.dedupe_key)
        rows = [tuple(r) for r in conn.execute(stmt)]
    engine.dispose()
    return rows


@pytest.mark.usefixtures("small_batches")
def test_parallel_workers_judge_versions_as_one_process(
    tmp_path: Path, db_url: str, sqlite_url: str
) -> None:
    old, new, runs = _grown_workload(tmp_path)
    in_process_url = sqlite_url.replace("toollens.db", "in-process.db")
    outcomes = []
    for workers, url in ((0, in_process_url), (2, db_url)):
        engine = make_engine(url)
        import_paths(engine, [old], workers=workers, display_names=["runs.jsonl"])
        second = import_paths(engine, [new], workers=workers, display_names=["runs.jsonl"])
        outcomes.append((second.traces, second.updated, second.unchanged, second.records))
        _balanced(engine)
        engine.dispose()
    assert outcomes[0] == outcomes[1]
    grown = sum(1 for n in range(runs) if n % 3 == 0)
    assert outcomes[0] == (0, grown, runs - grown + 1, runs + 1)
    assert _versions(in_process_url) == _versions(db_url)


BAD = json.dumps(CONVERSATION).encode() + b'\n{"id": "bad", oops\n'


def test_the_same_bad_record_is_kept_once_and_counted_every_time(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(BAD)
    # Read every time (an incremental import would skip the unchanged file unread).
    summaries = [import_paths(engine, [path], incremental=False) for _ in range(4)]
    assert [(s.rejected, s.rejected_new, s.rejected_known) for s in summaries] == [
        (1, 1, 0), (1, 0, 1), (1, 0, 1), (1, 0, 1),
    ]  # fmt: skip
    with engine.connect() as conn:
        kept = conn.execute(sa.select(sa.func.count()).select_from(RejectedRecord)).scalar_one()
        stored = conn.execute(
            sa.select(
                ImportRun.rejected, ImportRun.rejected_new, ImportRun.rejected_known
            ).order_by(ImportRun.id)
        ).all()
    assert kept == 1
    assert sum(r.rejected for r in stored) == 4
    assert [tuple(r) for r in stored][1:] == [(1, 0, 1)] * 3
    assert _files(engine, summaries[-1].import_id) == [(str(path), 2, 0, 0, 1, 1)]
    _balanced(engine)


def test_every_golden_case_is_accounted_for_per_file(db_url: str) -> None:
    engine = make_engine(db_url)
    paths = [next(case.glob("input.json*")) for case in GOLDEN_CASES]
    first = import_paths(engine, paths, workers=0)
    second = import_paths(engine, paths, workers=0)
    assert (second.traces, second.updated) == (0, 0)
    # Every file is skipped unread: each trace outcome of the first import (a copy redone in
    # its file was an update) is counted unchanged again.
    assert second.files_unchanged == len(paths)
    assert second.unchanged == first.traces + first.updated + first.unchanged
    assert len(_files(engine, first.import_id)) == len(paths)
    _balanced(engine)
    engine.dispose()


@pytest.mark.realdata
def test_every_real_file_is_accounted_for_per_file(db_url: str, realdata: Path) -> None:
    engine = make_engine(db_url)
    paths = sorted(
        p for p in realdata.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")
    )
    first = import_paths(engine, paths, workers=0)
    again = import_paths(engine, paths, workers=0)
    assert (again.traces, again.updated) == (0, 0)
    assert again.unchanged == first.traces + first.unchanged
    assert len(_files(engine, first.import_id)) == len(paths)
    _balanced(engine)
    engine.dispose()


def _conversation(run: int) -> dict[str, Any]:
    """``CONVERSATION`` without its id, asking about another city."""
    messages = json.loads(json.dumps(CONVERSATION["messages"]))
    messages[0]["content"] = f"Weather in city {run}?"
    return {"messages": messages}


def test_traces_without_ids_on_one_line_are_told_apart_by_position(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = tmp_path / "array.json"
    path.write_bytes(json.dumps([_conversation(n) for n in range(3)]).encode())
    first = import_paths(engine, [path])
    assert (first.traces, first.updated, first.unchanged) == (3, 0, 0)
    grown = [_conversation(n) for n in range(4)]
    grown[1]["messages"].append({"role": "assistant", "content": "Take an umbrella."})
    path.write_bytes(json.dumps(grown).encode())
    second = import_paths(engine, [path])
    assert (second.traces, second.updated, second.unchanged) == (1, 1, 2)
    with engine.connect() as conn:
        stmt = sa.select(TraceRow.version, TraceRow.message_count).order_by(TraceRow.id)
        assert [tuple(r) for r in conn.execute(stmt)] == [(1, 3), (2, 4), (1, 3), (1, 3)]


def test_a_trace_keyed_by_its_hash_before_0008_is_found_unchanged(
    db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "legacy.json"
    path.write_bytes(json.dumps([_conversation(1)]).encode())
    engine = make_engine(db_url)
    import_paths(engine, [path])
    with engine.connect() as conn:
        digest = conn.execute(sa.select(TraceRow.content_hash)).scalar_one()
    downgrade(engine, "0007")
    with engine.begin() as conn:  # as 0007 stored it: keyed by the content hash
        conn.execute(
            sa.text("UPDATE traces SET dedupe_key = :key"), {"key": f"openai_chat:sha256:{digest}"}
        )
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(sa.select(TraceRow.content_hash)).scalar_one() == digest
    again = import_paths(engine, [path])
    assert (again.traces, again.updated, again.unchanged) == (0, 0, 1)
    assert _counts(engine)[0] == 1
    engine.dispose()


def test_the_imports_page_queries_list_an_imports_files_and_updates(engine: sa.Engine) -> None:
    import_traces(engine, [_run(["ok"])])
    second = import_traces(engine, [_run(["ok", "more"])])
    files = imports.import_files(engine, second.import_id)
    assert list(files.columns) == list(imports.FILE_COLUMNS)
    assert files[
        ["path", "records", "imported", "updated", "unchanged", "rejected"]
    ].values.tolist() == [["otlp", 1, 0, 1, 0, 0]]
    updates = imports.trace_updates(engine, second.import_id)
    assert updates[
        ["display_id", "source_file", "old_messages", "new_messages"]
    ].values.tolist() == [["run-7", "otlp", 3, 5]]
    history = imports.import_history(engine)
    assert history[["id", "traces_imported", "updated", "unchanged"]].values.tolist() == [
        [second.import_id, 0, 1, 0],
        [second.import_id - 1, 1, 0, 0],
    ]
    assert imports.latest_import_id(engine) == second.import_id
