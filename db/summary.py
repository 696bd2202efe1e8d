"""The headline figures of a store (``toollens summary --json``), all aggregated in SQL.

Human corrections win over derived values everywhere (``db.queries.common``'s effective values).
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, Engine, and_, case, func, select

from db.contract.vocabulary import DEFAULT_ENCODING, DEFAULT_LOOP_K, PAIR_STATES, STATUSES, VERDICTS
from db.filters import (
    NO_FILTERS,
    Filters,
    restrict_calls,
    restrict_findings,
    restrict_results,
    restrict_traces,
)
from db.planner import one_pass_counts, restrict_calls_in_index, restrict_results_in_index
from db.queries.common import (
    COUNTED_FINDING,
    corrected_result,
    effective_error_type,
    effective_verdict,
)
from db.queries.histograms import token_counts, token_figures
from db.rollup_read import CALLS, FINDINGS, RESULTS, TRACES, scope, total
from db.schema import (
    FindingRow,
    ImportRun,
    MessageRow,
    RejectedRecord,
    RollupCallRow,
    RollupFindingRow,
    RollupResultRow,
    RollupTraceRow,
    ToolCallRow,
    ToolResultRow,
    TraceRow,
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
    """(signatures, calls) of loops at ``k``: signatures occurring >= k times in one trace.

    Occurrences of a signature in a trace are numbered 1, 2, … n, so a looping signature has
    exactly one call with ``occurrence == k``, and its n calls are the n - k + 1 calls with
    ``occurrence >= k`` plus the k - 1 before them: both figures come off the occurrence index.
    """
    row = conn.execute(
        restrict_calls_in_index(
            select(
                func.count().filter(ToolCallRow.occurrence == k),
                func.count().filter(ToolCallRow.occurrence >= k),
            ).where(ToolCallRow.occurrence >= k),
            f,
        )
    ).one()
    signatures, late_calls = int(row[0]), int(row[1])
    return signatures, late_calls + (k - 1) * signatures


def _count_if(condition: Any) -> Any:
    return func.count().filter(condition)


def _result_figures(conn: Connection, f: Filters) -> dict[str, Any]:
    """Everything counted over ``tool_results``, each part off the index that holds it."""
    r = ToolResultRow
    out: dict[str, Any] = {}
    # One pass without GROUP BY (statuses and pair states are the few values analysis writes):
    # under a filter it reads the filtered traces' entries of the trace index and sorts nothing.
    counts = conn.execute(
        restrict_results(
            select(
                func.count(),
                *(_count_if(r.status == st) for st in STATUSES),
                _count_if(r.pair_state == "orphan_result"),
                _count_if(r.pair_state == "duplicate_result"),
                _count_if(and_(r.pair_state == "result_before_call", r.call_seq.is_(None))),
                _count_if(r.name_mismatch.is_(True)),
            ),
            f,
        )
    ).one()
    names = (
        "tool_results",
        *(f"status_{st}" for st in STATUSES),
        "unpaired_orphan_result",
        "unpaired_duplicate_result",
        "unpaired_result_before_call",
        "name_mismatch",
    )
    out.update(zip(names, counts, strict=True))
    out["with_suggestion"] = conn.execute(
        restrict_results_in_index(select(func.count()).where(r.suggestion.is_not(None)), f)
    ).scalar_one()
    out["corrections"] = conn.execute(
        restrict_results_in_index(select(func.count()).where(corrected_result), f)
    ).scalar_one()
    return {name: int(value or 0) for name, value in out.items()}


def summarize(
    engine: Engine, *, loop_k: int = DEFAULT_LOOP_K, filters: Filters = NO_FILTERS
) -> dict[str, Any]:
    """Every headline figure, in the shape of ``toollens summary --json``: the
    :func:`summary_counts` with the token figures of the size histogram."""
    summary = summary_counts(engine, loop_k=loop_k, filters=filters)
    sizes = token_figures(token_counts(engine, filters))
    summary["tokens"].update(
        tool_result_total=sizes["token_total"],
        p50=sizes["p50"],
        p95=sizes["p95"],
        max=sizes["token_max"],
    )
    return summary


def summary_counts(
    engine: Engine, *, loop_k: int = DEFAULT_LOOP_K, filters: Filters = NO_FILTERS
) -> dict[str, Any]:
    """The headline figures but the token sizes (``tokens`` holds only the encoding): what
    the Overview shows, which reads the sizes off its cached (tool, tokens) histogram."""
    f = filters
    with engine.connect() as conn:
        from_rollups = _rollup_counts(conn, loop_k, f)
        if from_rollups is not None:
            return from_rollups
        # Per-trace counters make trace-level totals one pass over ``traces``.
        traces, messages = conn.execute(
            restrict_traces(
                select(func.count(TraceRow.id), func.coalesce(func.sum(TraceRow.message_count), 0)),
                Filters(**{**_fields(f), "tool": None}),
            )
        ).one()
        if f.tool:
            traces = conn.execute(restrict_traces(select(func.count(TraceRow.id)), f)).scalar_one()
            messages = conn.execute(
                select(func.count(MessageRow.id)).where(
                    MessageRow.trace_id.in_(restrict_traces(select(TraceRow.id), f))
                )
            ).scalar_one()
        res = _result_figures(conn, f)

        if one_pass_counts(f):
            # One pass without GROUP BY over the pair states analysis writes (see above).
            calls, reused_id, *per_state = conn.execute(
                restrict_calls(
                    select(
                        func.count(),
                        _count_if(ToolCallRow.reused_id.is_(True)),
                        *(_count_if(ToolCallRow.pair_state == state) for state in PAIR_STATES),
                    ),
                    f,
                )
            ).one()
            pair_states: dict[str, int] = dict(
                zip(PAIR_STATES, (int(n) for n in per_state), strict=True)
            )
        else:
            # Grouped in the order of the (tool_name, pair_state, reused_id) index: no sort.
            pair_states = dict.fromkeys(PAIR_STATES, 0)
            calls = reused_id = 0
            for state, n, reused in conn.execute(
                restrict_calls(
                    select(
                        ToolCallRow.pair_state,
                        func.count(),
                        _count_if(ToolCallRow.reused_id.is_(True)),
                    ).group_by(ToolCallRow.tool_name, ToolCallRow.pair_state),
                    f,
                )
            ):
                pair_states[state] = pair_states.get(state, 0) + n
                calls += n
                reused_id += reused
        # Results that are not some call's answer are problems of their own, counted once each.
        for state in ("orphan_result", "duplicate_result", "result_before_call"):
            pair_states[state] += res[f"unpaired_{state}"]

        error_types = {
            et: n
            for et, n in conn.execute(
                restrict_results_in_index(
                    select(effective_error_type, func.count())
                    .where(ToolResultRow.status == "error")
                    .group_by(effective_error_type)
                    .order_by(func.count().desc(), effective_error_type),
                    f,
                )
            )
            if et is not None
        }
        loop_signatures, loop_calls = loop_counts(conn, loop_k, f)

        suggestions: dict[str, int] = {
            "with_suggestion": res["with_suggestion"],
            **dict.fromkeys(VERDICTS, 0),
        }
        for verdict, n in conn.execute(
            restrict_results_in_index(
                select(effective_verdict, func.count())
                .where(effective_verdict.is_not(None))
                .group_by(effective_verdict),
                f,
            )
        ):
            suggestions[cast(str, verdict)] = n  # not None: the WHERE

        findings = {
            name: n
            for name, n in conn.execute(
                restrict_findings(
                    # A name mismatch is stored on both sides and counts once, on the call.
                    select(FindingRow.name, func.count())
                    .where(COUNTED_FINDING)
                    .group_by(FindingRow.name)
                    .order_by(func.count().desc(), FindingRow.name),
                    f,
                )
            )
        }
        return _assemble(
            conn,
            loop_k,
            traces=traces,
            messages=messages,
            calls=calls,
            res=res,
            pair_states=pair_states,
            reused_id=reused_id,
            error_types=error_types,
            loops=(loop_signatures, loop_calls),
            verdicts=suggestions,
            findings=findings,
        )


def _assemble(
    conn: Connection,
    loop_k: int,
    *,
    traces: int,
    messages: int,
    calls: int,
    res: dict[str, int],
    pair_states: dict[str, int],
    reused_id: int,
    error_types: dict[str, int],
    loops: tuple[int, int],
    verdicts: dict[str, int],
    findings: dict[str, int],
) -> dict[str, Any]:
    """The summary's shape from its counts (read from the base tables or the rollups)."""
    suggestions: dict[str, int] = {"with_suggestion": res["with_suggestion"]}
    suggestions.update(dict.fromkeys(VERDICTS, 0))
    suggestions.update((v, n) for v, n in verdicts.items() if v != "with_suggestion")
    decided = suggestions["followed"] + suggestions["ignored"]
    follow_rate = round(suggestions["followed"] / decided, 4) if decided else None
    encoding = conn.execute(
        select(ImportRun.encoding).order_by(ImportRun.id.desc()).limit(1)
    ).scalar()
    rejected = conn.execute(select(func.count(RejectedRecord.id))).scalar_one()
    loop_signatures, loop_calls = loops
    return {
        "traces": traces,
        "messages": int(messages),
        "tool_calls": int(calls),
        "tool_results": res["tool_results"],
        "pair_states": pair_states,
        "name_mismatch": res["name_mismatch"],
        "reused_id": int(reused_id),
        "status": {st: res[f"status_{st}"] for st in STATUSES},
        "error_types": error_types,
        "tokens": {"encoding": encoding or DEFAULT_ENCODING},
        "loops": {"k": loop_k, "signatures": loop_signatures, "calls": loop_calls},
        "suggestions": {**suggestions, "follow_rate": follow_rate},
        "findings": findings,
        "corrections": res["corrections"],
        "rejected_records": rejected,
    }


def _rollup_counts(conn: Connection, loop_k: int, f: Filters) -> dict[str, Any] | None:
    """:func:`summary_counts` from the rollups, or ``None`` when they cannot answer ``f``."""
    results_at = scope(conn, RESULTS, f)
    traces_at = scope(conn, TRACES, f, tool="all")
    calls_at = scope(conn, CALLS, f)
    findings_at = scope(conn, FINDINGS, f)
    if results_at is None or traces_at is None or calls_at is None or findings_at is None:
        return None
    tr, rr, cr, fr = RollupTraceRow, RollupResultRow, RollupCallRow, RollupFindingRow
    traces, messages = conn.execute(
        select(func.coalesce(func.sum(tr.n), 0), func.coalesce(func.sum(tr.messages), 0)).where(
            *traces_at
        )
    ).one()

    def count(condition: Any = None) -> Any:
        return func.coalesce(total(rr.n, condition), 0)

    row = conn.execute(
        select(
            count(),
            *(count(rr.status == st) for st in STATUSES),
            count(rr.pair_state == "orphan_result"),
            count(rr.pair_state == "duplicate_result"),
            count(and_(rr.pair_state == "result_before_call", rr.unanswered.is_(True))),
            count(rr.name_mismatch.is_(True)),
            count(rr.suggested.is_(True)),
            count(rr.corrected.is_(True)),
        ).where(*results_at)
    ).one()
    names = (
        "tool_results",
        *(f"status_{st}" for st in STATUSES),
        "unpaired_orphan_result",
        "unpaired_duplicate_result",
        "unpaired_result_before_call",
        "name_mismatch",
        "with_suggestion",
        "corrections",
    )
    res = {name: int(value) for name, value in zip(names, row, strict=True)}
    pair_states: dict[str, int] = dict.fromkeys(PAIR_STATES, 0)
    calls = reused_id = 0
    for state, n, reused in conn.execute(
        select(
            cr.pair_state, func.sum(cr.n), func.sum(case((cr.reused_id.is_(True), cr.n), else_=0))
        )
        .where(*calls_at)
        .group_by(cr.pair_state)
    ):
        pair_states[state] = pair_states.get(state, 0) + int(n)
        calls += int(n)
        reused_id += int(reused)
    for state in ("orphan_result", "duplicate_result", "result_before_call"):
        pair_states[state] += res[f"unpaired_{state}"]
    n_errors = func.sum(rr.n)
    error_types = {
        str(et): int(n)
        for et, n in conn.execute(
            select(rr.error_type, n_errors)
            .where(*results_at, rr.status == "error", rr.error_type.is_not(None))
            .group_by(rr.error_type)
            .order_by(n_errors.desc(), rr.error_type)
        )
    }
    verdicts = {
        str(v): int(n)
        for v, n in conn.execute(
            select(rr.verdict, func.sum(rr.n))
            .where(*results_at, rr.verdict.is_not(None))
            .group_by(rr.verdict)
        )
    }
    signatures, late = conn.execute(
        select(
            func.coalesce(func.sum(case((cr.occurrence == loop_k, cr.n))), 0),
            func.coalesce(func.sum(case((cr.occurrence >= loop_k, cr.n))), 0),
        ).where(*calls_at)
    ).one()
    n_findings = func.sum(fr.n)
    findings = {
        str(kind): int(n)
        for kind, n in conn.execute(
            select(fr.kind, n_findings)
            .where(*findings_at)
            .group_by(fr.kind)
            .order_by(n_findings.desc(), fr.kind)
        )
    }
    return _assemble(
        conn,
        loop_k,
        traces=int(traces),
        messages=int(messages),
        calls=calls,
        res=res,
        pair_states=pair_states,
        reused_id=reused_id,
        error_types=error_types,
        loops=(int(signatures), int(late) + (loop_k - 1) * int(signatures)),
        verdicts=verdicts,
        findings=findings,
    )


def _fields(f: Filters) -> dict[str, Any]:
    return {name: getattr(f, name) for name in f.__slots__}
