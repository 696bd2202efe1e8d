"""Ground truth of a generated scenario set: the facts ToolLens's analysis must reproduce.

The expected status, error type, suggestion, pair state and verdict of every result are stated
by the scenario that built it (``ingest.scenarios.agent``); this module only arranges them and
derives the mechanical facts (positions, occurrences, schema checks) by its own simple code, never
by calling the analysis it is meant to check.

Counting rules assumed (reconcile with ``ingest.analysis.pairing``, ``ingest.analysis.loops``,
``ingest.analysis.verdicts``):

* **Messages** are canonical messages: the Anthropic top-level ``system`` counts as one message
  (seq 0), and every ``tool_result`` block is its own message (an Anthropic user message that
  holds only result blocks adds one message per block). ``seq`` counts from 0 in file order.
* **Entries** (``pairs``): one per call, plus one per result linked to no call. A result linked
  to a call (``paired``, ``late_result``, ``result_before_call``) shares its call's entry and
  state. A result logged before its call is linked to that call when nothing else answers it,
  so the pair counts once, as ``result_before_call``. ``orphan_result`` (no call has the id) and
  ``duplicate_result`` (a second answer to an answered call) are entries of their own. A call
  with no linked result is ``missing_result``. ``pair_states`` counts entries.
* **late_result**: the model spoke again (a later assistant turn, i.e. an assistant message not
  adjacent to the call's message) before the result arrived; the call and result both get it.
* **reused_id**: a call whose id an *earlier* call of the same trace already used (the first
  user of the id is not flagged); the total counts such calls.
* **name_mismatch**: a linked result whose provided name differs from its call's tool; only
  formats whose results carry a name (OpenAI, LangChain) can show it; counted once per pair.
* **status** counts every result (linked or not); **error_types** counts results with status
  ``error`` by type; a protocol-provided type is kept verbatim (``payment_declined``).
* **suggestions**: ``with_suggestion`` counts results whose content gives advice (protocol
  ``suggestion`` or a text hint such as ``retry after 6s``); each has exactly one verdict.
* **loops** at k = 3: a signature is tool + canonical arguments (sorted keys, compact JSON; raw
  text without whitespace when the arguments do not parse). ``signatures`` counts (trace,
  signature) pairs occurring 3 or more times; ``calls`` counts *all* calls carrying them.
  ``ping_pong_calls`` counts calls inside an A-B-A-B alternation of two signatures at least 4
  calls long. Calls are in call order: (message seq, call index).
* **retry_after_error**: the previous call with the same signature got an ``error`` result.
* **schema_issues** only where the trace declares its tools (OpenAI, Anthropic): a tool not
  declared is ``unknown_tool``; parsed arguments failing the JSON Schema are
  ``arguments_schema_violation``; unparsable arguments are not schema-checked.
* **oversized** counts results the scenario made far larger than 2,000 tokens (~12k).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import orjson
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from db.contract.vocabulary import DEFAULT_LOOP_K, PAIR_STATES, STATUSES, VERDICTS
from ingest.scenarios.agent import DECLARES_TOOLS, NAMES_RESULTS, TOOLS, Call, Result
from ingest.scenarios.writers import Rendered


class PairFact(BaseModel):
    """The expected facts of one call (with its linked result) or of one unlinked result."""

    trace_id: str
    format: str
    #: Position among the trace's calls (call order) / Tool Messages (seq order); ``None`` for
    #: the side a fact lacks (an unlinked result has no call).
    call_ordinal: int | None = None
    result_ordinal: int | None = None
    call_seq: int | None = None
    call_index: int | None = None
    result_seq: int | None = None
    #: The call's id, or for an unlinked result the id it carries.
    call_id: str | None
    #: The call's tool; for an unlinked result the name it gives (``None`` in Anthropic).
    tool: str | None
    pair_state: str
    name_mismatch: bool = False
    reused_id: bool = False
    status: str | None = None
    error_type: str | None = None
    suggestion: bool = False
    verdict: str | None = None
    oversized: bool = False
    occurrence: int | None = None
    run_length: int | None = None
    retry_after_error: bool | None = None
    ping_pong: bool | None = None
    schema_issue: str | None = None


class TraceTruth(BaseModel):
    """Per-trace totals and where the trace came from."""

    trace_id: str
    format: str
    scenario: str
    category: str
    started_at: str
    messages: int
    tool_calls: int
    tool_results: int


class LoopTotals(BaseModel):
    """Loops at threshold ``k``."""

    k: int
    signatures: int
    calls: int
    ping_pong_calls: int


class SuggestionTotals(BaseModel):
    """Results with advice and the verdicts on them."""

    with_suggestion: int
    followed: int
    ignored: int
    unclear: int
    no_next_action: int


class GroundTruth(BaseModel):
    """Everything the analysis of the generated files must reproduce (rules: module doc)."""

    seed: int
    traces: int
    messages: int
    tool_calls: int
    tool_results: int
    formats: dict[str, int]
    pair_states: dict[str, int]
    name_mismatch: int
    reused_id: int
    status: dict[str, int]
    error_types: dict[str, int]
    loops: LoopTotals
    suggestions: SuggestionTotals
    schema_issues: dict[str, int]
    oversized: int
    trace_facts: list[TraceTruth]
    pairs: list[PairFact]


def _signature(call: Call) -> str:
    if call.args is None:
        return call.tool + ":" + "".join((call.raw_args or "").split())
    return call.tool + ":" + orjson.dumps(call.args, option=orjson.OPT_SORT_KEYS).decode()


def ping_pong_members(signatures: Sequence[str], min_length: int = 4) -> list[bool]:
    """Which calls lie in an alternation A-B-A-B… of two signatures ``min_length`` or longer."""
    flags = [False] * len(signatures)
    for start in range(len(signatures) - 1):
        if signatures[start] == signatures[start + 1]:
            continue
        end = start + 1
        while end + 1 < len(signatures) and signatures[end + 1] == signatures[end - 1]:
            end += 1
        if end - start + 1 >= min_length:
            flags[start : end + 1] = [True] * (end - start + 1)
    return flags


def _schema_issue(fmt: str, call: Call) -> str | None:
    if fmt not in DECLARES_TOOLS:
        return None
    if call.tool not in TOOLS:
        return "unknown_tool"
    if call.args is None:
        return None
    valid = Draft202012Validator(TOOLS[call.tool][1]).is_valid(call.args)
    return None if valid else "arguments_schema_violation"


def trace_pairs(item: Rendered) -> list[PairFact]:
    """The expected entries of one rendered trace, in order of first appearance."""
    events = item.conv.events
    located: list[tuple[int, int, Call]] = [
        (seq, index, call) for seq, e in enumerate(events) for index, call in enumerate(e.calls)
    ]
    results = [(seq, e.result) for seq, e in enumerate(events) if e.result is not None]
    linked: dict[int, tuple[int, int, Result]] = {
        id(r.answers): (seq, ordinal, r)
        for ordinal, (seq, r) in enumerate(results)
        if r.answers is not None
    }
    signatures = [_signature(call) for _, _, call in located]
    seen: Counter[str] = Counter()
    pongs = ping_pong_members(signatures)
    last_error: dict[str, bool] = {}
    used_ids: set[str | None] = set()
    keyed: list[tuple[tuple[int, int], PairFact]] = []
    for ordinal, ((seq, index, call), sig) in enumerate(zip(located, signatures, strict=True)):
        seen[sig] += 1
        run = 1
        for step in (-1, 1):
            cursor = ordinal + step
            while 0 <= cursor < len(signatures) and signatures[cursor] == sig:
                run, cursor = run + 1, cursor + step
        answer = linked.get(id(call))
        fact = PairFact(
            trace_id=item.trace_id,
            format=item.fmt,
            call_ordinal=ordinal,
            call_seq=seq,
            call_index=index,
            call_id=call.call_id,
            tool=call.tool,
            pair_state="missing_result",
            reused_id=call.call_id in used_ids,
            occurrence=seen[sig],
            run_length=run,
            retry_after_error=last_error.get(sig, False),
            ping_pong=pongs[ordinal],
            schema_issue=_schema_issue(item.fmt, call),
        )
        used_ids.add(call.call_id)
        if answer is not None:
            result_seq, result_ordinal, result = answer
            _fill_result(fact, result, result_seq, result_ordinal)
            fact.pair_state = result.state
            fact.name_mismatch = item.fmt in NAMES_RESULTS and result.name != call.tool
        last_error[sig] = fact.status == "error"
        keyed.append(((seq, index), fact))
    for result_ordinal, (seq, result) in enumerate(results):
        if result.answers is not None:
            continue
        fact = PairFact(
            trace_id=item.trace_id,
            format=item.fmt,
            call_id=result.result_id,
            tool=result.name if item.fmt in NAMES_RESULTS else None,
            pair_state=result.state,
        )
        _fill_result(fact, result, seq, result_ordinal)
        keyed.append(((seq, -1), fact))
    return [fact for _, fact in sorted(keyed, key=lambda pair: pair[0])]


def _fill_result(fact: PairFact, result: Result, seq: int, ordinal: int) -> None:
    outcome = result.outcome
    fact.result_seq, fact.result_ordinal = seq, ordinal
    fact.status, fact.error_type = outcome.status, outcome.error_type
    fact.suggestion, fact.verdict, fact.oversized = (
        outcome.suggestion,
        result.verdict,
        (outcome.oversized),
    )


def loop_totals(items: Sequence[Rendered], k: int = DEFAULT_LOOP_K) -> LoopTotals:
    """Loops at ``k`` over all traces (per-trace signatures; see the module docstring)."""
    signatures = calls = pongs = 0
    for item in items:
        sigs = [_signature(c) for e in item.conv.events for c in e.calls]
        looping = [n for n in Counter(sigs).values() if n >= k]
        signatures += len(looping)
        calls += sum(looping)
        pongs += sum(ping_pong_members(sigs))
    return LoopTotals(k=k, signatures=signatures, calls=calls, ping_pong_calls=pongs)


def build_truth(seed: int, items: Sequence[Rendered]) -> GroundTruth:
    """The ground truth of the rendered traces ``items``."""
    pairs = [fact for item in items for fact in trace_pairs(item)]
    results = [r for item in items for e in item.conv.events if (r := e.result) is not None]
    verdicts = Counter(r.verdict for r in results if r.verdict is not None)
    error_types = [r.outcome.error_type or "other" for r in results if r.outcome.status == "error"]
    trace_facts = [
        TraceTruth(
            trace_id=item.trace_id,
            format=item.fmt,
            scenario=item.conv.name,
            category=item.conv.category,
            started_at=item.stamp(item.conv.events[0]),
            messages=len(item.conv.events),
            tool_calls=sum(len(e.calls) for e in item.conv.events),
            tool_results=sum(1 for e in item.conv.events if e.result is not None),
        )
        for item in items
    ]
    return GroundTruth(
        seed=seed,
        traces=len(items),
        messages=sum(t.messages for t in trace_facts),
        tool_calls=sum(t.tool_calls for t in trace_facts),
        tool_results=sum(t.tool_results for t in trace_facts),
        formats=dict(sorted(Counter(item.fmt for item in items).items())),
        pair_states={s: sum(1 for p in pairs if p.pair_state == s) for s in PAIR_STATES},
        name_mismatch=sum(1 for p in pairs if p.name_mismatch),
        reused_id=sum(1 for p in pairs if p.reused_id),
        status={s: sum(1 for r in results if r.outcome.status == s) for s in STATUSES},
        error_types=dict(sorted(Counter(error_types).items())),
        loops=loop_totals(items),
        suggestions=SuggestionTotals(
            with_suggestion=sum(1 for r in results if r.outcome.suggestion),
            **{v: verdicts[v] for v in VERDICTS},
        ),
        schema_issues={
            kind: sum(1 for p in pairs if p.schema_issue == kind)
            for kind in ("unknown_tool", "arguments_schema_violation")
        },
        oversized=sum(1 for r in results if r.outcome.oversized),
        trace_facts=trace_facts,
        pairs=pairs,
    )
