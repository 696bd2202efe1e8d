"""Two small OpenAI-chat runs with one finding of most call kinds, for the lint and Findings
tests: an undeclared parameter (open schema), an unexpected one (closed schema), a name mismatch,
an error without advice and a missing result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
        },
    },
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


RUNS = [
    {
        "id": "run-1",
        "tools": [SEARCH, WEATHER],
        "messages": [
            {"role": "user", "content": "Weather in Paris, and flights?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    call("call_a", "search", {"q": "flights", "page": 2}),
                    call("call_b", "get_weather", {"city": "Paris", "country": "FR"}),
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "name": "search", "content": "3 flights"},
            {
                "role": "tool",
                "tool_call_id": "call_b",
                "name": "get_forecast",
                "content": "Error: unknown country FR",
            },
            {"role": "assistant", "content": "Sorry."},
        ],
    },
    {
        "id": "run-2",
        "messages": [
            {"role": "user", "content": "Look up order 7"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1", "lookup", {"id": 7})]},
            {"role": "assistant", "content": "Done."},
        ],
    },
]


def write_runs(path: Path) -> Path:
    """Write :data:`RUNS` as JSONL (one run per line) to ``path``."""
    path.write_text("\n".join(json.dumps(run) for run in RUNS) + "\n", encoding="utf-8")
    return path
