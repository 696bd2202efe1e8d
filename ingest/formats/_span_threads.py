"""One conversation from the LLM calls and tool runs of a span tree.

A tracing export holds no conversation, only snapshots of it: every LLM call sends the history
so far and gets an answer. :func:`assemble` rebuilds the conversation from them:

* **Threads by position.** Message *i* of a call's input is message *i* of its thread; the
  answer follows the input. A later call whose input starts like the thread's last input and is
  at least as long continues the thread, and its copy of a message replaces the older one (an
  answer sent back in the next prompt is the same message, often in a cleaner form). Positions
  a call's input skips (OpenInference attributes drop messages they cannot flatten) keep what
  an earlier call's answer put there. A call whose input starts with a message the thread
  already holds further on (an Assistants-style thread sends only the new messages) continues
  from there; so does a sliding-window prompt (the thread's first messages, then its latest
  ones: an agent that cuts the middle out of a long history), its messages placed where the
  thread holds them. Anything else starts a new thread: another agent, or a sub-agent.
* **Tool runs.** A tool span is *represented* when the conversation already holds its call (same
  call id, else same name) or its result (same id, else same output text, else the first
  unclaimed result after the call before the model speaks again); its error flag and the name or
  id a result lacks are then copied onto that result. When the conversation holds only the call
  (the agent stopped after the tool ran), the run's result is added after it; only the result,
  the run's call is added before it. A run the conversation does not show at all becomes a call
  and its result, inserted at its time in the thread of the last LLM call that started before it.
* Threads follow each other in time; messages of every thread but the first carry the thread's
  label as their ``branch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from db.contract import exact_json
from ingest.analysis.durations import milliseconds
from ingest.formats._span_messages import (
    Key,
    Positioned,
    SourceMessage,
    content_text,
    make_call,
    result_message,
)
from ingest.model import Message, ToolCall


@dataclass(slots=True)
class Source:
    """An LLM call (or a snapshot of a conversation) as a span recorded it."""

    inputs: Positioned
    outputs: list[SourceMessage]
    start: datetime | None
    end: datetime | None
    #: Names the thread when the source starts one (the agent span around the call).
    label: str
    #: Provider usage of the call, put on the first message of its answer.
    usage: dict[str, Any] | None = None
    #: The span's id, the ``source_id`` of the messages of its answer.
    span_id: str | None = None
    #: The ids of the spans it lies under, nearest first (its agent span's is the first):
    #: a thread nests in the thread whose agent span is the nearest of them.
    ancestors: tuple[str, ...] = ()


@dataclass(slots=True)
class ToolRun:
    """A tool execution as a span recorded it."""

    name: str
    call_id: str | None
    arguments: Any
    output: Any
    start: datetime | None
    end: datetime | None
    raw: Any
    #: Explicit failure flag and where it came from (``level``, ``error.type`` …).
    error: bool | None = None
    error_source: str | None = None
    #: The span's id, the ``source_id`` of the call and result messages.
    span_id: str | None = None

    @property
    def duration_ms(self) -> float | None:
        """The span's end − start in milliseconds; ``None`` without both times."""
        if self.start is None or self.end is None:
            return None
        return milliseconds(self.end - self.start)


@dataclass(slots=True)
class _Slot:
    message: SourceMessage
    time: datetime | None


@dataclass(slots=True)
class _Thread:
    label: str
    #: The ids of the spans the thread's first source lies under, nearest first.
    ancestors: tuple[str, ...] = ()
    slots: dict[int, _Slot] = field(default_factory=dict)
    #: Keys of the positions the last source covered, and how many it covered.
    last_input: dict[int, Key] = field(default_factory=dict)
    last_length: int = 0
    touched: int = 0
    messages: list[Message] = field(default_factory=list)


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return min(a, b)


def _offset(thread: _Thread, inputs: Positioned) -> int | None:
    """Where ``inputs`` sits in ``thread``: 0 when it continues it, the position of its first
    message when it repeats the thread's tail, ``None`` when it does not belong there."""
    keys = {i: m.key for i, m in inputs.items()}
    length = max(keys) + 1
    overlap = [i for i in keys if i in thread.last_input]
    if (
        overlap
        and length >= thread.last_length
        and all(keys[i] == thread.last_input[i] for i in overlap)
    ):
        return 0
    if 0 not in keys or not thread.slots:
        return None
    # Only a repeat of the thread's tail: the input must reach the thread's last message.
    last = max(thread.slots)
    for offset in range(last, max(last - length, 0), -1):
        slot = thread.slots.get(offset)
        if slot is None or slot.message.key != keys[0]:
            continue
        if all(
            thread.slots[offset + i].message.key == key
            for i, key in keys.items()
            if offset + i in thread.slots
        ):
            return offset
    return None


def _window(thread: _Thread, inputs: Positioned) -> dict[int, int] | None:
    """Where a sliding-window prompt sits in ``thread``: it starts with the thread's first
    messages and goes on with its latest ones (agents that cut the middle out of a long
    history); ``None`` unless that rest reaches the thread's last message."""
    if not thread.slots:
        return None
    prefix = 0
    while (
        prefix in inputs
        and prefix in thread.slots
        and thread.slots[prefix].message.key == inputs[prefix].key
    ):
        prefix += 1
    rest = sorted(i for i in inputs if i >= prefix)
    if prefix == 0 or not rest:
        return None
    first, last = rest[0], max(thread.slots)
    for start in range(last, prefix - 1, -1):
        slot = thread.slots.get(start)
        if slot is None or slot.message.key != inputs[first].key:
            continue
        if start + rest[-1] - first < last:
            break  # further back, the window would end before the thread does
        positions = {i: i for i in inputs if i < prefix} | {i: start + i - first for i in rest}
        if all(
            thread.slots[at].message.key == inputs[i].key
            for i, at in positions.items()
            if at in thread.slots
        ):
            return positions
    return None


def _positions(thread: _Thread, inputs: Positioned) -> dict[int, int] | None:
    """Where each input message goes in ``thread`` (see :func:`_offset`, :func:`_window`)."""
    offset = _offset(thread, inputs)
    if offset is not None:
        return {i: offset + i for i in inputs}
    return _window(thread, inputs)


def _place(
    thread: _Thread, position: int, message: SourceMessage, time: datetime | None, placed: set[int]
) -> None:
    old = thread.slots.get(position)
    if old is not None and old.message is message:
        return
    if id(message) in placed:
        # One message read once but sent at two places (two agents with the same prompt, a
        # delta prompt): each place gets its own copy.
        message = SourceMessage([m.model_copy(deep=True) for m in message.messages])
    placed.add(id(message))
    if old is not None and old.message.key == message.key:
        time = _earliest(old.time, time)
        # The usage (and span id) of an LLM call stays with the message it produced, whichever
        # copy of the message is kept.
        for before, after in zip(old.message.messages, message.messages, strict=False):
            after.usage = after.usage or before.usage
            after.source_id = after.source_id or before.source_id
    thread.slots[position] = _Slot(message, time)


def _apply(
    thread: _Thread, source: Source, positions: dict[int, int], order: int, placed: set[int]
) -> None:
    for index, sent in source.inputs.items():
        _place(thread, positions[index], sent, source.start, placed)
    base = positions[max(source.inputs)] + 1
    if source.usage and source.outputs and source.outputs[0].messages:
        source.outputs[0].messages[0].usage = source.usage
    for index, said in enumerate(source.outputs):
        for message in said.messages:
            message.source_id = message.source_id or source.span_id
        thread.slots[base + index] = _Slot(said, source.end)
    thread.last_input = {p: s.message.key for p, s in thread.slots.items() if p < base}
    thread.last_length = base
    thread.touched = order


def _align(sources: list[Source]) -> tuple[list[_Thread], list[tuple[datetime | None, _Thread]]]:
    """Threads, and each source's start with the thread it went to."""
    threads: list[_Thread] = []
    placed: list[tuple[datetime | None, _Thread]] = []
    seen: set[int] = set()
    for order, source in enumerate(sources, start=1):
        if not source.inputs:
            continue
        for thread in sorted(threads, key=lambda t: -t.touched):
            positions = _positions(thread, source.inputs)
            if positions is not None:
                break
        else:
            thread = _Thread(label=source.label, ancestors=source.ancestors)
            positions = {i: i for i in source.inputs}
            threads.append(thread)
        _apply(thread, source, positions, order, seen)
        placed.append((source.start, thread))
    for thread in threads:
        for position in sorted(thread.slots):
            slot = thread.slots[position]
            for message in slot.message.messages:
                message.timestamp = message.timestamp or slot.time
                thread.messages.append(message)
    return threads, placed


def _normalized(value: Any) -> str:
    text = content_text(value).strip()
    try:
        return exact_json.dumps_bytes(exact_json.loads(text), orjson.OPT_SORT_KEYS).decode()
    except (orjson.JSONDecodeError, TypeError):
        return text


class _Claims:
    """The calls and results of the conversation, each claimed by at most one tool run."""

    def __init__(self, threads: list[_Thread]) -> None:
        #: Where each call and result is: its thread and its message.
        self.home: dict[int, tuple[_Thread, Message]] = {}
        self.calls: list[ToolCall] = []
        self.results: list[Message] = []
        for thread in threads:
            for message in thread.messages:
                for call in message.tool_calls:
                    self.calls.append(call)
                    self.home[id(call)] = (thread, message)
                if message.tool_result is not None:
                    self.results.append(message)
                    self.home[id(message)] = (thread, message)
        self.call_ids = {c.tool_call_id for c in self.calls if c.tool_call_id}
        self.taken: set[int] = set()
        self.texts: dict[int, str] = {}

    def _text(self, message: Message) -> str:
        if id(message) not in self.texts:
            self.texts[id(message)] = _normalized(message.content)
        return self.texts[id(message)]

    def call(self, *, ident: str | None = None, name: str | None = None) -> ToolCall | None:
        for call in self.calls:
            if id(call) in self.taken:
                continue
            if (ident is not None and call.tool_call_id == ident) or (
                ident is None and call.name == name
            ):
                self.taken.add(id(call))
                return call
        return None

    def result(self, *, ident: str | None = None, output: str | None = None) -> Message | None:
        for message in self.results:
            provided = message.tool_result
            if id(message) in self.taken or provided is None:
                continue
            if (ident is not None and provided.tool_call_id == ident) or (
                ident is None and provided.tool_call_id is None and self._text(message) == output
            ):
                self.taken.add(id(message))
                return message
        return None

    def result_after(self, call: ToolCall) -> Message | None:
        """The first unclaimed result after ``call`` and before the model speaks again that
        may answer it (no id, or its id)."""
        thread, asked = self.home[id(call)]
        index = next(i for i, m in enumerate(thread.messages) if m is asked)
        for message in thread.messages[index + 1 :]:
            if message.role == "assistant" and not message.tool_calls:
                break
            provided = message.tool_result
            if provided is None or id(message) in self.taken:
                continue
            if provided.tool_call_id in (None, call.tool_call_id):
                self.taken.add(id(message))
                return message
        return None

    def claim(self, run: ToolRun) -> tuple[ToolCall | None, Message | None]:
        """The call and the result of the conversation that ``run`` shows (either may be
        missing); the result gets the run's error flag and the name or id it lacks."""
        output = _normalized(run.output) if run.output is not None else None
        call = self.call(ident=run.call_id) if run.call_id else None
        result = self.result(ident=run.call_id) if run.call_id else None
        if result is None and output is not None:
            result = self.result(output=output)
        if call is None:
            ident = result.tool_result.tool_call_id if result and result.tool_result else None
            call = self.call(ident=ident) if ident else self.call(name=run.name)
        if result is None and call is not None:
            result = self.result_after(call)
        if result is not None and result.tool_result is not None:
            provided = result.tool_result
            provided.name = provided.name or run.name
            if provided.tool_call_id is None and run.call_id in self.call_ids:
                provided.tool_call_id = run.call_id
            if run.error and provided.explicit_error is None:
                provided.explicit_error = True
                provided.explicit_source = run.error_source
            if provided.duration_ms is None:
                provided.duration_ms = run.duration_ms
        return call, result


def _asked(run: ToolRun, ident: str | None) -> Message:
    call = make_call(0, ident, run.name, run.arguments)
    asked = Message(seq=0, role="assistant", tool_calls=[call], timestamp=run.start, raw=run.raw)
    asked.source_id = run.span_id
    return asked


def _answer(run: ToolRun, ident: str | None) -> Message:
    error = True if run.error else None
    answer = result_message(run.output, ident, run.name, run.raw, error, run.error_source or "")
    answer.timestamp, answer.source_id = run.end, run.span_id
    if answer.tool_result is not None:
        answer.tool_result.duration_ms = run.duration_ms
    return answer


def _insert(messages: list[Message], pair: list[Message], time: datetime | None) -> None:
    """Put ``pair`` after the last message that is not later than ``time``."""
    at = len(messages)
    if time is not None:
        earlier = [i for i, m in enumerate(messages) if m.timestamp and m.timestamp <= time]
        at = earlier[-1] + 1 if earlier else 0
    messages[at:at] = pair


def assemble(sources: list[Source], runs: list[ToolRun]) -> list[Message]:
    """The conversation of a span tree (see the module docstring); ``seq`` still to number.

    ``sources`` and ``runs`` must be in time order.
    """
    threads, placed = _align(sources)
    claims = _Claims(threads)
    for run in runs:
        call, result = claims.claim(run)
        if call is not None and result is None:
            # The run's result never reached the conversation (the agent stopped after it).
            thread, asked = claims.home[id(call)]
            at = next(i for i, m in enumerate(thread.messages) if m is asked) + 1
            while at < len(thread.messages) and thread.messages[at].role == "tool":
                at += 1
            thread.messages.insert(at, _answer(run, call.tool_call_id or run.call_id))
        elif result is not None and call is None:
            thread, answer = claims.home[id(result)]
            at = next(i for i, m in enumerate(thread.messages) if m is answer)
            ident = result.tool_result.tool_call_id if result.tool_result else None
            thread.messages.insert(at, _asked(run, ident or run.call_id))
        elif call is None:
            if not threads:
                threads.append(_Thread(label="tools"))
            home = threads[0]
            for start, thread in placed:
                if start is not None and run.start is not None and start <= run.start:
                    home = thread
            _insert(home.messages, [_asked(run, run.call_id), _answer(run, run.call_id)], run.start)
    messages: list[Message] = []
    labels: list[str] = []
    for thread in threads:
        label = thread.label
        while label in labels:
            label += "'"
        labels.append(label)
    parents = _thread_parents(threads)
    for index, thread in enumerate(threads):
        parent = parents[index]
        for message in thread.messages:
            message.branch = labels[index] if index else None
            message.branch_parent = labels[parent] if index and parent else None
            messages.append(message)
    return messages


def _thread_parents(threads: list[_Thread]) -> list[int | None]:
    """Per thread, the index of the thread it nests in: the one whose agent span (its first
    source's nearest ancestor) is the nearest other ancestor of the thread's first source;
    ``None`` without one (the main thread, a thread whose spans nest in no other's)."""
    agents: dict[str, int] = {}
    for index, thread in enumerate(threads):
        if thread.ancestors:
            agents.setdefault(thread.ancestors[0], index)
    parents: list[int | None] = []
    for index, thread in enumerate(threads):
        found = (agents.get(a) for a in thread.ancestors[1:])
        parents.append(next((i for i in found if i is not None and i != index), None))
    return parents
