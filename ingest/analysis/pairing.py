"""Pair every tool call of a trace with its Tool Message (the heart of ToolLens).

Rules, in the order they are applied while walking the messages in ``seq`` order:

* A result **with an id** answers the *most recent still-unanswered* call with that id seen so
  far (real traces reuse ids inside one conversation, so "first" or "any" would mis-pair).
  - If every earlier call with that id is already answered, the result is a
    ``duplicate_result``; its partner is the most recent call with that id (the call it answers
    a second time), whose own state is left untouched.
  - If no earlier call has the id but a later call has, the result is a ``result_before_call``.
    After the walk, the first later call with that id is linked to it *if that call is otherwise
    unanswered*; the call then gets the same state. A call that a proper result answers later
    stays ``paired`` and the early result keeps no partner.
  - If no call in the trace has the id, the result is an ``orphan_result``.
* A result **without an id** (OpenAI legacy ``function`` messages, Gemini, some OTel data) is
  paired by position and name, ``pairing_method = "position"``: the earliest unanswered id-less
  call with the same name, else the earliest unanswered call *with* an id and the same name (a
  result that lost its id), else the earliest unanswered id-less call of any name (then the
  names differ and ``name_mismatch`` says so). No candidate: ``orphan_result``.
* A paired result that arrives after the model spoke again is ``late_result``, and so is its
  call, so both the calls view and the results view count it. "Spoke again" means an assistant
  message of a *later turn* lies between the call and the result; a turn is a maximal run of
  consecutive assistant messages, because Claude Code writes one API response as several
  assistant lines (one content block each) and parallel calls must not look late.
* A call never answered is ``missing_result``.
* ``reused_id`` marks a call whose id an earlier call of the same trace already used;
  ``name_mismatch`` marks a result (and its call) whose provided name differs from the call's.

Messages carrying ``tool_calls`` count as callers whatever their role (tau2 user simulators call
tools too); messages with ``role == "tool"`` are results.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from db.contract.vocabulary import PairingMethod, PairState
from ingest.model import Message, Trace

#: A call's address in a trace: (message seq, call index).
CallRef = tuple[int, int]


@dataclass(slots=True)
class CallPairing:
    """How one call was paired."""

    message_seq: int
    call_index: int
    name: str
    tool_call_id: str | None
    pair_state: PairState = "missing_result"
    pairing_method: PairingMethod | None = None
    #: Seq of the Tool Message that answers the call, when answered.
    result_seq: int | None = None
    name_mismatch: bool = False
    reused_id: bool = False

    @property
    def ref(self) -> CallRef:
        """The call's address: (message seq, call index)."""
        return (self.message_seq, self.call_index)


@dataclass(slots=True)
class ResultPairing:
    """How one Tool Message was paired."""

    message_seq: int
    tool_call_id: str | None
    name: str | None
    pair_state: PairState = "orphan_result"
    pairing_method: PairingMethod | None = None
    #: The call this result answers (for ``duplicate_result``: the call it answers again).
    call_ref: CallRef | None = None
    name_mismatch: bool = False


@dataclass(slots=True)
class PairingResult:
    """Pairing of a whole trace: calls in call order, results in seq order."""

    calls: dict[CallRef, CallPairing] = field(default_factory=dict)
    results: dict[int, ResultPairing] = field(default_factory=dict)


def _turn_starts(messages: list[Message]) -> dict[str | None, list[int]]:
    """Per branch, the positions where an assistant turn starts (sorted)."""
    starts: dict[str | None, list[int]] = {}
    previous_role: dict[str | None, str] = {}
    for position, message in enumerate(messages):
        if message.role == "assistant" and previous_role.get(message.branch) != "assistant":
            starts.setdefault(message.branch, []).append(position)
        previous_role[message.branch] = message.role
    return starts


def _spoke_between(starts: list[int], after: int, before: int) -> bool:
    """Did a turn start at a position strictly between ``after`` and ``before``?"""
    i = bisect.bisect_right(starts, after)
    return i < len(starts) and starts[i] < before


def _link(call: CallPairing, result: ResultPairing, method: PairingMethod, late: bool) -> None:
    state: PairState = "late_result" if late else "paired"
    call.pair_state = state
    call.pairing_method = method
    call.result_seq = result.message_seq
    result.pair_state = state
    result.pairing_method = method
    result.call_ref = call.ref
    mismatch = result.name is not None and result.name != call.name
    call.name_mismatch = mismatch
    result.name_mismatch = mismatch


def _position_candidate(open_calls: list[CallPairing], name: str | None) -> CallPairing | None:
    """The call an id-less result answers: see the module docstring for the order."""
    if name is not None:
        for call in open_calls:
            if call.tool_call_id is None and call.name == name:
                return call
        for call in open_calls:
            if call.tool_call_id is not None and call.name == name:
                return call
    for call in open_calls:
        if call.tool_call_id is None:
            return call
    return None


def pair_trace(trace: Trace) -> PairingResult:
    """Pair every call of ``trace`` with its result and give both a ``pair_state``.

    >>> from ingest.model import Message, ToolCall, ToolResult
    >>> t = Trace(format="x", source_file="f", messages=[
    ...     Message(seq=0, role="assistant", tool_calls=[ToolCall(call_index=0,
    ...             tool_call_id="c1", name="get_weather")]),
    ...     Message(seq=1, role="tool", tool_result=ToolResult(tool_call_id="c1"))])
    >>> pair_trace(t).results[1].call_ref
    (0, 0)
    """
    messages = sorted(trace.messages, key=lambda m: m.seq)
    turns = _turn_starts(messages)
    later_ids: set[str] = {
        call.tool_call_id
        for message in messages
        for call in message.tool_calls
        if call.tool_call_id is not None
    }
    outcome = PairingResult()
    # Unanswered calls in call order; answered ones are removed as results arrive.
    open_calls: list[CallPairing] = []
    calls_by_id: dict[str, list[CallPairing]] = {}
    call_position: dict[CallRef, int] = {}
    before_call: list[ResultPairing] = []

    for position, message in enumerate(messages):
        for tool_call in sorted(message.tool_calls, key=lambda c: c.call_index):
            call = CallPairing(
                message_seq=message.seq,
                call_index=tool_call.call_index,
                name=tool_call.name,
                tool_call_id=tool_call.tool_call_id,
            )
            if call.tool_call_id is not None:
                same_id = calls_by_id.setdefault(call.tool_call_id, [])
                call.reused_id = bool(same_id)
                same_id.append(call)
            outcome.calls[call.ref] = call
            open_calls.append(call)
            call_position[call.ref] = position
        if message.role != "tool":
            continue
        provided = message.tool_result
        result = ResultPairing(
            message_seq=message.seq,
            tool_call_id=provided.tool_call_id if provided else None,
            name=provided.name if provided else None,
        )
        outcome.results[message.seq] = result
        partner: CallPairing | None
        method: PairingMethod
        if result.tool_call_id is not None:
            method = "id"
            earlier = calls_by_id.get(result.tool_call_id, [])
            partner = next((c for c in reversed(earlier) if c.result_seq is None), None)
            if partner is None:
                if earlier:
                    result.pair_state = "duplicate_result"
                    result.pairing_method = "id"
                    result.call_ref = earlier[-1].ref
                elif result.tool_call_id in later_ids:
                    result.pair_state = "result_before_call"
                    result.pairing_method = "id"
                    before_call.append(result)
                continue
        else:
            method = "position"
            partner = _position_candidate(open_calls, result.name)
            if partner is None:
                continue
        call_pos = call_position[partner.ref]
        branch = messages[call_pos].branch
        late = _spoke_between(turns.get(branch, []), call_pos, position)
        _link(partner, result, method, late)
        open_calls = [c for c in open_calls if c is not partner]

    for result in before_call:
        first_later = next(
            c for c in calls_by_id[result.tool_call_id or ""] if c.message_seq > result.message_seq
        )
        if first_later.result_seq is None:
            _link(first_later, result, "id", late=False)
            first_later.pair_state = result.pair_state = "result_before_call"
    return outcome
