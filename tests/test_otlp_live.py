"""A real instrumented client, end to end: the ``openai`` client instrumented by
``openinference-instrumentation-openai`` talks to a scripted stub LLM (``stub_llm``), its spans
go through the stock ``OTLPSpanExporter`` to the running receiver, and the stored conversation
is the one the stub served: the exact call id, name and arguments, paired with the tool result
the test sent back.

(``opentelemetry-instrumentation-openai-v2`` 2.4b0 is left out: it does not import beside
``openai`` 3.x, which ships ``httpx2`` where it imports ``httpx``, nor with the
``opentelemetry-util-genai`` release pip resolves for it.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import sqlalchemy as sa
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otlp_agent import stored_pairs
from stub_llm import ANSWER, ARGUMENTS, CALL_ID, MODEL, TOOL, stub_llm
from test_otlp_receiver import running, wait_for

from db.schema import MessageRow, TraceRow
from ingest.otlp.receiver import ReceiverSettings

RESULT = "rainy, 12°C"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": TOOL,
            "description": "Current weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def instrumented() -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "live-agent"}))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        yield tracer_provider
    finally:
        instrumentor.uninstrument()


def test_an_instrumented_openai_agent_is_stored_as_the_stub_served_it(
    instrumented: TracerProvider, db_url: str, tmp_path: Path
) -> None:
    settings = ReceiverSettings(spool_dir=tmp_path / "spool", quiet_seconds=0.2)
    with stub_llm() as stub, running(settings, db_url) as receiver:
        instrumented.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.url)))
        client = openai.OpenAI(base_url=stub.base_url, api_key="not-used")
        tracer = instrumented.get_tracer("live-test")
        with tracer.start_as_current_span("agent.run") as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            messages: list[dict[str, object]] = [{"role": "user", "content": "Weather in Paris?"}]
            first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
            (call,) = first.choices[0].message.tool_calls or []
            messages.append(first.choices[0].message.model_dump(exclude_none=True))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": RESULT})
            second = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
        instrumented.force_flush()
        assert second.choices[0].message.content == ANSWER
        # What the client really sent back to the stub is what the store must pair.
        assert stub.requests[1]["messages"][2] == {
            "role": "tool",
            "tool_call_id": CALL_ID,
            "content": RESULT,
        }
        pairs = wait_for(lambda: stored_pairs(receiver.engine).get(trace_id))
        with receiver.engine.connect() as conn:
            rows = conn.execute(
                sa.select(MessageRow.role, MessageRow.content)
                .join(TraceRow, TraceRow.id == MessageRow.trace_id)
                .where(TraceRow.external_id == trace_id)
                .order_by(MessageRow.seq)
            ).all()
            model = conn.execute(sa.select(TraceRow.model)).scalar_one()
    instrumented.shutdown()
    assert pairs == [(TOOL, CALL_ID, ARGUMENTS, "paired", RESULT, "success", None)]
    assert [tuple(r) for r in rows] == [
        ("user", "Weather in Paris?"),
        ("assistant", ""),
        ("tool", RESULT),
        ("assistant", ANSWER),
    ]
    assert model == MODEL
