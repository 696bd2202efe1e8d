"""The format registry: every input format ToolLens reads, in ONE list.

Each format module declares one :class:`~ingest.formats.base.TraceFormat` (``FORMAT``): its
name, a one-line description, the markers that show it in a file's first bytes, the formats it
embeds, and its parser. :data:`REGISTRY` lists them; :data:`FORMATS` is the same formats in
sniffing order (every container before the formats it embeds), derived in
``ingest.formats._sniffing`` together with which format claims a head.

Example::

    >>> from ingest import formats
    >>> formats.sniff_format(b'{"messages": [{"role": "tool", "tool_call_id": "c1"}]}').name
    'openai_chat'
    >>> formats.sniff_format(b'{"hello": "world"}') is None
    True
"""

from __future__ import annotations

from ingest.formats import (
    anthropic,
    claude_code,
    gemini,
    langchain,
    langfuse,
    langsmith,
    openai_chat,
    openai_responses,
    otlp,
    request_log,
    tau2,
    toolbench,
)
from ingest.formats._sniffing import Sniffing
from ingest.formats.base import TraceFormat

#: Every format ToolLens reads, one line per format module (the order only breaks ties in
#: :data:`FORMATS`; precedence comes from what each format embeds).
REGISTRY: tuple[TraceFormat, ...] = (
    otlp.FORMAT,
    langfuse.FORMAT,
    langsmith.FORMAT,
    tau2.FORMAT,
    claude_code.FORMAT,
    toolbench.FORMAT,
    langchain.FORMAT,
    request_log.FORMAT,
    openai_responses.FORMAT,
    anthropic.FORMAT,
    gemini.FORMAT,
    openai_chat.FORMAT,
)

_SNIFFING = Sniffing.of(REGISTRY)

#: The registered formats in sniffing order: every container before the formats it embeds.
FORMATS: tuple[TraceFormat, ...] = _SNIFFING.order

_BY_NAME: dict[str, TraceFormat] = {fmt.name: fmt for fmt in FORMATS}


def format_names() -> list[str]:
    """Names of all formats, in sniffing order (for ``--format`` and ``toollens formats``)."""
    return [fmt.name for fmt in FORMATS]


def get_format(name: str) -> TraceFormat:
    """The format called ``name``; ``KeyError`` naming the valid ones otherwise.

    >>> get_format("anthropic").name
    'anthropic'
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        valid = ", ".join(format_names())
        raise KeyError(f"unknown format {name!r} (valid formats: {valid})") from None


def claimants(head: bytes) -> list[TraceFormat]:
    """The formats that claim ``head``: one, or none when the head is unknown or ambiguous."""
    return _SNIFFING.claimants(head)


def sniff_format(head: bytes) -> TraceFormat | None:
    """The format to read a file with, decided from its first bytes, or ``None``.

    ``head`` is up to 64 KiB of the decompressed file. The format that claims it; else the
    first (in :data:`FORMATS` order) whose markers it shows; else, for plain role/content
    messages, the generic OpenAI chat; ``None`` for a head showing none of them.
    """
    return _SNIFFING.decide(head)


def closest_formats(head: bytes) -> list[TraceFormat]:
    """The formats an undecided head looks most like (by the keys they typically hold)."""
    return _SNIFFING.closest(head)


__all__ = [
    "FORMATS",
    "REGISTRY",
    "claimants",
    "closest_formats",
    "format_names",
    "get_format",
    "sniff_format",
]
