"""Baseline vs candidate: is each difference in Tool Message behaviour real? (pure, no SQL)

Two trace sets (:class:`TraceSet`, filled by ``db.queries.compare``) go in; one
:class:`Difference` per metric and scope (all tools, then each tool both sets call) comes out,
with a 95 % confidence interval, a p-value adjusted for the number of comparisons, and a
verdict: ``better``, ``worse``, ``changed`` (a real difference in a metric with no good
direction, such as calls per trace) or ``no evidence``.

Why these methods:

* **Traces, not calls, are the independent units.** The calls of one run share a prompt, a
  model state and a user; ten timeouts in one stuck trace are not ten independent draws.
  Every metric is therefore kept as per-trace numerators and denominators, and every
  uncertainty treats traces as clusters.
* **Rates and means are ratio estimators** ``R = Σ y_i / Σ x_i`` over traces (errors / results,
  calls / traces …). Their variance comes from the delta method (Taylor linearization, the
  survey-sampling standard for cluster samples): ``Var R ≈ n / (n-1) · Σ (y_i - R x_i)² /
  (Σ x_i)²``. It is closed-form, deterministic and needs no resampling; the difference of two
  independent sets gets a Wald interval ``d ± 1.96 √(V_b + V_c)`` and a two-sided normal
  p-value.
* **Tool Message size percentiles** (p50, p95, nearest rank) get Woodruff's method, the
  survey-sampling standard for quantiles: the share of messages at or below the percentile is
  a ratio over traces like the rates above, and its band read back through the sorted sizes
  gives the percentile's standard error (:func:`quantile_estimate`); the difference is then
  treated like the ratios. (A cluster bootstrap gave the same variances within 15 % but took
  25 times as long on a million messages.)
* **Benjamini–Hochberg** across every metric × tool of one comparison: a comparison makes
  dozens to hundreds of tests, and at 5 % each, noise alone would flag several. BH keeps the
  expected share of false flags among the flagged at :data:`FALSE_DISCOVERY_RATE` while losing
  less power than Bonferroni, which matters because the real changes we look for are few and
  large. A difference is flagged when its adjusted p-value is at most that rate; the interval
  shown is the unadjusted 95 % one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from db.vocabulary import counted

Direction = Literal["lower", "higher"] | None
Verdict = Literal["better", "worse", "changed", "no evidence"]

#: The false discovery rate Benjamini–Hochberg keeps (and the flagging threshold).
FALSE_DISCOVERY_RATE = 0.05
#: Two-sided 95 % normal quantile for the intervals.
Z_95 = 1.959963984540054
#: Fewer traces than this in either set: no inference (a variance needs two clusters).
MIN_TRACES = 2


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A metric's name, its label, and which direction is better (``None``: neither)."""

    name: str
    label: str
    better: Direction


#: The fixed metrics, in display order (error types and finding kinds are added per name:
#: ``error_type:timeout``, ``finding:bare_status``).
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("calls_per_trace", "calls per trace", None),
    MetricSpec("error_rate", "error rate (errors / results)", "lower"),
    MetricSpec("pairing_problem_rate", "pairing problems (calls not cleanly paired)", "lower"),
    MetricSpec("loop_rate", "loop rate (traces with a loop)", "lower"),
    MetricSpec("error_streak_rate", "error-streak rate (traces repeating a failed call)", "lower"),
    MetricSpec("wasted_tokens_per_trace", "wasted tokens per trace (repeats' results)", "lower"),
    # Neither direction is better: advice makes an error longer, a dump makes a result longer
    # (the ``oversized`` finding counts the harmful kind).
    MetricSpec("size_p50", "Tool Message tokens, p50", None),
    MetricSpec("size_p95", "Tool Message tokens, p95", None),
    MetricSpec("suggestion_rate", "suggestion rate (results with advice)", "higher"),
    MetricSpec("follow_rate", "follow rate (followed / (followed + ignored))", "higher"),
    MetricSpec("duration_s", "trace duration, seconds (where timestamps exist)", "lower"),
)  # fmt: skip
#: Metric names ``--fail-on`` accepts besides ``error_type:…`` / ``finding:…``.
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
#: Per-trace, per-tool counts :class:`TraceSet.tools` holds.
TOOL_COUNTS = (
    "calls", "results", "errors", "pairing_problems", "loop_calls", "streak_calls",
    "suggestions", "followed", "ignored", "wasted_tokens",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TraceSet:
    """One side of a comparison, aggregated per trace (what ``db.queries.compare`` returns).

    * ``traces``: one row per trace: ``trace_id``, ``display_id``, ``duration_s`` (NaN when
      the trace has no timestamps).
    * ``tools``: one row per trace and tool it touches: ``trace_id``, ``tool`` and
      :data:`TOOL_COUNTS`.
    * ``error_types`` / ``findings``: ``trace_id``, ``tool``, ``error_type`` / ``name``, ``n``.
    * ``sizes``: ``trace_id``, ``tool``, ``tokens``: one row per Tool Message.
    * ``fingerprints``: ``fingerprint``, ``tool``, ``error_type``, ``n``, ``traces``,
      ``examples`` (a few display ids) — the error fingerprints of the set.
    * ``schema_issues``: ``tool``, ``issue``, ``n``, ``examples``.
    """

    traces: pd.DataFrame
    tools: pd.DataFrame
    error_types: pd.DataFrame
    findings: pd.DataFrame
    sizes: pd.DataFrame
    fingerprints: pd.DataFrame
    schema_issues: pd.DataFrame

    @property
    def trace_count(self) -> int:
        """How many traces the set holds."""
        return len(self.traces)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A metric's value on one set, its variance, and how many traces carry it."""

    value: float | None
    variance: float | None
    traces: int


@dataclass(frozen=True, slots=True)
class Difference:
    """One metric in one scope (``tool is None``: all tools), baseline vs candidate."""

    tool: str | None
    metric: str
    label: str
    better: Direction
    baseline: float | None
    candidate: float | None
    baseline_traces: int
    candidate_traces: int
    difference: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    adjusted_p: float | None = None
    verdict: Verdict = "no evidence"


@dataclass(frozen=True, slots=True)
class Comparison:
    """Everything a comparison found: the differences, and what is new or gone."""

    baseline_traces: int
    candidate_traces: int
    differences: list[Difference]
    new_fingerprints: pd.DataFrame
    gone_fingerprints: pd.DataFrame
    new_tools: list[str]
    gone_tools: list[str]
    new_schema_issues: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def flagged(self) -> list[Difference]:
        """The differences with evidence (better, worse or changed)."""
        return [d for d in self.differences if d.verdict != "no evidence"]

    def unchanged_tools(self) -> list[str]:
        """Tools both sets call none of whose metrics differs with evidence (and at least one
        of whose metrics could be tested: too few traces prove nothing either way)."""
        same: dict[str, bool] = {}
        tested: set[str] = set()
        for d in self.differences:
            if d.tool is not None:
                same[d.tool] = same.get(d.tool, True) and d.verdict == "no evidence"
                if d.p_value is not None:
                    tested.add(d.tool)
        return sorted(tool for tool, unchanged in same.items() if unchanged and tool in tested)

    def worse(self, metrics: set[str] | None = None) -> list[Difference]:
        """The differences that are worse with evidence (only ``metrics`` when given)."""
        return [
            d
            for d in self.differences
            if d.verdict == "worse" and (metrics is None or d.metric in metrics)
        ]


def ratio_estimate(numerator: np.ndarray, denominator: np.ndarray) -> Estimate:
    """``Σ numerator / Σ denominator`` over traces, with its delta-method variance.

    Traces whose denominator is 0 add nothing to either sum (and nothing to the residuals),
    but they are clusters of the sample all the same.

    >>> e = ratio_estimate(np.array([1.0, 0.0, 1.0]), np.array([2.0, 2.0, 2.0]))
    >>> round(e.value, 4), round(e.variance, 4), e.traces
    (0.3333, 0.0278, 3)
    """
    n = len(numerator)
    total = float(denominator.sum())
    carrying = int((denominator > 0).sum())
    if n == 0 or total == 0:
        return Estimate(None, None, carrying)
    value = float(numerator.sum()) / total
    if n < MIN_TRACES:
        return Estimate(value, None, carrying)
    residuals = numerator - value * denominator
    variance = n / (n - 1) * float((residuals**2).sum()) / total**2
    return Estimate(value, variance, carrying)


def nearest_rank(sorted_values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The nearest-rank ``q`` quantile of ``sorted_values`` with ``weights`` (as repeats):
    the smallest value whose cumulative weight reaches ``q`` of the total.

    >>> nearest_rank(np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4), 0.5)
    2.0
    """
    cumulative = np.cumsum(weights)
    index = int(np.searchsorted(cumulative, q * cumulative[-1] - 1e-9))
    return float(sorted_values[min(index, len(sorted_values) - 1)])


def quantile_estimate(trace_index: np.ndarray, values: np.ndarray, q: float) -> Estimate:
    """The nearest-rank ``q`` quantile of ``values`` (one per Tool Message; ``trace_index``
    says which trace each belongs to), with a Woodruff variance for a cluster sample.

    Woodruff: the share of messages at or below the quantile is a ratio estimator over traces
    (delta-method variance, as every rate here); its 95 % band ``q ± 1.96 se`` read back
    through the sorted values gives the quantile's band, and a quarter of its width squared
    over 1.96² its variance. Closed-form and deterministic, where a bootstrap would resample a
    million messages hundreds of times.

    >>> e = quantile_estimate(np.repeat(np.arange(20), 3), np.arange(60.0), 0.5)
    >>> e.value, round(e.variance, 2), e.traces
    (29.0, 47.44, 20)
    """
    if len(values) == 0:
        return Estimate(None, None, 0)
    traces, compact = np.unique(trace_index, return_inverse=True)
    sorted_values = np.sort(values.astype(float), kind="stable")
    ones = np.ones(len(sorted_values))
    value = nearest_rank(sorted_values, ones, q)
    at_or_below = np.bincount(compact, weights=(values <= value) * 1.0, minlength=len(traces))
    share = ratio_estimate(at_or_below, np.bincount(compact, minlength=len(traces)) * 1.0)
    if share.variance is None:
        return Estimate(value, None, len(traces))
    half = Z_95 * math.sqrt(share.variance)
    low = nearest_rank(sorted_values, ones, max(q - half, 0.0))
    high = nearest_rank(sorted_values, ones, min(q + half, 1.0))
    return Estimate(value, ((high - low) / (2 * Z_95)) ** 2, len(traces))


def _normal_two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


def compare_estimates(
    tool: str | None, spec: MetricSpec, baseline: Estimate, candidate: Estimate
) -> Difference:
    """The difference candidate − baseline with its interval and unadjusted p-value."""
    row = Difference(
        tool, spec.name, spec.label, spec.better, baseline.value, candidate.value,
        baseline.traces, candidate.traces,
    )  # fmt: skip
    if baseline.value is None or candidate.value is None:
        return row
    diff = candidate.value - baseline.value
    if baseline.variance is None or candidate.variance is None:
        return _replace(row, difference=diff)
    se = math.sqrt(baseline.variance + candidate.variance)
    # se == 0: every trace of both sets agrees exactly, so the difference is what it is.
    p = (1.0 if diff == 0 else 0.0) if se == 0 else _normal_two_sided(diff / se)
    return _replace(row, difference=diff, low=diff - Z_95 * se, high=diff + Z_95 * se, p_value=p)


def _replace(row: Difference, **changes: object) -> Difference:
    values = {name: getattr(row, name) for name in row.__dataclass_fields__}
    values.update(changes)
    return Difference(**values)


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """BH-adjusted p-values (step-up, monotone, capped at 1), in the input order.

    >>> [round(p, 3) for p in benjamini_hochberg([0.01, 0.04, 0.03, 0.5])]
    [0.04, 0.053, 0.053, 0.5]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        adjusted[i] = running
    return adjusted


def _verdict(row: Difference) -> Verdict:
    if row.adjusted_p is None or row.adjusted_p > FALSE_DISCOVERY_RATE or not row.difference:
        return "no evidence"
    if row.better is None:
        return "changed"
    went_down = row.difference < 0
    return "better" if went_down == (row.better == "lower") else "worse"


# --- per-trace numerators and denominators -----------------------------------------------------


def _per_trace(frame: pd.DataFrame, trace_ids: pd.Index, column: str) -> np.ndarray:
    """``column`` summed per trace, aligned on ``trace_ids`` (0 for traces without rows)."""
    if frame.empty:
        return np.zeros(len(trace_ids))
    summed = frame.groupby("trace_id")[column].sum()
    return summed.reindex(trace_ids, fill_value=0).to_numpy(dtype=float)


def _ratio_metrics(
    s: TraceSet, tools: pd.DataFrame
) -> Iterator[tuple[str, Callable[[], Estimate]]]:
    ids = pd.Index(s.traces["trace_id"])
    ones = np.ones(len(ids))

    def col(name: str) -> np.ndarray:
        return _per_trace(tools, ids, name)

    def any_of(name: str) -> np.ndarray:
        return (col(name) > 0).astype(float)

    yield "calls_per_trace", lambda: ratio_estimate(col("calls"), ones)
    yield "error_rate", lambda: ratio_estimate(col("errors"), col("results"))
    yield "pairing_problem_rate", lambda: ratio_estimate(col("pairing_problems"), col("calls"))
    yield "loop_rate", lambda: ratio_estimate(any_of("loop_calls"), any_of("calls"))
    yield "error_streak_rate", lambda: ratio_estimate(any_of("streak_calls"), any_of("calls"))
    yield "wasted_tokens_per_trace", lambda: ratio_estimate(col("wasted_tokens"), ones)
    yield "suggestion_rate", lambda: ratio_estimate(col("suggestions"), col("results"))
    yield (
        "follow_rate",
        lambda: ratio_estimate(col("followed"), col("followed") + col("ignored")),
    )


def _only_tool(frame: pd.DataFrame, tool: str | None) -> pd.DataFrame:
    return frame if tool is None else frame[frame["tool"] == tool]


def _kinds(frame: pd.DataFrame, tool: str | None, column: str) -> set[str]:
    return set(_only_tool(frame, tool)[column]) if not frame.empty else set()


def _scope_estimates(
    s: TraceSet, tool: str | None, error_kinds: set[str], finding_kinds: set[str]
) -> dict[str, Estimate]:
    """Every metric of one scope of ``s``; an error type or finding kind the set lacks is 0
    over the set's own denominator (a kind can appear or vanish, and that counts)."""
    estimates = {name: make() for name, make in _ratio_metrics(s, _only_tool(s.tools, tool))}
    sizes = _only_tool(s.sizes, tool)
    trace_index = sizes["trace_id"].to_numpy(dtype=np.int64)
    tokens = sizes["tokens"].to_numpy(dtype=float)
    estimates["size_p50"] = quantile_estimate(trace_index, tokens, 0.5)
    estimates["size_p95"] = quantile_estimate(trace_index, tokens, 0.95)
    if tool is None:
        # Durations are the traces' own (first to last message); a tool's share is unknown.
        durations = s.traces["duration_s"].to_numpy(dtype=float)
        known = ~np.isnan(durations)
        estimates["duration_s"] = ratio_estimate(np.where(known, durations, 0.0), known * 1.0)
    ids = pd.Index(s.traces["trace_id"])
    ones = np.ones(len(ids))
    errors = _only_tool(s.error_types, tool)
    for kind in sorted(error_kinds):
        # Per trace, not per result: how often a run hits this error does not move when the
        # run makes more or fewer other calls (a loop that disappears would otherwise make an
        # unchanged error look more frequent).
        rows = errors[errors["error_type"] == kind]
        estimates[f"error_type:{kind}"] = ratio_estimate(_per_trace(rows, ids, "n"), ones)
    findings = _only_tool(s.findings, tool)
    for name in sorted(finding_kinds):
        rows = findings[findings["name"] == name]
        estimates[f"finding:{name}"] = ratio_estimate(_per_trace(rows, ids, "n"), np.ones(len(ids)))
    return estimates


def metric_spec(name: str) -> MetricSpec:
    """The spec of a metric name, including ``error_type:…`` and ``finding:…`` ones."""
    for spec in METRICS:
        if spec.name == name:
            return spec
    kind, _, detail = name.partition(":")
    if kind == "error_type" and detail:
        return MetricSpec(name, f"errors per trace: {detail}", "lower")
    if kind == "finding" and detail:
        return MetricSpec(name, f"findings per trace: {detail}", "lower")
    raise ValueError(f"unknown metric {name!r}")


def _order(name: str) -> tuple[int, str]:
    fixed = {spec.name: n for n, spec in enumerate(METRICS)}
    if name in fixed:
        return fixed[name], ""
    return (len(METRICS) if name.startswith("error_type:") else len(METRICS) + 1), name


def _scope_differences(
    baseline: TraceSet, candidate: TraceSet, tool: str | None
) -> list[Difference]:
    error_kinds = _kinds(baseline.error_types, tool, "error_type") | _kinds(
        candidate.error_types, tool, "error_type"
    )
    finding_kinds = _kinds(baseline.findings, tool, "name") | _kinds(
        candidate.findings, tool, "name"
    )
    base = _scope_estimates(baseline, tool, error_kinds, finding_kinds)
    cand = _scope_estimates(candidate, tool, error_kinds, finding_kinds)
    return [
        compare_estimates(tool, metric_spec(name), base[name], cand[name])
        for name in sorted(base, key=_order)
    ]


def _diff_lists(base: pd.DataFrame, cand: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if cand.empty:
        return cand
    known = set(map(tuple, base[keys].to_numpy().tolist())) if not base.empty else set()
    keep = [tuple(row) not in known for row in cand[keys].to_numpy().tolist()]
    return cand[keep].sort_values(["n", *keys], ascending=[False] + [True] * len(keys))


def compare(baseline: TraceSet, candidate: TraceSet) -> Comparison:
    """Compare two trace sets: every metric overall and for each tool both sets call, BH
    across all of them, plus the fingerprints, tools and schema issues only one set has."""
    base_tools = set(baseline.tools["tool"]) if not baseline.tools.empty else set()
    cand_tools = set(candidate.tools["tool"]) if not candidate.tools.empty else set()
    rows = _scope_differences(baseline, candidate, None)
    for tool in sorted(base_tools & cand_tools):
        rows.extend(_scope_differences(baseline, candidate, tool))
    tested = [i for i, r in enumerate(rows) if r.p_value is not None]
    adjusted = benjamini_hochberg([rows[i].p_value or 0.0 for i in tested])
    for i, p in zip(tested, adjusted, strict=True):
        rows[i] = _replace(rows[i], adjusted_p=p)
        rows[i] = _replace(rows[i], verdict=_verdict(rows[i]))
    notes = []
    for side, s in (("baseline", baseline), ("candidate", candidate)):
        if s.trace_count < MIN_TRACES:
            notes.append(
                f"the {side} holds {counted(s.trace_count, 'trace')}: nothing can be inferred"
            )
    return Comparison(
        baseline_traces=baseline.trace_count,
        candidate_traces=candidate.trace_count,
        differences=rows,
        new_fingerprints=_diff_lists(
            baseline.fingerprints, candidate.fingerprints, ["fingerprint"]
        ),
        gone_fingerprints=_diff_lists(
            candidate.fingerprints, baseline.fingerprints, ["fingerprint"]
        ),
        new_tools=sorted(cand_tools - base_tools),
        gone_tools=sorted(base_tools - cand_tools),
        new_schema_issues=_diff_lists(
            baseline.schema_issues, candidate.schema_issues, ["tool", "issue"]
        ),
        notes=notes,
    )


def differences_frame(comparison: Comparison) -> pd.DataFrame:
    """The differences as a table (one row each), for the page and ``--json``."""
    columns = list(Difference.__dataclass_fields__)
    return pd.DataFrame(
        [[getattr(d, c) for c in columns] for d in comparison.differences], columns=columns
    )
