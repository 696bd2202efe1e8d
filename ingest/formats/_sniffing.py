"""Which format reads a file, decided from the structure of its first records.

A file's head (its first 64 KiB, decompressed) is parsed into its first records
(``_shapes.head_records``) and every format's declared ``shape`` is asked of each: a record
*fits* a format (``SIGN``: it shows what only that format has; ``PLAIN``: it could be that
format's) or is a *misfit*, with the reason. A format fits a head when at least half of its
first records fit it (a file may hold a few broken records). Then, in order:

1. the first format in precedence order (:attr:`Sniffing.order`: the registry's order, which
   lists every container before the formats it embeds) that fits the head and shows a sign
   in one of its records;
2. else the generic format (OpenAI chat) when it fits: plain role/content messages, readable
   by several conversation formats, are read as chat messages;
3. else the first format that fits at all;
4. else none: the head is undecided, and :meth:`Sniffing.candidates` names the formats that
   fit most of its records, with their first reasons, for the message.

Only the records' own structure counts (top-level keys and their types, the shape of their
messages, items or spans): the key or word of another format inside a string, a metadata
object or a tool's arguments never moves the decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingest.formats._shapes import SIGN, HeadRecords, Misfit, head_records
from ingest.formats.base import TraceFormat

#: How the reasons of misfits that lack a format's structure altogether begin.
_FAR = ("no ", "a record is")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one format makes of a head's first records."""

    format: TraceFormat
    #: Records that fit, and how many of them show the format's sign.
    fits: int
    signs: int
    #: The misfits: (1-based record number, reason), in record order.
    misfits: tuple[tuple[int, str], ...]

    @property
    def fitting(self) -> bool:
        """Whether at least half of the records fit this format (and one does)."""
        return self.fits > 0 and self.fits >= len(self.misfits)

    @property
    def near(self) -> int:
        """Misfits that have the format's structure but a wrong part of it (``"messages" is
        string, not an array``), not the ones lacking it (``no "messages" array``)."""
        return sum(1 for _, reason in self.misfits if not reason.startswith(_FAR))

    def first_reason(self) -> str:
        """The first misfit (the first :attr:`near` one if any), as the rejection message
        names it (``record 2: "messages" is string, not an array``)."""
        if not self.misfits:
            return "no record"
        near = [m for m in self.misfits if not m[1].startswith(_FAR)]
        number, reason = (near or list(self.misfits))[0]
        return f"record {number}: {reason}"


@dataclass(frozen=True)
class Sniffing:
    """Detection over a list of formats (see the module docstring)."""

    #: Every format in precedence order: each container before the formats it embeds.
    order: tuple[TraceFormat, ...]
    #: The format plain message lists go to when no format shows a sign.
    generic: TraceFormat | None = None

    @classmethod
    def of(cls, formats: Sequence[TraceFormat], generic: str | None = None) -> Sniffing:
        """The detection of ``formats`` in that precedence order; ``ValueError`` for a
        duplicate name, an ``embeds`` naming no listed format, a container listed after a
        format it embeds, or an unknown ``generic``.

        >>> from ingest.formats import anthropic, claude_code, openai_chat
        >>> formats = [claude_code.FORMAT, anthropic.FORMAT, openai_chat.FORMAT]
        >>> [f.name for f in Sniffing.of(formats, "openai_chat").order]
        ['claude_code', 'anthropic', 'openai_chat']
        """
        names = [f.name for f in formats]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"formats registered twice: {', '.join(duplicates)}")
        position = {name: index for index, name in enumerate(names)}
        for fmt in formats:
            unknown = sorted(fmt.embeds - set(names))
            if unknown:
                raise ValueError(f"format {fmt.name} embeds unknown formats: {', '.join(unknown)}")
            before = sorted(inner for inner in fmt.embeds if position[inner] < position[fmt.name])
            if before:
                raise ValueError(
                    f"format {fmt.name} embeds {', '.join(before)}, listed before it: "
                    "a container must come first"
                )
        if generic is not None and generic not in position:
            raise ValueError(f"the generic format {generic} is not registered")
        chosen = formats[position[generic]] if generic is not None else None
        return cls(order=tuple(formats), generic=chosen)

    def verdicts(self, head: bytes | HeadRecords) -> list[Verdict]:
        """Every format's verdict on the first records of ``head``, in precedence order."""
        found = head if isinstance(head, HeadRecords) else head_records(head)
        result: list[Verdict] = []
        for fmt in self.order:
            fits = signs = 0
            misfits: list[tuple[int, str]] = []
            for number, record in enumerate(found.records, start=1):
                fit = fmt.shape(record)
                if isinstance(fit, Misfit):
                    misfits.append((number, fit.reason))
                else:
                    fits += 1
                    signs += fit is SIGN
            result.append(Verdict(fmt, fits, signs, tuple(misfits)))
        return result

    def fitting(self, head: bytes | HeadRecords) -> list[TraceFormat]:
        """The formats that fit ``head`` and show their sign in it, in precedence order."""
        return [v.format for v in self.verdicts(head) if v.fitting and v.signs]

    def decide(self, head: bytes | HeadRecords) -> TraceFormat | None:
        """The format to read ``head`` with, or ``None`` (see the module docstring).

        >>> from ingest.formats import REGISTRY
        >>> sniffing = Sniffing.of(REGISTRY, "openai_chat")
        >>> sniffing.decide(b'{"messages": [{"role": "user", "content": "hi"}]}').name
        'openai_chat'
        >>> sniffing.decide(b'{"system": "Be brief.", "messages": []}').name
        'anthropic'
        >>> sniffing.decide(b'{"metadata": {"termination_reason": "x"}, "messages": []}').name
        'openai_chat'
        """
        verdicts = [v for v in self.verdicts(head) if v.fitting]
        signed = [v for v in verdicts if v.signs]
        if signed:
            return signed[0].format
        if self.generic is not None and any(v.format is self.generic for v in verdicts):
            return self.generic
        return verdicts[0].format if verdicts else None

    def candidates(self, head: bytes | HeadRecords, limit: int = 3) -> list[Verdict]:
        """Up to ``limit`` verdicts of the formats ``head``'s records come closest to (most
        records fitting, then most misfits that are :attr:`Verdict.near`, then precedence):
        what an undecided head was nearly read as."""
        verdicts = self.verdicts(head)
        ranked = sorted(
            range(len(verdicts)), key=lambda i: (-verdicts[i].fits, -verdicts[i].near, i)
        )
        return [verdicts[i] for i in ranked[:limit]]


__all__ = ["Sniffing", "Verdict"]
