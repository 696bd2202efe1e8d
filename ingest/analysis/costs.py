"""What each Tool Message costs: the model calls that read it, and the tokens and money it adds.

A Tool Message is not read once: it stays in the conversation, and every later model call of its
branch reads it again until the agent compacts the context. For each Tool Message of ``t`` tokens:

* **Model calls** of a branch are its assistant turns: consecutive assistant messages, and the
  later parts of one response that a source split around its Tool Messages (the same
  ``source_id``: Claude Code writes each content block on its own line). A call whose usage
  reports 0 input tokens read nothing (Claude Code's synthetic messages) and is no call.
* **Later calls** are the calls after the message in its branch that still had it in their
  input; the first of them reads it first (the tokens it *adds*), the others *re-read* it:
  ``reread_tokens = t × (later calls − 1)``.
* **Measured** when every call after it reports its input tokens (``ingest.analysis.usage``):
  a call whose input is smaller than the call before it marks a compaction, and the messages the
  call before had read are no longer in its input, nor in the calls after. The message ends where
  the first call that read it ends its input, less the messages between them (ToolLens's own
  counts), so it spans ``[end − t, end)`` of every later input; the part of that span inside a
  call's cached prefix (cached-read tokens) is a cached read, the part inside the cache write
  that follows the prefix (Anthropic's ``cache_creation_input_tokens``) a cache write, the rest a
  fresh read. ``reread_cached`` sums the cached parts of the re-reads.
* **Estimated** otherwise: every assistant turn after the message in its branch reads it, all
  fresh (no compaction or cache can be seen); ``reread_cached`` is unknown (``None``).
* **Cost** prices each read at the trace model's input, cached-input or cache-write price
  (``ingest.analysis.prices``), first read included; ``None`` when the table has no price for the
  model.

Worked example (measured): a 1,000-token Tool Message read by calls of inputs 5,000, 6,500 and
7,000 tokens, the last two with 6,000 tokens cached, then a call of 3,000 (a compaction): three
later calls; it spans [4,000, 5,000), inside both cached prefixes, so 2,000 tokens re-read, all
cached; at $3 / $0.30 per million, 1,000 × 3 + 2,000 × 0.30 = 3,600 millionths of a dollar.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ingest.analysis.prices import Price, nano_usd
from ingest.analysis.usage import cache_write_tokens, cached_input_tokens, input_tokens
from ingest.model import Message


@dataclass(frozen=True, slots=True)
class ToolCost:
    """What one Tool Message adds to the model calls after it."""

    later_calls: int
    reread_tokens: int
    #: Tokens of the re-reads that were cached reads; ``None`` for an estimate.
    reread_cached: int | None
    #: From the calls' reported usage (else an estimate from the turns after it).
    measured: bool
    #: Every read of it, priced; ``None`` without a price for the model.
    cost_nano_usd: int | None


@dataclass(frozen=True, slots=True)
class _Call:
    #: Position (in the branch) of its first message.
    at: int
    input: int | None
    cached: int
    written: int


def _calls(messages: Sequence[Message]) -> list[_Call]:
    """The model calls among one branch's ``messages`` (in order)."""
    calls: list[_Call] = []
    source: str | None = None
    usage: list[tuple[int, Message | None]] = []  # per call: its start and its usage message
    previous_assistant = False
    for at, message in enumerate(messages):
        if message.role != "assistant":
            previous_assistant = False
            continue
        same = previous_assistant or (source is not None and message.source_id == source)
        if not same:
            usage.append((at, None))
            source = message.source_id
        elif source is None:
            source = message.source_id
        previous_assistant = True
        if usage[-1][1] is None and input_tokens(message.usage) is not None:
            usage[-1] = (usage[-1][0], message)
    for at, carrier in usage:
        n = input_tokens(carrier.usage) if carrier is not None else None
        if n == 0:
            continue  # reported nothing read: not a model call
        calls.append(
            _Call(
                at,
                n,
                cached_input_tokens(carrier.usage) if carrier is not None else 0,
                cache_write_tokens(carrier.usage) if carrier is not None else 0,
            )
        )
    return calls


def _overlap(start: int, end: int, low: int, high: int) -> int:
    return max(0, min(end, high) - max(start, low))


def branch_costs(
    messages: Sequence[Message], sizes: Mapping[int, int], price: Price | None
) -> dict[int, ToolCost]:
    """The cost of every Tool Message among one branch's ``messages`` (in order), by seq;
    ``sizes`` gives each message's tokens by seq (a Tool Message's with its images)."""
    calls = _calls(messages)
    starts = [call.at for call in calls]
    reported = bool(calls) and all(call.input is not None for call in calls)
    # Tokens of the branch's messages before each position.
    before = [0]
    for message in messages:
        before.append(before[-1] + sizes.get(message.seq, 0))
    costs: dict[int, ToolCost] = {}
    for at, message in enumerate(messages):
        if message.role != "tool":
            continue
        t = sizes.get(message.seq, 0)
        first = bisect_right(starts, at)
        later = calls[first:]
        if later and all(call.input is not None for call in later):
            costs[message.seq] = _measured(t, at, later, before, price)
        else:
            n = len(later)
            cost = nano_usd(t * n * price.input) if price is not None else None
            # Nothing after it to read it: as measured as the branch's calls are.
            measured = not later and reported
            costs[message.seq] = ToolCost(
                n, t * max(n - 1, 0), 0 if measured else None, measured, cost
            )
    return costs


def _measured(
    t: int, at: int, later: Sequence[_Call], before: Sequence[int], price: Price | None
) -> ToolCost:
    reader = later[0]
    assert reader.input is not None
    end = max(0, reader.input - (before[reader.at] - before[at + 1]))
    start = max(0, end - t)
    reads = cached_rereads = pico = 0
    previous: int | None = None
    for call in later:
        assert call.input is not None
        if previous is not None and call.input < previous:
            break  # compaction: the context it had read is gone
        previous = call.input
        cached = _overlap(start, end, 0, call.cached)
        written = _overlap(start, end, call.cached, call.cached + call.written)
        if reads:
            cached_rereads += cached
        if price is not None:
            fresh = t - cached - written
            pico += cached * price.cached_input + written * price.cache_write + fresh * price.input
        reads += 1
    return ToolCost(
        reads,
        t * max(reads - 1, 0),
        cached_rereads,
        True,
        nano_usd(pico) if price is not None else None,
    )
