"""Which format claims the first bytes of a file, derived from what the formats declare.

Formats nest: LangChain messages carry OpenAI ``tool_calls`` and Anthropic blocks, Claude Code
lines carry Anthropic messages, ToolBench files carry OpenAI legacy messages, Langfuse exports
carry messages of every conversation format. Each :class:`~ingest.formats.base.TraceFormat`
says which formats it ``embeds``; from that alone:

* a format *explains* a head when its own markers occur in it and every other format whose
  markers occur there is one it embeds (directly or through a format it embeds); the one format
  that explains a head claims it. Formats that neither embed the other (Anthropic and Responses)
  explain nothing together: such a head has no claimant;
* sniffing tries containers before the formats they embed (:attr:`Sniffing.order`);
* :meth:`Sniffing.decide` picks a format for every head it can: the claimant; else, of the
  formats whose markers occur, the first in that order; else, for a head with no markers at all,
  the first format whose ``fallback_markers`` occur (plain user/assistant messages, valid in
  several formats, go to the generic one, OpenAI chat). Only a head showing none of these is
  undecided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ingest.formats.base import TraceFormat


@dataclass(frozen=True)
class Sniffing:
    """The sniffing order and precedence of a list of formats (see the module docstring)."""

    #: Every format, each container before the formats it embeds (list order breaks ties).
    order: tuple[TraceFormat, ...]
    #: Format name -> every format it embeds, directly or through another.
    embedded: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, formats: Sequence[TraceFormat]) -> Sniffing:
        """The sniffing of ``formats``; ``ValueError`` for a duplicate name, an ``embeds`` naming
        no listed format, or formats embedding each other in a cycle.

        >>> from ingest.formats import anthropic, claude_code, openai_chat
        >>> formats = [openai_chat.FORMAT, anthropic.FORMAT, claude_code.FORMAT]
        >>> [f.name for f in Sniffing.of(formats).order]
        ['claude_code', 'anthropic', 'openai_chat']
        """
        names = [f.name for f in formats]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"formats registered twice: {', '.join(duplicates)}")
        for fmt in formats:
            unknown = sorted(fmt.embeds - set(names))
            if unknown:
                raise ValueError(f"format {fmt.name} embeds unknown formats: {', '.join(unknown)}")
        return cls(order=_containers_first(formats), embedded=_closure(formats))

    def claimants(self, head: bytes) -> list[TraceFormat]:
        """The formats that explain ``head`` (at most one; see the module docstring).

        >>> from ingest.formats import anthropic, claude_code, openai_chat
        >>> sniffing = Sniffing.of([openai_chat.FORMAT, anthropic.FORMAT, claude_code.FORMAT])
        >>> [f.name for f in sniffing.claimants(b'{"parentUuid":null,"message":'
        ...                                      b'{"content":[{"type":"tool_use"}]}}')]
        ['claude_code']
        """
        found = [fmt for fmt in self.order if fmt.shows_markers(head)]
        shown = {fmt.name for fmt in found}
        return [fmt for fmt in found if shown - {fmt.name} <= self.embedded[fmt.name]]

    def decide(self, head: bytes) -> TraceFormat | None:
        """The format to read ``head`` with, or ``None`` (see the module docstring).

        >>> from ingest.formats import anthropic, openai_chat, openai_responses
        >>> sniffing = Sniffing.of([openai_responses.FORMAT, anthropic.FORMAT, openai_chat.FORMAT])
        >>> sniffing.decide(b'[{"type": "tool_use"}, {"call_id": "c"}]').name
        'openai_responses'
        >>> sniffing.decide(b'{"messages": [{"role": "user", "content": "hi"}]}').name
        'openai_chat'
        """
        found = [fmt for fmt in self.order if fmt.shows_markers(head)]
        shown = {fmt.name for fmt in found}
        claimed = [fmt for fmt in found if shown - {fmt.name} <= self.embedded[fmt.name]]
        if claimed or found:
            return (claimed or found)[0]
        return next((fmt for fmt in self.order if fmt.shows_fallback_markers(head)), None)

    def closest(self, head: bytes, limit: int = 3) -> list[TraceFormat]:
        """Up to ``limit`` formats whose ``hints`` occur in ``head``, most hints first (ties in
        sniffing order): what an undecided head looks most like.

        >>> from ingest.formats import anthropic, openai_chat, openai_responses
        >>> sniffing = Sniffing.of([openai_responses.FORMAT, anthropic.FORMAT, openai_chat.FORMAT])
        >>> [f.name for f in sniffing.closest(b'{"messages": [], "system": "s"}')]
        ['anthropic', 'openai_chat']
        """
        shown = [(fmt.hints_shown(head), index, fmt) for index, fmt in enumerate(self.order)]
        ranked = sorted((-n, index, fmt.name) for n, index, fmt in shown if n)
        by_name = {fmt.name: fmt for fmt in self.order}
        return [by_name[name] for _, _, name in ranked[:limit]]


def _closure(formats: Sequence[TraceFormat]) -> dict[str, frozenset[str]]:
    """Format name -> the formats it embeds directly or transitively."""
    direct = {fmt.name: fmt.embeds for fmt in formats}
    closure: dict[str, frozenset[str]] = {}
    for name in direct:
        seen: set[str] = set()
        stack = list(direct[name])
        while stack:
            inner = stack.pop()
            if inner not in seen:
                seen.add(inner)
                stack.extend(direct[inner])
        closure[name] = frozenset(seen)
    return closure


def _containers_first(formats: Sequence[TraceFormat]) -> tuple[TraceFormat, ...]:
    """``formats`` ordered so that every container comes before what it embeds; otherwise in
    list order (a stable topological sort)."""
    waiting = list(formats)
    placed: list[TraceFormat] = []
    while waiting:
        # The first waiting format that no waiting format embeds; a cycle leaves none.
        ready = next(
            (f for f in waiting if not any(f.name in other.embeds for other in waiting)), None
        )
        if ready is None:
            names = ", ".join(f.name for f in waiting)
            raise ValueError(f"formats embed each other in a cycle among: {names}")
        placed.append(ready)
        waiting.remove(ready)
    return tuple(placed)
