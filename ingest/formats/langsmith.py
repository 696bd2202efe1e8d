"""LangSmith runs, as an export or the SDK's ``Client.list_runs`` / ``read_run`` give them.

Each record is one run (a JSONL line, a top-level array item, or one document): ``id``,
``trace_id``, ``parent_run_id``, ``dotted_order``, ``run_type`` (``llm`` | ``tool`` | ``chain`` |
``retriever`` …), ``name``, ``inputs``, ``outputs``, ``error``, ``start_time``, ``end_time``,
``extra``, ``tags``; a run read with its ``child_runs`` brings them along. **The runs of a file
are grouped by** ``trace_id`` (a run without one belongs to its root, found through
``parent_run_id``, else it is a trace of its own) **and every trace becomes one trace**, its runs
in ``dotted_order`` (else start time) order. The trace id is the external id, the root run's
name the agent, its start the start, its tags the tags, and the ``thread_id`` (else
``session_id``, ``conversation_id``) of its ``extra.metadata`` the session.

**The conversation** comes from the ``llm`` runs: what each sent (``inputs.messages``: LangChain
messages in any serialized form, nested one list deep as LangChain's callbacks send them, or
OpenAI chat messages as ``wrap_openai`` logs them; ``inputs.prompts`` as a user message) and what
it got back (``outputs.generations[0][0].message`` / ``text``, or an OpenAI ``choices[0].message``),
decoded by the LangChain and OpenAI chat readers. A call whose prompt starts with the
conversation so far continues it (only the new messages are added); any other prompt is added
whole, its messages carrying the run's name as their ``branch``. The model is the first llm run's
``ls_model_name`` (else ``invocation_params.model``); its ``invocation_params.tools`` are the tool
definitions.

**Tool runs** (``run_type: tool``) are calls and results: a run whose result the conversation
holds (same ``tool_call_id``) gives that result its error flag; otherwise its call (when the
conversation lacks it) and its result are added after the last message not later than its start.
A run's ``error`` (the exception text LangSmith keeps) is the explicit error (source ``error``)
and its text the result when it has no output.

A record that is not a run (no ``id`` or ``run_type``) is rejected; so is an llm run whose
messages cannot be read (the rest of its trace still imports).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ingest.formats import _common, _openai_messages, langchain
from ingest.formats._shapes import (
    PLAIN,
    SIGN,
    Fit,
    Misfit,
)
from ingest.formats._shapes import members as shape_members
from ingest.formats.base import TraceFormat
from ingest.input.records import Record
from ingest.model import Message, Rejected, ToolDef, ToolResult, Trace

NAME = "langsmith"


@dataclass
class _Run:
    record: Record
    value: dict[str, Any]
    id: str
    parent: str | None
    trace: str | None
    order: str


@dataclass
class _Thread:
    """The conversation being rebuilt: its messages and the key of each (to find prefixes)."""

    messages: list[Message] = field(default_factory=list)
    keys: list[tuple[Any, ...]] = field(default_factory=list)

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self.keys.append(_key(message))


#: The root run's metadata keys that name its thread, as LangSmith's threads view reads them.
_THREAD_KEYS = ("thread_id", "session_id", "conversation_id")


def _parse(records: Iterable[Record | Rejected], source_file: str) -> Iterator[Trace | Rejected]:
    runs: list[_Run] = []
    for record in records:
        if isinstance(record, Rejected):
            yield record
            continue
        try:
            runs += _runs_of(record, record.value, "run")
        except _common.ShapeError as exc:
            yield record.reject("wrong_shape", str(exc))
    yield from _traces(runs, source_file)


def _runs_of(record: Record, value: Any, path: str) -> list[_Run]:
    """The run of a record and, recursively, its ``child_runs``."""
    run = _common.expect_object(value, path)
    run_id = _common.optional_str(run.get("id"), f"{path}.id")
    if run_id is None or not isinstance(run.get("run_type"), str):
        raise _common.ShapeError(f'{path}: not a LangSmith run (expected "id" and "run_type")')
    order = run.get("dotted_order")
    start = run.get("start_time")
    found = [
        _Run(
            record=record,
            value=run,
            id=run_id,
            parent=_common.optional_str(run.get("parent_run_id"), f"{path}.parent_run_id"),
            trace=_common.optional_str(run.get("trace_id"), f"{path}.trace_id"),
            order=order if isinstance(order, str) else _sortable_time(start),
        )
    ]
    children = run.get("child_runs")
    for index, child in enumerate(children if isinstance(children, list) else []):
        found += _runs_of(record, child, f"{path}.child_runs[{index}]")
    return found


def _sortable_time(value: Any) -> str:
    stamp = _common.parse_timestamp(value)
    return stamp.isoformat() if stamp else ""


def _traces(runs: list[_Run], source_file: str) -> Iterator[Trace | Rejected]:
    by_id = {run.id: run for run in runs}
    groups: dict[str, list[_Run]] = {}
    for run in runs:
        root = _root(run, by_id)
        groups.setdefault(run.trace or root.trace or root.id, []).append(run)
    built: list[tuple[Trace, list[_Run]]] = []
    rejected: list[Rejected] = []
    refused: set[int] = set()  # records a rejection counts
    for trace_id, members in groups.items():
        members.sort(key=lambda r: r.order)
        problems: list[tuple[_Run, str]] = []
        built.append((_trace(trace_id, members, source_file, problems), members))
        for run, message in problems:
            if id(run.record) not in refused:
                refused.add(id(run.record))
                rejected.append(run.record.reject("wrong_shape", message))
    # Every record counts once: by its rejection, else by the first trace holding one of its runs.
    counted = set(refused)
    for trace, members in built:
        mine = {id(r.record) for r in members} - counted
        trace.record_count = len(mine)
        counted |= mine
        yield trace
    yield from rejected


def _obj(container: dict[str, Any], key: str) -> dict[str, Any]:
    """``container[key]`` when it is an object, else an empty one (optional run fields)."""
    value = container.get(key)
    return value if isinstance(value, dict) else {}


def _root(run: _Run, by_id: dict[str, _Run]) -> _Run:
    seen = {run.id}
    while run.parent is not None and run.parent in by_id and run.parent not in seen:
        run = by_id[run.parent]
        seen.add(run.id)
    return run


def _trace(
    trace_id: str, runs: list[_Run], source_file: str, problems: list[tuple[_Run, str]]
) -> Trace:
    root = next((r for r in runs if r.parent is None), runs[0])
    thread = _Thread()
    model: str | None = None
    tools: list[ToolDef] = []
    for run in runs:
        if run.value.get("run_type") != "llm":
            continue
        try:
            prompt, answer = _llm_messages(run)
        except _common.ShapeError as exc:
            problems.append((run, f"run {run.id}: {exc}"))
            continue
        _continue(thread, prompt, answer, run)
        model = model or _model(run.value)
        tools = tools or _tools(run.value)
    for run in runs:
        if run.value.get("run_type") == "tool":
            _place_tool_run(thread, run)
    value = root.value
    tags = value.get("tags")
    name = value.get("name")
    metadata: dict[str, Any] = {"runs": len(runs)}
    for key in ("session_id", "status"):
        if isinstance(value.get(key), str):
            metadata[key] = value[key]
    if isinstance(value.get("error"), str):
        metadata["error"] = value["error"]
    # A thread is named in the root run's metadata (the run's own ``session_id`` is its project).
    named = _obj(_obj(value, "extra"), "metadata")
    session = next((named[k] for k in _THREAD_KEYS if isinstance(named.get(k), str)), None)
    return _common.make_trace(
        thread.messages,
        format=NAME,
        source_file=source_file,
        source_line=root.record.line,
        external_id=trace_id,
        session_id=session or None,
        agent=name if isinstance(name, str) else None,
        model=model,
        started_at=_common.parse_timestamp(value.get("start_time")),
        tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
        tools=tools,
        metadata=metadata,
    )


def _llm_messages(run: _Run) -> tuple[list[Message], list[Message]]:
    inputs = run.value.get("inputs")
    outputs = run.value.get("outputs")
    line = run.record.line
    prompt: list[Message] = []
    if isinstance(inputs, dict):
        listed = inputs.get("messages")
        if isinstance(listed, list) and listed and isinstance(listed[0], list):
            listed = listed[0]  # LangChain's callbacks send a batch of prompts: the first
        if isinstance(listed, list):
            for index, item in enumerate(listed):
                path = f"inputs.messages[{index}]"
                prompt += _message(_common.expect_object(item, path), line, path)
        prompts = inputs.get("prompts")
        if not prompt and isinstance(prompts, list) and prompts:
            prompt.append(
                Message(seq=0, role="user", content=_common.text_of(prompts[0]), raw=prompts)
            )
    answer: list[Message] = []
    if isinstance(outputs, dict):
        generations = outputs.get("generations")
        first: Any = generations[0] if isinstance(generations, list) and generations else None
        if isinstance(first, list):
            first = first[0] if first else None
        choices = outputs.get("choices")
        if isinstance(first, dict) and isinstance(first.get("message"), dict):
            answer = _message(first["message"], line, "outputs.generations[0][0].message")
        elif isinstance(first, dict) and isinstance(first.get("text"), str):
            answer = [Message(seq=0, role="assistant", content=first["text"], raw=first)]
        elif isinstance(choices, list) and choices and isinstance(choices[0], dict):
            chosen = _common.expect_object(choices[0].get("message"), "outputs.choices[0].message")
            answer = _message(chosen, line, "outputs.choices[0].message")
        usage = outputs.get("usage_metadata", outputs.get("usage"))
        llm_output = outputs.get("llm_output")
        if usage is None and isinstance(llm_output, dict):
            usage = llm_output.get("token_usage")
        if answer and isinstance(usage, dict) and answer[0].usage is None:
            answer[0].usage = usage
    start = _common.parse_timestamp(run.value.get("start_time"))
    end = _common.parse_timestamp(run.value.get("end_time"))
    for sent in prompt:
        sent.timestamp = sent.timestamp or start
    for received in answer:
        received.timestamp = received.timestamp or end
    return prompt, answer


def _message(item: dict[str, Any], line: int, path: str = "inputs.messages") -> list[Message]:
    if "role" in item and "lc" not in item and "kwargs" not in item:
        return _openai_messages.convert_message(item, path, line)
    return langchain.convert_message(item, path, line)


def _key(message: Message) -> tuple[Any, ...]:
    calls = tuple((c.tool_call_id, c.name) for c in message.tool_calls)
    result = message.tool_result.tool_call_id if message.tool_result else None
    return (message.role, message.content, calls, result)


def _continue(thread: _Thread, prompt: list[Message], answer: list[Message], run: _Run) -> None:
    """Add an llm run's prompt and answer to the conversation (see the module docstring)."""
    keys = [_key(m) for m in prompt]
    known = len(thread.keys)
    if keys[:known] == thread.keys:
        new = prompt[known:]
    elif thread.keys[: len(keys)] == keys:
        new = []  # the prompt re-sends part of the conversation: nothing new in it
    else:
        new = prompt
        name = run.value.get("name")
        for message in [*prompt, *answer]:
            message.branch = name if isinstance(name, str) else run.id
    for message in [*new, *answer]:
        thread.add(message)


def _model(run: dict[str, Any]) -> str | None:
    extra = _obj(run, "extra")
    metadata = _obj(extra, "metadata")
    params = _obj(extra, "invocation_params")
    for value in (metadata.get("ls_model_name"), params.get("model"), params.get("model_name")):
        if isinstance(value, str):
            return value
    return None


def _tools(run: dict[str, Any]) -> list[ToolDef]:
    extra = _obj(run, "extra")
    params = _obj(extra, "invocation_params")
    try:
        return _common.tool_defs(params.get("tools"), "extra.invocation_params.tools")
    except _common.ShapeError:
        return []  # tool definitions are a nicety: an odd shape does not cost the trace


def _place_tool_run(thread: _Thread, run: _Run) -> None:
    value = run.value
    error = value.get("error")
    failed = (isinstance(error, str) and bool(error)) or value.get("status") == "error"
    outputs = value.get("outputs")
    output = outputs.get("output") if isinstance(outputs, dict) else outputs
    call_id = _tool_call_id(value, output)
    name: str = value["name"] if isinstance(value.get("name"), str) else "tool"
    existing = next(
        (
            m
            for m in thread.messages
            if m.tool_result is not None and call_id and m.tool_result.tool_call_id == call_id
        ),
        None,
    )
    if existing is not None and existing.tool_result is not None:
        # The tool run knows when the tool answered; the prompt that sent it back is later.
        existing.timestamp = _common.parse_timestamp(value.get("end_time")) or existing.timestamp
        if failed:
            existing.tool_result.explicit_error = True
            existing.tool_result.explicit_source = "error"
        return
    start = _common.parse_timestamp(value.get("start_time"))
    end = _common.parse_timestamp(value.get("end_time"))
    if call_id is None:
        # A run that failed has no output to carry its call id: its call is the first
        # unanswered call of the same name.
        call_id = _unanswered_call_id(thread, name)
    has_call = any(c.tool_call_id == call_id for m in thread.messages for c in m.tool_calls)
    at = _position(thread, start, call_id if has_call else None)
    placed: list[Message] = []
    if not (call_id and has_call):
        inputs = value.get("inputs")
        raw_args = inputs.get("input", inputs) if isinstance(inputs, dict) else inputs
        call = _common.json_call(0, call_id, name, raw_args)
        placed.append(
            Message(seq=0, role="assistant", tool_calls=[call], timestamp=start, source_id=run.id)
        )
    content = _output_text(output)
    if not content and isinstance(error, str):
        content = error
    placed.append(
        Message(
            seq=0,
            role="tool",
            content=content,
            timestamp=end,
            source_id=run.id,
            source_line=run.record.line,
            tool_result=ToolResult(
                tool_call_id=call_id,
                name=name,
                explicit_error=True if failed else None,
                explicit_source="error" if failed else None,
            ),
            raw={k: value.get(k) for k in ("id", "name", "inputs", "outputs", "error")},
        )
    )
    for offset, message in enumerate(placed):
        thread.messages.insert(at + offset, message)
        thread.keys.insert(at + offset, _key(message))


def _unanswered_call_id(thread: _Thread, name: str) -> str | None:
    answered = {m.tool_result.tool_call_id for m in thread.messages if m.tool_result is not None}
    for message in thread.messages:
        for call in message.tool_calls:
            if call.name == name and call.tool_call_id and call.tool_call_id not in answered:
                return call.tool_call_id
    return None


def _tool_call_id(run: dict[str, Any], output: Any) -> str | None:
    if isinstance(output, dict):
        data = output.get("kwargs", output)
        if isinstance(data, dict) and isinstance(data.get("tool_call_id"), str):
            return str(data["tool_call_id"])
    extra = _obj(run, "extra")
    metadata = _obj(extra, "metadata")
    ident = metadata.get("tool_call_id")
    return ident if isinstance(ident, str) else None


def _output_text(output: Any) -> str:
    if isinstance(output, dict):
        data = output.get("kwargs", output)
        if isinstance(data, dict) and "content" in data:
            return _common.text_of(data["content"])
    return _common.text_of(output)


def _position(thread: _Thread, start: datetime | None, call_id: str | None) -> int:
    """Where a tool run's messages go: after its call and the results right after it, else
    after the last message not later than the run's start, else at the end."""
    if call_id is not None:
        for index, message in enumerate(thread.messages):
            if any(c.tool_call_id == call_id for c in message.tool_calls):
                at = index + 1
                while at < len(thread.messages) and thread.messages[at].role == "tool":
                    at += 1
                return at
    if start is None:
        return len(thread.messages)
    at = 0
    for index, message in enumerate(thread.messages):
        if message.timestamp is not None and message.timestamp <= start:
            at = index + 1
    return at if at else len(thread.messages)


def shape(record: Any) -> Fit:
    """A LangSmith run: an object with an ``id`` and a string ``run_type``."""
    missing = shape_members(record, "id", "run_type")
    if missing is not None:
        return missing
    if "run_type" not in record:
        return PLAIN  # a run cut before its run_type: it may be one
    if not isinstance(record["run_type"], str):
        return Misfit(f'"run_type" is {_common.json_type(record["run_type"])}, not a string')
    return SIGN


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = TraceFormat(
    name=NAME,
    description="LangSmith runs (export / list_runs: llm and tool runs grouped by trace_id)",
    shape=shape,
    embeds=frozenset(
        {"langchain", "openai_chat", "anthropic", "openai_responses", "gemini", "request_log"}
    ),
    parse=_parse,
)

__all__ = ["FORMAT", "NAME"]
