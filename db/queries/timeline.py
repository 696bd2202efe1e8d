"""The timeline of one trace: its model calls and tool calls as spans of time.

What the store keeps per message is its time (``messages.timestamp``: a span's start for a tool
call, its end for the answer and for a model's message, a log line's time elsewhere), its
sub-agent thread (``messages.branch``: a Claude Code side chain, the thread of spans named by
the span its model calls nest in), the thread that thread nests in where spans say so
(``messages.branch_parent``: :attr:`Timeline.parents`) and, for a Tool Message, the execution time
(``tool_results.duration_ms``: the tool span's own end − start, else the timestamps'
difference, ``ingest.analysis.durations``). From these:

* a **tool call** runs from its call message's time for its answer's duration (else until its
  answer's time); a call without a time, or without an answer with a time, has no bar;
* a **model call** is a run of consecutive assistant messages of one thread (Claude Code writes
  one line per content block): it starts at the thread's last message before the run that has
  a time (what the model was given) and ends at the run's last time. A run with no message
  before it that has a time has no bar.

Each bar carries the Trace page's ``pair`` value it opens: a tool call's own, a model call's
first tool call (``None`` for a model call that called no tool).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import Connection, Engine, and_, select

from db.schema import MessageRow, ToolCallRow, ToolResultRow, aliased

#: Columns of :attr:`Timeline.bars`, in order.
TIMELINE_COLUMNS: tuple[str, ...] = (
    "kind", "branch", "label", "start", "end", "duration_ms", "pair", "status", "seq",
)  # fmt: skip
#: ``status`` of a tool call whose answer has no status (no answer).
NO_RESULT = "no result"


@dataclass(frozen=True, slots=True)
class Timeline:
    """The bars of one trace (:data:`TIMELINE_COLUMNS`, by start time) and what had no time:
    ``timed_messages`` of ``messages`` carry a time, ``untimed_calls`` tool calls have no bar.
    ``parents``: each thread that nests in another thread than the main conversation, and
    that thread (``{"researcher": "planner"}``)."""

    bars: pd.DataFrame
    messages: int
    timed_messages: int
    untimed_calls: int
    parents: dict[str, str] = field(default_factory=dict)


def _ms(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() * 1000


def _model_bars(messages: Sequence[Any], first_call: dict[int, str]) -> list[tuple[Any, ...]]:
    """Model-call bars from ``(seq, role, timestamp, branch)`` rows in seq order."""
    bars: list[tuple[Any, ...]] = []
    last_time: dict[str | None, datetime] = {}
    #: Per branch: the open run of assistant messages, as [start, end, first seq, pair, n].
    run: dict[str | None, list[Any]] = {}

    def close(branch: str | None) -> None:
        open_run = run.pop(branch, None)
        if open_run is None:
            return
        start, end, seq, pair, count = open_run
        if start is not None and end is not None and end >= start:
            label = "model call" + (f" ({count} messages)" if count > 1 else "")
            bars.append(("model", branch, label, start, end, _ms(start, end), pair, None, seq))

    for seq, role, timestamp, branch in messages:
        if role == "assistant":
            open_run = run.get(branch)
            if open_run is None:
                run[branch] = open_run = [last_time.get(branch), None, seq, None, 0]
            open_run[4] += 1
            if timestamp is not None:
                open_run[1] = timestamp if open_run[1] is None else max(open_run[1], timestamp)
            if open_run[3] is None:
                open_run[3] = first_call.get(seq)
        else:
            close(branch)
        if timestamp is not None:
            last_time[branch] = timestamp
    for branch in list(run):
        close(branch)
    return bars


def _clickhouse_calls(conn: Connection, trace_id: int, messages: Sequence[Any]) -> Sequence[Any]:
    """The trace's calls as the timeline reads them (seq, index, tool, start, branch, status,
    duration, answered at) on ClickHouse, which joins once per SELECT: the calls and the
    results read apart, put together with the trace's ``messages`` (seq, role, time, branch)."""
    c, r = ToolCallRow, ToolResultRow
    placed = {int(seq): (ts, branch) for seq, _, ts, branch in messages}
    results = {
        int(seq): (status, ms)
        for seq, status, ms in conn.execute(
            select(r.message_seq, r.status, r.duration_ms).where(r.trace_id == trace_id)
        )
    }
    rows = []
    for seq, index, tool, start, answer in conn.execute(
        select(c.message_seq, c.call_index, c.tool_name, c.timestamp, c.result_seq)
        .where(c.trace_id == trace_id)
        .order_by(c.message_seq, c.call_index)
    ):
        status, ms = results.get(answer, (None, None)) if answer is not None else (None, None)
        answered_at = placed.get(answer, (None, None))[0] if answer is not None else None
        rows.append((seq, index, tool, start, placed[int(seq)][1], status, ms, answered_at))
    return rows


def trace_timeline(engine: Engine, trace_id: int) -> Timeline:
    """The timeline of the trace ``trace_id`` (see the module docstring): two statements, the
    messages' times and threads, and the calls with their answers' durations and times."""
    c, r = ToolCallRow, ToolResultRow
    call_message, answer_message = aliased(MessageRow, "call_message"), aliased(MessageRow)
    with engine.connect() as conn:
        messages = conn.execute(
            select(MessageRow.seq, MessageRow.role, MessageRow.timestamp, MessageRow.branch)
            .where(MessageRow.trace_id == trace_id)
            .order_by(MessageRow.seq)
        ).all()
        # One row per nested thread: its messages all carry the same parent.
        nested = conn.execute(
            select(MessageRow.branch, MessageRow.branch_parent)
            .where(
                MessageRow.trace_id == trace_id,
                MessageRow.branch.is_not(None),
                MessageRow.branch_parent.is_not(None),
            )
            .distinct()
        ).all()
        if conn.dialect.name == "clickhouse":
            calls = _clickhouse_calls(conn, trace_id, messages)
        else:
            calls = conn.execute(
                select(
                    c.message_seq,
                    c.call_index,
                    c.tool_name,
                    c.timestamp,
                    call_message.branch,
                    r.status,
                    r.duration_ms,
                    answer_message.timestamp,
                )
                .select_from(c)
                .join(
                    call_message,
                    and_(call_message.trace_id == c.trace_id, call_message.seq == c.message_seq),
                )
                .outerjoin(r, and_(r.trace_id == c.trace_id, r.message_seq == c.result_seq))
                .outerjoin(
                    answer_message,
                    and_(answer_message.trace_id == c.trace_id, answer_message.seq == c.result_seq),
                )
                .where(c.trace_id == trace_id)
                .order_by(c.message_seq, c.call_index)
            ).all()
    first_call: dict[int, str] = {}
    bars: list[tuple[Any, ...]] = []
    untimed = 0
    for seq, index, tool, start, branch, status, duration, answered_at in calls:
        pair = f"{seq}:{index}"
        first_call.setdefault(int(seq), pair)
        if start is None:
            untimed += 1
            continue
        if duration is None or duration < 0:
            duration = _ms(start, answered_at) if answered_at is not None else None
        if duration is None or duration < 0:
            untimed += 1
            continue
        end = start + timedelta(milliseconds=float(duration))
        state = str(status) if status is not None else NO_RESULT
        bars.append(("tool", branch, str(tool), start, end, float(duration), pair, state, seq))
    bars += _model_bars(messages, first_call)
    bars.sort(key=lambda bar: (bar[3], bar[8], bar[0] == "tool"))
    frame = pd.DataFrame(bars, columns=list(TIMELINE_COLUMNS))
    return Timeline(
        bars=frame,
        messages=len(messages),
        timed_messages=sum(1 for m in messages if m[2] is not None),
        untimed_calls=untimed,
        parents={str(b): str(p) for b, p in sorted(nested) if b != p},
    )
