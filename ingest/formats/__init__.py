"""The format registry: every input format ToolLens reads, built from ONE list.

Each format is a module exposing ``NAME``, ``DESCRIPTION``, ``sniff(head) -> bool`` and
``parse(records, source_file) -> Iterator[Trace | Rejected]``. :data:`FORMATS` lists them most
specific first (a Langfuse export holds messages of every format, a Claude Code line holds an
Anthropic message, a ToolBench file OpenAI legacy messages), which is the order sniffing tries
them in.

Example::

    >>> from ingest import formats
    >>> formats.sniff_format(b'{"messages": [{"role": "tool", "tool_call_id": "c1"}]}').NAME
    'openai_chat'
    >>> formats.sniff_format(b'{"hello": "world"}') is None
    True
"""

from __future__ import annotations

from types import ModuleType

from ingest.formats import (
    anthropic,
    claude_code,
    langchain,
    langfuse,
    openai_chat,
    openai_responses,
    otlp,
    toolbench,
)

FORMATS: list[ModuleType] = [
    otlp,
    langfuse,
    claude_code,
    toolbench,
    openai_responses,
    anthropic,
    langchain,
    openai_chat,
]

_BY_NAME: dict[str, ModuleType] = {module.NAME: module for module in FORMATS}


def format_names() -> list[str]:
    """Names of all formats, in sniffing order (for ``--format`` and ``toollens formats``)."""
    return [module.NAME for module in FORMATS]


def get_format(name: str) -> ModuleType:
    """The format module called ``name``; ``KeyError`` naming the valid ones otherwise.

    >>> get_format("anthropic").NAME
    'anthropic'
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        valid = ", ".join(format_names())
        raise KeyError(f"unknown format {name!r} (valid formats: {valid})") from None


def sniff_format(head: bytes) -> ModuleType | None:
    """The first format (in :data:`FORMATS` order) that claims the first bytes of a file.

    ``head`` is up to 64 KiB of the decompressed file. A head that is ambiguous (e.g. plain
    user/assistant messages valid in several formats) or unknown gives ``None``.
    """
    for module in FORMATS:
        if module.sniff(head):
            return module
    return None


__all__ = ["FORMATS", "format_names", "get_format", "sniff_format"]
