"""A session that grew is updated by adding what was appended (``ingest.importing.appending``,
``db.writes.append``), and the store then holds exactly what a fresh import of the whole file
stores: trace row, messages, calls, results, findings and the content search, on both databases."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from db.contract.rows import FindingRecord, MessageRecord, ToolCallRecord, ToolResultRecord
from db.engine import make_engine
from db.queries.search import search_content
from db.schema import (
    AnnotationRow,
    FindingRow,
    MessageRow,
    ToolCallRow,
    ToolResultRow,
    TraceRow,
    TraceUpdate,
)
from db.writes.annotations import add_annotation
from ingest.analysis.tokens import count_tokens
from ingest.importing.pipeline import import_paths

GOLDEN = Path(__file__).parent / "golden"
SESSION = (GOLDEN / "claude_code/session/input.jsonl").read_bytes().splitlines()
#: Trace columns that say when and by which import a version was written, not what it is.
_WHEN = {"id", "import_id", "imported_at", "version"}


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


def grown_session() -> list[bytes]:
    """The golden session, then lines that reach back into it: a second line of the split
    ``msg_A`` (its usage grows; its tool call numbering goes on), a result answering the
    sidechain's call, a sidechain line under the stored sidechain, a secret to redact, a
    new call that errs, and a line of no known type."""
    base = json.loads(SESSION[2])
    more_a = {
        **base,
        "uuid": "a-9",
        "parentUuid": "u-4",
        "message": {
            **base["message"],
            "content": [
                {"type": "tool_use", "id": "toolu_late", "name": "Bash", "input": {"cmd": "ls"}}
            ],
            "usage": {"input_tokens": 10, "output_tokens": 999},
        },
    }
    sidechain = json.loads(SESSION[8])
    side_more = {
        **sidechain,
        "uuid": "side-2",
        "parentUuid": sidechain["uuid"],
        "message": {**sidechain["message"], "id": "msg_C", "content": "sub-agent done"},
    }
    user = json.loads(SESSION[5])

    def result(uuid: str, call_id: str, text: str, error: bool = False) -> bytes:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        if error:
            block["is_error"] = True
        return _line({**user, "uuid": uuid, "message": {"role": "user", "content": [block]}})

    secret = "AKIAIOSFODNN7EXAMPLE"
    return [
        *SESSION,
        _line(more_a),
        result("u-9", "toolu_late", f"total 0\naws_access_key_id={secret}"),
        _line(side_more),
        result("u-10", "toolu_nope", "Error: command not found: frob", error=True),
        _line({"type": "queue-operation", "sessionId": "sess-42", "content": "x"}),
        b'{"type": "user", "sessionId": "sess-42"}',
    ]


def dump(engine: sa.Engine) -> dict[str, Any]:
    """Everything stored about the traces, without row ids and import bookkeeping."""

    def rows(model: Any, fields: tuple[str, ...], order: tuple[str, ...]) -> list[Any]:
        table, traces = model.__table__, TraceRow.__table__
        key = traces.c.dedupe_key
        stmt = sa.select(*[table.c[f] for f in fields])
        if model is not TraceRow:  # child rows: by their trace's identity, not its id
            stmt = sa.select(key, *[table.c[f] for f in fields]).join(
                traces, traces.c.id == table.c.trace_id
            )
        with engine.connect() as conn:
            found = conn.execute(stmt.order_by(key, *[table.c[o] for o in order])).all()
        return [tuple(r) for r in found]

    trace_fields = tuple(c.name for c in TraceRow.__table__.columns if c.name not in _WHEN)
    assert "content_hash" in trace_fields and "metadata" in trace_fields
    return {
        "traces": rows(TraceRow, trace_fields, ("dedupe_key",)),
        "messages": rows(MessageRow, MessageRecord._fields, ("seq",)),
        "calls": rows(ToolCallRow, ToolCallRecord._fields, ("message_seq", "call_index")),
        "results": rows(ToolResultRow, ToolResultRecord._fields, ("message_seq",)),
        "findings": sorted(rows(FindingRow, FindingRecord._fields, ("message_seq",)), key=repr),
    }


def search_hits(engine: sa.Engine, words: str) -> list[tuple[Any, ...]]:
    page = search_content(engine, words)
    return sorted(
        tuple(v for k, v in row.items() if not k.endswith("id"))
        for row in page.hits.to_dict("records")
    )


def fts_rows(engine: sa.Engine) -> tuple[int, int] | None:
    """SQLite: the rows each content search index holds, after FTS5's own check that the index
    agrees with its table; ``None`` on PostgreSQL (the index follows the table)."""
    if engine.dialect.name != "sqlite":
        return None
    with engine.begin() as conn:
        counts = []
        for table in ("messages_search", "tool_calls_search"):
            conn.exec_driver_sql(
                f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
            )
            counts.append(
                conn.exec_driver_sql(f"SELECT count(*) FROM {table}_docsize").scalar_one()
            )
    return counts[0], counts[1]


@pytest.fixture
def fresh_engine(db_url: str, tmp_path: Path) -> Iterator[sa.Engine]:
    """A second, empty store on the same database kind, for the fresh import."""
    if db_url.startswith("sqlite"):
        engine = make_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
        yield engine
        engine.dispose()
        return
    url = sa.engine.make_url(db_url)
    schema = url.query["options"].removeprefix("-csearch_path=") + "_fresh"
    admin = sa.create_engine(url.difference_update_query(["options"]))
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(
        url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
            hide_password=False
        )
    )
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


@pytest.mark.parametrize("split", [2, 3, 5, 8, 9, 11, 13, 15])
def test_a_grown_session_stores_what_a_fresh_import_stores(
    engine: sa.Engine, fresh_engine: sa.Engine, tmp_path: Path, split: int
) -> None:
    lines = grown_session()
    path = write(tmp_path / "session.jsonl", lines[:split])
    import_paths(engine, [path], display_names=["session.jsonl"])
    write(path, lines)
    grown = import_paths(engine, [path], display_names=["session.jsonl"])
    assert (grown.traces, grown.updated, grown.unchanged, grown.rejected) == (0, 1, 0, 1)
    assert grown.records == len(lines) == 17
    assert grown.by_file["session.jsonl"].balanced()
    fresh = import_paths(fresh_engine, [path], display_names=["session.jsonl"])
    assert (fresh.traces, fresh.rejected) == (1, 1)
    # The update wrote only the appended messages (and the stored ones that changed).
    assert grown.messages < fresh.messages == 13
    assert dump(engine) == dump(fresh_engine)
    assert fts_rows(engine) == fts_rows(fresh_engine)
    for words in ("command not found", "sub-agent done", "REDACTED", "flaky"):
        assert search_hits(engine, words) == search_hits(fresh_engine, words)
    assert grown.unknown_items == fresh.unknown_items == {}


def test_the_append_path_writes_only_the_new_messages(engine: sa.Engine, tmp_path: Path) -> None:
    lines = grown_session()
    path = write(tmp_path / "session.jsonl", lines[:11])
    import_paths(engine, [path])
    with engine.connect() as conn:
        before = dict(conn.execute(sa.select(MessageRow.seq, MessageRow.id)).all())
    write(path, lines)
    summary = import_paths(engine, [path])
    with engine.connect() as conn:
        after = dict(conn.execute(sa.select(MessageRow.seq, MessageRow.id)).all())
        update = conn.execute(
            sa.select(TraceUpdate.old_messages, TraceUpdate.new_messages, TraceUpdate.source_file)
        ).one()
        version = conn.execute(sa.select(TraceRow.version)).scalar_one()
    # The stored messages kept their rows (and their place in the content search).
    assert {seq: after[seq] for seq in before} == before
    assert (len(before), len(after)) == (9, 13)
    assert tuple(update) == (9, 13, str(path))
    assert version == 2
    # Only the rows written count as messages of the import.
    assert summary.messages == 5  # 4 new messages and msg_A's first line (its usage grew)


def test_a_note_follows_its_pair_into_the_grown_session(engine: sa.Engine, tmp_path: Path) -> None:
    lines = grown_session()
    path = write(tmp_path / "session.jsonl", lines[:11])
    import_paths(engine, [path])
    with engine.connect() as conn:
        trace_id, seq, index = conn.execute(
            sa.select(ToolCallRow.trace_id, ToolCallRow.message_seq, ToolCallRow.call_index)
            .order_by(ToolCallRow.message_seq)
            .limit(1)
        ).one()
    add_annotation(
        engine,
        trace_id,
        label="tool-bug",
        note="first call",
        author="ana",
        message_seq=seq,
        call_index=index,
    )
    write(path, lines)
    assert import_paths(engine, [path]).updated == 1
    with engine.connect() as conn:
        note = conn.execute(
            sa.select(AnnotationRow.message_seq, AnnotationRow.call_index, AnnotationRow.stale)
        ).one()
    assert tuple(note) == (seq, index, False)


def test_real_sessions_grown_line_by_line_store_what_a_fresh_import_stores(
    engine: sa.Engine, fresh_engine: sa.Engine, tmp_path: Path, realdata: Path
) -> None:
    root = realdata / "claude-code"
    for source in sorted(root.glob("*.jsonl")):
        lines = source.read_bytes().splitlines()
        path = tmp_path / source.name
        # Past the first line naming the session: a part of summary lines only is a trace
        # without the session's id (its file and line are its identity), not its first version.
        named = next((n for n, line in enumerate(lines) if b'"sessionId"' in line), None)
        if named is None:
            continue  # summary lines only: nothing to grow
        half = max(len(lines) // 2, named + 1)
        write(path, lines[:half])
        import_paths(engine, [path])
        write(path, lines[: half + 1])
        import_paths(engine, [path])
        write(path, lines)
        whole = import_paths(engine, [path])
        fresh = import_paths(fresh_engine, [path])
        assert (whole.updated, fresh.traces) == (1, 1)
        # Read on top of the stored version: fewer message rows written than the trace holds.
        assert whole.messages < fresh.messages, source.name
    assert dump(engine) == dump(fresh_engine)
    assert fts_rows(engine) == fts_rows(fresh_engine)


def test_an_appended_image_payload_is_counted_as_a_fresh_import_counts_it(
    engine: sa.Engine, fresh_engine: sa.Engine, tmp_path: Path
) -> None:
    # Base64 image data inside a result's text is cut before its tokens are counted
    # (``ingest.analysis.images.countable_text``); an appended line is counted the same way.
    user = json.loads(SESSION[5])
    data = "data:image/png;base64," + "iVBORw0KGgo" * 40
    block = {"type": "tool_result", "tool_use_id": "toolu_img", "content": f"shot: {data}"}
    line = _line({**user, "uuid": "u-img", "message": {"role": "user", "content": [block]}})
    path = write(tmp_path / "session.jsonl", SESSION)
    import_paths(engine, [path], display_names=["session.jsonl"])
    write(path, [*SESSION, line])
    grown = import_paths(engine, [path], display_names=["session.jsonl"])
    assert (grown.updated, grown.messages) == (1, 1)
    import_paths(fresh_engine, [path], display_names=["session.jsonl"])
    assert dump(engine) == dump(fresh_engine)
    tokens = next(m for m in dump(engine)["messages"] if m[1] == 9)[5]
    # The base64 characters are not counted as text.
    assert tokens == count_tokens("shot: data:image/png;base64,") < count_tokens(data)
