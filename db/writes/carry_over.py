"""Human reviews follow their pair into a new version of a trace.

When an import replaces a stored trace (:func:`db.writes.traces.write_traces`), message positions
may shift, so notes (``annotations`` keyed by ``message_seq`` / ``call_index``) and corrections
(``tool_results.*_corrected``) are moved by *pair identity*, not by position: a call is the
n-th call with its ``tool_call_id`` in the trace (the n-th call of its tool among calls without
an id); a result is its call's pair, or, unpaired, the n-th result with its id (or tool name).

A note whose pair is gone, or whose call (name + raw arguments) or existing result content
changed, is kept and marked ``stale`` with the reason: never deleted. A pair that only gained
its result (a session that grew) is not stale. A correction moves to the same result when that
result's content is unchanged; otherwise it becomes a stale note saying what was corrected, by
whom, because a judgement of other content must not silently apply to the new one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from db.contract.rows import MessageRecord, ToolCallRecord, ToolResultRecord
from db.schema import AnnotationRow, MessageRow, ToolCallRow, ToolResultRow

#: The label of the note a correction becomes when its result changed or vanished.
CORRECTION_LABEL = "correction"
CORRECTION_FIELDS = ("error_type_corrected", "verdict_corrected", "corrected_by", "corrected_at")

PairKey = tuple[str, str | None, int]


@dataclass(frozen=True, slots=True)
class _Call:
    seq: int
    index: int
    name: str
    arguments_raw: str | None
    result_seq: int | None


@dataclass(slots=True)
class PairMap:
    """One version of a trace, seen by pair identity."""

    calls_at: dict[tuple[int, int], PairKey] = field(default_factory=dict)
    calls: dict[PairKey, _Call] = field(default_factory=dict)
    results_at: dict[int, PairKey] = field(default_factory=dict)
    #: Result content and tool by pair key.
    results: dict[PairKey, tuple[int, str, str]] = field(default_factory=dict)

    def result_of_call(self, key: PairKey) -> str | None:
        """The content of the result answering the call ``key`` (None: unanswered)."""
        found = self.results.get(key)
        return None if found is None else found[1]


def pair_map(
    calls: Iterable[tuple[int, int, str | None, str, str | None, int | None]],
    results: Iterable[tuple[int, str | None, str | None, str, int | None, int | None]],
    contents: dict[int, str],
) -> PairMap:
    """Index a version: ``calls`` as (seq, index, tool_call_id, name, arguments_raw, result_seq)
    and ``results`` as (seq, tool_call_id, provided_name, tool, call_seq, call_index), both in
    trace order; ``contents``: message text by seq."""
    out = PairMap()
    seen: dict[tuple[str, str | None], int] = defaultdict(int)
    for seq, index, call_id, name, args, result_seq in calls:
        base = ("id", call_id) if call_id else ("name", name)
        key: PairKey = (base[0], base[1], seen[base])
        seen[base] += 1
        out.calls_at[(seq, index)] = key
        out.calls[key] = _Call(seq, index, name, args, result_seq)
    for seq, call_id, provided, tool, call_seq, call_index in results:
        paired = None if call_seq is None else out.calls_at.get((call_seq, call_index or 0))
        if paired is not None and call_index is not None:
            key = paired
        else:
            base = ("result-id", call_id) if call_id else ("result-name", provided or tool)
            key = (base[0], base[1], seen[base])
            seen[base] += 1
        out.results_at[seq] = key
        out.results[key] = (seq, contents.get(seq, ""), tool)
    return out


def stored_pair_map(conn: Connection, trace_id: int) -> PairMap:
    """The stored version of a trace by pair identity (read before it is replaced)."""
    c, r, m = ToolCallRow, ToolResultRow, MessageRow
    calls = conn.execute(
        select(c.message_seq, c.call_index, c.tool_call_id, c.tool_name, c.arguments_raw,
               c.result_seq)
        .where(c.trace_id == trace_id)
        .order_by(c.message_seq, c.call_index)
    ).all()  # fmt: skip
    results = conn.execute(
        select(r.message_seq, r.tool_call_id, r.provided_name, r.tool, r.call_seq, r.call_index)
        .where(r.trace_id == trace_id)
        .order_by(r.message_seq)
    ).all()
    contents = dict(
        conn.execute(select(m.seq, m.content).where(m.trace_id == trace_id, m.role == "tool")).all()
    )
    return pair_map(calls, results, contents)


def new_pair_map(
    messages: Sequence[MessageRecord],
    calls: Sequence[ToolCallRecord],
    results: Sequence[ToolResultRecord],
) -> PairMap:
    """The version about to be stored, by pair identity (from its row contracts)."""
    return pair_map(
        [(x.message_seq, x.call_index, x.tool_call_id, x.tool_name, x.arguments_raw, x.result_seq)
         for x in calls],
        [(x.message_seq, x.tool_call_id, x.provided_name, x.tool, x.call_seq, x.call_index)
         for x in results],
        {m.seq: m.content for m in messages if m.role == "tool"},
    )  # fmt: skip


@dataclass(slots=True)
class Reviews:
    """The reviews of a stored trace that must follow it into its new version."""

    old: PairMap
    #: (id, message_seq, call_index, stale) of the notes on a call or result.
    notes: list[tuple[int, int, int | None, bool]]
    #: (message_seq, tool, the correction's values) of the corrected results.
    corrections: list[tuple[int, str, dict[str, Any]]]


def read_reviews(conn: Connection, trace_id: int) -> Reviews:
    """Everything :func:`carry_over` needs from the stored version of ``trace_id``."""
    a, r = AnnotationRow, ToolResultRow
    notes = conn.execute(
        select(a.id, a.message_seq, a.call_index, a.stale)
        .where(a.trace_id == trace_id, a.message_seq.is_not(None))
        .order_by(a.id)
    ).all()
    corrected = conn.execute(
        select(r.message_seq, r.tool, *[getattr(r, f) for f in CORRECTION_FIELDS]).where(
            r.trace_id == trace_id,
            r.error_type_corrected.is_not(None) | r.verdict_corrected.is_not(None),
        )
    ).all()
    return Reviews(
        old=stored_pair_map(conn, trace_id),
        notes=[(n.id, n.message_seq, n.call_index, bool(n.stale)) for n in notes],
        corrections=[
            (row[0], row[1], dict(zip(CORRECTION_FIELDS, row[2:], strict=True)))
            for row in corrected
        ],
    )


def _describe(key: PairKey) -> str:
    kind, name, n = key
    what = "call" if kind in ("id", "name") else "result"
    by = "id" if kind.endswith("id") else "tool"
    return f"{what} with {by} {name!r} (#{n + 1})"


def _call_change(old: PairMap, new: PairMap, key: PairKey) -> str | None:
    """Why a note on the call ``key`` is stale in ``new``, or None when it is not."""
    before, after = old.calls[key], new.calls.get(key)
    if after is None:
        return f"the {_describe(key)} is not in the new version"
    if (before.name, before.arguments_raw) != (after.name, after.arguments_raw):
        return f"the {_describe(key)} changed its tool name or arguments in the new version"
    old_result = old.result_of_call(key)
    # A call that only gained its result (missing_result -> paired) is not stale.
    if old_result is not None and new.result_of_call(key) != old_result:
        return f"the result of the {_describe(key)} changed in the new version"
    return None


def _result_change(old: PairMap, new: PairMap, key: PairKey) -> str | None:
    after = new.results.get(key)
    if after is None:
        return f"the result of the {_describe(key)} is not in the new version"
    if after[1] != old.results[key][1]:
        return f"the result of the {_describe(key)} changed in the new version"
    return None


def carry_over(
    conn: Connection, trace_id: int, reviews: Reviews, new: PairMap, now: datetime
) -> None:
    """Move the notes and corrections of ``reviews`` onto the new version ``new`` of
    ``trace_id`` (its rows already written in this transaction); mark what no longer holds
    stale, keeping it."""
    a = AnnotationRow
    old = reviews.old
    for note_id, seq, index, stale in reviews.notes:
        target: tuple[int | None, int | None] | None
        if index is not None:
            key = old.calls_at.get((seq, index))
            if key is None:
                continue  # a note whose call was never stored: nothing to follow
            reason = _call_change(old, new, key)
            after = new.calls.get(key)
            target = None if after is None else (after.seq, after.index)
        else:
            key = old.results_at.get(seq)
            if key is None:
                continue
            reason = _result_change(old, new, key)
            found = new.results.get(key)
            target = None if found is None else (found[0], None)
        values: dict[str, Any] = {}
        if target is None:
            # The pair is gone: the note stays on the trace, saying what it was about.
            values = {"message_seq": None, "call_index": None}
        else:
            values = {"message_seq": target[0], "call_index": target[1]}
        if reason is not None and not stale:
            values |= {"stale": True, "stale_reason": reason}
        conn.execute(update(a).where(a.id == note_id).values(values))
    r = ToolResultRow
    for seq, tool, values in reviews.corrections:
        key = old.results_at[seq]
        found = new.results.get(key)
        reason = _result_change(old, new, key)
        if found is not None and reason is None:
            conn.execute(
                update(r).where(r.trace_id == trace_id, r.message_seq == found[0]).values(values)
            )
            continue
        conn.execute(insert(a).values(_correction_note(trace_id, tool, values, reason, now)))


def _correction_note(
    trace_id: int, tool: str, values: dict[str, Any], reason: str | None, now: datetime
) -> dict[str, Any]:
    """A stale note on the trace standing for a correction that can no longer apply."""
    parts = []
    if values["error_type_corrected"] is not None:
        parts.append(f"error type -> {values['error_type_corrected']}")
    if values["verdict_corrected"] is not None:
        parts.append(f"verdict -> {values['verdict_corrected']}")
    author = values["corrected_by"] or "(unknown)"
    at = values["corrected_at"] or now
    note = f"Correction of a {tool} result by {author}: {', '.join(parts)}."
    return {
        "trace_id": trace_id, "message_seq": None, "call_index": None,
        "label": CORRECTION_LABEL, "note": note, "author": author, "created_at": at,
        "updated_at": now, "updated_by": author, "version": 1, "stale": True,
        "stale_reason": reason,
    }  # fmt: skip
