"""``toollens compare`` output: a comparison as JSON-ready data and as text for a CI log.

The comparison itself is :func:`db.queries.compare.compare_sets`; this module only shapes it.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import pandas as pd

from db.contract.vocabulary import counted
from db.queries.compare_stats import (
    BOOTSTRAP,
    FALSE_DISCOVERY_RATE,
    MIN_TRACES,
    PERMUTATIONS,
    SEED,
    Comparison,
    Difference,
)

ALL_TOOLS = "(all tools)"
#: Fingerprints listed per side in the text report (a CI log); ``--json`` has them all.
MAX_LISTED = 20
METHOD = {
    "unit": "trace (calls of one run are not independent; traces are the clusters)",
    "min_traces": MIN_TRACES,
    "p_values": f"permutation test over traces, {PERMUTATIONS} relabellings, seed {SEED}",
    "rates": "Wilson score interval per side (effective size over traces), Newcombe's "
    "hybrid score interval for the difference",
    "means_and_percentiles": f"bootstrap over traces, {BOOTSTRAP} Poisson resamples, seed "
    f"{SEED}; percentiles nearest rank, resampled as grouped-data quantiles",
    "multiple_comparisons": f"Benjamini-Hochberg, false discovery rate {FALSE_DISCOVERY_RATE}",
    "costs": "re-read tokens and cost (USD) per trace over the traces whose every Tool Message "
    "has the figure; the cost only where the trace's model has a price",
}


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def comparison_data(
    comparison: Comparison, baseline: str, candidate: str, failed: list[Difference]
) -> dict[str, Any]:
    """The comparison as plain data (``--json``): both sets, the method, every difference,
    what is new or gone, and the differences that failed the gate."""
    return {
        "baseline": {"filter": baseline, "traces": comparison.baseline_traces},
        "candidate": {"filter": candidate, "traces": comparison.candidate_traces},
        "method": METHOD,
        "differences": [
            {k: _plain(v) for k, v in asdict(d).items()} for d in comparison.differences
        ],
        "new_fingerprints": _records(comparison.new_fingerprints),
        "gone_fingerprints": _records(comparison.gone_fingerprints),
        "new_tools": comparison.new_tools,
        "gone_tools": comparison.gone_tools,
        "new_schema_issues": _records(comparison.new_schema_issues),
        "unchanged_tools": comparison.unchanged_tools(),
        "notes": comparison.notes,
        "failed": [{"tool": d.tool, "metric": d.metric} for d in failed],
    }


def number(value: float | None) -> str:
    """A figure for a table cell: 4 significant digits, ``–`` when there is none.

    >>> number(0.1333333), number(26.0), number(None)
    ('0.1333', '26', '–')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4g}"


def signed(value: float | None) -> str:
    """A difference with its sign (``+0.07``, ``-3``)."""
    return "–" if value is None else ("+" if value > 0 else "") + number(value)


def dollars(value: float | None, sign: bool = False) -> str:
    """An amount in US dollars, 4 significant digits (``$0.008520``, ``-$0.00757``), ``–``
    when there is none; ``sign``: ``+`` before a positive one.

    >>> dollars(0.00852), dollars(-0.00757, sign=True), dollars(0.5, sign=True)
    ('$0.00852', '-$0.00757', '+$0.5')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    mark = "-" if value < 0 else ("+" if sign and value > 0 else "")
    return f"{mark}${abs(value):.4g}"


def figure(d: Difference, value: float | None) -> str:
    """A row's value: a rate in percent with one decimal, money in dollars, anything else as
    :func:`number`."""
    if value is not None and d.is_money:
        return dollars(value)
    if value is None or not d.is_rate:
        return number(value)
    return f"{value:.1%}"


def _signed(d: Difference, value: float | None) -> str:
    return dollars(value, sign=True) if d.is_money else signed(value)


def _difference(d: Difference) -> str:
    if d.difference is None or not d.is_rate:
        return _signed(d, d.difference)
    return f"{100 * d.difference:+.1f}pp"


def _line(d: Difference) -> str:
    scale = 100 if d.is_rate else 1
    interval = (
        f"[{_signed(d, scale * d.low)}, {_signed(d, scale * d.high)}]"
        if d.low is not None and d.high is not None
        else ""
    )
    adjusted = f"p_adj={d.adjusted_p:.2g}" if d.adjusted_p is not None else ""
    traces = f"{d.baseline_traces}/{d.candidate_traces} traces"
    return (
        f"  {d.verdict:<7} {d.tool or ALL_TOOLS:<22} {d.metric:<36} "
        f"{figure(d, d.baseline):>8} -> {figure(d, d.candidate):<8} {_difference(d):>9} "
        f"{interval:<22} {traces:<16} {adjusted}"
    ).rstrip()


def comparison_text(
    comparison: Comparison, baseline: str, candidate: str, failed: list[Difference]
) -> str:
    """The comparison for a terminal or CI log: the differences with evidence, what is new
    or gone, the unchanged tools, and the gate's result."""
    out = [
        f"baseline:  {baseline} ({counted(comparison.baseline_traces, 'trace')})",
        f"candidate: {candidate} ({counted(comparison.candidate_traces, 'trace')})",
        *(f"note: {n}" for n in comparison.notes),
        "",
        "differences with evidence (rates in %, their differences in points; costs in USD; 95% "
        "interval; traces behind each side; Benjamini-Hochberg adjusted p):",
    ]
    flagged = comparison.flagged()
    out.extend(_line(d) for d in flagged)
    if not flagged:
        out.append("  none")
    out.append("")
    for title, df in (
        ("error fingerprints only in the candidate", comparison.new_fingerprints),
        ("error fingerprints only in the baseline", comparison.gone_fingerprints),
    ):
        out.append(f"{title}:")
        out.extend(
            f"  {row.n}x in {counted(row.traces, 'trace')}: {row.fingerprint}  "
            f"(first: {row.trace} {row.pair})"
            for row in df.head(MAX_LISTED).itertuples()
        )
        if len(df) > MAX_LISTED:
            out.append(f"  … and {len(df) - MAX_LISTED} more (--json lists them all)")
        if df.empty:
            out.append("  none")
    out.append(f"tools only in the candidate: {', '.join(comparison.new_tools) or 'none'}")
    out.append(f"tools only in the baseline: {', '.join(comparison.gone_tools) or 'none'}")
    out.append("schema findings only in the candidate:")
    out.extend(
        f"  {row.n}x {row.tool}: {row.issue}  (first: {row.trace} {row.pair})"
        for row in comparison.new_schema_issues.itertuples()
    )
    if comparison.new_schema_issues.empty:
        out.append("  none")
    out.append(f"unchanged tools: {', '.join(comparison.unchanged_tools()) or 'none'}")
    if failed:
        worse = ", ".join(f"{d.metric} ({d.tool or ALL_TOOLS})" for d in failed)
        out.append(f"FAILED: worse with evidence: {worse}")
    return "\n".join(out)
