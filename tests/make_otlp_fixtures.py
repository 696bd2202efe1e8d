"""Writes the inputs of ``tests/golden/otlp`` from spans the real OpenTelemetry SDK recorded.

Run ``.venv/bin/python tests/make_otlp_fixtures.py`` from the repository root, then
``UPDATE_GOLDEN=1 pytest tests/test_formats_golden.py`` and review the diff by eye.

* ``openinference_sdk/input.jsonl``: an OpenInference agent run, one export per line as the
  Collector's file exporter writes them, the spans of the run split over two lines;
* ``otel_genai/input.json``: an OTel GenAI run (``gen_ai.input.messages``, ``execute_tool``),
  one export.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).parent))

from otlp_agent import genai_run, openinference_run, otlp_json, provider

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

    exporter = InMemorySpanExporter()
    genai_run(provider(exporter, trace_base=0xB1))
    folder = GOLDEN / "otel_genai"
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(otlp_json(exporter.get_finished_spans()), indent=1, ensure_ascii=False)
    (folder / "input.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
