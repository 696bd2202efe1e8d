"""Whether a trace's token counts are exact: counted with the model's own tokenizer or not.

ToolLens counts with an OpenAI BPE encoding (``ingest.analysis.tokens``). That is the model's own
tokenizer only for OpenAI models of that encoding; a Claude, Gemini or Llama trace, a trace
naming no model, or a GPT-4o trace counted with ``cl100k_base`` gets estimates. Which encoding
an OpenAI model uses follows the model-prefix table of ``tiktoken`` (``tiktoken/model.py``,
``MODEL_PREFIX_TO_ENCODING``).
"""

from __future__ import annotations

import re
from typing import Final

from db.contract.vocabulary import Encoding, TokenCounts

#: Model name prefixes per encoding, first match wins (tiktoken's prefixes, newest first).
_PREFIXES: Final[tuple[tuple[Encoding, tuple[str, ...]], ...]] = (
    ("o200k_base", ("gpt-5", "gpt-4.5", "gpt-4.1", "gpt-4o", "chatgpt-4o", "o1", "o3", "o4-mini")),
    ("cl100k_base", ("gpt-4", "gpt-3.5-turbo", "gpt-35-turbo", "text-embedding-3",
                     "text-embedding-ada-002")),
)  # fmt: skip
_OWN_ENCODING: Final[tuple[tuple[re.Pattern[str], Encoding], ...]] = tuple(
    (re.compile("(?:" + "|".join(map(re.escape, prefixes)) + r")(?:-|$)"), encoding)
    for encoding, prefixes in _PREFIXES
)


def own_encoding(model: str | None) -> Encoding | None:
    """The encoding the model itself tokenizes with, when ToolLens has it; None otherwise.

    >>> own_encoding("gpt-4o-2024-08-06"), own_encoding("openai/gpt-4-turbo")
    ('o200k_base', 'cl100k_base')
    >>> own_encoding("claude-sonnet-4-5") is None, own_encoding(None) is None
    (True, True)
    """
    name = (model or "").rsplit("/", 1)[-1].strip().lower()
    for pattern, encoding in _OWN_ENCODING:
        if pattern.match(name):
            return encoding
    return None


def token_counts(model: str | None, encoding: str) -> TokenCounts:
    """``exact`` when ``encoding`` is the model's own, else ``estimate``.

    >>> token_counts("gpt-4o", "o200k_base"), token_counts("gpt-4o", "cl100k_base")
    ('exact', 'estimate')
    >>> token_counts("claude-opus-4-1", "o200k_base")
    'estimate'
    """
    return "exact" if own_encoding(model) == encoding else "estimate"
