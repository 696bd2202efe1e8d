"""Queries of error streaks: k or more consecutive calls of one tool ending in the same error
fingerprint, whatever their arguments (``ingest.analysis.streaks`` defines them; stored per streak
of 2 or more calls in ``error_streaks``, so the threshold k filters in SQL without re-importing).

Wasted tokens of a streak are the result and argument tokens of its calls after the first;
wasted time is the sum of the known execution times of those calls (NULL when none is known).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import Engine, func, select

from db.queries.common import TRACE, call_pair_key, to_frame
from db.queries.filters import NO_FILTERS, Filters, restrict_rows
from db.schema import ErrorStreakRow

_S = ErrorStreakRow


def _at(k: int, filters: Filters) -> Any:
    """Streaks of ``k`` or more calls under the filters (tool: the streak's tool)."""
    return restrict_rows(
        select(_S).where(_S.length >= k), filters, tool=_S.tool, trace_id=_S.trace_id
    )


def streak_totals(engine: Engine, k: int, filters: Filters = NO_FILTERS) -> dict[str, Any]:
    """Headline figures at ``k``: ``streaks``, ``calls``, ``traces``, ``wasted_tokens`` and
    ``wasted_ms`` (``None`` when no streak has a known time)."""
    streaks = _at(k, filters).subquery()
    stmt = select(
        func.count(),
        func.coalesce(func.sum(streaks.c.length), 0),
        func.count(streaks.c.trace_id.distinct()),
        func.coalesce(func.sum(streaks.c.wasted_tokens), 0),
        func.sum(streaks.c.wasted_ms),
    )
    with engine.connect() as conn:
        count, calls, traces, tokens, ms = conn.execute(stmt).one()
    return {
        "streaks": int(count),
        "calls": int(calls),
        "traces": int(traces),
        "wasted_tokens": int(tokens),
        "wasted_ms": None if ms is None else float(ms),
    }


def error_streaks(
    engine: Engine, k: int, filters: Filters = NO_FILTERS, *, limit: int = 50, offset: int = 0
) -> pd.DataFrame:
    """One page of streaks at ``k``, the longest first (then the most wasted tokens).

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value of the first call), ``tool``,
    ``error_type``, ``fingerprint``, ``length``, ``wasted_tokens``, ``wasted_ms``, ``last``
    (``pair`` value of the last call).
    """
    streaks = _at(k, filters).subquery()
    stmt = (
        select(
            TRACE.display_id.label("trace"),
            call_pair_key(streaks.c.first_seq, streaks.c.first_index).label("pair"),
            streaks.c.tool,
            streaks.c.error_type,
            streaks.c.fingerprint,
            streaks.c.length,
            streaks.c.wasted_tokens,
            streaks.c.wasted_ms,
            call_pair_key(streaks.c.last_seq, streaks.c.last_index).label("last"),
        )
        .join(TRACE, TRACE.id == streaks.c.trace_id)
        .order_by(
            streaks.c.length.desc(),
            streaks.c.wasted_tokens.desc(),
            streaks.c.trace_id,
            streaks.c.first_seq,
            streaks.c.first_index,
        )
        .limit(limit)
        .offset(offset)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def trace_streaks(engine: Engine, trace_id: int, k: int) -> pd.DataFrame:
    """The streaks of ``k`` or more calls of one trace, in the order of their first call.

    Columns: ``pair`` (first call), ``last`` (last call), ``tool``, ``error_type``,
    ``fingerprint``, ``length``, ``wasted_tokens``, ``wasted_ms``.
    """
    stmt = (
        select(
            call_pair_key(_S.first_seq, _S.first_index).label("pair"),
            call_pair_key(_S.last_seq, _S.last_index).label("last"),
            _S.tool,
            _S.error_type,
            _S.fingerprint,
            _S.length,
            _S.wasted_tokens,
            _S.wasted_ms,
        )
        .where(_S.trace_id == trace_id, _S.length >= k)
        .order_by(_S.first_seq, _S.first_index)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)
