"""Re-importing files: unchanged ones are skipped unread, grown JSONL is read from where the last
import stopped, anything else is read whole again (``source_files``,
``ingest.importing.file_changes``)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import sqlalchemy as sa
from typer.testing import CliRunner

from db.schema import RejectedRecord, TraceRow
from db.writes.source_files import load_source_files, stored_content_hashes
from ingest.cli import app
from ingest.importing.pipeline import import_paths

GOLDEN = Path(__file__).parent / "golden"
LANGFUSE_LINES = (GOLDEN / "langfuse/langchain_jsonl/input.jsonl").read_bytes().splitlines()
CLAUDE_LINES = (GOLDEN / "claude_code/session/input.jsonl").read_bytes().splitlines()

runner = CliRunner()


def langfuse_line(trace_id: str) -> bytes:
    """A Langfuse export line (one whole trace per line) under a trace id of its own."""
    value = json.loads(LANGFUSE_LINES[0])
    value["trace"]["id"] = trace_id
    return json.dumps(value).encode()


def chat_line(conversation_id: str | None) -> bytes:
    """An OpenAI chat conversation on one line, with an id or without."""
    value: dict[str, object] = {
        "messages": [
            {"role": "user", "content": f"hello {conversation_id}"},
            {"role": "assistant", "content": "hi"},
        ]
    }
    if conversation_id is not None:
        value["id"] = conversation_id
    return json.dumps(value).encode()


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def append(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as out:
        out.write(b"".join(line + b"\n" for line in lines))


def stored_traces(engine: sa.Engine) -> list[tuple[str, int | None, int]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(TraceRow.external_id, TraceRow.source_line, TraceRow.import_id).order_by(
                TraceRow.id
            )
        )
        return [(str(r[0]), r[1], r[2]) for r in rows]


def test_an_unchanged_file_is_skipped_and_counted_unchanged(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1"), langfuse_line("t2")])
    first = import_paths(engine, [path])
    second = import_paths(engine, [path])
    assert (first.traces, first.records) == (2, 2)
    assert (second.files_unchanged, second.traces, second.updated, second.unchanged) == (
        1,
        0,
        0,
        2,
    )
    assert (second.records, second.records_unchanged) == (2, 2)
    assert second.line().startswith(
        "1 file (1 unchanged), 0 traces imported, 0 updated, 2 unchanged, 0 rejected in "
    )
    entry = load_source_files(engine, [str(path.resolve())])[str(path.resolve())]
    assert (entry.size, entry.read_bytes, entry.read_lines, entry.records, entry.traces) == (
        path.stat().st_size,
        path.stat().st_size,
        2,
        2,
        2,
    )
    assert (entry.format, entry.full_hash, entry.last_import_id) == (
        "langfuse",
        None,
        second.import_id,
    )


def test_lines_appended_to_a_trace_per_line_file_are_read_alone_numbered_on(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1"), langfuse_line("t2")])
    import_paths(engine, [path])
    append(path, [langfuse_line("t3"), b"{not json", langfuse_line("t4")])
    second = import_paths(engine, [path])
    assert (second.files_unchanged, second.traces, second.unchanged, second.rejected) == (
        0,
        2,
        2,
        1,
    )
    assert (second.records, second.records_unchanged) == (5, 2)
    assert stored_traces(engine)[2:] == [
        ("t3", 3, second.import_id),
        ("t4", 5, second.import_id),
    ]
    with engine.connect() as conn:
        rejected = conn.execute(sa.select(RejectedRecord.line, RejectedRecord.reason)).all()
    assert [tuple(r) for r in rejected] == [(4, "malformed_json")]
    entry = load_source_files(engine, [str(path.resolve())])[str(path.resolve())]
    assert (entry.read_lines, entry.records, entry.traces) == (5, 5, 4)


def test_a_last_line_without_its_newline_is_read_again_once_complete(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1")])
    with open(path, "ab") as out:
        out.write(langfuse_line("t2")[:40])  # a line still being written
    first = import_paths(engine, [path])
    assert (first.traces, first.rejected) == (1, 1)
    with open(path, "ab") as out:
        out.write(langfuse_line("t2")[40:] + b"\n")
    second = import_paths(engine, [path])
    assert (second.traces, second.unchanged, second.rejected) == (1, 1, 0)
    assert [t[0] for t in stored_traces(engine)] == ["t1", "t2"]


def test_a_grown_file_of_whole_conversations_passes_on_only_the_new_ones(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "chats.jsonl", [chat_line("c1"), chat_line("c2")])
    import_paths(engine, [path], format_name="openai_chat")
    append(path, [chat_line("c3")])
    second = import_paths(engine, [path], format_name="openai_chat")
    assert (second.traces, second.updated, second.unchanged) == (1, 0, 2)
    assert (second.records, second.records_unchanged) == (3, 2)
    assert [t[0] for t in stored_traces(engine)] == ["c1", "c2", "c3"]


def test_appended_lines_without_an_identity_mean_reading_the_file_whole_again(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "chats.jsonl", [chat_line(None)])
    import_paths(engine, [path], format_name="openai_chat")
    append(path, [chat_line(None).replace(b"hello", b"bye")])
    second = import_paths(engine, [path], format_name="openai_chat")
    # Without an id, a trace is its file and line: the first line's is stored as it is.
    assert (second.traces, second.updated, second.unchanged) == (1, 0, 1)


def test_a_line_appended_to_a_claude_code_session_touches_only_that_session(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "session.jsonl", CLAUDE_LINES)
    first = import_paths(engine, [path])
    assert first.traces == 1
    extra = json.loads(CLAUDE_LINES[-1])
    extra["uuid"] = "00000000-0000-4000-8000-000000000001"
    append(path, [json.dumps(extra).encode()])
    second = import_paths(engine, [path])
    # The session is stored under its id already: its new version replaces it.
    assert (second.traces, second.updated, second.unchanged) == (0, 1, 0)
    assert (second.records, second.records_updated) == (12, 12)


def test_a_rewritten_file_is_read_whole_again(engine: sa.Engine, tmp_path: Path) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1"), langfuse_line("t2")])
    import_paths(engine, [path])
    write(path, [langfuse_line("t0"), langfuse_line("t1"), langfuse_line("t2")])
    second = import_paths(engine, [path])
    assert (second.traces, second.updated, second.unchanged) == (1, 0, 2)


def test_compressed_files_are_skipped_when_unchanged_and_read_whole_when_not(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = tmp_path / "runs.jsonl.gz"
    path.write_bytes(gzip.compress(langfuse_line("t1") + b"\n"))
    import_paths(engine, [path])
    again = import_paths(engine, [path])
    assert (again.files_unchanged, again.unchanged) == (1, 1)
    path.write_bytes(gzip.compress(langfuse_line("t1") + b"\n" + langfuse_line("t2") + b"\n"))
    grown = import_paths(engine, [path])
    assert (grown.files_unchanged, grown.traces, grown.unchanged) == (0, 1, 1)
    entry = load_source_files(engine, [str(path.resolve())])[str(path.resolve())]
    assert (entry.read_bytes, entry.records, entry.traces) == (None, 2, 2)


def test_a_touched_file_is_unchanged_by_its_full_hash(engine: sa.Engine, tmp_path: Path) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1")])
    import_paths(engine, [path], full_hash=True)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    by_hash = import_paths(engine, [path], full_hash=True)
    assert (by_hash.files_unchanged, by_hash.unchanged) == (1, 1)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2 * 10**9))
    # By size, mtime and hashes the file is not unchanged, but nothing follows what was read.
    by_stat = import_paths(engine, [path])
    assert (by_stat.files_unchanged, by_stat.traces, by_stat.unchanged) == (0, 0, 1)


def test_no_incremental_reads_every_file_whole(engine: sa.Engine, tmp_path: Path) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1")])
    import_paths(engine, [path])
    again = import_paths(engine, [path], incremental=False)
    assert (again.files_unchanged, again.traces, again.unchanged) == (0, 0, 1)


def test_the_cli_reports_unchanged_files(db_url: str, tmp_path: Path) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1"), langfuse_line("t2")])
    runner.invoke(app, ["import", "--db", db_url, str(path)])
    again = runner.invoke(app, ["import", "--db", db_url, "--full-hash", str(path)])
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith(
        "1 file (1 unchanged), 0 traces imported, 0 updated, 2 unchanged, 0 rejected in "
    )


def test_stored_content_hashes_name_the_keys_already_stored(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1")])
    import_paths(engine, [path])
    with engine.connect() as conn:
        stored_hash = conn.execute(sa.select(TraceRow.content_hash)).scalar_one()
    assert stored_content_hashes(engine, ["langfuse:id:t1", "langfuse:id:t9"]) == {
        "langfuse:id:t1": stored_hash
    }
    assert stored_content_hashes(engine, []) == {}


def test_a_file_asked_for_in_another_format_is_read_again(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1")])
    import_paths(engine, [path])
    again = import_paths(engine, [path], format_name="toolbench")
    assert (again.files_unchanged, again.traces, again.rejected) == (0, 0, 1)
    same = import_paths(engine, [path], format_name="langfuse")
    # Read whole again (the registry says toolbench): its trace is found stored as it is.
    assert (same.files_unchanged, same.traces, same.unchanged) == (0, 0, 1)


def test_a_missing_file_is_rejected_as_before(engine: sa.Engine, tmp_path: Path) -> None:
    summary = import_paths(engine, [tmp_path / "gone.jsonl"])
    assert [(r.reason, r.line) for r in summary.rejections] == [("unreadable_file", 0)]


def test_a_file_named_twice_in_one_import_is_registered_once(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1")])
    first = import_paths(engine, [path, path])
    assert (first.traces, first.unchanged) == (1, 1)
    again = import_paths(engine, [path, path])
    assert (again.files_unchanged, again.unchanged) == (2, 2)


def test_a_file_read_with_a_wrong_format_is_read_again_when_detected(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "runs.jsonl", [langfuse_line("t1"), langfuse_line("t2")])
    wrong = import_paths(engine, [path], format_name="toolbench")
    detected = import_paths(engine, [path])
    assert (wrong.traces, wrong.rejected) == (0, 2)
    assert (detected.files_unchanged, detected.traces, detected.rejected) == (0, 2, 0)
    entry = load_source_files(engine, [str(path.resolve())])[str(path.resolve())]
    assert (entry.format, entry.records, entry.traces) == ("langfuse", 2, 2)
    # Read with the format it was last read with, and it gave traces: unchanged, skipped.
    settled = import_paths(engine, [path])
    assert (settled.files_unchanged, settled.traces, settled.unchanged) == (1, 0, 2)


def test_a_file_whose_every_record_was_rejected_is_read_again(
    engine: sa.Engine, tmp_path: Path
) -> None:
    # Detected as OpenAI chat, but no line has a tool call the parser can read.
    call = b'{"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "function": null}]}]}'
    path = write(tmp_path / "chats.jsonl", [call] * 2)
    failed = import_paths(engine, [path])
    entry = load_source_files(engine, [str(path.resolve())])[str(path.resolve())]
    assert (failed.traces, failed.rejected) == (0, 2)
    assert (entry.format, entry.records, entry.traces) == ("openai_chat", 2, 0)
    again = import_paths(engine, [path])
    assert (again.files_unchanged, again.records, again.rejected) == (0, 2, 2)
    assert again.rejected_known == 2  # the same rejections, already kept


def test_a_file_that_failed_and_then_is_fixed_in_place_imports_its_traces(
    engine: sa.Engine, tmp_path: Path
) -> None:
    path = write(tmp_path / "notes.json", [b'{"hello": "world"}'])
    unknown = import_paths(engine, [path])
    entry = load_source_files(engine, [str(path.resolve())])[str(path.resolve())]
    assert (unknown.traces, [r.reason for r in unknown.rejections]) == (0, ["unknown_format"])
    assert (entry.format, entry.traces) == (None, 0)
    # The same file read again with --format: a format it was never read with.
    forced = import_paths(engine, [path], format_name="openai_chat")
    assert (forced.files_unchanged, forced.rejected) == (0, 1)
