"""Queries behind the Suggestions page: is the advice in Tool Messages followed, and does it help?

Follow rate = followed / (followed + ignored), always returned with its counts so that a rate is
never shown without the numbers behind it. Verdicts are effective (a reviewer's correction wins).
Recovery: for error results, did the next call of the same tool succeed
(``next_call_succeeded``), with versus without a suggestion. Every count is a catalogue read
(``db.figures``).
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from sqlalchemy import Engine, func, select

from db import figures
from db.catalogue import (
    ADVISED,
    ERRORS,
    HAS_VERDICT,
    IS_ERROR,
    NEXT_CALL,
    RESULTS_N,
    TOOL,
    VERDICT,
    error_type,
    follow_rate,
    rate,
    suggestion_kind,
    verdict_count,
)
from db.contract.vocabulary import VERDICTS
from db.queries.common import (
    NO_NEXT_CALL,
    NOT_RECOVERED,
    RECOVERED,
    TRACE,
    effective_error_type,
    effective_verdict,
    labelled,
    result_pair_key,
    to_frame,
)
from db.queries.filters import NO_FILTERS, Filters
from db.queries.planner import restrict_results_in_index
from db.schema import ToolResultRow

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


def follow_rates(
    engine: Engine, filters: Filters = NO_FILTERS, *, by: FollowKey = "tool", limit: int = 30
) -> pd.DataFrame:
    """Verdict counts and follow rate per tool or per error type, the most advised first.

    Columns: ``tool`` or ``error_type``, ``suggestions`` (results with a verdict), ``followed``,
    ``ignored``, ``unclear``, ``no_next_action``, ``decided`` (followed + ignored),
    ``follow_rate`` (followed / decided, ``None`` when nothing was decided).
    """
    key = TOOL if by == "tool" else error_type(NO_ERROR_TYPE)
    with engine.connect() as conn:
        df = figures.read(
            conn,
            [RESULTS_N.named("suggestions"), *(verdict_count(v) for v in VERDICTS)],
            by=[key],
            where=[HAS_VERDICT],
            filters=filters,
            order=[("suggestions", True), (by, False)],
            limit=limit,
        )
    df["decided"] = df["followed"] + df["ignored"]
    df["follow_rate"] = follow_rate(df["followed"], df["ignored"], digits=4)
    return df


def verdict_breakdown(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Results with a verdict by (verdict, suggestion kind).

    Columns: ``verdict``, ``suggestion_kind`` (``protocol``, ``retry_after`` … or ``(none)``),
    ``results``; in ``VERDICTS`` order, then the most frequent kind first.
    """
    with engine.connect() as conn:
        df = figures.read(
            conn,
            [RESULTS_N],
            by=[VERDICT, suggestion_kind(NO_KIND)],
            where=[HAS_VERDICT],
            filters=filters,
        )
    order = {v: i for i, v in enumerate(VERDICTS)}
    df["_order"] = df["verdict"].map(lambda v: order.get(v, len(order)))
    df = df.sort_values(
        ["_order", "verdict", "results", "suggestion_kind"], ascending=[True, True, False, True]
    )
    return df.drop(columns="_order").reset_index(drop=True)


def recovery_rates(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """For error results: did the next call of the same tool succeed, with vs without advice?

    Two rows, ``with suggestion`` then ``without suggestion``. Columns: ``group``, ``errors``,
    ``recovered``, ``not_recovered``, ``no_next_call``, ``recovery_rate`` (recovered /
    (recovered + not_recovered), ``None`` when no error was followed by a call of its tool).
    """
    # All errors off the errors index, those with advice off the advice index: the errors
    # without advice are the difference.
    with engine.connect() as conn:
        every, advised = (
            {
                int(k): int(n)
                for k, n in figures.read(
                    conn, [ERRORS], by=[NEXT_CALL], where=where, filters=filters
                ).itertuples(index=False)
            }
            for where in ([IS_ERROR], [IS_ERROR, ADVISED])
        )
    without = {k: every.get(k, 0) - advised.get(k, 0) for k in OUTCOMES}
    rows = [
        {
            "group": group,
            "errors": sum(part.get(k, 0) for k in OUTCOMES),
            "recovered": part.get(RECOVERED, 0),
            "not_recovered": part.get(NOT_RECOVERED, 0),
            "no_next_call": part.get(NO_NEXT_CALL, 0),
        }
        for group, part in ((WITH_SUGGESTION, advised), (WITHOUT_SUGGESTION, without))
    ]
    df = pd.DataFrame(rows)
    df["recovery_rate"] = rate(df["recovered"], df["recovered"] + df["not_recovered"], digits=4)
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
    stmt = select(
        TRACE.display_id.label("trace"),
        result_pair_key().label("pair"),
        ToolResultRow.tool.label("tool"),
        effective_error_type.label("error_type"),
        func.substr(ToolResultRow.suggestion, 1, SUGGESTION_CHARS).label("suggestion"),
        *labelled(ToolResultRow.suggestion_kind, ToolResultRow.verdict_reason),
    ).order_by(ToolResultRow.id)
    if engine.dialect.name == "clickhouse":
        # One JOIN per SELECT (18.16): the picked ids as a condition instead.
        stmt = stmt.select_from(ToolResultRow).where(ToolResultRow.id.in_(select(top.c.id)))
    else:
        stmt = stmt.select_from(top).join(ToolResultRow, ToolResultRow.id == top.c.id)
    stmt = stmt.join(TRACE, TRACE.id == ToolResultRow.trace_id)
    with engine.connect() as conn:
        return to_frame(conn, stmt)
