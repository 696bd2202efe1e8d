"""The trace timeline nests sub-agents as their spans nest (``messages.branch_parent``).

An OpenInference run recorded by the real OpenTelemetry SDK: the agent ``planner`` asks a model
and starts the sub-agent ``researcher`` (a span under its own), which asks a model and starts
``fact_checker`` (a span under ``researcher``'s), which asks a model for a ``search_web`` call
that the tool span runs. Imported into SQLite and PostgreSQL, each thread names the thread it
nests in, and the timeline's rows nest three levels deep.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_agent import BASE_NS, MS, _messages, otlp_json, provider, span_between
from sqlalchemy import select

from dashboard.charts.trace import NEST_SEPARATOR, thread_paths, timeline_chart, timeline_rows
from db.engine import make_engine
from db.queries.timeline import trace_timeline
from db.queries.traces import find_trace
from db.schema import MessageRow
from ingest.importing.pipeline import import_paths

TRACE = "000000000000000000000000000000c2"
SEARCH_ARGS = '{"q": "boiling point of water at altitude"}'


def _agent(tracer: Any, name: str, parent: Any, start_ms: int) -> Any:
    context = trace_api.set_span_in_context(parent) if parent is not None else None
    return tracer.start_span(
        name,
        context=context,
        start_time=BASE_NS + start_ms * MS,
        attributes={"openinference.span.kind": "AGENT"},
    )


def _llm(
    tracer: Any, agent: Any, system: str, said: dict[str, Any], start_ms: int, end_ms: int
) -> None:
    asked = [{"role": "system", "content": system}, {"role": "user", "content": "Go."}]
    span_between(
        tracer,
        "llm.chat",
        context=trace_api.set_span_in_context(agent),
        start_time=BASE_NS + start_ms * MS,
        end_time=BASE_NS + end_ms * MS,
        attributes={
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o",
            **_messages("llm.input_messages", asked),
            **_messages("llm.output_messages", [said]),
        },
    )


def nested_run(folder: Path) -> Path:
    """The run of the module docstring as an OTLP JSON file in ``folder``."""
    exporter = InMemorySpanExporter()
    tracer = provider(exporter, service="nested", trace_base=0xC1).get_tracer("openinference")
    planner = _agent(tracer, "planner", None, 0)
    _llm(tracer, planner, "You plan.", {"role": "assistant", "content": "Delegating."}, 10, 100)
    researcher = _agent(tracer, "researcher", planner, 110)
    _llm(
        tracer, researcher, "You research.", {"role": "assistant", "content": "Checking."}, 120, 200
    )
    checker = _agent(tracer, "fact_checker", researcher, 210)
    call = {"role": "assistant", "calls": [("call_s1", "search_web", SEARCH_ARGS)]}
    _llm(tracer, checker, "You check facts.", call, 220, 300)
    span_between(
        tracer,
        "tool.search_web",
        context=trace_api.set_span_in_context(checker),
        start_time=BASE_NS + 310 * MS,
        end_time=BASE_NS + 360 * MS,
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "search_web",
            "tool.id": "call_s1",
            "input.value": SEARCH_ARGS,
            "output.value": "about 93 °C at 2,000 m",
        },
    )
    for span, end_ms in ((checker, 370), (researcher, 380), (planner, 390)):
        span.end(end_time=BASE_NS + end_ms * MS)
    path = folder / "nested.json"
    path.write_text(json.dumps(otlp_json(exporter.get_finished_spans())))
    return path


def test_sub_agent_threads_nest_as_their_spans_do(db_url: str, tmp_path: Path) -> None:
    engine = make_engine(db_url)
    summary = import_paths(engine, [nested_run(tmp_path)], origin="cli")
    assert (summary.traces, summary.rejected) == (1, 0)
    trace = find_trace(engine, TRACE)
    assert trace is not None
    with engine.connect() as conn:
        threads = conn.execute(
            select(MessageRow.seq, MessageRow.role, MessageRow.branch, MessageRow.branch_parent)
            .where(MessageRow.trace_id == int(trace["id"]))
            .order_by(MessageRow.seq)
        ).all()
    timeline = trace_timeline(engine, int(trace["id"]))
    engine.dispose()
    # The planner's thread is the main conversation; the researcher's nests in it; the fact
    # checker's nests in the researcher's (its agent span lies under the researcher's).
    main, researcher, checker = (None, None), ("researcher", None), ("fact_checker", "researcher")
    assert [(seq, role, (branch, parent)) for seq, role, branch, parent in threads] == [
        (0, "system", main), (1, "user", main), (2, "assistant", main),
        (3, "system", researcher), (4, "user", researcher), (5, "assistant", researcher),
        (6, "system", checker), (7, "user", checker), (8, "assistant", checker),
        (9, "tool", checker),
    ]  # fmt: skip
    assert timeline.parents == {"fact_checker": "researcher"}
    bars = timeline.bars
    # Each model call from its span's start to its end; the tool call from its call message
    # (the model span's end, 300 ms) for the tool span's 50 ms.
    assert [
        (kind, branch if isinstance(branch, str) else None, label, ms, seq)
        for kind, branch, label, ms, seq in bars[
            ["kind", "branch", "label", "duration_ms", "seq"]
        ].itertuples(index=False)
    ] == [
        ("model", None, "model call", 90.0, 2),
        ("model", "researcher", "model call", 80.0, 5),
        ("model", "fact_checker", "model call", 80.0, 8),
        ("tool", "fact_checker", "search_web", 50.0, 8),
    ]
    assert thread_paths(bars, timeline.parents) == {
        None: (),
        "researcher": ("researcher",),
        "fact_checker": ("researcher", "fact_checker"),
    }
    nested = f"↳ researcher{NEST_SEPARATOR}fact_checker"
    rows = ["model calls", "↳ researcher: model calls", f"{nested}: model calls",
            f"{nested}: tool calls"]  # fmt: skip
    assert timeline_rows(bars, timeline.parents) == rows
    fig = timeline_chart(bars, None, timeline.parents)
    assert list(fig.layout.yaxis.categoryarray) == rows[::-1]
    assert [list(bar.y) for bar in fig.data] == [rows[:3], [rows[3]]]


@pytest.mark.parametrize("parents", [{}, {"a": "b", "b": "a"}])
def test_a_thread_without_a_known_parent_nests_in_the_main_conversation(
    parents: dict[str, str],
) -> None:
    import pandas as pd

    bars = pd.DataFrame({"branch": [None, "a", "b"]})
    nested = ("a", "b") if parents else ("b",)
    assert thread_paths(bars, parents) == {None: (), "a": ("a",), "b": nested}
