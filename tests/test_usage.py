"""Input tokens of a model call from each format's usage shape (``ingest.analysis.usage``)."""

from __future__ import annotations

from typing import Any

import pytest

from ingest.analysis.usage import input_tokens


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # Anthropic / Claude Code: cached input is reported apart and added.
        ({"input_tokens": 4, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 96,
          "output_tokens": 57}, 400),
        ({"input_tokens": 120, "output_tokens": 6, "total_tokens": 126}, 120),
        # OpenAI Chat Completions (cached tokens are part of prompt_tokens).
        ({"prompt_tokens": 1500, "completion_tokens": 3,
          "prompt_tokens_details": {"cached_tokens": 1024}}, 1500),
        # OpenTelemetry GenAI, OpenInference, OpenLLMetry, Vercel AI SDK (OTLP JSON strings).
        ({"gen_ai.usage.input_tokens": "812", "gen_ai.usage.output_tokens": "20"}, 812),
        ({"llm.token_count.prompt": 640, "llm.token_count.completion": 12}, 640),
        ({"llm.usage.prompt_tokens": 77}, 77),
        ({"ai.usage.promptTokens": 55.0, "ai.usage.completionTokens": 4.0}, 55),
        # Langfuse usageDetails: every key with "input" is input.
        ({"input": 900, "input_cached_tokens": 100, "output": 30, "total": 1030}, 1000),
        ({"promptTokens": 33, "completionTokens": 2}, 33),
        # Nothing about input, or nonsense.
        ({"output_tokens": 5}, None),
        ({"input_tokens": -1}, None),
        ({"prompt_tokens": True}, None),
        ({"prompt_tokens": "12a"}, None),
        ({"input": 2**60, "input_x": 2**60}, None),
        (None, None),
        ([1, 2], None),
    ],
)  # fmt: skip
def test_input_tokens_of_each_usage_shape(usage: Any, expected: int | None) -> None:
    assert input_tokens(usage) == expected
