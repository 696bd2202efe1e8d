"""Tool execution times: per-tool and overall p50 / p95 / max, and the slowest calls.

A Tool Message's ``duration_ms`` is stored at import (``ingest.analysis.durations``: the tool span's
own end − start, else the result's timestamp − its call's). Every statistic here is over the
**timed** results, those with a known duration ≥ 0; the others are counted, never averaged in:
``missing`` (no duration: a message without a time, or a result that answers no call) and
``negative`` (the result is stamped before its call).

Percentiles are **nearest-rank**: the p-th percentile of n sorted durations is the one at rank
``ceil(p / 100 × n)`` (a value that occurred, never an interpolation), read from the catalogue's
duration histogram (``db.catalogue.DURATION_HISTOGRAM``, compiled by ``db.distributions``): on
SQLite, without a trace filter and up to ``db.queries.planner.INDEX_WALK_LIMIT`` timed results, a
look-up at the rank in the duration indexes (no row is sorted); where the rollups answer, a
running count over ``rollup_durations``' counts per distinct duration (unfiltered: its agent
grain, ``db.rollups.read.grain_for``); else a running row number per tool over the picked
traces' timed results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Connection, Engine, Float, cast, select

from db import figures
from db.catalogue import DURATION_HISTOGRAM, TIMING_MEASURES, TOOL
from db.distributions import Stats, quantiles
from db.queries.common import TRACE, result_pair_key, to_frame
from db.queries.filters import NO_FILTERS, Filters, restrict_results
from db.queries.planner import walked_result_ids
from db.schema import ToolResultRow

#: (column, numerator, denominator): the percentiles reported, ``q = num / den``.
QUANTILES = (("p50_ms", 1, 2), ("p95_ms", 19, 20))
_FRACTIONS = tuple((num, den) for _, num, den in QUANTILES)

#: Columns of :func:`durations_by_tool`.
BY_TOOL_COLUMNS = (
    "tool", "timed", "missing", "negative", "p50_ms", "p95_ms", "max_ms", "from_spans",
)  # fmt: skip

_R = ToolResultRow
_TIMED = _R.duration_ms >= 0
_NONE: Stats = (None, None, None)  # type: ignore[assignment]


def _timing_counts(conn: Connection, filters: Filters) -> pd.DataFrame:
    """Per tool: ``results``, ``timed``, ``missing``, ``negative``, ``from_spans``."""
    return figures.read(conn, TIMING_MEASURES, by=[TOOL], filters=filters)


def _per_tool(counts: pd.DataFrame) -> dict[Any, int]:
    return {tool: int(n) for tool, n in zip(counts["tool"], counts["timed"], strict=True)}


def durations_by_tool(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Execution time per tool, the slowest p95 first (tools without a timed call last).

    Columns: ``tool``, ``timed`` (results with a known duration ≥ 0), ``missing``,
    ``negative``, ``p50_ms``, ``p95_ms``, ``max_ms`` (NULL without a timed result),
    ``from_spans`` (timed results measured by a tool span).

    The counts are the catalogue's timing measures; the percentiles its duration histogram's
    quantiles (``db.distributions``: the duration rollup's counts per exact duration where it
    answers the filters, look-ups at each rank in the (tool, duration) index where they are
    cheaper, else every timed result of the picked traces ranked).
    """
    with engine.connect() as conn:
        counts = _timing_counts(conn, filters)
        stats = quantiles(conn, DURATION_HISTOGRAM, _FRACTIONS, filters, _per_tool(counts))
    return _by_tool_frame(counts, stats)


def _by_tool_frame(counts: pd.DataFrame, stats: dict[Any, Stats]) -> pd.DataFrame:
    rows = []
    for tool, timed, missing, negative, from_spans in zip(
        counts["tool"], counts["timed"], counts["missing"], counts["negative"],
        counts["from_spans"], strict=True,
    ):  # fmt: skip
        p50, p95, top = stats.get(tool, _NONE)
        rows.append((tool, int(timed), int(missing), int(negative), p50, p95, top, int(from_spans)))
    df = pd.DataFrame(rows, columns=list(BY_TOOL_COLUMNS))
    df["_none"] = df["p95_ms"].isna()
    df = df.sort_values(["_none", "p95_ms", "max_ms", "tool"], ascending=[True, False, False, True])
    return df.drop(columns="_none").reset_index(drop=True)


def duration_totals(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, Any]:
    """Execution time over every tool: ``timed``, ``missing``, ``negative`` (counts) and
    ``p50_ms``, ``p95_ms``, ``max_ms`` (nearest rank over all timed results; ``None`` when
    there is none). Read like :func:`durations_by_tool`."""
    with engine.connect() as conn:
        counts = _timing_counts(conn, filters)
        stats = quantiles(
            conn,
            DURATION_HISTOGRAM,
            _FRACTIONS,
            filters,
            _per_tool(counts),
            by_tool=False,
            overall=True,
        )
    return _totals(counts, stats.get(None, _NONE))


def _totals(counts: pd.DataFrame, figures: Sequence[float | None]) -> dict[str, Any]:
    """:func:`duration_totals` from the per-tool counts and the overall (p50, p95, max)."""
    return {
        "timed": int(counts["timed"].sum()),
        "missing": int(counts["missing"].sum()),
        "negative": int(counts["negative"].sum()),
        "p50_ms": figures[0],
        "p95_ms": figures[1],
        "max_ms": figures[2],
    }


def duration_figures(
    engine: Engine, filters: Filters = NO_FILTERS
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """:func:`durations_by_tool` and :func:`duration_totals` at once (the Overview shows both):
    the counts are read once, and where the duration rollup is read, it is read once (the
    per-tool counts per exact duration give each tool's figures, and summed over the tools the
    overall ones)."""
    with engine.connect() as conn:
        counts = _timing_counts(conn, filters)
        stats = quantiles(
            conn, DURATION_HISTOGRAM, _FRACTIONS, filters, _per_tool(counts), overall=True
        )
    overall = stats.pop(None, _NONE)
    return _by_tool_frame(counts, stats), _totals(counts, overall)


def slowest_calls(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 20
) -> pd.DataFrame:
    """The ``limit`` slowest timed calls, the slowest first.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value), ``tool``, ``duration_ms``,
    ``duration_source``, ``status``.
    """
    order = (_R.duration_ms.desc(), _R.trace_id, _R.message_seq)
    columns = (
        TRACE.display_id.label("trace"),
        result_pair_key().label("pair"),
        _R.tool,
        cast(_R.duration_ms, Float).label("duration_ms"),
        _R.duration_source,
        _R.status,
    )
    with engine.connect() as conn:
        # The slowest timed results (of the tool) off the duration index, then the picked
        # traces' among them.
        keys = ((_R.duration_ms, True), (_R.trace_id, False), (_R.message_seq, False))
        found = walked_result_ids(conn, filters, limit, keys, _TIMED)
        if found is not None:
            stmt = (
                select(*columns)
                .join(TRACE, TRACE.id == _R.trace_id)
                .where(_R.id.in_(found))
                .order_by(*order)
            )
            return to_frame(conn, stmt)
        stmt = (
            restrict_results(
                select(*columns).join(TRACE, TRACE.id == _R.trace_id).where(_TIMED), filters
            )
            .order_by(*order)
            .limit(limit)
        )
        return to_frame(conn, stmt)
