"""The format registry: every input format ToolLens reads, in ONE list, in precedence order.

Each format module declares one :class:`~ingest.formats.base.TraceFormat` (``FORMAT``): its
name, a one-line description, the shape of its records (``shape``), the formats it embeds, and
its parser. :data:`REGISTRY` lists them in the order detection prefers them where two fit a
file (every container before the formats it embeds: a tau2 results file holds chat messages);
``ingest.formats._sniffing`` decides a file's format from its first records.

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
from ingest.formats._shapes import HeadRecords
from ingest.formats._sniffing import Sniffing, Verdict
from ingest.formats.base import TraceFormat

#: Every format ToolLens reads, in precedence order: where the first records of a file fit two
#: formats and show both their signs, the earlier one reads it. Containers come first (an OTLP
#: export or a Langfuse export holds spans whose attributes hold chat messages; a tau2 results
#: file holds chat messages; LangSmith runs hold LangChain messages), then the conversation
#: formats from the most specific structure to the generic one (OpenAI chat: plain
#: role/content messages go to it). ``Sniffing.of`` refuses a container listed after a format
#: it embeds.
REGISTRY: tuple[TraceFormat, ...] = (
    otlp.FORMAT,
    langfuse.FORMAT,
    langsmith.FORMAT,
    tau2.FORMAT,
    claude_code.FORMAT,
    toolbench.FORMAT,
    langchain.FORMAT,
    gemini.FORMAT,
    request_log.FORMAT,
    openai_responses.FORMAT,
    anthropic.FORMAT,
    openai_chat.FORMAT,
)

#: The format plain role/content message lists are read with when no format shows a sign.
GENERIC = openai_chat.NAME

_SNIFFING = Sniffing.of(REGISTRY, GENERIC)

#: The registered formats in precedence order (the same as :data:`REGISTRY`).
FORMATS: tuple[TraceFormat, ...] = _SNIFFING.order

_BY_NAME: dict[str, TraceFormat] = {fmt.name: fmt for fmt in FORMATS}


def format_names() -> list[str]:
    """Names of all formats, in precedence order (for ``--format`` and ``toollens formats``)."""
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


def fitting(head: bytes | HeadRecords) -> list[TraceFormat]:
    """The formats whose shape the first records of ``head`` fit, showing the format's sign,
    in precedence order (the first is the one :func:`sniff_format` picks)."""
    return _SNIFFING.fitting(head)


def sniff_format(head: bytes | HeadRecords) -> TraceFormat | None:
    """The format to read a file with, decided from the structure of its first records, or
    ``None``.

    ``head`` is up to 64 KiB of the decompressed file (or its records, already parsed). The
    first format in precedence order that fits the records and shows its sign; else, for plain
    role/content messages, the generic OpenAI chat; else the first that fits; ``None`` for a
    head no format fits.
    """
    return _SNIFFING.decide(head)


def verdicts(head: bytes | HeadRecords) -> list[Verdict]:
    """Every format's verdict on the first records of ``head``, in precedence order."""
    return _SNIFFING.verdicts(head)


def candidates(head: bytes | HeadRecords) -> list[Verdict]:
    """The verdicts of the formats an undecided head comes closest to (most records fitting)."""
    return _SNIFFING.candidates(head)


__all__ = [
    "FORMATS",
    "GENERIC",
    "REGISTRY",
    "candidates",
    "fitting",
    "format_names",
    "get_format",
    "sniff_format",
    "verdicts",
]
