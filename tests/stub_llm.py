"""A scripted OpenAI-compatible chat server for the live instrumentation tests.

``POST /v1/chat/completions`` answers from a script, one reply per request: first a tool call
(:data:`CALL_ID`, :data:`TOOL`, :data:`ARGUMENTS`), then the final answer :data:`ANSWER`. The
requests it received are kept, so a test can check what the client sent back.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

MODEL = "stub-gpt"
CALL_ID = "call_stub_7Qx2"
TOOL = "get_weather"
ARGUMENTS = '{"city": "Paris"}'
ANSWER = "It is rainy in Paris."


def _completion(number: int, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-stub-{number}",
        "object": "chat.completion",
        "created": 1_767_607_200,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 20 + number,
            "completion_tokens": 5,
            "total_tokens": 25 + number,
        },
    }


SCRIPT = [
    _completion(
        1,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": CALL_ID,
                    "type": "function",
                    "function": {"name": TOOL, "arguments": ARGUMENTS},
                }
            ],
        },
        "tool_calls",
    ),
    _completion(2, {"role": "assistant", "content": ANSWER}, "stop"),
]


@dataclass
class StubLLM:
    """The running stub: its base URL and the request bodies it received."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


def _app(stub: StubLLM) -> Starlette:
    async def completions(request: Request) -> JSONResponse:
        stub.requests.append(await request.json())
        return JSONResponse(SCRIPT[min(len(stub.requests), len(SCRIPT)) - 1])

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


@contextmanager
def stub_llm() -> Iterator[StubLLM]:
    """The stub served on a free loopback port until the block ends."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    stub = StubLLM(f"http://127.0.0.1:{port}/v1")
    config = uvicorn.Config(_app(stub), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield stub
    finally:
        server.should_exit = True
        thread.join(10)
