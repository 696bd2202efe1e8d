"""Repeated-call loops: call signatures, occurrences, runs, retries and ping-pong.

Every function works on calls in *call order*, i.e. sorted by (message seq, call index), so two
parallel calls in one assistant message count as consecutive.

* ``signature`` = tool name + ``":"`` + the first 16 hex digits of the SHA-1 of the canonical
  arguments (orjson, sorted keys, compact). Arguments that did not parse are hashed as their raw
  text with all whitespace removed, so ``{"a": 1`` and ``{"a":1`` still count as one signature.
* ``occurrence``: 1 for the first call with a signature in the trace, 2 for the second, …
* ``run_length``: length of the maximal run of consecutive identical signatures the call is in.
* ``retry_after_error``: the previous call with the same signature got an error result.
* ``ping_pong``: the call lies in an alternation A-B-A-B… of two distinct signatures at least
  four calls long.
* A *loop at k* is a signature occurring k times or more in a trace; its calls are all the calls
  carrying that signature, not only those from the k-th on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from db.contract import exact_json
from ingest.analysis.pairing import CallRef

#: Shortest A-B-A-B alternation reported as ping-pong.
PING_PONG_MIN_LENGTH = 4


def _canonical_arguments(arguments: Any, arguments_raw: str | None) -> bytes:
    if arguments is None and arguments_raw:
        # Parsed arguments are None when they did not parse (or were JSON null, whose raw
        # text "null" hashes the same either way).
        return "".join(arguments_raw.split()).encode()
    try:
        return exact_json.dumps_bytes(arguments, orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        # Values orjson cannot encode (e.g. integers beyond 64 bits) fall back to the raw text.
        return "".join((arguments_raw or repr(arguments)).split()).encode()


def signature(name: str, arguments: Any, arguments_raw: str | None) -> str:
    """Tool name plus a short hash of the canonical arguments.

    >>> signature("get_weather", {"city": "Paris"}, '{"city": "Paris"}')
    'get_weather:e90b431dc9cac01d'
    """
    digest = hashlib.sha1(_canonical_arguments(arguments, arguments_raw)).hexdigest()
    return f"{name}:{digest[:16]}"


def signature_tool(sig: str) -> str:
    """The tool name part of a signature (tool names may themselves contain colons)."""
    return sig.rsplit(":", 1)[0]


@dataclass(slots=True, frozen=True)
class CallLoopFacts:
    """Loop facts of one call."""

    occurrence: int
    run_length: int
    retry_after_error: bool
    ping_pong: bool


def occurrences(signatures: Sequence[str]) -> list[int]:
    """How many times each call's signature has appeared so far, this call included."""
    seen: dict[str, int] = {}
    counts: list[int] = []
    for sig in signatures:
        seen[sig] = seen.get(sig, 0) + 1
        counts.append(seen[sig])
    return counts


def run_lengths(signatures: Sequence[str]) -> list[int]:
    """Length of the maximal run of consecutive identical signatures each call belongs to."""
    lengths = [0] * len(signatures)
    start = 0
    for index in range(1, len(signatures) + 1):
        if index == len(signatures) or signatures[index] != signatures[start]:
            for member in range(start, index):
                lengths[member] = index - start
            start = index
    return lengths


def ping_pong_flags(signatures: Sequence[str]) -> list[bool]:
    """Whether each call lies in an A-B-A-B alternation of two signatures, 4 calls or longer."""
    flags = [False] * len(signatures)
    # alternation[i]: length of the longest alternation of two signatures ending at call i.
    alternation = [1] * len(signatures)
    for index in range(1, len(signatures)):
        if signatures[index] == signatures[index - 1]:
            continue
        if index >= 2 and signatures[index] == signatures[index - 2]:
            alternation[index] = alternation[index - 1] + 1
        else:
            alternation[index] = 2
    for index, length in enumerate(alternation):
        if length >= PING_PONG_MIN_LENGTH:
            for member in range(index - length + 1, index + 1):
                flags[member] = True
    return flags


def loop_facts(signatures: Sequence[str], errored: Sequence[bool]) -> list[CallLoopFacts]:
    """Loop facts of every call, given signatures in call order and whether each call's result
    was an error (``False`` for calls without a result).

    >>> [f.occurrence for f in loop_facts(["a:1", "a:1", "b:2"], [True, False, False])]
    [1, 2, 1]
    """
    if len(signatures) != len(errored):
        raise ValueError("signatures and errored must have the same length")
    last_errored: dict[str, bool] = {}
    retries: list[bool] = []
    for sig, failed in zip(signatures, errored, strict=True):
        retries.append(last_errored.get(sig, False))
        last_errored[sig] = failed
    return [
        CallLoopFacts(occurrence=occ, run_length=run, retry_after_error=retry, ping_pong=pong)
        for occ, run, retry, pong in zip(
            occurrences(signatures),
            run_lengths(signatures),
            retries,
            ping_pong_flags(signatures),
            strict=True,
        )
    ]


@dataclass(slots=True)
class Loop:
    """A signature repeated at least k times in one trace, with every call carrying it."""

    signature: str
    tool: str
    calls: list[CallRef] = field(default_factory=list)

    @property
    def count(self) -> int:
        """How many calls carry the signature."""
        return len(self.calls)


def find_loops(calls: Sequence[tuple[CallRef, str]], k: int) -> list[Loop]:
    """Signatures occurring ``k`` or more times among ``calls`` ((message seq, call index),
    signature), most repeated first, ties in order of first appearance.

    >>> [(x.signature, x.count) for x in find_loops([((0, 0), "a:1"), ((2, 0), "a:1")], k=2)]
    [('a:1', 2)]
    """
    if k < 1:
        raise ValueError(f"loop threshold k must be at least 1, got {k}")
    grouped: dict[str, Loop] = {}
    for ref, sig in sorted(calls, key=lambda item: item[0]):
        grouped.setdefault(sig, Loop(signature=sig, tool=signature_tool(sig))).calls.append(ref)
    loops = [loop for loop in grouped.values() if loop.count >= k]
    # sorted() is stable, so equal counts keep their order of first appearance.
    return sorted(loops, key=lambda loop: -loop.count)
