"""tau-bench conversations as canonical traces, built by hand (independent of the parsers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ingest.model import Message, ToolCall, ToolResult, Trace

TAU_BENCH = "openai-chat/tau-bench-gpt-4o-airline.json"


def tau_bench_traces(realdata: Path) -> list[Trace]:
    """tau-bench conversations as canonical traces, built by hand from each run's ``traj``."""
    runs: list[dict[str, Any]] = orjson.loads((realdata / TAU_BENCH).read_bytes())
    traces = []
    for run in runs:
        messages = []
        for seq, raw in enumerate(run["traj"]):
            calls = [
                ToolCall(
                    call_index=index,
                    tool_call_id=tc["id"],
                    name=tc["function"]["name"],
                    arguments_raw=tc["function"]["arguments"],
                    arguments=orjson.loads(tc["function"]["arguments"]),
                )
                for index, tc in enumerate(raw.get("tool_calls") or [])
            ]
            tool_result = (
                ToolResult(tool_call_id=raw["tool_call_id"], name=raw.get("name"))
                if raw["role"] == "tool"
                else None
            )
            messages.append(
                Message(
                    seq=seq,
                    role=raw["role"],
                    content=raw.get("content") or "",
                    tool_calls=calls,
                    tool_result=tool_result,
                )
            )
        traces.append(Trace(format="openai_chat", source_file=TAU_BENCH, messages=messages))
    return traces
