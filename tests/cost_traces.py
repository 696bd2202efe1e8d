"""Generated traces with known sizes, usage, caching and a compaction, for the cost tests
(``ingest.analysis.costs``): the model calls and Tool Messages they are built of, and three
stored traces (measured with usage on Claude Sonnet 4.5, estimated on GPT-4o, and a model
without a price)."""

from __future__ import annotations

from typing import Any

from ingest.model import Message, ToolCall, ToolResult, Trace


def call(seq: int, name: str, usage: dict[str, Any] | None = None, **more: Any) -> Message:
    """A model call at ``seq`` calling ``name`` (call id ``c<seq>``), with its ``usage``."""
    return Message(
        seq=seq,
        role="assistant",
        usage=usage,
        tool_calls=[ToolCall(call_index=0, tool_call_id=f"c{seq}", name=name, arguments={})],
        **more,
    )


def tool(seq: int, call_seq: int, name: str, **more: Any) -> Message:
    """The Tool Message at ``seq`` answering the call at ``call_seq``."""
    return Message(
        seq=seq,
        role="tool",
        content="ok",
        tool_result=ToolResult(tool_call_id=f"c{call_seq}", name=name),
        **more,
    )


def say(seq: int, usage: dict[str, Any] | None = None, **more: Any) -> Message:
    """A model call at ``seq`` that only answers."""
    return Message(seq=seq, role="assistant", content="done", usage=usage, **more)


def anthropic(fresh: int, read: int = 0, written: int = 0) -> dict[str, int]:
    """Anthropic usage: ``fresh`` input tokens, ``read`` from the cache, ``written`` to it."""
    return {
        "input_tokens": fresh,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "output_tokens": 10,
    }


def measured_session(first_read: dict[str, int]) -> list[Message]:
    """Four Tool Messages; the model calls' inputs are 5,000, 6,500 (6,000 cached), 7,000
    (6,000 cached), then 3,000: a compaction."""
    return [
        Message(seq=0, role="user", content="task"),
        call(1, "a", anthropic(3990)),
        tool(2, 1, "a"),
        call(3, "b", first_read),
        tool(4, 3, "b"),
        call(5, "c", anthropic(500, read=6000)),
        tool(6, 5, "c"),
        call(7, "d", anthropic(1000, read=6000)),
        tool(8, 7, "d"),
        say(9, anthropic(3000)),
    ]


#: Tokens of each message of :func:`measured_session`: Tool Messages of 1,000, 1,200, 300, 200.
MEASURED_TOKENS = [3000, 0, 1000, 0, 1200, 0, 300, 0, 200, 5]


def sized(message: Message, n: int) -> Message:
    """``message`` with a text of exactly ``n`` tokens (``cat`` is one token, with its space)."""
    return message.model_copy(update={"content": " ".join(["cat"] * n)})


def stored_traces() -> list[Trace]:
    """``measured`` (Claude Sonnet 4.5, :func:`measured_session` with Tool Messages of 1,000,
    1,200, 300 and 200 tokens), ``estimated`` (GPT-4o, no usage: Tool Messages of 100 and 40
    tokens read by three and two turns) and ``unpriced`` (a model without a price: one of 70
    tokens read by two turns)."""
    measured = measured_session(anthropic(5000))
    for seq, n in ((2, 1000), (4, 1200), (6, 300), (8, 200)):
        measured[seq] = sized(measured[seq], n)
    estimated = [
        Message(seq=0, role="user", content="task"),
        call(1, "search"),
        sized(tool(2, 1, "search"), 100),
        call(3, "fetch"),
        sized(tool(4, 3, "fetch"), 40),
        say(5),
        Message(seq=6, role="user", content="thanks"),
        say(7),
    ]
    unpriced = [call(0, "search"), sized(tool(1, 0, "search"), 70), say(2)]
    unpriced += [Message(seq=3, role="user", content="go on"), say(4)]
    return [
        Trace(format="test", source_file="m.jsonl", external_id="measured",
              model="claude-sonnet-4-5-20250929", messages=measured),
        Trace(format="test", source_file="e.jsonl", external_id="estimated",
              model="gpt-4o-2024-08-06", messages=estimated),
        Trace(format="test", source_file="u.jsonl", external_id="unpriced",
              model="some-inhouse-model", messages=unpriced),
    ]  # fmt: skip
