"""Writes the inputs of ``tests/golden/otlp`` from spans the real OpenTelemetry SDK recorded.

Run ``.venv/bin/python tests/make_otlp_fixtures.py`` from the repository root, then
``UPDATE_GOLDEN=1 pytest tests/test_formats_golden.py`` and review the diff by eye.

* ``openinference_sdk/input.jsonl``: an OpenInference agent run, one export per line as the
  Collector's file exporter writes them, the spans of the run split over two lines;
* ``otel_genai/input.json``: an OTel GenAI run (``gen_ai.input.messages``, ``execute_tool``),
  one export;
* ``otel_genai_events/input.json``, ``openllmetry/input.json``, ``vercel_ai/input.json``: the
  same run in the deprecated GenAI events, OpenLLMetry and Vercel AI SDK conventions
  (``otlp_conventions``), one export each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).parent))

from otlp_agent import genai_run, openinference_run, otlp_json, provider
from otlp_conventions import genai_events_run, openllmetry_run, vercel_run

GOLDEN = Path(__file__).parent / "golden" / "otlp"


def main() -> None:
    """Record both runs and write their OTLP JSON."""
    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter))
    spans = exporter.get_finished_spans()
    half = len(spans) // 2
    lines = [
        json.dumps(otlp_json(part), ensure_ascii=False) for part in (spans[:half], spans[half:])
    ]
    folder = GOLDEN / "openinference_sdk"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "input.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    runs = [
        ("otel_genai", genai_run, 0xB1),
        ("otel_genai_events", genai_events_run, 0xC1),
        ("openllmetry", openllmetry_run, 0xD1),
        ("vercel_ai", vercel_run, 0xE1),
    ]
    for name, run, trace_base in runs:
        exporter = InMemorySpanExporter()
        run(provider(exporter, trace_base=trace_base))
        folder = GOLDEN / name
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(otlp_json(exporter.get_finished_spans()), indent=1, ensure_ascii=False)
        (folder / "input.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
