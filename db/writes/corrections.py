"""Corrections: a reviewer overrides the derived error type or suggestion verdict of a result.

A correction is stored beside the derived value (``error_type_corrected``,
``verdict_corrected``), so ``toollens reanalyze`` can recompute the derived values without
losing it; charts, ``toollens summary`` and exports use the corrected value where there is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from sqlalchemy import Engine, func, select, update

from db.contract.vocabulary import VERDICTS
from db.queries.common import corrected_result
from db.queries.filters import NO_FILTERS, Filters
from db.queries.planner import restrict_results_in_index
from db.rollups import upkeep as rollups
from db.schema import ToolResultRow
from db.writes.annotations import ReviewError, UnknownTargetError, now_or_utc
from db.writes.transaction import writing

#: Error types are snake_case; protocol-provided ones are kept verbatim, so any such name goes.
ERROR_TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,59}$")


class _Unchanged(Enum):
    UNCHANGED = "unchanged"


#: Pass for a correction field that should stay as it is.
UNCHANGED = _Unchanged.UNCHANGED


@dataclass(frozen=True, slots=True)
class ResultReview:
    """What a reviewer needs to correct one Tool Message: derived values beside corrections."""

    result_id: int
    trace_id: int
    message_seq: int
    tool: str
    status: str
    error_type: str | None
    error_type_corrected: str | None
    suggestion: str | None
    verdict: str | None
    verdict_reason: str | None
    verdict_corrected: str | None
    corrected_by: str | None
    corrected_at: datetime | None


def result_review(engine: Engine, result_id: int) -> ResultReview:
    """The derived and corrected error type and verdict of one result."""
    r = ToolResultRow
    cols = [getattr(r, "id" if f == "result_id" else f) for f in ResultReview.__slots__]
    with engine.connect() as conn:
        row = conn.execute(select(*cols).where(r.id == result_id)).first()
    if row is None:
        raise UnknownTargetError(f"no tool result with id {result_id}")
    return ResultReview(*row)


def correct_result(
    engine: Engine,
    result_id: int,
    *,
    author: str,
    error_type: str | _Unchanged | None = UNCHANGED,
    verdict: str | _Unchanged | None = UNCHANGED,
    now: datetime | None = None,
) -> ResultReview:
    """Correct (a value) or un-correct (``None``) the error type and/or suggestion verdict of a
    result; ``UNCHANGED`` leaves a field alone. Charts, ``toollens summary`` and exports use
    the correction; ``toollens reanalyze`` keeps it."""
    if not author.strip():
        raise ReviewError("author is empty: say who corrects the result")
    if isinstance(error_type, str) and not ERROR_TYPE_PATTERN.match(error_type):
        raise ReviewError(f"error type {error_type!r} is not a snake_case name")
    if isinstance(verdict, str) and verdict not in VERDICTS:
        raise ReviewError(f"unknown verdict {verdict!r}; choose one of {', '.join(VERDICTS)}")
    r = ToolResultRow
    with writing(engine) as conn:
        row = conn.execute(
            select(r.status, r.suggestion, r.error_type_corrected, r.verdict_corrected)
            .where(r.id == result_id)
            .with_for_update()
        ).first()
        if row is None:
            raise UnknownTargetError(f"no tool result with id {result_id}")
        if isinstance(error_type, str) and row.status != "error":
            raise ReviewError(
                f"result {result_id} has status {row.status}: only errors have an error type"
            )
        if isinstance(verdict, str) and row.suggestion is None:
            raise ReviewError(f"result {result_id} gives no suggestion: there is no verdict")
        trace_id = conn.execute(select(r.trace_id).where(r.id == result_id)).scalar_one()
        rollups.subtract(conn, [trace_id])
        new_type = row.error_type_corrected if error_type is UNCHANGED else error_type
        new_verdict = row.verdict_corrected if verdict is UNCHANGED else verdict
        corrected = new_type is not None or new_verdict is not None
        conn.execute(
            update(r)
            .where(r.id == result_id)
            .values(
                error_type_corrected=new_type,
                verdict_corrected=new_verdict,
                corrected_by=author.strip() if corrected else None,
                corrected_at=now_or_utc(now) if corrected else None,
            )
        )
        rollups.add(conn, [trace_id])
    return result_review(engine, result_id)


def correction_counts(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, int]:
    """How many values reviewers corrected under ``filters``: ``error_type`` (among error
    results, the ones the error charts count) and ``verdict`` (suggestion verdicts).

    A result corrected in both fields counts once in each; ``toollens summary``'s
    ``corrections`` counts it once in all.
    """
    r = ToolResultRow
    # Off the partial index of corrected results (a few rows), filtered where they lie.
    stmt = restrict_results_in_index(
        select(
            func.count(r.error_type_corrected).filter(r.status == "error"),
            func.count(r.verdict_corrected),
        ).where(corrected_result),
        filters,
    )
    with engine.connect() as conn:
        error_types, verdicts = conn.execute(stmt).one()
    return {"error_type": int(error_types), "verdict": int(verdicts)}
