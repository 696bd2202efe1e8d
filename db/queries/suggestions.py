"""Queries behind the Suggestions page: is the advice in Tool Messages followed, and does it help?

Follow rate = followed / (followed + ignored), always returned with its counts so that a rate is
never shown without the numbers behind it. Verdicts are effective (a reviewer's correction wins).
Recovery: for error results, did the next call of the same tool succeed
(``next_call_succeeded``), with versus without a suggestion. Follow and recovery rates sum the
results rollup's rows (its ``verdict``, ``suggested``, ``next_call`` and ``suggestion_kind``)
where it answers the filters, else they group the base rows, as does the verdicts' breakdown by
kind of advice.
"""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
from sqlalchemy import ColumnElement, Connection, Engine, func, literal, select

from db.contract.vocabulary import SUGGESTION_KINDS, VERDICTS
from db.filters import NO_FILTERS, Filters
from db.planner import grouping_key, restrict_results_in_index
from db.queries.common import (
    NO_NEXT_CALL,
    NOT_RECOVERED,
    RECOVERED,
    TRACE,
    effective_error_type,
    effective_verdict,
    next_call_outcome,
    result_pair_key,
    to_frame,
)
from db.rollup_read import RESULTS, scope, total
from db.schema import RollupResultRow, ToolResultRow

#: The kind of a result with a verdict but no suggestion kind.
NO_KIND = "(none)"

FollowKey = Literal["tool", "error_type"]

#: Label of suggestions on results that carry no error type (partial results, hints on success).
NO_ERROR_TYPE = "(none)"
#: The next call's outcomes of an error (``db.queries.common.next_call_outcome``).
OUTCOMES = (RECOVERED, NOT_RECOVERED, NO_NEXT_CALL)
#: Characters of a suggestion shown in the examples.
SUGGESTION_CHARS = 300
WITH_SUGGESTION = "with suggestion"
WITHOUT_SUGGESTION = "without suggestion"


def _rate(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    # None, not 0, when nothing was decided: "0 %" would claim advice is never followed.
    return pd.Series(
        [round(n / d, 4) if d else None for n, d in zip(numerator, denominator, strict=True)],
        index=numerator.index,
        dtype="object",
    )


def follow_rates(
    engine: Engine, filters: Filters = NO_FILTERS, *, by: FollowKey = "tool", limit: int = 30
) -> pd.DataFrame:
    """Verdict counts and follow rate per tool or per error type, the most advised first.

    Columns: ``tool`` or ``error_type``, ``suggestions`` (results with a verdict), ``followed``,
    ``ignored``, ``unclear``, ``no_next_action``, ``decided`` (followed + ignored),
    ``follow_rate`` (followed / decided, ``None`` when nothing was decided).
    """
    key: Any
    if by == "tool":
        key = grouping_key(ToolResultRow.tool)
    else:
        key = func.coalesce(effective_error_type, literal(NO_ERROR_TYPE))
    counts = [func.count().filter(effective_verdict == v).label(v) for v in VERDICTS]
    stmt = restrict_results_in_index(
        select(key.label(by), func.count().label("suggestions"), *counts)
        .where(effective_verdict.is_not(None))
        .group_by(key)
        .order_by(func.count().desc(), key)
        .limit(limit),
        filters,
    )
    with engine.connect() as conn:
        at = scope(conn, RESULTS, filters)
        if at is not None:
            # The result rollup counts effective verdicts and error types per tool.
            rr = RollupResultRow
            key = rr.tool if by == "tool" else func.coalesce(rr.error_type, literal(NO_ERROR_TYPE))
            advised = total(rr.n)
            stmt = (
                select(
                    key.label(by),
                    advised.label("suggestions"),
                    *(total(rr.n, rr.verdict == v).label(v) for v in VERDICTS),
                )
                .where(*at, rr.verdict.is_not(None))
                .group_by(key)
                .order_by(advised.desc(), key)
                .limit(limit)
            )
        df = to_frame(conn, stmt)
    df["decided"] = df["followed"] + df["ignored"]
    df["follow_rate"] = _rate(df["followed"], df["decided"])
    return df


def verdict_breakdown(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Results with a verdict by (verdict, suggestion kind).

    Columns: ``verdict``, ``suggestion_kind`` (``protocol``, ``retry_after`` … or ``(none)``),
    ``results``; in ``VERDICTS`` order, then the most frequent kind first.
    """
    with engine.connect() as conn:
        at = scope(conn, RESULTS, filters)
        if at is None:
            df = _breakdown_from_results(conn, filters)
        else:
            # The result rollup counts the effective verdicts per kind of advice.
            rr = RollupResultRow
            kind = func.coalesce(rr.suggestion_kind, literal(NO_KIND))
            stmt = (
                select(
                    rr.verdict.label("verdict"),
                    kind.label("suggestion_kind"),
                    total(rr.n).label("results"),
                )
                .where(*at, rr.verdict.is_not(None))
                .group_by(rr.verdict, kind)
            )
            df = to_frame(conn, stmt)
    order = {v: i for i, v in enumerate(VERDICTS)}
    df["_order"] = df["verdict"].map(lambda v: order.get(v, len(order)))
    df = df.sort_values(
        ["_order", "verdict", "results", "suggestion_kind"], ascending=[True, True, False, True]
    )
    return df.drop(columns="_order").reset_index(drop=True)


def _breakdown_from_results(conn: Connection, filters: Filters) -> pd.DataFrame:
    """:func:`verdict_breakdown`'s rows (unsorted) counted from the results themselves."""
    # Per verdict (the verdict index's order, no sort), one count per kind of the vocabulary
    # and the total: a kind outside the vocabulary makes them differ, and then the grouped
    # statement counts.
    known = (None, *SUGGESTION_KINDS)
    per_kind = [
        func.count().filter(
            ToolResultRow.suggestion_kind.is_(None)
            if k is None
            else ToolResultRow.suggestion_kind == k
        )
        for k in known
    ]
    one_pass = restrict_results_in_index(
        select(effective_verdict, func.count(), *per_kind)
        .where(effective_verdict.is_not(None))
        .group_by(effective_verdict),
        filters,
    )
    counted = conn.execute(one_pass).all()
    if all(row[1] == sum(row[2:]) for row in counted):
        return pd.DataFrame(
            [
                (verdict, NO_KIND if k is None else k, int(n))
                for verdict, _, *counts in counted
                for k, n in zip(known, counts, strict=True)
                if n
            ],
            columns=["verdict", "suggestion_kind", "results"],
        )
    kind = func.coalesce(ToolResultRow.suggestion_kind, literal(NO_KIND))
    stmt = restrict_results_in_index(
        select(
            effective_verdict.label("verdict"),
            kind.label("suggestion_kind"),
            func.count().label("results"),
        )
        .where(effective_verdict.is_not(None))
        .group_by(effective_verdict, kind),
        filters,
    )
    return to_frame(conn, stmt)


def _outcomes_from_results(
    conn: Connection, filters: Filters
) -> tuple[dict[int, int], dict[int, int]]:
    """Errors by the next call's outcome: all of them off the errors index, those with advice
    off the advice index (the errors without advice are the difference)."""
    is_error = ToolResultRow.status == "error"

    def by_outcome(*conds: ColumnElement[bool]) -> Any:
        key = next_call_outcome
        return restrict_results_in_index(
            select(key, func.count()).where(is_error, *conds).group_by(key), filters
        )

    every = {int(k): int(n) for k, n in conn.execute(by_outcome())}
    has = ToolResultRow.suggestion.is_not(None)
    advised = {int(k): int(n) for k, n in conn.execute(by_outcome(has))}
    return every, advised


def recovery_rates(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """For error results: did the next call of the same tool succeed, with vs without advice?

    Two rows, ``with suggestion`` then ``without suggestion``. Columns: ``group``, ``errors``,
    ``recovered``, ``not_recovered``, ``no_next_call``, ``recovery_rate`` (recovered /
    (recovered + not_recovered), ``None`` when no error was followed by a call of its tool).
    """
    with engine.connect() as conn:
        at = scope(conn, RESULTS, filters)
        if at is None:
            every, advised = _outcomes_from_results(conn, filters)
            without = {k: every.get(k, 0) - advised.get(k, 0) for k in OUTCOMES}
        else:
            # The result rollup counts the errors per (with advice, next call's outcome).
            rr = RollupResultRow
            stmt = (
                select(rr.suggested, rr.next_call, total(rr.n))
                .where(*at, rr.status == "error")
                .group_by(rr.suggested, rr.next_call)
            )
            counts = {(bool(s), int(k)): int(n) for s, k, n in conn.execute(stmt)}
            advised = {k: counts.get((True, k), 0) for k in OUTCOMES}
            without = {k: counts.get((False, k), 0) for k in OUTCOMES}
    rows = [
        {
            "group": group,
            "errors": sum(part.values()),
            "recovered": part.get(RECOVERED, 0),
            "not_recovered": part.get(NOT_RECOVERED, 0),
            "no_next_call": part.get(NO_NEXT_CALL, 0),
        }
        for group, part in ((WITH_SUGGESTION, advised), (WITHOUT_SUGGESTION, without))
    ]
    df = pd.DataFrame(rows)
    df["recovery_rate"] = _rate(df["recovered"], df["recovered"] + df["not_recovered"])
    return df


def verdict_examples(
    engine: Engine, verdict: str, filters: Filters = NO_FILTERS, *, limit: int = 10
) -> pd.DataFrame:
    """The first ``limit`` results (in import order) whose effective verdict is ``verdict``.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value), ``tool``, ``error_type``,
    ``suggestion`` (at most ``SUGGESTION_CHARS`` characters), ``suggestion_kind``,
    ``verdict_reason``.
    """
    # Pick the ids first, off the verdict index and filtered where it lies, then read the
    # columns of those few rows only.
    top = (
        restrict_results_in_index(
            select(ToolResultRow.id).where(effective_verdict == verdict), filters
        )
        .order_by(ToolResultRow.id)
        .limit(limit)
        .subquery()
    )
    stmt = (
        select(
            TRACE.display_id.label("trace"),
            result_pair_key().label("pair"),
            ToolResultRow.tool.label("tool"),
            effective_error_type.label("error_type"),
            func.substr(ToolResultRow.suggestion, 1, SUGGESTION_CHARS).label("suggestion"),
            ToolResultRow.suggestion_kind.label("suggestion_kind"),
            ToolResultRow.verdict_reason.label("verdict_reason"),
        )
        .select_from(top)
        .join(ToolResultRow, ToolResultRow.id == top.c.id)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id)
        .order_by(ToolResultRow.id)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)
