"""Shared by the format parser tests: golden cases, records cut from files, parse shortcuts,
and the OpenAI chat messages of a tool call and its result that the import tests write.

Golden files live in ``tests/golden/<format>/<case>/``: a hand-written ``input.json(l)`` and the
canonical output ``expected.json`` (traces without ``Message.raw``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ingest import formats
from ingest.input.records import Record
from ingest.model import Rejected, Trace

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_CASES = sorted(path.parent for path in GOLDEN.glob("*/*/input.json*"))

# ---------------------------------------------------------------------------------------------
# Records, built here until tests can rely on ingest.input.jsonstream: a JSONL line, a top-level
# array item or the whole document, each with the 1-based line where it starts.

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]', re.DOTALL)


def _array_item_spans(data: bytes) -> list[tuple[int, int]]:
    """Byte spans of the object/array/string items of a top-level JSON array."""
    spans: list[tuple[int, int]] = []
    depth, start, end = 0, -1, -1
    for match in _TOKENS.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            if depth == 1 and start < 0:
                start = match.start()
            depth += 1
        elif token in (b"]", b"}"):
            depth -= 1
            end = match.end() if depth == 1 else end
            if depth == 0 and start >= 0:
                spans.append((start, end))
        elif token == b",":
            if depth == 1 and start >= 0:
                spans.append((start, end))
                start = -1
        elif depth == 1:
            start, end = (match.start() if start < 0 else start), match.end()
    return spans


def chat_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """An OpenAI chat assistant message that makes one tool call and says nothing else."""
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def chat_result(call_id: str, content: str) -> dict[str, Any]:
    """An OpenAI chat Tool Message answering ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def records_of(path: Path, name: str | None = None) -> Iterator[Record | Rejected]:
    """The records of a trace file, as ``ingest.input.jsonstream`` cuts them."""
    data, name = path.read_bytes(), name or path.name
    body = data.lstrip()
    if path.suffix == ".jsonl":
        offset = 0
        for number, line in enumerate(data.splitlines(keepends=True), start=1):
            raw = line.strip()
            if raw:
                yield _record(name, number, offset, raw)
            offset += len(line)
    elif body.startswith(b"["):
        for start, end in _array_item_spans(data):
            yield _record(name, data.count(b"\n", 0, start) + 1, start, data[start:end])
    else:
        start = len(data) - len(body)
        yield _record(name, data.count(b"\n", 0, start) + 1, start, body.rstrip())


def _record(name: str, line: int, offset: int, raw: bytes) -> Record | Rejected:
    try:
        return Record(name, line, offset, raw, orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        return Rejected(
            source_file=name,
            line=line,
            byte_offset=offset,
            reason="malformed_json",
            message=str(exc),
            raw=raw,
        )


def recs(*values: Any, name: str = "t.jsonl") -> list[Record | Rejected]:
    """In-memory records, one per value, on lines 1, 2, …"""
    return [Record(name, i, 0, orjson.dumps(v), v) for i, v in enumerate(values, start=1)]


def parse(fmt: str, records: list[Record | Rejected]) -> list[Trace | Rejected]:
    """Everything the ``fmt`` parser yields for ``records``."""
    return list(formats.get_format(fmt).parse(iter(records), "t.jsonl"))


def only_trace(items: list[Trace | Rejected]) -> Trace:
    """The one trace of ``items``; fails when there is anything else."""
    assert len(items) == 1 and isinstance(items[0], Trace), items
    return items[0]


def rejections(items: list[Trace | Rejected]) -> list[tuple[int, str, str]]:
    """(line, reason, message) of every rejection among ``items``."""
    return [(r.line, r.reason, r.message) for r in items if isinstance(r, Rejected)]


def golden_dump(traces: list[Trace]) -> list[dict[str, Any]]:
    """Traces as stored in ``expected.json``: JSON-ready, without ``Message.raw``."""
    return [t.model_dump(mode="json", exclude={"messages": {"__all__": {"raw"}}}) for t in traces]


def accounted(items: list[Trace | Rejected]) -> int:
    """Records accounted for: consumed by traces plus rejected."""
    return sum(i.record_count if isinstance(i, Trace) else 1 for i in items)
