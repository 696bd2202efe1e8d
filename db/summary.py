"""The headline figures of a store (``toollens summary --json``), all aggregated in SQL.

Human corrections win over derived values everywhere: the effective error type is
``COALESCE(error_type_corrected, error_type)``, likewise the verdict.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, func, or_, select

from db.filters import (
    NO_FILTERS,
    Filters,
    restrict_calls,
    restrict_findings,
    restrict_results,
    restrict_traces,
)
from db.schema import (
    FindingRow,
    ImportRun,
    MessageRow,
    RejectedRecord,
    ToolCallRow,
    ToolResultRow,
    TraceRow,
)

PAIR_STATES = (
    "paired",
    "missing_result",
    "orphan_result",
    "duplicate_result",
    "result_before_call",
    "late_result",
)
STATUSES = ("success", "error", "partial", "unknown")
VERDICTS = ("followed", "ignored", "unclear", "no_next_action")

#: Effective values: a reviewer's correction overrides what the rules derived.
effective_error_type = func.coalesce(ToolResultRow.error_type_corrected, ToolResultRow.error_type)
effective_verdict = func.coalesce(ToolResultRow.verdict_corrected, ToolResultRow.verdict)
#: Results that are not the answer of any call: orphans, second answers (their call is paired
#: with the first answer), and early results no later call took.
unpaired_result = or_(
    ToolResultRow.pair_state.in_(("orphan_result", "duplicate_result")),
    ToolResultRow.call_seq.is_(None),
)


def percentile(conn: Connection, column: Any, q: float, base: Any) -> int:
    """Nearest-rank percentile of an integer column (works the same on both databases)."""
    n = conn.execute(select(func.count()).select_from(base.subquery())).scalar_one()
    if n == 0:
        return 0
    offset = max(0, min(n - 1, int(q * n + 0.999999) - 1))
    sub = base.subquery()
    value = conn.execute(
        select(sub.c[column]).order_by(sub.c[column]).limit(1).offset(offset)
    ).scalar_one()
    return int(value or 0)


def loop_counts(conn: Connection, k: int, f: Filters = NO_FILTERS) -> tuple[int, int]:
    """(signatures, calls) of loops at ``k``: signatures occurring >= k times in one trace."""
    groups = restrict_calls(
        select(
            ToolCallRow.trace_id,
            ToolCallRow.signature,
            func.count().label("n"),
        ).group_by(ToolCallRow.trace_id, ToolCallRow.signature),
        f,
    ).having(func.max(ToolCallRow.occurrence) >= k)
    sub = groups.subquery()
    row = conn.execute(select(func.count(), func.coalesce(func.sum(sub.c.n), 0))).one()
    return int(row[0]), int(row[1])


def summarize(engine: Engine, *, loop_k: int = 3, filters: Filters = NO_FILTERS) -> dict[str, Any]:
    """Every headline figure, in the shape of ``toollens summary --json``."""
    f = filters
    with engine.connect() as conn:
        traces = conn.execute(restrict_traces(select(func.count(TraceRow.id)), f)).scalar_one()
        trace_ids = restrict_traces(select(TraceRow.id), f)
        messages = conn.execute(
            select(func.count(MessageRow.id)).where(MessageRow.trace_id.in_(trace_ids))
            if not f.is_empty()
            else select(func.count(MessageRow.id))
        ).scalar_one()
        calls = conn.execute(restrict_calls(select(func.count(ToolCallRow.id)), f)).scalar_one()
        results = conn.execute(
            restrict_results(select(func.count(ToolResultRow.id)), f)
        ).scalar_one()

        pair_states = dict.fromkeys(PAIR_STATES, 0)
        for state, n in conn.execute(
            restrict_calls(
                select(ToolCallRow.pair_state, func.count()).group_by(ToolCallRow.pair_state), f
            )
        ):
            pair_states[state] = pair_states.get(state, 0) + n
        # Results that are not some call's answer are problems of their own, counted once each.
        for state, n in conn.execute(
            restrict_results(
                select(ToolResultRow.pair_state, func.count())
                .where(unpaired_result)
                .group_by(ToolResultRow.pair_state),
                f,
            )
        ):
            pair_states[state] = pair_states.get(state, 0) + n

        name_mismatch = conn.execute(
            restrict_results(select(func.count()).where(ToolResultRow.name_mismatch.is_(True)), f)
        ).scalar_one()
        reused_id = conn.execute(
            restrict_calls(select(func.count()).where(ToolCallRow.reused_id.is_(True)), f)
        ).scalar_one()

        status = dict.fromkeys(STATUSES, 0)
        for st, n in conn.execute(
            restrict_results(
                select(ToolResultRow.status, func.count()).group_by(ToolResultRow.status), f
            )
        ):
            status[st] = n
        error_types = {
            et: n
            for et, n in conn.execute(
                restrict_results(
                    select(effective_error_type, func.count())
                    .where(ToolResultRow.status == "error")
                    .group_by(effective_error_type)
                    .order_by(func.count().desc(), effective_error_type),
                    f,
                )
            )
            if et is not None
        }

        token_base = restrict_results(select(ToolResultRow.tokens.label("tokens")), f)
        total, max_tokens = conn.execute(
            restrict_results(
                select(
                    func.coalesce(func.sum(ToolResultRow.tokens), 0),
                    func.coalesce(func.max(ToolResultRow.tokens), 0),
                ),
                f,
            )
        ).one()
        encoding = conn.execute(
            select(ImportRun.encoding).order_by(ImportRun.id.desc()).limit(1)
        ).scalar()

        loop_signatures, loop_calls = loop_counts(conn, loop_k, f)

        suggestions: dict[str, int] = {"with_suggestion": 0, **dict.fromkeys(VERDICTS, 0)}
        suggestions["with_suggestion"] = conn.execute(
            restrict_results(select(func.count()).where(ToolResultRow.suggestion.is_not(None)), f)
        ).scalar_one()
        for verdict, n in conn.execute(
            restrict_results(
                select(effective_verdict, func.count())
                .where(effective_verdict.is_not(None))
                .group_by(effective_verdict),
                f,
            )
        ):
            suggestions[verdict] = n
        decided = suggestions["followed"] + suggestions["ignored"]
        follow_rate = round(suggestions["followed"] / decided, 4) if decided else None

        findings = {
            name: n
            for name, n in conn.execute(
                restrict_findings(
                    select(FindingRow.name, func.count())
                    .group_by(FindingRow.name)
                    .order_by(func.count().desc(), FindingRow.name),
                    f,
                )
            )
        }
        corrections = conn.execute(
            restrict_results(
                select(func.count()).where(
                    (ToolResultRow.error_type_corrected.is_not(None))
                    | (ToolResultRow.verdict_corrected.is_not(None))
                ),
                f,
            )
        ).scalar_one()
        rejected = conn.execute(select(func.count(RejectedRecord.id))).scalar_one()

        return {
            "traces": traces,
            "messages": messages,
            "tool_calls": calls,
            "tool_results": results,
            "pair_states": pair_states,
            "name_mismatch": name_mismatch,
            "reused_id": reused_id,
            "status": status,
            "error_types": error_types,
            "tokens": {
                "encoding": encoding or "o200k_base",
                "tool_result_total": int(total),
                "p50": percentile(conn, "tokens", 0.50, token_base),
                "p95": percentile(conn, "tokens", 0.95, token_base),
                "max": int(max_tokens),
            },
            "loops": {"k": loop_k, "signatures": loop_signatures, "calls": loop_calls},
            "suggestions": {**suggestions, "follow_rate": follow_rate},
            "findings": findings,
            "corrections": corrections,
            "rejected_records": rejected,
        }
