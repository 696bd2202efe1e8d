"""Render scenario conversations as trace files in three formats.

* ``openai_chat.jsonl``: one ``{"id", "model", "tools", "messages"}`` object per line, messages in
  the Chat Completions shape (arguments as JSON strings, ``role: "tool"`` results with
  ``tool_call_id`` and ``name``).
* ``anthropic.jsonl``: one ``{"id", "model", "tools", "system", "messages"}`` object per line;
  ``tool_use`` blocks in assistant messages, ``tool_result`` blocks (only those) in user messages,
  ``is_error: true`` on explicitly flagged errors.
* ``langchain.json``: a JSON array of LangGraph states ``{"id", "messages"}`` whose messages are
  ``messages_to_dict`` items (``{"type": "human|ai|tool|system", "data": {…}}``); every error
  ToolMessage has ``status: "error"`` (LangChain always states a status).

Every message object carries an ISO-8601 ``timestamp`` key (inside ``data`` for LangChain), the
one non-standard field, so that timing rules (``retry after 6s``) can be checked. Output is
byte-for-byte deterministic: no clocks, no set iteration, orjson with fixed key order.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from ingest.scenarios.agent import TOOLS, Conversation, Event, Result

MODELS = {
    "openai_chat": "gpt-4o-2024-08-06",
    "anthropic": "claude-sonnet-4-20250514",
    "langchain": "gpt-4o-mini-2024-07-18",
}
FILE_NAMES = {
    "openai_chat": "openai_chat.jsonl",
    "anthropic": "anthropic.jsonl",
    "langchain": "langchain.json",
}


@dataclass(slots=True)
class Rendered:
    """A conversation placed in a format, with its trace id and start time."""

    trace_id: str
    fmt: str
    conv: Conversation
    started_at: datetime

    def stamp(self, event: Event) -> str:
        """The ISO-8601 UTC timestamp of ``event``."""
        moment = self.started_at + timedelta(seconds=event.at)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _openai_message(item: Rendered, event: Event) -> dict[str, Any]:
    message: dict[str, Any] = {"role": event.role}
    if event.result is not None:
        result = event.result
        message |= {"tool_call_id": result.result_id, "name": result.name}
        message["content"] = result.outcome.content
    elif event.role == "assistant":
        message["content"] = event.text or None
        if event.calls:
            message["tool_calls"] = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.tool, "arguments": c.arguments_text()},
                }
                for c in event.calls
            ]
    else:
        message["content"] = event.text
    message["timestamp"] = item.stamp(event)
    return message


def openai_trace(item: Rendered) -> dict[str, Any]:
    """One OpenAI Chat Completions conversation object."""
    return {
        "id": item.trace_id,
        "model": MODELS["openai_chat"],
        "tools": [
            {
                "type": "function",
                "function": {"name": name, "description": doc, "parameters": schema},
            }
            for name, (doc, schema) in TOOLS.items()
        ],
        "messages": [_openai_message(item, e) for e in item.conv.events],
    }


def _tool_result_block(result: Result) -> dict[str, Any]:
    outcome = result.outcome
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.result_id}
    # Successful JSON results use the list-of-text-blocks form the SDK examples use; the rest
    # use a plain string, so both shapes appear in the demo data.
    if outcome.status == "success" and outcome.content.startswith("{"):
        block["content"] = [{"type": "text", "text": outcome.content}]
    else:
        block["content"] = outcome.content
    if outcome.channel in ("flagged", "explicit_only"):
        block["is_error"] = True
    return block


def anthropic_trace(item: Rendered) -> dict[str, Any]:
    """One Anthropic Messages conversation object; consecutive results share a user message
    (whose timestamp is that of its first result)."""
    events = item.conv.events
    system = next((e.text for e in events if e.role == "system"), None)
    messages: list[dict[str, Any]] = []
    collecting_results = False
    for event in events:
        if event.role == "system":
            continue
        if event.result is not None:
            if collecting_results:
                messages[-1]["content"].append(_tool_result_block(event.result))
                continue
            message: dict[str, Any] = {
                "role": "user",
                "content": [_tool_result_block(event.result)],
            }
        elif event.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if event.text:
                blocks.append({"type": "text", "text": event.text})
            blocks.extend(
                {"type": "tool_use", "id": c.call_id, "name": c.tool, "input": c.args}
                for c in event.calls
            )
            message = {"role": "assistant", "content": blocks}
        else:
            message = {"role": "user", "content": event.text}
        collecting_results = event.result is not None
        message["timestamp"] = item.stamp(event)
        messages.append(message)
    return {
        "id": item.trace_id,
        "model": MODELS["anthropic"],
        "tools": [
            {"name": name, "description": doc, "input_schema": schema}
            for name, (doc, schema) in TOOLS.items()
        ],
        "system": system,
        "messages": messages,
    }


_LC_TYPES = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}


def _langchain_message(item: Rendered, event: Event, rng: random.Random) -> dict[str, Any]:
    data: dict[str, Any] = {
        "content": event.text,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": _LC_TYPES[event.role],
        "name": None,
        "id": None,
    }
    if event.result is not None:
        result = event.result
        data |= {
            "content": result.outcome.content,
            "name": result.name,
            "tool_call_id": result.result_id,
            "artifact": None,
            "status": "error" if result.outcome.status == "error" else "success",
        }
    elif event.role == "assistant":
        data["response_metadata"] = {
            "model_name": MODELS["langchain"],
            "finish_reason": "tool_calls" if event.calls else "stop",
        }
        data["id"] = f"run-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
        data |= {
            "example": False,
            "tool_calls": [
                {"name": c.tool, "args": c.args, "id": c.call_id, "type": "tool_call"}
                for c in event.calls
            ],
            "invalid_tool_calls": [],
            "usage_metadata": None,
        }
    elif event.role == "user":
        data["example"] = False
    data["timestamp"] = item.stamp(event)
    return {"type": data["type"], "data": data}


def langchain_state(item: Rendered) -> dict[str, Any]:
    """One LangGraph state: ``{"id", "messages": [messages_to_dict items]}``."""
    rng = random.Random(f"langchain:{item.trace_id}")
    return {
        "id": item.trace_id,
        "messages": [_langchain_message(item, e, rng) for e in item.conv.events],
    }


def write_jsonl(path: Path, objects: Sequence[dict[str, Any]]) -> None:
    """One compact JSON object per line."""
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objects))


def write_json_array(path: Path, objects: Sequence[dict[str, Any]]) -> None:
    """A JSON array with one item per line (streamable, and readable in a diff)."""
    body = b",\n".join(orjson.dumps(o) for o in objects)
    path.write_bytes(b"[\n" + body + (b"\n" if objects else b"") + b"]\n")


def write_format(out_dir: Path, fmt: str, items: Sequence[Rendered]) -> Path:
    """Write the traces of one format to its file in ``out_dir``; returns the file's path."""
    path = out_dir / FILE_NAMES[fmt]
    if fmt == "openai_chat":
        write_jsonl(path, [openai_trace(i) for i in items])
    elif fmt == "anthropic":
        write_jsonl(path, [anthropic_trace(i) for i in items])
    elif fmt == "langchain":
        write_json_array(path, [langchain_state(i) for i in items])
    else:
        raise ValueError(f"no writer for format {fmt!r}")
    return path
