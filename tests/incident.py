"""An incident to review: three small OpenAI-chat traces imported through the real pipeline.

``incident-1`` (support-bot, gpt-4o): ``lookup_order`` fails three times with the identical call
(the first error advises ``search_orders``: ignored), then ``send_email`` gets no result; the
user message and the final answer carry markup and URLs that a report must only show as text.
Severity 8 = 3 errors + 1 pairing problem (missing result) + 3 loop calls + 1 ignored advice.
``clean-2``: one successful call, no problem. ``orphan-3`` (mail-bot, gpt-4o-mini): a result
answering no call (severity 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, select

from db.schema import ToolResultRow, TraceRow
from ingest.importing.pipeline import import_paths

UNTRUSTED_USER = "Cancel order 7 <script>alert('x')</script> see https://evil.example/x.png"
UNTRUSTED_ANSWER = "Done! <img src=https://evil.example/pixel.gif> ```"
ADVICE = "Error: order 7 not found. Use search_orders instead."


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": orjson.dumps(arguments).decode()},
    }


def _assistant_calls(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [_call(call_id, name, arguments)]}


def incident_traces() -> list[dict[str, Any]]:
    """The three conversations, as OpenAI-chat objects."""
    order = {"id": 7}
    incident = [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": UNTRUSTED_USER},
        _assistant_calls("c1", "lookup_order", order),
        {"role": "tool", "tool_call_id": "c1", "content": ADVICE},
        _assistant_calls("c2", "lookup_order", order),
        {"role": "tool", "tool_call_id": "c2", "content": "Error: order 7 not found."},
        _assistant_calls("c3", "lookup_order", order),
        {"role": "tool", "tool_call_id": "c3", "content": "Error: order 7 not found."},
        _assistant_calls("c4", "send_email", {"to": "a@b.c"}),
        {"role": "assistant", "content": UNTRUSTED_ANSWER},
    ]
    clean = [
        {"role": "user", "content": "Weather in Paris?"},
        _assistant_calls("w1", "get_weather", {"city": "Paris"}),
        {"role": "tool", "tool_call_id": "w1", "content": '{"temp": 12}'},
        {"role": "assistant", "content": "12 degrees."},
    ]
    orphan = [
        {"role": "user", "content": "Send it"},
        {"role": "tool", "tool_call_id": "zz", "content": "sent"},
        {"role": "assistant", "content": "Sent."},
    ]
    return [
        {"id": "incident-1", "model": "gpt-4o", "agent": "support-bot", "messages": incident},
        {"id": "clean-2", "model": "gpt-4o", "agent": "support-bot", "messages": clean},
        {"id": "orphan-3", "model": "gpt-4o-mini", "agent": "mail-bot", "messages": orphan},
    ]


def incident_bytes() -> bytes:
    """The incident as a JSONL file's content."""
    return b"".join(orjson.dumps(t) + b"\n" for t in incident_traces())


def import_incident(engine: Engine, folder: Path) -> dict[str, int]:
    """Write ``runs.jsonl`` into ``folder``, import it; returns trace ids by display id."""
    path = folder / "runs.jsonl"
    path.write_bytes(incident_bytes())
    import_paths(engine, [path], workers=0)
    with engine.connect() as conn:
        return {d: i for i, d in conn.execute(select(TraceRow.id, TraceRow.display_id))}


def result_id(engine: Engine, trace_id: int, message_seq: int) -> int:
    """The id of the tool result stored at ``message_seq`` of a trace."""
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(ToolResultRow.id).where(
                    ToolResultRow.trace_id == trace_id, ToolResultRow.message_seq == message_seq
                )
            ).scalar_one()
        )
