"""What a trace format is: one :class:`TraceFormat` per format module, declared once.

A format names itself, says in one line what it reads, gives the JSON keys that show it in the
first bytes of a file (``markers``), names the formats whose messages its files may hold
(``embeds``), and parses records into canonical traces. The registry (``ingest.formats``) is a
list of these objects; sniffing derives its order and its precedence from ``embeds``.

A format that can leave whole-trace records unparsed for a worker process (a *deferred* record,
:class:`Deferred`) also gives ``split`` (``parse`` that defers) and ``parse_one`` (which finishes
one deferred record).

A format whose traces span many records of a file (a Claude Code session) may give ``extend``:
go on parsing a stored trace with the records appended to its file, exactly as ``parse`` would
have read the whole file (see :data:`Extend`).

Example::

    >>> fmt = TraceFormat(
    ...     name="demo",
    ...     description="Demo traces",
    ...     markers=(rb'"demo_messages"\\s*:',),
    ...     parse=lambda records, source_file: iter(()),
    ... )
    >>> fmt.shows_markers(b'{"demo_messages": []}'), fmt.shows_markers(b'{"messages": []}')
    (True, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ingest.model import Rejected, Trace
from ingest.records import Record

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

    ``markers`` are regular expressions (bytes) of JSON *keys*, or a key with a telling value,
    matched on the raw head of a file: inside a JSON string every quote is escaped, so a marker
    never matches text that merely mentions it, and the match works on a head cut anywhere.
    ``embeds`` names the formats whose messages a file of this one may hold (a Claude Code line
    holds an Anthropic message): their markers showing too does not stop this format from
    claiming a head, and they never claim a head showing this format's markers.
    ``trace_per_record``: every record is a whole trace, so the lines appended to a file make
    traces of their own (an incremental import parses only those).
    ``fallback_markers`` claim a head only when no format's ``markers`` occur in it: the generic
    format (OpenAI chat) takes plain role/content message lists this way. ``hints`` are JSON
    keys typical of the format but too common to claim anything (``messages``, ``input``): for
    a head no format takes, they rank the formats it is closest to, for the rejection message.
    """

    name: str
    description: str
    markers: tuple[bytes, ...]
    parse: Parse
    embeds: frozenset[str] = frozenset()
    split: Split | None = None
    parse_one: ParseOne | None = None
    trace_per_record: bool = False
    fallback_markers: tuple[bytes, ...] = ()
    hints: tuple[str, ...] = ()
    extend: Extend | None = None
    _pattern: re.Pattern[bytes] = field(init=False, repr=False, compare=False)
    _fallback: re.Pattern[bytes] | None = field(init=False, repr=False, compare=False)
    _hints: tuple[re.Pattern[bytes], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"format name {self.name!r} is not a lowercase identifier")
        if not self.description or "\n" in self.description:
            raise ValueError(f"format {self.name}: the description must be one non-empty line")
        if not self.markers:
            raise ValueError(f"format {self.name}: no markers, so it could never be sniffed")
        if self.name in self.embeds:
            raise ValueError(f"format {self.name} cannot embed itself")
        if (self.split is None) != (self.parse_one is None):
            raise ValueError(f"format {self.name}: split and parse_one come together")
        # Frozen: the compiled markers are set once here, the only write.
        object.__setattr__(self, "_pattern", re.compile(b"|".join(self.markers)))
        fallback = re.compile(b"|".join(self.fallback_markers)) if self.fallback_markers else None
        object.__setattr__(self, "_fallback", fallback)
        hints = tuple(re.compile(b'"' + re.escape(key.encode()) + rb'"\s*:') for key in self.hints)
        object.__setattr__(self, "_hints", hints)

    def shows_markers(self, head: bytes) -> bool:
        """Whether one of this format's markers occurs in ``head``."""
        return self._pattern.search(head) is not None

    def hints_shown(self, head: bytes) -> int:
        """How many of this format's ``hints`` (keys) occur in ``head``."""
        return sum(1 for hint in self._hints if hint.search(head) is not None)

    def shows_fallback_markers(self, head: bytes) -> bool:
        """Whether one of this format's fallback markers occurs in ``head``."""
        return self._fallback is not None and self._fallback.search(head) is not None


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
