"""Two hand-made traces for tool execution times and error streaks (worked out by hand).

``build-1`` (times from message timestamps, T0 = 2026-11-01 10:00:00 UTC):

=====  =========  ===========================================  ==============  ===========
call   tool       result                                       call → result   duration
=====  =========  ===========================================  ==============  ===========
1:0    run        Error: build failed in 'src/a.ts' at line 12  +1 s → +3.5 s   2500 ms
3:0    run        Error: build failed in 'src/b.ts' at line 40  +4 s → +5.25 s  1250 ms
3:1    read_file  export const a = 1;                          +4 s → +5 s     1000 ms
6:0    run        Error: build failed in 'src/c.ts' at line 7   +6 s → +6.75 s  750 ms
8:0    run        a.ts b.ts                                    +8 s → +7.5 s   −500 ms
10:0   run        done                                         +9 s → no time  missing
=====  =========  ===========================================  ==============  ===========

``run``'s calls 1:0, 3:0, 6:0 are consecutive calls of that tool (``read_file`` in between does
not count) whose results share the fingerprint ``run: Error: build failed in '…' at line #``
with three different arguments: one streak of 3, wasted time 1250 + 750 = 2000 ms; 8:0
succeeds and ends it.

``search-2``: one ``search`` call whose result carries a span duration of 300.25 ms (the
timestamps, 10 s apart, give way to it).

Timed durations: run [750, 1250, 2500], read_file [1000], search [300.25]; nearest rank:
run p50 = rank ⌈1.5⌉ = 2 → 1250, p95 = rank ⌈2.85⌉ = 3 → 2500; overall [300.25, 750, 1000,
1250, 2500]: p50 = rank 3 → 1000, p95 = rank ⌈4.75⌉ = 5 → 2500. One negative, one missing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson

from ingest.model import Message, ToolCall, ToolResult, Trace

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
ERRORS = {
    1: "Error: build failed in 'src/a.ts' at line 12",
    4: "Error: build failed in 'src/b.ts' at line 40",
    7: "Error: build failed in 'src/c.ts' at line 7",
}
RUN_ARGS = {
    1: '{"cmd": "npm test"}',
    3: '{"cmd": "npm test -- --fix"}',
    6: '{"cmd": "npm run build"}',
}


def _at(seconds: float | None) -> datetime | None:
    return None if seconds is None else T0 + timedelta(seconds=seconds)


def _call(call_id: str, name: str, raw: str, index: int = 0) -> ToolCall:
    return ToolCall(
        call_index=index,
        tool_call_id=call_id,
        name=name,
        arguments_raw=raw,
        arguments=orjson.loads(raw),
    )


def _ask(seq: int, at: float, *calls: ToolCall) -> Message:
    return Message(seq=seq, role="assistant", timestamp=_at(at), tool_calls=list(calls))


def _answer(
    seq: int, call_id: str, content: str, at: float | None, span: float | None = None
) -> Message:
    return Message(
        seq=seq,
        role="tool",
        content=content,
        timestamp=_at(at),
        tool_result=ToolResult(tool_call_id=call_id, duration_ms=span),
    )


def _timing_trace(external_id: str, task: str, *messages: Message) -> Trace:
    """A trace of ``timing.jsonl``: the user asks for ``task`` at :data:`T0`, then
    ``messages``."""
    return Trace(
        format="openai_chat",
        source_file="timing.jsonl",
        external_id=external_id,
        messages=[Message(seq=0, role="user", content=task, timestamp=T0), *messages],
    )


def build_trace() -> Trace:
    """``build-1`` (see the module docstring)."""
    return _timing_trace(
        "build-1",
        "Fix the build",
        _ask(1, 1, _call("c1", "run", RUN_ARGS[1])),
        _answer(2, "c1", ERRORS[1], 3.5),
        _ask(
            3,
            4,
            _call("c2", "run", RUN_ARGS[3]),
            _call("c3", "read_file", '{"path": "src/a.ts"}', index=1),
        ),
        _answer(4, "c2", ERRORS[4], 5.25),
        _answer(5, "c3", "export const a = 1;", 5),
        _ask(6, 6, _call("c4", "run", RUN_ARGS[6])),
        _answer(7, "c4", ERRORS[7], 6.75),
        _ask(8, 8, _call("c5", "run", '{"cmd": "ls"}')),
        _answer(9, "c5", "a.ts b.ts", 7.5),
        _ask(10, 9, _call("c6", "run", '{"cmd": "echo ok"}')),
        _answer(11, "c6", "done", None),
    )


def search_trace() -> Trace:
    """``search-2`` (see the module docstring)."""
    return _timing_trace(
        "search-2",
        "Find the docs",
        _ask(1, 0, _call("s1", "search", '{"q": "docs"}')),
        _answer(2, "s1", "3 hits", 10, span=300.25),
    )
