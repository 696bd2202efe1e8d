"""Input tokens of a model call, read from the usage its provider reported (``Message.usage``).

The usage is kept verbatim per format; the input side is named differently by each:

* Anthropic (``anthropic``, ``claude_code``): ``input_tokens`` + ``cache_creation_input_tokens``
  + ``cache_read_input_tokens`` (Anthropic reports cached input apart from ``input_tokens``);
* OpenAI Chat Completions: ``prompt_tokens``; Responses and LangChain ``usage_metadata``:
  ``input_tokens`` (cached input included);
* OpenTelemetry spans: ``gen_ai.usage.input_tokens`` (or the older ``gen_ai.usage.prompt_tokens``),
  OpenInference ``llm.token_count.prompt``, OpenLLMetry ``llm.usage.prompt_tokens``, Vercel AI SDK
  ``ai.usage.inputTokens`` / ``ai.usage.promptTokens``;
* Langfuse ``usageDetails``: the sum of every key containing ``input`` (how Langfuse itself
  totals input usage), or the older ``promptTokens``.
"""

from __future__ import annotations

from typing import Any, Final

#: Keys holding the whole input count, first present wins.
_WHOLE_INPUT: Final = (
    "prompt_tokens",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "llm.usage.prompt_tokens",
    "ai.usage.inputTokens",
    "ai.usage.promptTokens",
    "promptTokens",
)
_ANTHROPIC_CACHE: Final = ("cache_creation_input_tokens", "cache_read_input_tokens")


#: Larger "counts" are not token counts (and would not fit the column): ignored.
MAX_COUNT: Final = 2**53


def _count(value: Any) -> int | None:
    """A non-negative token count, or None.

    >>> _count(12), _count("12"), _count(12.0), _count(True), _count(-1), _count(10**30)
    (12, 12, 12, None, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)  # OTLP JSON writes 64-bit ints as strings
    if isinstance(value, int) and 0 <= value <= MAX_COUNT:
        return value
    return None


def input_tokens(usage: Any) -> int | None:
    """Input tokens of the call whose usage this is; None when it names none.

    >>> input_tokens({"input_tokens": 4, "cache_read_input_tokens": 100, "output_tokens": 1})
    104
    >>> input_tokens({"prompt_tokens": 120, "completion_tokens": 18})
    120
    >>> input_tokens({"input": 50, "input_cached_tokens": 10, "output": 3, "total": 63})
    60
    >>> input_tokens({"output_tokens": 5}) is None
    True
    """
    total = _input_tokens(usage)
    return total if total is not None and total <= MAX_COUNT else None


def _input_tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    for key in _WHOLE_INPUT:
        if (n := _count(usage.get(key))) is not None:
            return n
    if (n := _count(usage.get("input_tokens"))) is not None:
        return n + sum(_count(usage.get(key)) or 0 for key in _ANTHROPIC_CACHE)
    if _count(usage.get("input")) is not None:
        return sum(_count(v) or 0 for k, v in usage.items() if "input" in k)
    return None


#: Keys holding the cached-read part of the input (a prompt-cache hit), first present wins:
#: Anthropic, OpenTelemetry GenAI, OpenInference, Vercel AI SDK, Langfuse (OpenAI and
#: Anthropic integrations), Gemini ``usageMetadata``.
_CACHED_READ: Final = (
    "cache_read_input_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "llm.token_count.prompt_details.cache_read",
    "ai.usage.cachedInputTokens",
    "input_cached_tokens",
    "input_cache_read",
    "cachedContentTokenCount",
)
#: Nested forms of the cached read: OpenAI Chat Completions (``prompt_tokens_details``),
#: Responses (``input_tokens_details``), LangChain ``usage_metadata`` (``input_token_details``).
_CACHED_READ_NESTED: Final = (
    ("prompt_tokens_details", "cached_tokens"),
    ("input_tokens_details", "cached_tokens"),
    ("input_token_details", "cache_read"),
)
#: Keys holding the input written to the prompt cache (billed apart by Anthropic).
_CACHE_WRITE: Final = (
    "cache_creation_input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "llm.token_count.prompt_details.cache_write",
    "input_cache_creation",
)
_CACHE_WRITE_NESTED: Final = (("input_token_details", "cache_creation"),)


def _first(
    usage: dict[str, Any], flat: tuple[str, ...], nested: tuple[tuple[str, str], ...]
) -> int:
    for key in flat:
        if (n := _count(usage.get(key))) is not None:
            return n
    for outer, inner in nested:
        details = usage.get(outer)
        if isinstance(details, dict) and (n := _count(details.get(inner))) is not None:
            return n
    return 0


def cached_input_tokens(usage: Any) -> int:
    """Input tokens of the call read from the provider's prompt cache (0 when it names none).

    >>> cached_input_tokens({"input_tokens": 4, "cache_read_input_tokens": 100})
    100
    >>> cached_input_tokens({"prompt_tokens": 120, "prompt_tokens_details": {"cached_tokens": 64}})
    64
    >>> cached_input_tokens({"gen_ai.usage.cache_read.input_tokens": "8"})
    8
    """
    return _first(usage, _CACHED_READ, _CACHED_READ_NESTED) if isinstance(usage, dict) else 0


def cache_write_tokens(usage: Any) -> int:
    """Input tokens of the call written to the provider's prompt cache (0 when it names none).

    >>> cache_write_tokens({"input_tokens": 4, "cache_creation_input_tokens": 50})
    50
    """
    return _first(usage, _CACHE_WRITE, _CACHE_WRITE_NESTED) if isinstance(usage, dict) else 0
