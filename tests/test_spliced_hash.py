"""The content hash of a grown trace, spliced from its stored messages' shares
(``ingest.model.SplicedHash``), is ``content_hash`` of the whole trace; and on SQLite the stored
JSON text of every message's raw payload is the very share ``content_hash`` hashes (so an
appended session's hash needs no payload decoded)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from formats_helpers import GOLDEN_CASES, records_of

from db.writes import append
from db.writes.append import load_append_base, raw_members
from ingest import formats
from ingest.importing.pipeline import import_paths
from ingest.importing.rebuild import trace_from_stored
from ingest.model import (
    Message,
    SplicedHash,
    ToolDef,
    Trace,
    canonical_json,
    content_hash,
    message_hash_part,
)

SESSION = Path(__file__).parent / "golden/claude_code/session/input.jsonl"


def golden_traces() -> list[Trace]:
    traces = []
    for case in GOLDEN_CASES:
        source = next(case.glob("input.json*"))
        parsed = formats.get_format(case.parent.name).parse(records_of(source), source.name)
        traces.extend(t for t in parsed if isinstance(t, Trace))
    return traces


def parts(messages: list[Message]) -> list[tuple[bytes, bytes]]:
    return [message_hash_part(m.role, m.content, canonical_json(m.raw)) for m in messages]


def odd_trace() -> Trace:
    """Tools, metadata with nested and non-string keys, payloads holding values JSON has no
    type for (dumped with ``str``) and no payload at all."""
    stamp = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return Trace(
        format="x",
        source_file="a.jsonl",
        metadata={"b": {2: "two", "a": [1.5, None]}, "a": "é\u2028"},
        tools=[ToolDef(name="t", description="d", parameters={"z": 1, "a": {"y": True}})],
        messages=[
            Message(seq=0, role="user", content='say "hi"\n', raw={"z": stamp, "a": [{"b": 1}]}),
            Message(seq=1, role="assistant", content="", raw=None),
            Message(seq=2, role="tool", content="ok", raw=["x", {"k": 1}]),
        ],
    )


@pytest.mark.parametrize("trace", [*golden_traces(), odd_trace()], ids=lambda t: t.source_file)
def test_a_spliced_hash_is_the_content_hash_at_every_split(trace: Trace) -> None:
    expected = content_hash(trace)
    assert len(expected) == 64
    every = parts(trace.messages)
    for split in range(len(trace.messages) + 1):
        spliced = SplicedHash(every[:split])
        assert spliced.digest(trace.metadata, every[split:], trace.tools) == expected
    # Another version's metadata (a summary line appended) hashes the shared parts again.
    other = trace.model_copy(update={"metadata": {**trace.metadata, "summaries": ["s"]}})
    assert SplicedHash(every).digest(other.metadata, (), other.tools) == content_hash(other)
    assert SplicedHash(every).digest(trace.metadata, (), trace.tools) == expected


def test_the_hash_of_an_empty_trace_splices_too() -> None:
    empty = Trace(format="x", source_file="a", metadata={"k": 1})
    assert SplicedHash([]).digest(empty.metadata) == content_hash(empty)


def test_sqlite_stores_each_payload_as_the_text_the_content_hash_hashes(
    engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(SESSION.read_bytes())
    import_paths(engine, [path])
    base = load_append_base(engine, "claude_code", str(path))
    assert base is not None
    stored, _ = trace_from_stored(base.stored)
    assert all(m.raw is None for m in stored.messages)  # the payloads were not read back
    assert len(base.raw_json) == len(stored.messages) == 9
    as_stored = [
        message_hash_part(m.role, m.content, b"null" if text is None else text)
        for m, text in zip(stored.messages, base.raw_json, strict=True)
    ]
    digest = SplicedHash(as_stored).digest(stored.metadata, (), stored.tools)
    # PostgreSQL's JSONB renders its own way: there the payloads are decoded instead.
    assert (digest == base.stored.trace.content_hash) == (engine.dialect.name == "sqlite")
    # Only the members asked for leave the database: the sidechain line's uuid.
    branches = [m.seq for m in stored.messages if m.branch is not None]
    assert branches == [7]
    assert raw_members(engine, base.stored.id, "uuid", branches) == {7: "a-4"}
    monkeypatch.setattr(append, "IN_LIST_MAX", 2)  # more seqs than that: all read, some kept
    assert raw_members(engine, base.stored.id, "uuid", [0, 7, 8]) == {0: "u-1", 7: "a-4", 8: "u-4"}
    everyone = raw_members(engine, base.stored.id, "uuid")
    lines = ["u-1", "a-1", "a-2", "a-3", "u-2", "u-3", "s-1", "a-4", "u-4"]
    assert everyone == dict(enumerate(lines))
    with pytest.raises(ValueError, match="not an identifier"):
        raw_members(engine, base.stored.id, "a.b")
