"""What a trace format is: one :class:`TraceFormat` per format module, declared once.

A format names itself, says in one line what it reads, declares what its records look like
(``shape``: one parsed record in, a fit out; see ``ingest.formats._shapes``), names the formats
whose messages its files may hold (``embeds``), and parses records into canonical traces. The
registry (``ingest.formats``) is a list of these objects in the order of precedence detection
uses where two formats fit; every container comes before the formats it embeds.

A format that can leave whole-trace records unparsed for a worker process (a *deferred* record,
:class:`Deferred`) also gives ``split`` (``parse`` that defers) and ``parse_one`` (which finishes
one deferred record).

A format whose traces span many records of a file (a Claude Code session) may give ``extend``:
go on parsing a stored trace with the records appended to its file, exactly as ``parse`` would
have read the whole file (see :data:`Extend`).

Example::

    >>> from ingest.formats._shapes import SIGN, members
    >>> fmt = TraceFormat(
    ...     name="demo",
    ...     description="Demo traces",
    ...     shape=lambda record: members(record, "demo_messages") or SIGN,
    ...     parse=lambda records, source_file: iter(()),
    ... )
    >>> fmt.shape({"demo_messages": []}), fmt.shape({"messages": []})
    (SIGN, Misfit(reason='no "demo_messages" key'))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ingest.formats._shapes import Shape
from ingest.input.records import Record
from ingest.model import Rejected, Trace

#: Records (or the reader's rejections) of one file in, its traces and rejections out.
Parse = Callable[[Iterable[Record | Rejected], str], Iterator[Trace | Rejected]]


@dataclass(slots=True)
class Deferred:
    """A record that on its own makes a whole trace (or one rejection), left unparsed so that a
    worker process can parse it with the format's ``parse_one``."""

    format: str
    source_file: str
    record: Record


#: ``members(key, indexes)``: the string values of the member ``key`` of the raw payloads (JSON
#: objects) of the stored trace's messages at ``indexes``, by index; a message whose payload has
#: no such member, or one that is not a string, is left out. The payloads themselves are not
#: read back (on a long session they are most of the stored bytes); this reads just the member.
RawMembers = Callable[[str, Sequence[int]], dict[int, str]]

#: ``extend(stored, appended, source_file, members)``: the trace ``parse`` would make of the
#: file whose first part made ``stored`` (rebuilt from the store: redacted, opaque messages as
#: plain ones, ``metadata["unknown_items"]`` holding their counts, the messages' ``raw`` left
#: ``None``: ``members`` reads what is needed of it) and whose appended records are
#: ``appended``, plus the appended records' rejections. It may change ``stored``'s messages'
#: ``usage`` (nothing else of them) and reuses them in the trace it returns; it raises
#: :class:`CannotExtend` when the stored trace does not hold all it needs to be exact.
Extend = Callable[[Trace, Iterable[Record | Rejected], str, RawMembers], Iterator[Trace | Rejected]]


class CannotExtend(Exception):
    """A stored trace cannot be extended exactly: the file is read whole again instead."""


#: :data:`Parse`, except that records making a trace on their own come back as :class:`Deferred`.
Split = Callable[[Iterable[Record | Rejected], str], Iterator[Trace | Rejected | Deferred]]
#: The trace (or rejection) of one record that ``split`` deferred.
ParseOne = Callable[[Record, str], Trace | Rejected]

_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class TraceFormat:
    """One input format, as its module declares it.

    ``shape`` tells whether one parsed record (a JSONL line, a top-level array item, the
    document) looks like this format's: ``SIGN`` (it does, and shows what only this format
    has), ``PLAIN`` (it could be this format's, like any plain chat message) or a ``Misfit``
    with the reason; detection (``ingest.formats._sniffing``) asks it of a file's first records.
    ``embeds`` names the formats whose messages a file of this one may hold (a Claude Code line
    holds an Anthropic message): the registry lists every container before them.
    ``trace_per_record``: every record is a whole trace, so the lines appended to a file make
    traces of their own (an incremental import parses only those).
    """

    name: str
    description: str
    shape: Shape
    parse: Parse
    embeds: frozenset[str] = frozenset()
    split: Split | None = None
    parse_one: ParseOne | None = None
    trace_per_record: bool = False
    extend: Extend | None = None

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"format name {self.name!r} is not a lowercase identifier")
        if not self.description or "\n" in self.description:
            raise ValueError(f"format {self.name}: the description must be one non-empty line")
        if self.name in self.embeds:
            raise ValueError(f"format {self.name} cannot embed itself")
        if (self.split is None) != (self.parse_one is None):
            raise ValueError(f"format {self.name}: split and parse_one come together")


__all__ = [
    "CannotExtend",
    "Deferred",
    "Extend",
    "Parse",
    "ParseOne",
    "RawMembers",
    "Split",
    "TraceFormat",
]
