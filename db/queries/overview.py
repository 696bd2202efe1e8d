"""Queries behind the Overview page: small distributions, top problems and the per-tool scorecard
(the headline figures are :func:`db.queries.summary.summarize`).

Every figure is aggregated in SQL (both dialects) and only the aggregated rows travel to pandas.
Error types and verdicts are the effective ones (a reviewer's correction wins). Loop figures
count every call of a (trace, signature) whose occurrence reaches k, as
:func:`db.queries.summary.loop_counts` does; "over budget" compares tokens with the budget chosen in
the UI, so changing the budget needs no re-import.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import (
    Connection,
    Engine,
    func,
    select,
    tuple_,
)

from db import figures
from db.catalogue import (
    ADVISED,
    CALL_TOOL,
    CALLS_N,
    DECIDED,
    ERROR_TYPE_LABEL,
    ERRORS,
    FINDING_KIND,
    FINDING_TOOL,
    FINDINGS_N,
    FOLLOWED,
    HAS_VERDICT,
    IGNORED,
    IS_ERROR,
    ON_A_TOOL,
    RESULTS_N,
    TOOL,
    VERDICT,
    capped_occurrence,
    follow_rate,
    late_call_count,
    late_calls,
    loop_signatures,
    lowest,
    rate,
)
from db.contract.vocabulary import FINDING_KINDS, VERDICTS
from db.queries import histograms
from db.queries.common import (
    to_frame,
)
from db.queries.errors import group_request, tool_error_types
from db.queries.filters import NO_FILTERS, Filters
from db.queries.histograms import oversized_tools, size_bins, tool_sizes, tool_token_counts
from db.queries.loops import top_occurrence
from db.queries.planner import (
    grouping_key,
    restrict_calls_in_index,
)
from db.schema import (
    ToolCallRow,
    TraceRow,
)

#: The size bins' edges (see :mod:`db.queries.histograms`).
TOKEN_EDGES = histograms.TOKEN_EDGES
token_edges = histograms.token_edges
#: Occurrences at or above this are drawn as one "N+" bar.
OCCURRENCE_CAP = 10

SCORECARD_COLUMNS: tuple[str, ...] = (
    "tool", "calls", "results", "errors", "error_rate", "top_error_type", "p50_tokens",
    "p95_tokens", "over_budget", "over_budget_rate", "loop_calls", "errors_with_suggestion",
    "suggestion_rate", "followed", "ignored", "follow_rate", "findings", "finding_kinds",
)  # fmt: skip
#: Counts of :func:`scorecard_counts` (besides ``tool`` and ``top_error_type``).
_COUNT_COLUMNS = (
    "calls", "errors", "errors_with_suggestion", "followed", "ignored", "loop_calls", "findings",
)  # fmt: skip


def error_type_counts(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Error results per effective error type, most frequent first: ``error_type``, ``errors``."""
    with engine.connect() as conn:
        return figures.read(
            conn,
            [ERRORS],
            by=[ERROR_TYPE_LABEL],
            where=[IS_ERROR],
            filters=filters,
            order=[("errors", True), ("error_type", False)],
        )


def verdict_counts(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Results per effective verdict, in ``VERDICTS`` order (zeros included).

    Columns: ``verdict``, ``results``.
    """
    with engine.connect() as conn:
        rows = figures.read(conn, [RESULTS_N], by=[VERDICT], where=[HAS_VERDICT], filters=filters)
    found = {str(v): int(n) for v, n in zip(rows["verdict"], rows["results"], strict=True)}
    order = list(VERDICTS) + sorted(set(found) - set(VERDICTS))
    return pd.DataFrame({"verdict": order, "results": [found.get(v, 0) for v in order]})


def token_histogram(engine: Engine, budget: int, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Tool Messages per token-size bin: :func:`db.queries.histograms.size_bins` of the
    filtered results."""
    return size_bins(tool_token_counts(engine, filters, budget), budget)


def occurrence_histogram(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Tool calls per occurrence (1st, 2nd … time the same signature appears in its trace).

    Columns: ``occurrence`` (1 … :data:`OCCURRENCE_CAP`, the last one meaning "or more"),
    ``label`` (``"10+"`` for the cap), ``calls``. Only occurrences that happen are listed.
    """
    with engine.connect() as conn:
        df = figures.read(
            conn,
            [CALLS_N],
            by=[capped_occurrence(OCCURRENCE_CAP)],
            filters=filters,
            order=[("occurrence", False)],
        )
    df["label"] = [f"{o}+" if o == OCCURRENCE_CAP else str(o) for o in df["occurrence"].astype(int)]
    return df[["occurrence", "label", "calls"]]


def top_error_fingerprints(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 5
) -> pd.DataFrame:
    """The most frequent errors ("the same error" = same fingerprint).

    Columns: ``fingerprint``, ``tool``, ``error_type`` (the smallest of the group's effective
    types: a fingerprint spans two only after a reviewer corrected one of them), ``errors``,
    ``traces``.
    """
    measures, by, order = group_request(lowest)
    with engine.connect() as conn:
        return figures.read(conn, measures, by, filters=filters, order=order, limit=limit)


def top_oversized_tools(
    engine: Engine, budget: int, filters: Filters = NO_FILTERS, *, limit: int = 5
) -> pd.DataFrame:
    """Tools whose Tool Messages most often exceed ``budget`` tokens: see
    :func:`db.queries.histograms.oversized_tools`."""
    return oversized_tools(tool_token_counts(engine, filters, budget), budget, limit=limit)


def top_loops(
    engine: Engine, k: int, filters: Filters = NO_FILTERS, *, limit: int = 5
) -> pd.DataFrame:
    """The longest loops: (trace, signature) pairs whose calls reach occurrence ``k``.

    Columns: ``trace`` (display id), ``tool``, ``calls``, ``first_seq`` (the first call's
    message seq, to open it on the Trace page), ``first_call_index``.

    Occurrences of a signature in a trace are numbered 1 … n, so a looping signature's calls are
    found off the occurrence index (``occurrence >= k``) and number ``max(occurrence)``; only the
    few loops shown look up their first call. Only signatures with as many calls as the last
    row shown can be shown: the calls read start at that occurrence
    (:func:`db.queries.loops.top_occurrence`; a signature's tool is its calls' tool).
    """
    with engine.connect() as conn:
        at = top_occurrence(conn, k, filters, limit)
        if conn.dialect.name == "clickhouse":
            return _clickhouse_top_loops(conn, at, filters, limit)
        return to_frame(conn, _top_loops(at, filters, limit))


def _clickhouse_top_loops(conn: Connection, k: int, filters: Filters, limit: int) -> pd.DataFrame:
    """:func:`top_loops` on ClickHouse, which has no correlated subquery: the loops shown, then
    their calls' places, the first of each loop picked here."""
    top = to_frame(conn, select(_top(k, filters, limit)))
    columns = ["trace", "tool", "calls", "first_seq", "first_call_index"]
    if top.empty:
        return pd.DataFrame(columns=columns)
    keys = list(zip(top["trace_id"].tolist(), top["signature"].tolist(), strict=True))
    c = ToolCallRow
    first: dict[tuple[Any, Any], tuple[int, int]] = {}
    for trace_id, signature, seq, index in conn.execute(
        select(c.trace_id, c.signature, c.message_seq, c.call_index).where(
            tuple_(c.trace_id, c.signature).in_(keys)
        )
    ):
        key = (trace_id, signature)
        first[key] = min(first.get(key, (seq, index)), (seq, index))
    top["first_seq"] = [first[key][0] for key in keys]
    top["first_call_index"] = [first[key][1] for key in keys]
    top = top.sort_values(["calls", "trace", "tool"], ascending=[False, True, True])
    return top[columns].reset_index(drop=True)


def _top(k: int, filters: Filters, limit: int) -> Any:
    """The ``limit`` longest loops of ``k`` or more calls: ``trace_id``, ``signature``,
    ``tool``, ``calls``, ``trace`` (display id)."""
    trace_key = grouping_key(ToolCallRow.trace_id)
    groups = restrict_calls_in_index(
        select(
            trace_key.label("trace_id"),
            ToolCallRow.signature.label("signature"),
            func.min(ToolCallRow.tool_name).label("tool"),
            func.max(ToolCallRow.occurrence).label("calls"),
        )
        .where(ToolCallRow.occurrence >= k)
        .group_by(trace_key, ToolCallRow.signature),
        filters,
    ).subquery()
    top = (
        select(groups, TraceRow.display_id.label("trace"))
        .join(TraceRow, TraceRow.id == groups.c.trace_id)
        .order_by(groups.c.calls.desc(), TraceRow.display_id, groups.c.tool)
        .limit(limit)
        .subquery()
    )
    return top


def _top_loops(k: int, filters: Filters, limit: int) -> Any:
    top = _top(k, filters, limit)
    first_seq = (
        select(func.min(ToolCallRow.message_seq))
        .where(ToolCallRow.trace_id == top.c.trace_id, ToolCallRow.signature == top.c.signature)
        .scalar_subquery()
    )
    shown = select(top, first_seq.label("first_seq")).subquery()
    first_index = select(func.min(ToolCallRow.call_index)).where(
        ToolCallRow.trace_id == shown.c.trace_id,
        ToolCallRow.signature == shown.c.signature,
        ToolCallRow.message_seq == shown.c.first_seq,
    )
    return select(
        shown.c.trace,
        shown.c.tool,
        shown.c.calls,
        shown.c.first_seq,
        first_index.scalar_subquery().label("first_call_index"),
    ).order_by(shown.c.calls.desc(), shown.c.trace, shown.c.tool)


def tool_scorecard(
    engine: Engine, k: int, budget: int, filters: Filters = NO_FILTERS, *, limit: int = 500
) -> pd.DataFrame:
    """One row per tool with its quality figures (columns: :data:`SCORECARD_COLUMNS`).

    ``calls`` counts tool calls by name; every other result figure counts Tool Messages by the
    tool they belong to (the paired call's name, else the provided name). Rates are fractions
    (``None`` when the denominator is 0): ``error_rate`` = errors / results,
    ``over_budget_rate`` = results over ``budget`` / results, ``suggestion_rate`` = errors
    carrying a suggestion / errors, ``follow_rate`` = followed / (followed + ignored).
    Percentiles are nearest-rank over the tool's Tool Messages. Tools are ordered by calls, then
    results; at most ``limit`` tools. :func:`scorecard_counts` and
    :func:`db.queries.histograms.tool_token_counts` are the two sources (see :func:`scorecard`).
    """
    counts = scorecard_counts(engine, k, filters)
    return scorecard(counts, tool_token_counts(engine, filters, budget), budget, limit=limit)


def scorecard_counts(engine: Engine, k: int, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """The scorecard's figures that do not depend on sizes, one row per tool that has calls,
    errors, verdicts or findings under ``filters``.

    Columns: ``tool``, ``calls``, ``errors``, ``errors_with_suggestion``, ``followed``,
    ``ignored``, ``loop_calls``, ``findings`` (``NaN`` where the tool has none) and
    ``top_error_type``. Each is read from the narrowest source that holds it: errors and their
    types off the errors index, verdicts off the verdict index, loops off the occurrence index.
    """
    f = filters
    with engine.connect() as conn:
        types = tool_error_types(conn, f).rename(columns={"errors": "n"})
        parts = [
            figures.read(
                conn,
                [ERRORS.named("errors_with_suggestion")],
                by=[TOOL],
                where=[IS_ERROR, ADVISED],
                filters=f,
            ),
            figures.read(conn, [FOLLOWED, IGNORED], by=[TOOL], where=[DECIDED], filters=f),
            figures.read(conn, [CALLS_N], by=[CALL_TOOL], filters=f),
        ]
        loop_rows = figures.read(
            conn,
            [loop_signatures(k), late_call_count(k)],
            by=[CALL_TOOL],
            where=[late_calls(k)],
            filters=f,
        )
        finding_rows = figures.read(
            conn, [FINDINGS_N], by=[FINDING_TOOL, FINDING_KIND], where=[ON_A_TOOL], filters=f
        )
    parts.append(_findings_per_tool(finding_rows))
    parts.append(types.groupby("tool", as_index=False)["n"].sum().rename(columns={"n": "errors"}))
    parts.append(
        pd.DataFrame(
            {
                "tool": loop_rows["tool"],
                "loop_calls": loop_rows["late"] + (k - 1) * loop_rows["signatures"],
            }
        )
    )
    parts.append(
        types.sort_values(["tool", "n", "error_type"], ascending=[True, False, True])
        .drop_duplicates("tool")
        .rename(columns={"error_type": "top_error_type"})[["tool", "top_error_type"]]
    )
    card = pd.DataFrame({"tool": pd.Series([], dtype=object)})
    for part in parts:
        card = card.merge(part, on="tool", how="outer")
    return card[["tool", *_COUNT_COLUMNS, "top_error_type", "finding_kinds"]]


def _findings_per_tool(rows: pd.DataFrame) -> pd.DataFrame:
    """``tool``, ``findings`` and ``finding_kinds`` (kind -> count, in vocabulary order) from
    (tool, kind, n) rows."""
    order = {kind: i for i, kind in enumerate(FINDING_KINDS)}
    tools: list[str] = []
    totals: list[int] = []
    kinds: list[dict[str, int]] = []
    for tool, group in rows.groupby("tool", sort=True):
        counts = sorted(
            zip(group["kind"], group["n"], strict=True),
            key=lambda kn: (order.get(kn[0], len(order)), kn[0]),
        )
        tools.append(str(tool))
        totals.append(int(group["n"].sum()))
        kinds.append({str(kind): int(n) for kind, n in counts})
    return pd.DataFrame(
        {"tool": pd.Series(tools, dtype=object), "findings": totals, "finding_kinds": kinds}
    )


def scorecard(
    counts: pd.DataFrame, token_counts: pd.DataFrame, budget: int, *, limit: int = 500
) -> pd.DataFrame:
    """The scorecard (see :func:`tool_scorecard`) from :func:`scorecard_counts` and the
    (tool, tokens) histogram :func:`db.queries.histograms.tool_token_counts`, for ``budget``.

    Its tools are those with calls or results (a tool with only findings is left out).
    """
    sizes = tool_sizes(token_counts, budget)
    card = counts.merge(sizes, on="tool", how="outer")
    card = card[card["calls"].notna() | card["results"].notna()]
    for col in (*_COUNT_COLUMNS, "results", "over_budget"):
        card[col] = card[col].fillna(0).astype(int)
    for col in ("p50_tokens", "p95_tokens"):
        card[col] = card[col].astype("Int64")
    card["top_error_type"] = (
        card["top_error_type"].astype(object).where(card["top_error_type"].notna(), None)
    )
    card["finding_kinds"] = [k if isinstance(k, dict) else {} for k in card["finding_kinds"]]
    card["error_rate"] = rate(card["errors"], card["results"])
    card["over_budget_rate"] = rate(card["over_budget"], card["results"])
    card["suggestion_rate"] = rate(card["errors_with_suggestion"], card["errors"])
    card["follow_rate"] = follow_rate(card["followed"], card["ignored"])
    card = card.sort_values(["calls", "results", "tool"], ascending=[False, False, True])
    return card[list(SCORECARD_COLUMNS)].head(limit).reset_index(drop=True)
