"""Raw tau2-bench results, as ``tau2 run`` writes them (``{"info", "tasks", "simulations"}``).

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
from ingest.formats.base import TraceFormat
from ingest.model import Message, Rejected, Trace
from ingest.records import Record

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


def _parse(records: Iterable[Record | Rejected], source_file: str) -> Iterator[Trace | Rejected]:
    for record in records:
        if isinstance(record, Rejected):
            yield record
            continue
        yield from _results(record)


def _results(record: Record) -> Iterator[Trace | Rejected]:
    """The traces (and rejected simulations) of one results document."""
    value = record.value
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


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = TraceFormat(
    name=NAME,
    description="tau2-bench results (info, tasks, simulations: one trace per simulation)",
    markers=(
        rb'"simulations"\s*:',
        rb'"global_simulation_guidelines"\s*:',
        rb'"user_scenario"\s*:',
        rb'"termination_reason"\s*:',
    ),
    # Messages are chat messages; ``raw_data`` holds the provider's response (Anthropic, OpenAI).
    embeds=frozenset({"openai_chat", "anthropic", "request_log"}),
    hints=("info", "tasks", "simulations", "requestor"),
    parse=_parse,
)

__all__ = ["FORMAT", "NAME"]
