"""Raw tau2-bench results, as ``tau2 run`` writes them (``{"info", "tasks", "simulations"}``).

Every published wrapper is read: the results document (``{"timestamp", "info", "tasks",
"simulations"}``), an object carrying ``simulations`` beside other summary keys (no ``info``:
model and domain are then unknown), a bare JSON array of simulations (each array item is a
record, and a trace), and one simulation as a document of its own (``simulation_result.json``).

A results file is one JSON document: ``info`` (the run: agent and user LLMs, the domain and its
policy), ``tasks`` (the scenarios and their expected actions) and ``simulations``, one per task and
trial. **Every simulation is one trace**: its ``id`` is the external id, its ``start_time`` the
start, the agent's LLM (``info.agent_info.llm``) the model and ``tau2-<domain>`` the agent; the
simulation's ``task_id``, ``trial``, ``seed``, ``termination_reason``, ``duration``, costs and
``reward_info.reward`` go to the metadata.

Messages are tau2's pydantic ``Message`` models dumped: roles ``assistant`` / ``user`` / ``tool``
(and ``system``), calls ``{"id", "name", "arguments": {…}, "requestor"}`` without a ``function``
object (the user simulator makes calls too, in the telecom domain), tool results ``role: "tool"``
whose own ``id`` is the answered call's and whose ``"error": true`` is the explicit error flag
(read by ``_openai_messages``). A ``MultiToolMessage`` (``{"role": "tool", "tool_messages": […]}``)
is unfolded into its tool messages. ``raw_data`` (the provider's response) stays in the raw payload.

The document is one input record, counted once: by the first simulation's trace (as an OTLP
file's first trace counts its record); when simulations cannot be read, the others still import
and the record is counted by one ``wrong_shape`` rejection naming each unreadable
``simulations[i]`` and its problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ingest.formats import _openai_messages
from ingest.formats._common import (
    ShapeError,
    expect_list,
    expect_object,
    make_trace,
    optional_str,
    parse_timestamp,
    tool_defs,
)
from ingest.formats._shapes import (
    SIGN,
    CutDict,
    Fit,
    Misfit,
    object_list,
)
from ingest.formats.base import TraceFormat
from ingest.input.records import Record
from ingest.model import Message, Rejected, Trace

NAME = "tau2"

#: Unreadable simulations a rejection message names (it counts them all).
_PROBLEMS_SHOWN = 5

#: Simulation fields kept as trace metadata (the messages and the reward details are not).
_METADATA_FIELDS = (
    "task_id",
    "trial",
    "seed",
    "termination_reason",
    "duration",
    "agent_cost",
    "user_cost",
    "end_time",
)


#: Keys every tau2 simulation has (``Simulation`` in tau2's data model).
_SIMULATION_KEYS = ("task_id", "termination_reason", "messages")


def _parse(records: Iterable[Record | Rejected], source_file: str) -> Iterator[Trace | Rejected]:
    for record in records:
        if isinstance(record, Rejected):
            yield record
            continue
        yield from _results(record)


def is_simulation(value: Any) -> bool:
    """Whether ``value`` is one simulation on its own (an item of a bare array of simulations,
    or a one-simulation document): an object with ``messages``, ``task_id`` and
    ``termination_reason`` and no ``simulations`` of its own.

    >>> is_simulation({"task_id": "7", "termination_reason": "user_stop", "messages": []})
    True
    >>> is_simulation({"id": "c", "metadata": {"task_id": "7"}, "messages": []})
    False
    """
    return (
        isinstance(value, dict)
        and "simulations" not in value
        and all(key in value for key in _SIMULATION_KEYS)
    )


def _results(record: Record) -> Iterator[Trace | Rejected]:
    """The traces (and rejected simulations) of one results document, or the trace of one
    simulation standing on its own."""
    value = record.value
    if is_simulation(value):
        try:
            yield _simulation_trace(value, "simulation", record, {})
        except ShapeError as exc:
            yield record.reject("wrong_shape", str(exc))
        return
    try:
        doc = expect_object(value, "results")
        simulations = expect_list(doc.get("simulations"), "simulations")
        run = _run_fields(doc.get("info"))
    except ShapeError as exc:
        yield record.reject("wrong_shape", str(exc))
        return
    if not simulations:
        yield record.reject("wrong_shape", "simulations: empty (a run that finished no task)")
        return
    traces: list[Trace] = []
    problems: list[str] = []
    for index, simulation in enumerate(simulations):
        path = f"simulations[{index}]"
        try:
            traces.append(_simulation_trace(expect_object(simulation, path), path, record, run))
        except ShapeError as exc:
            problems.append(str(exc))
    # The document is one record, counted once: by its first trace, or, when a simulation
    # could not be read, by the one rejection naming every such simulation (the others import).
    for position, trace in enumerate(traces):
        trace.record_count = 1 if position == 0 and not problems else 0
        yield trace
    if problems:
        shown = "; ".join(problems[:_PROBLEMS_SHOWN])
        more = len(problems) - _PROBLEMS_SHOWN
        yield record.reject(
            "wrong_shape",
            f"{len(problems)} of {len(simulations)} simulations unreadable: {shown}"
            + (f"; and {more} more" if more > 0 else ""),
        )


def _run_fields(info: Any) -> dict[str, Any]:
    """What the run's ``info`` says about every simulation: model, domain, tool definitions."""
    if info is None:
        return {}
    info = expect_object(info, "info")
    agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    domain = env.get("domain_name")
    llm = agent.get("llm")
    return {
        "model": llm if isinstance(llm, str) else None,
        "agent": f"tau2-{domain}" if isinstance(domain, str) else "tau2",
        "domain": domain if isinstance(domain, str) else None,
        "tools": tool_defs(env.get("tool_defs"), "info.environment_info.tool_defs")
        if isinstance(env.get("tool_defs"), list)
        else [],
    }


def _simulation_trace(
    simulation: dict[str, Any], path: str, record: Record, run: dict[str, Any]
) -> Trace:
    messages = _messages(simulation.get("messages"), f"{path}.messages", record.line)
    metadata: dict[str, Any] = {
        key: simulation[key] for key in _METADATA_FIELDS if simulation.get(key) is not None
    }
    reward_info = simulation.get("reward_info")
    if isinstance(reward_info, dict) and "reward" in reward_info:
        metadata["reward"] = reward_info["reward"]
    if run.get("domain"):
        metadata["domain"] = run["domain"]
    return make_trace(
        messages,
        format=NAME,
        source_file=record.source_file,
        source_line=record.line,
        external_id=optional_str(simulation.get("id"), f"{path}.id"),
        agent=run.get("agent", "tau2"),
        model=run.get("model"),
        started_at=parse_timestamp(simulation.get("start_time")),
        tools=list(run.get("tools", [])),
        metadata=metadata,
    )


def _messages(items: Any, path: str, line: int) -> list[Message]:
    messages: list[Message] = []
    for index, item in enumerate(expect_list(items, path)):
        item_path = f"{path}[{index}]"
        msg = expect_object(item, item_path)
        if msg.get("role") == "tool" and "tool_messages" in msg:
            # A MultiToolMessage: the results of parallel calls, one tool message each.
            inner = expect_list(msg["tool_messages"], f"{item_path}.tool_messages")
            for k, part in enumerate(inner):
                part_path = f"{item_path}.tool_messages[{k}]"
                messages += _openai_messages.convert_message(
                    expect_object(part, part_path), part_path, line
                )
            continue
        messages += _openai_messages.convert_message(msg, item_path, line)
    return messages


def shape(record: Any) -> Fit:
    """tau2 results: an object holding a ``simulations`` array of objects (beside ``info``,
    ``tasks`` or other summary keys), a head cut inside such a document's ``info``, or one
    simulation (``task_id``, ``termination_reason``, ``messages``) of a bare array."""
    if is_simulation(record):
        return SIGN
    simulations = object_list(record, "simulations")
    if not isinstance(simulations, Misfit):
        return SIGN
    info = record.get("info") if isinstance(record, dict) else None
    run_keys = ("agent_info", "user_info", "environment_info")
    if isinstance(record, CutDict) and isinstance(info, dict) and any(k in info for k in run_keys):
        return SIGN
    return Misfit(f"{simulations.reason}; nor a simulation (task_id, termination_reason, messages)")


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = TraceFormat(
    name=NAME,
    description="tau2-bench results (results files, arrays of simulations: a trace per simulation)",
    # Messages are chat messages; ``raw_data`` holds the provider's response (Anthropic, OpenAI).
    shape=shape,
    embeds=frozenset({"openai_chat", "anthropic", "request_log"}),
    parse=_parse,
)

__all__ = ["FORMAT", "NAME"]
