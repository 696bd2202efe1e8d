"""The headline figures of a store (``toollens summary --json``), all aggregated in SQL.

Human corrections win over derived values everywhere (``db.queries.common``'s effective values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, func, select

from db import figures
from db.catalogue import (
    ADVISED,
    CALL_PAIR_STATE,
    CALLS_N,
    CORRECTED,
    COST_MEASURES,
    ERROR_TYPE,
    ERRORS,
    FINDING_KIND,
    FINDINGS_N,
    HAS_VERDICT,
    IS_ERROR,
    MESSAGES,
    NAME_MISMATCHES,
    RESULTS_N,
    REUSED_IDS,
    TRACES_N,
    UNPAIRED,
    VERDICT,
    Condition,
    Dimension,
    Measure,
    follow_rate,
    in_trace,
    late_call_count,
    late_calls,
    loop_signatures,
    status_count,
)
from db.contract.vocabulary import DEFAULT_ENCODING, DEFAULT_LOOP_K, PAIR_STATES, STATUSES, VERDICTS
from db.figures import Order
from db.queries.filters import (
    NO_FILTERS,
    Filters,
)
from db.queries.histograms import token_counts, token_figures
from db.schema import (
    ImportRun,
    RejectedRecord,
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
    found = figures.counts(
        conn, [loop_signatures(k), late_call_count(k)], where=[late_calls(k)], filters=f
    )
    signatures, late_calls_ = found["signatures"], found["late"]
    return signatures, late_calls_ + (k - 1) * signatures


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
        traces = figures.counts(conn, [TRACES_N, MESSAGES], filters=f)
        # Statuses and pair states in one pass (they are the few values analysis writes); the
        # advice and the corrections off their own indexes (from the rollup, all in one).
        results = [
            RESULTS_N.named("tool_results"),
            *(status_count(st) for st in STATUSES),
            *UNPAIRED,
            NAME_MISMATCHES,
            *COST_MEASURES,
        ]
        res = figures.counts_of(
            conn,
            [
                (results, ()),
                ([RESULTS_N.named("with_suggestion")], [ADVISED]),
                ([RESULTS_N.named("corrections")], [CORRECTED]),
            ],
            f,
        )
        pair_states: dict[str, int] = dict.fromkeys(PAIR_STATES, 0)
        calls = reused_id = 0
        for state, n, reused in figures.rows(
            conn, [CALLS_N, REUSED_IDS], by=[CALL_PAIR_STATE], filters=f
        ):
            pair_states[state] = pair_states.get(state, 0) + int(n)
            calls += int(n)
            reused_id += int(reused)
        # Results that are not some call's answer are problems of their own, counted once each.
        for state in ("orphan_result", "duplicate_result", "result_before_call"):
            pair_states[state] += res[f"unpaired_{state}"]
        by_errors = [("errors", True), ("error_type", False)]
        error_types = _per_value(conn, ERRORS, ERROR_TYPE, f, [IS_ERROR], by_errors)
        verdicts = _per_value(conn, RESULTS_N, VERDICT, f, [HAS_VERDICT])
        by_n = [("n", True), ("kind", False)]
        findings = _per_value(conn, FINDINGS_N, FINDING_KIND, f, order=by_n)
        return _assemble(
            conn,
            loop_k,
            traces=traces["traces"],
            messages=traces["messages"],
            calls=calls,
            res=res,
            pair_states=pair_states,
            reused_id=reused_id,
            error_types=error_types,
            loops=loop_counts(conn, loop_k, f),
            verdicts=verdicts,
            findings=findings,
        )


def _per_value(
    conn: Connection,
    measure: Measure,
    by: Dimension,
    f: Filters,
    where: Sequence[Condition] = (),
    order: Sequence[Order] = (),
) -> dict[str, int]:
    """``measure`` per value of ``by`` (rows without a value left out): ``{value: n}``, in
    ``order``."""
    found = figures.rows(conn, [measure], by=[by], where=where, filters=f, order=order)
    return {str(value): int(n) for value, n in found if value is not None}


def usd(nano: int) -> float:
    """Nanodollars as dollars (to the nanodollar)."""
    return round(nano / 1e9, 9)


def tool_cost(counts: dict[str, Any]) -> dict[str, Any]:
    """What the Tool Messages add to the model calls after them (``ingest.analysis.costs``), from
    the catalogue's cost measures: tokens added and re-read, of those cached, the cost of every read
    of the results with a price (``cost_usd`` ``None`` when none has one: tokens only) and how
    many results are measured from usage, estimated, or priced."""
    n = int(counts.get("tool_results", counts.get("results", 0)) or 0)
    priced, measured = int(counts["priced"] or 0), int(counts["measured"] or 0)
    return {
        "tokens_added": int(counts["tokens_added"] or 0),
        "later_calls": int(counts["later_calls"] or 0),
        "reread_tokens": int(counts["reread_tokens"] or 0),
        "reread_cached": int(counts["reread_cached"] or 0),
        "cost_usd": usd(int(counts["cost_nano_usd"] or 0)) if priced else None,
        "priced_results": priced,
        "measured_results": measured,
        "estimated_results": n - measured,
    }


def trace_tool_cost(engine: Engine, trace_id: int) -> dict[str, Any]:
    """What the Tool Messages of one trace add to the model calls after them, in the shape of
    :func:`tool_cost` (what an incident report shows)."""
    with engine.connect() as conn:
        counts = figures.counts(conn, [RESULTS_N, *COST_MEASURES], [in_trace(trace_id)])
    return tool_cost(counts)


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
    """The summary's shape from its counts."""
    suggestions: dict[str, int] = {"with_suggestion": res["with_suggestion"]}
    suggestions.update(dict.fromkeys(VERDICTS, 0))
    suggestions.update((v, n) for v, n in verdicts.items() if v != "with_suggestion")
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
        "suggestions": {
            **suggestions,
            "follow_rate": follow_rate(suggestions["followed"], suggestions["ignored"], digits=4),
        },
        "findings": findings,
        "corrections": res["corrections"],
        "rejected_records": rejected,
        "tool_cost": tool_cost(res),
    }
