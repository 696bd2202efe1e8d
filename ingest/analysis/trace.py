"""Per-trace analysis: one canonical trace (plus token counts) in, all its derived facts out.

``analyze_trace`` joins the pure pieces: content rules for each Tool Message
(``ingest.analysis.content``), pairing (``ingest.analysis.pairing``), loop facts
(``ingest.analysis.loops``), schema checks (``ingest.analysis.schema_check``) and suggestion
verdicts (``ingest.analysis.verdicts``), and turns them into the ``ingest.analysis.facts`` contract,
findings included:

* per call: ``unparsed_arguments`` (arguments did not parse), ``unknown_tool``,
  ``arguments_schema_violation``, ``undeclared_parameter``, ``missing_result``, ``name_mismatch``;
* per result: the content findings, ``oversized`` (tokens above the budget), its pair state when
  it is not ``paired``, ``name_mismatch``; and the execution time of the call it answers
  (``ingest.analysis.durations``).

Wasted tokens are the tokens of results answering repeats (``occurrence >= 2``) of a signature;
a ``duplicate_result`` answers nothing new and is not counted there.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from db.contract.vocabulary import DEFAULT_ENCODING, DEFAULT_TOKEN_BUDGET, Verdict
from ingest.analysis.content import analyze_content
from ingest.analysis.costs import branch_costs
from ingest.analysis.durations import tool_duration
from ingest.analysis.facts import (
    CallFacts,
    ContentFacts,
    ResultFacts,
    TraceFacts,
)
from ingest.analysis.fingerprints import error_fingerprint
from ingest.analysis.images import ImageFact, message_images
from ingest.analysis.loops import Loop, find_loops, loop_facts, signature
from ingest.analysis.pairing import CallPairing, CallRef, PairingResult, ResultPairing, pair_trace
from ingest.analysis.prices import PriceTable, current
from ingest.analysis.schema_check import SchemaIssue, check_call, compile_tools
from ingest.analysis.streaks import Streak, StreakCall, find_streaks
from ingest.analysis.token_accuracy import token_counts
from ingest.analysis.tokens import count_tokens
from ingest.analysis.usage import input_tokens
from ingest.analysis.verdicts import CallView, NextAction, follow_verdict, next_call_succeeded
from ingest.model import Message, ToolCall, Trace


def _content_facts(
    trace: Trace, content_facts: Sequence[ContentFacts | None] | None
) -> dict[int, ContentFacts]:
    """Content facts of every Tool Message by seq, computing those not given."""
    if content_facts is not None and len(content_facts) != len(trace.messages):
        raise ValueError(
            f"content_facts has {len(content_facts)} entries for {len(trace.messages)} messages"
        )
    by_seq: dict[int, ContentFacts] = {}
    for index, message in enumerate(trace.messages):
        if message.role != "tool":
            continue
        given = content_facts[index] if content_facts is not None else None
        if given is None:
            provided = message.tool_result
            given = analyze_content(
                message.content,
                provided.explicit_error if provided else None,
                provided.explicit_source if provided else None,
            )
        by_seq[message.seq] = given
    return by_seq


@dataclass(slots=True)
class _Timeline:
    """Where things are in seq order: what the verdict rules look up after each result."""

    messages: list[Message]
    views: dict[CallRef, CallView]
    #: Per tool: positions (in ``messages``) and refs of its calls, in call order.
    tool_positions: dict[str, list[int]] = field(default_factory=dict)
    tool_refs: dict[str, list[CallRef]] = field(default_factory=dict)
    #: For each position, the position of the next assistant message after it.
    next_assistant: list[int | None] = field(default_factory=list)
    #: The trace's model and format (they choose the image-token rule).
    model: str | None = None
    format: str = ""
    #: Per branch, the positions of its messages in order; each position's index there.
    branch_positions: dict[str | None, list[int]] = field(default_factory=dict)
    branch_index: list[int] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        messages: list[Message],
        views: dict[CallRef, CallView],
        model: str | None = None,
        trace_format: str = "",
    ) -> _Timeline:
        timeline = cls(messages=messages, views=views, model=model, format=trace_format)
        for position, message in enumerate(messages):
            positions = timeline.branch_positions.setdefault(message.branch, [])
            timeline.branch_index.append(len(positions))
            positions.append(position)
        position_of = {m.seq: position for position, m in enumerate(messages)}
        for ref, view in views.items():
            timeline.tool_positions.setdefault(view.name, []).append(position_of[ref[0]])
            timeline.tool_refs.setdefault(view.name, []).append(ref)
        timeline.next_assistant = [None] * len(messages)
        upcoming: int | None = None
        for position in range(len(messages) - 1, -1, -1):
            timeline.next_assistant[position] = upcoming
            if messages[position].role == "assistant":
                upcoming = position
        return timeline

    def reader(self, position: int) -> tuple[int | None, int | None]:
        """(seq, input tokens) of the model call that read the message at ``position``: the
        first assistant message after it in its branch, or the next of that turn's assistant
        messages, that carries usage naming input tokens; (None, None) when there is none."""
        branch = self.branch_positions[self.messages[position].branch]
        seen_assistant = False
        # Indexes, not a slice: a slice copies the rest of the branch for every result.
        for k in range(self.branch_index[position] + 1, len(branch)):
            message = self.messages[branch[k]]
            if message.role != "assistant":
                if seen_assistant:
                    break
                continue
            seen_assistant = True
            n = input_tokens(message.usage)
            if n is not None:
                return message.seq, n
        return None, None

    def later_call(self, tool: str | None, position: int) -> CallView | None:
        """The first call of ``tool`` in a message after ``position``."""
        positions = self.tool_positions.get(tool or "", [])
        index = bisect_right(positions, position)
        return self.views[self.tool_refs[tool or ""][index]] if index < len(positions) else None

    def calls_until_retry(self, tool: str, position: int) -> tuple[CallView, ...]:
        """The model's calls after ``position`` up to and including its next call of ``tool``;
        empty when ``tool`` is not called again or the user speaks first (then the later calls
        answer the user, not the result)."""
        positions = self.tool_positions.get(tool, [])
        index = bisect_right(positions, position)
        if index == len(positions):
            return ()
        calls: list[CallView] = []
        for message in self.messages[position + 1 : positions[index] + 1]:
            if message.role == "user" and message.content.strip():
                return ()
            for call in sorted(message.tool_calls, key=lambda c: c.call_index):
                calls.append(self.views[(message.seq, call.call_index)])
                if calls[-1].name == tool:
                    return tuple(calls)
        return tuple(calls)

    def next_turn(self, position: int) -> NextAction | None:
        """The next assistant turn after ``position`` (consecutive assistant messages, whose
        texts and calls together are the model's next action); ``None`` when the trace ends."""
        start = self.next_assistant[position]
        if start is None:
            return None
        texts: list[str] = []
        calls: list[CallView] = []
        cursor = start
        while cursor < len(self.messages) and self.messages[cursor].role == "assistant":
            message = self.messages[cursor]
            if message.content:
                texts.append(message.content)
            calls.extend(
                self.views[(message.seq, c.call_index)]
                for c in sorted(message.tool_calls, key=lambda c: c.call_index)
            )
            cursor += 1
        after_user = any(
            m.role == "user" and m.content.strip() for m in self.messages[position + 1 : start]
        )
        return NextAction(
            text="\n".join(texts),
            calls=calls,
            timestamp=self.messages[start].timestamp,
            after_user=after_user,
        )


def _call_findings(call: ToolCall, pairing: CallPairing, issue: SchemaIssue | None) -> list[str]:
    findings: list[str] = []
    if not call.args_valid:
        findings.append("unparsed_arguments")
    if issue is not None:
        findings.extend(issue.findings)
    if pairing.pair_state == "missing_result":
        findings.append("missing_result")
    if pairing.name_mismatch:
        findings.append("name_mismatch")
    return findings


def _analyze_calls(
    trace: Trace, messages: list[Message], pairing: PairingResult, contents: dict[int, ContentFacts]
) -> tuple[list[CallFacts], dict[CallRef, CallView]]:
    """Facts of every call in call order, and the view of each call the verdict rules use."""
    entries = [
        (message, call)
        for message in messages
        for call in sorted(message.tool_calls, key=lambda c: c.call_index)
    ]
    refs: list[CallRef] = [(message.seq, call.call_index) for message, call in entries]
    signatures = [
        # Arguments flagged invalid are hashed from their raw text, whatever a parser salvaged.
        signature(call.name, call.arguments if call.args_valid else None, call.arguments_raw)
        for _, call in entries
    ]
    answer_status = {
        ref: contents[paired.result_seq].status
        for ref, paired in pairing.calls.items()
        if paired.result_seq is not None
    }
    loops = loop_facts(signatures, [answer_status.get(ref) == "error" for ref in refs])
    validators = compile_tools(trace.tools) if trace.tools else {}
    calls: list[CallFacts] = []
    views: dict[CallRef, CallView] = {}
    for (message, call), ref, sig, loop in zip(entries, refs, signatures, loops, strict=True):
        paired = pairing.calls[ref]
        issue = check_call(call.name, call.arguments, call.args_valid, validators)
        calls.append(
            CallFacts(
                message_seq=message.seq,
                call_index=call.call_index,
                signature=sig,
                occurrence=loop.occurrence,
                run_length=loop.run_length,
                retry_after_error=loop.retry_after_error,
                pair_state=paired.pair_state,
                pairing_method=paired.pairing_method,
                result_seq=paired.result_seq,
                name_mismatch=paired.name_mismatch,
                reused_id=paired.reused_id,
                schema_issue=issue.kind if issue else None,
                schema_detail=issue.detail if issue else None,
                ping_pong=loop.ping_pong,
                findings=_call_findings(call, paired, issue),
            )
        )
        views[ref] = CallView(
            name=call.name,
            signature=sig,
            arguments=call.arguments,
            timestamp=message.timestamp,
            status=answer_status.get(ref),
        )
    return calls, views


def _analyze_result(
    message: Message,
    position: int,
    paired: ResultPairing,
    content: ContentFacts,
    tokens: int,
    budget: int,
    timeline: _Timeline,
    images: list[ImageFact] | None = None,
) -> ResultFacts:
    """Facts of one Tool Message at ``position`` in seq order (``images``: its images when
    counted before, else found in it)."""
    failed = timeline.views[paired.call_ref] if paired.call_ref is not None else None
    following = timeline.later_call(failed.name if failed else paired.name, position)
    verdict: Verdict | None = None
    reason: str | None = None
    if content.suggestion or content.suggestion_kind:
        next_action = timeline.next_turn(position)
        if next_action is not None and failed is not None:
            next_action = replace(
                next_action, until_retry=timeline.calls_until_retry(failed.name, position)
            )
        verdict, reason = follow_verdict(
            content,
            failed,
            next_action,
            result_time=message.timestamp,
            later_same_tool=following,
        )
    if images is None:
        images = message_images(message.raw, message.content, timeline.model, timeline.format)
    image_tokens = sum(image.tokens for image in images)
    tokens += image_tokens
    read_by, read_input = timeline.reader(position)
    # The span's own measure whatever the pairing; times only for the call a result answers.
    answered = failed is not None and paired.pair_state != "duplicate_result"
    duration_ms, duration_source = tool_duration(
        failed.timestamp if failed is not None and answered else None,
        message.timestamp,
        message.tool_result.duration_ms if message.tool_result else None,
    )
    oversized = tokens > budget
    findings = list(content.findings)
    if oversized:
        findings.append("oversized")
    if paired.pair_state != "paired":
        findings.append(paired.pair_state)
    if paired.name_mismatch:
        findings.append("name_mismatch")
    return ResultFacts(
        message_seq=message.seq,
        content=content,
        pair_state=paired.pair_state,
        pairing_method=paired.pairing_method,
        call_ref=paired.call_ref,
        name_mismatch=paired.name_mismatch,
        tokens=tokens,
        image_tokens=image_tokens,
        images=[image.as_json() for image in images],
        read_by_seq=read_by,
        read_input_tokens=read_input,
        oversized=oversized,
        verdict=verdict,
        verdict_reason=reason,
        next_call_succeeded=next_call_succeeded(following),
        findings=findings,
        duration_ms=duration_ms,
        duration_source=duration_source,
    )


def analyze_trace(
    trace: Trace,
    tokens: Sequence[int],
    *,
    budget: int = DEFAULT_TOKEN_BUDGET,
    content_facts: Sequence[ContentFacts | None] | None = None,
    images: Sequence[list[ImageFact] | None] | None = None,
    encoding: str = DEFAULT_ENCODING,
    prices: PriceTable | None = None,
) -> TraceFacts:
    """All derived facts of ``trace``; ``tokens[i]`` is the token count of ``trace.messages[i]``.

    ``content_facts``, aligned with ``trace.messages`` like ``tokens``, supplies precomputed
    content facts (``None`` entries, and all of them when it is omitted, are computed with
    ``ingest.analysis.content.analyze_content``). ``images``, aligned the same way, supplies the
    images of Tool Messages counted before for the trace's model and format (``None`` entries, and
    all when it is omitted, are found with ``ingest.analysis.images.message_images``: an appended
    session reuses its stored messages' instead of reading their raw payloads again). ``encoding``
    is the one ``tokens`` were counted with:
    it decides whether the counts are exact for the trace's model. A Tool Message's tokens
    include its images' (``ingest.analysis.images``), and so do the trace's totals. ``encoding``
    also counts the arguments of the calls in an error streak (their wasted tokens). ``prices``
    (default: ``ingest.analysis.prices.current()``) prices what each Tool Message adds to the model
    calls after it (``ingest.analysis.costs``).
    """
    if len(tokens) != len(trace.messages):
        raise ValueError(f"tokens has {len(tokens)} entries for {len(trace.messages)} messages")
    if images is not None and len(images) != len(trace.messages):
        raise ValueError(f"images has {len(images)} entries for {len(trace.messages)} messages")
    known_images = (
        {m.seq: found for m, found in zip(trace.messages, images, strict=True)} if images else {}
    )
    tokens_by_seq = {m.seq: count for m, count in zip(trace.messages, tokens, strict=True)}
    contents = _content_facts(trace, content_facts)
    pairing = pair_trace(trace)
    messages = sorted(trace.messages, key=lambda m: m.seq)
    calls, views = _analyze_calls(trace, messages, pairing, contents)
    timeline = _Timeline.build(messages, views, trace.model, trace.format)
    results = [
        _analyze_result(
            message,
            position,
            pairing.results[message.seq],
            contents[message.seq],
            tokens_by_seq[message.seq],
            budget,
            timeline,
            known_images.get(message.seq),
        )
        for position, message in enumerate(messages)
        if message.role == "tool"
    ]
    _add_costs(timeline, results, tokens_by_seq, prices or current(), trace.model)
    occurrence = {(c.message_seq, c.call_index): c.occurrence for c in calls}
    wasted = sum(
        r.tokens
        for r in results
        if r.call_ref is not None
        and r.pair_state != "duplicate_result"
        and occurrence[r.call_ref] >= 2
    )
    return TraceFacts(
        calls=calls,
        results=results,
        total_tokens=sum(tokens) + sum(r.image_tokens for r in results),
        tool_result_tokens=sum(r.tokens for r in results),
        wasted_tokens=wasted,
        token_counts=token_counts(trace.model, encoding),
        streaks=_streaks(messages, calls, results, encoding),
    )


def _add_costs(
    timeline: _Timeline,
    results: list[ResultFacts],
    tokens: dict[int, int],
    prices: PriceTable,
    model: str | None,
) -> None:
    """Set each result's reads by the later model calls of its branch and their cost."""
    sizes = dict(tokens)
    sizes.update((r.message_seq, r.tokens) for r in results)
    price = prices.price(model)
    costs = {}
    for positions in timeline.branch_positions.values():
        costs.update(branch_costs([timeline.messages[p] for p in positions], sizes, price))
    for result in results:
        cost = costs[result.message_seq]
        result.later_calls = cost.later_calls
        result.reread_tokens = cost.reread_tokens
        result.reread_cached = cost.reread_cached
        result.reread_measured = cost.measured
        result.cost_nano_usd = cost.cost_nano_usd


def _streaks(
    messages: list[Message], calls: list[CallFacts], results: list[ResultFacts], encoding: str
) -> list[Streak]:
    """The error streaks of a trace (``ingest.analysis.streaks``): each call with its result's error
    fingerprint and, for error results, its result's and its arguments' tokens. Only tools with
    two or more error results can have a streak: the calls of the others are not looked at."""
    answers = {r.message_seq: r for r in results}
    failed = {
        (c.message_seq, c.call_index): answer
        for c in calls
        if c.result_seq is not None
        and (answer := answers.get(c.result_seq)) is not None
        and answer.content.status == "error"
    }
    if len(failed) < 2:
        return []
    by_ref = {(m.seq, c.call_index): c for m in messages for c in m.tool_calls}
    errors_per_tool: dict[str, int] = {}
    for ref in failed:
        name = by_ref[ref].name
        errors_per_tool[name] = errors_per_tool.get(name, 0) + 1
    by_seq = {m.seq: m for m in messages}
    entries: list[StreakCall] = []
    for facts in calls:
        ref = (facts.message_seq, facts.call_index)
        call = by_ref[ref]
        if errors_per_tool.get(call.name, 0) < 2:
            continue
        answer = failed.get(ref)
        if answer is None:
            entries.append(StreakCall(ref, call.name, None))
            continue
        text = answer.content.summary or by_seq[answer.message_seq].content
        entries.append(
            StreakCall(
                ref,
                call.name,
                error_fingerprint(call.name, text),
                tokens=answer.tokens + count_tokens(call.arguments_raw or "", encoding),
                duration_ms=answer.duration_ms,
            )
        )
    return find_streaks(entries)


def loops_at(facts: TraceFacts, k: int) -> list[Loop]:
    """Loops of an analyzed trace at threshold ``k``: signatures with ``k`` or more calls, each
    with all its calls (k is a view setting, so it needs no re-analysis)."""
    return find_loops([((c.message_seq, c.call_index), c.signature) for c in facts.calls], k)
