"""Baseline vs candidate: is each difference in Tool Message behaviour real? (pure, no SQL)

Two trace sets (:class:`TraceSet`, filled by ``db.queries.compare``) go in; one
:class:`Difference` per metric and scope (all tools, then each tool both sets call) comes out,
with the traces it rests on, a 95 % interval, a p-value adjusted for the number of comparisons,
and a verdict: ``better``, ``worse``, ``changed`` (a real difference in a metric with no good
direction, such as calls per trace), ``no evidence``, or ``too few traces``.

Why these methods (a CI gate fails a build on them, so they must stay honest at 5 traces as
at 50,000):

* **Traces, not calls, are the independent units.** The calls of one run share a prompt, a
  model state and a user; ten timeouts in one stuck trace are not ten independent draws.
  Every metric is kept as per-trace numerators and denominators (``R = Σ y_i / Σ x_i``:
  errors / results, calls / traces …) or, for sizes, per-trace counts of each size, and every
  resampling below draws whole traces.
* **p-values come from a permutation test over traces.** Under "no difference" the two sets
  are exchangeable, so relabelling the pooled traces at random (:data:`PERMUTATIONS` times,
  seed :data:`SEED`: the output is deterministic) gives the statistic's exact null
  distribution, whatever its shape and however few the traces; the p-value is
  ``(1 + extreme) / (1 + permutations)`` (Phipson & Smyth), where a relabelling that leaves a
  side without a denominator counts as extreme. When no relabelling is as extreme as the
  observed split, the tail is read from a normal fitted to the permutation distribution, but
  never below the probability of the observed split itself (one labelling of the traces that
  carry the metric: 1 vs 2 traces of 15 can never go below 0.14). A split of one population
  is therefore flagged at most as often as the threshold says (the A/A test counts it).
* **Rates** (errors / results and the other shares) get **Wilson score** intervals per side
  and **Newcombe's** hybrid score interval for the difference: never outside [0, 1], never of
  zero width, honest at 0 of 5. The Wilson sample size is the effective one, ``R(1 - R) /
  Var R`` with the delta-method variance over traces (the Kish design effect), kept between
  the traces and the units they hold.
* **Means per trace and size percentiles** get a **bootstrap over traces** (Poisson weights,
  :data:`BOOTSTRAP` replicates, seed :data:`SEED`): the 2.5th and 97.5th percentiles of the
  resampled differences. Sizes are whole tokens, and the bootstrap of a sample quantile only
  takes the few values the data hold (a p95 of ``[+50, +50]``), so inside the resampling a
  percentile is that of the sizes spread over their token (the grouped-data quantile
  ``v - ½ + (q·n - below) / at``): it moves with every change of weight, and an interval has
  zero width only when every size on both sides is the same. The table's values stay the
  nearest-rank percentiles every page shows; the interval is widened to hold their
  difference.
* **Too few traces.** A cell resting on fewer than :data:`MIN_TRACES` traces on either side
  gets no p-value, no interval and the verdict ``too few traces``; see :data:`MIN_TRACES`.
* **Benjamini–Hochberg** across every tested metric × tool of one comparison: a comparison
  makes dozens to hundreds of tests, and at 5 % each, noise alone would flag several. BH keeps
  the expected share of false flags among the flagged at :data:`FALSE_DISCOVERY_RATE` while
  losing less power than Bonferroni. A difference is flagged when its adjusted p-value is at
  most that rate; the interval shown is the unadjusted 95 % one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd

from db.contract.vocabulary import counted

Direction = Literal["lower", "higher"] | None
Verdict = Literal["better", "worse", "changed", "no evidence", "too few traces"]

#: The false discovery rate Benjamini–Hochberg keeps (and the flagging threshold).
FALSE_DISCOVERY_RATE = 0.05
#: Two-sided 95 % normal quantile for the intervals.
Z_95 = 1.959963984540054
#: Fewer traces than this behind a cell on either side: ``too few traces``, no inference.
#:
#: Five is the smallest count at which a test over traces can give evidence at all. With
#: ``k`` traces per side a permutation test has ``C(2k, k)`` labellings, so its smallest
#: two-sided p-value is ``2 / C(2k, k)``: 0.10 at 3 per side (never significant), 0.029 at 4
#: (significant alone, but not once Benjamini–Hochberg adjusts for a second test), 0.0079 at 5.
#: Below five, a variance over traces also rests on at most three degrees of freedom, where a
#: t quantile is 3.2 rather than 1.96: any normal interval would be far too narrow.
MIN_TRACES = 5
#: Random relabellings of the pooled traces behind each p-value.
PERMUTATIONS = 2000
#: Bootstrap replicates behind each interval of a mean or a percentile.
BOOTSTRAP = 1000
#: The seed of every resampling: the same two sets always give the same output.
SEED = 20260105
#: Most numbers one block of resampling holds at once (rows × traces or rows × sizes).
BLOCK = 4_000_000


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
    MetricSpec("reread_tokens_per_trace", "re-read tokens per trace (by later calls)", "lower"),
    MetricSpec("cost_per_trace", "Tool Message cost per trace, USD (models with a price)", "lower"),
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
#: The metrics that are shares (0 to 1): Wilson / Newcombe intervals, shown as percentages.
RATES = frozenset(
    {"error_rate", "pairing_problem_rate", "loop_rate", "error_streak_rate", "suggestion_rate",
     "follow_rate"}
)  # fmt: skip
#: The metrics in US dollars (shown with a ``$``).
MONEY = frozenset({"cost_per_trace"})
#: The size percentiles and their quantile.
PERCENTILES = {"size_p50": 0.5, "size_p95": 0.95}
#: Per-trace, per-tool counts :class:`TraceSet.tools` holds.
TOOL_COUNTS = (
    "calls", "results", "errors", "pairing_problems", "loop_calls", "streak_calls",
    "suggestions", "followed", "ignored", "wasted_tokens", "reread_tokens", "cost_nano_usd",
    "uncosted", "unpriced",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TraceSet:
    """One side of a comparison, aggregated per trace (what ``db.queries.compare`` returns).

    * ``traces``: one row per trace: ``trace_id``, ``display_id``, ``duration_s`` (NaN when
      the trace has no timestamps).
    * ``tools``: one row per trace and tool it touches: ``trace_id``, ``tool`` and
      :data:`TOOL_COUNTS` (``reread_tokens`` and ``cost_nano_usd``: what its Tool Messages add
      to the later model calls, ``ingest.analysis.costs``; ``uncosted``: its Tool Messages
      stored without those figures, until ``toollens reanalyze``; ``unpriced``: those without
      a cost, their model having no price).
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

    def subset(self, trace_ids: list[int] | np.ndarray) -> TraceSet:
        """The same set restricted to ``trace_ids`` (per-trace frames only; the fingerprint
        and schema lists are per set and stay as they are). For splitting one set in two."""
        keep = set(int(i) for i in trace_ids)

        def only(df: pd.DataFrame) -> pd.DataFrame:
            return df[df["trace_id"].isin(keep)].reset_index(drop=True) if len(df) else df

        return TraceSet(
            traces=only(self.traces),
            tools=only(self.tools),
            error_types=only(self.error_types),
            findings=only(self.findings),
            sizes=only(self.sizes),
            fingerprints=self.fingerprints,
            schema_issues=self.schema_issues,
        )


@dataclass(frozen=True, slots=True)
class Difference:
    """One metric in one scope (``tool is None``: all tools), baseline vs candidate.

    ``baseline_traces`` / ``candidate_traces``: the traces the row rests on (those with a
    denominator for a rate, those calling the tool for a tool's per-trace figure, those with
    a Tool Message for a size percentile, those with timestamps for the duration).
    """

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

    @property
    def is_rate(self) -> bool:
        """Whether the metric is a share (shown as a percentage)."""
        return self.metric in RATES

    @property
    def is_money(self) -> bool:
        """Whether the metric is in US dollars."""
        return self.metric in MONEY


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
        return [d for d in self.differences if d.verdict in ("better", "worse", "changed")]

    def unchanged_tools(self) -> list[str]:
        """Tools both sets call none of whose metrics differs with evidence (and at least one
        of whose metrics could be tested: too few traces prove nothing either way)."""
        same: dict[str, bool] = {}
        tested: set[str] = set()
        for d in self.differences:
            if d.tool is not None:
                same[d.tool] = same.get(d.tool, True) and d.verdict in (
                    "no evidence",
                    "too few traces",
                )
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


# --- the pieces: Wilson, Newcombe, grouped quantiles, BH ---------------------------------------


def wilson(rate: float, n: float) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share ``rate`` observed over ``n`` units.

    >>> [round(x, 4) for x in wilson(0.0, 5)]
    [0.0, 0.4345]
    >>> [round(x, 4) for x in wilson(0.5, 20)]
    [0.2993, 0.7007]
    """
    z2 = Z_95 * Z_95
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = Z_95 / (1 + z2 / n) * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(
    baseline: float, n_baseline: float, candidate: float, n_candidate: float
) -> tuple[float, float]:
    """Newcombe's hybrid score interval (his method 10) of ``candidate - baseline``, from
    the two Wilson intervals.

    >>> [round(x, 4) for x in newcombe(0.0, 5, 0.0, 5)]
    [-0.4345, 0.4345]
    """
    bl, bh = wilson(baseline, n_baseline)
    cl, ch = wilson(candidate, n_candidate)
    d = candidate - baseline
    return (
        d - math.sqrt((candidate - cl) ** 2 + (bh - baseline) ** 2),
        d + math.sqrt((ch - candidate) ** 2 + (baseline - bl) ** 2),
    )


def effective_size(y: np.ndarray, x: np.ndarray) -> float:
    """The Wilson sample size of the share ``Σy / Σx`` over traces: ``R(1 - R) / Var R``
    with the delta-method variance over traces (Kish's design effect), between the number
    of traces with a denominator and the units ``Σx`` they hold; ``Σx`` where the variance
    cannot tell (every trace at the same share, or a share of 0 or 1).

    >>> effective_size(np.array([2.0, 0.0]), np.array([2.0, 2.0]))
    2.0
    >>> effective_size(np.array([1.0, 1.0, 0.0]), np.array([2.0, 2.0, 2.0]))
    6.0
    """
    total = float(x.sum())
    carrying = int((x > 0).sum())
    rate = float(y.sum()) / total
    if carrying < 2 or rate in (0.0, 1.0):
        return total
    residuals = y - rate * x
    variance = carrying / (carrying - 1) * float((residuals**2).sum()) / total**2
    if variance == 0:
        return total
    return min(total, max(float(carrying), rate * (1 - rate) / variance))


def nearest_rank(sorted_values: np.ndarray, q: float) -> float:
    """The nearest-rank ``q`` quantile of ``sorted_values``: the smallest value with at least
    ``q`` of them at or below it (what every page shows as p50 / p95).

    >>> nearest_rank(np.array([1.0, 2.0, 3.0, 4.0]), 0.5)
    2.0
    """
    index = max(math.ceil(q * len(sorted_values) - 1e-9) - 1, 0)
    return float(sorted_values[min(index, len(sorted_values) - 1)])


def grouped_quantile(counts: np.ndarray, values: np.ndarray, q: float) -> np.ndarray:
    """The ``q`` quantile of whole-token sizes spread evenly over their token, per row of
    ``counts`` (rows × distinct sizes, ``values`` ascending): ``v - ½ + (q·n - below) / at``.

    It moves with every change of a row's weights, so a resampled percentile is not stuck on
    the few sizes the data hold; NaN for a row without weight.

    >>> counts = np.array([[1.0, 2.0, 1.0], [2.0, 1.0, 1.0]])
    >>> grouped_quantile(counts, np.array([10.0, 20.0, 30.0]), 0.5)
    array([20. , 10.5])
    """
    total = counts.sum(axis=1)
    target = q * total
    cumulative = np.cumsum(counts, axis=1)
    index = np.minimum((cumulative < target[:, None] - 1e-9).sum(axis=1), counts.shape[1] - 1)
    rows = np.arange(len(counts))
    at = counts[rows, index]
    below = cumulative[rows, index] - at
    with np.errstate(invalid="ignore", divide="ignore"):
        out = values[index] - 0.5 + (target - below) / np.where(at > 0, at, 1.0)
    return np.where(total > 0, out, np.nan)


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


def split_probability(pooled: int, candidate: int, carrying: int, carrying_candidate: int) -> float:
    """The probability that a random split of ``pooled`` traces (``candidate`` of them to the
    candidate) gives exactly the observed labelling of the ``carrying`` traces behind a
    metric (``carrying_candidate`` of them in the candidate): the smallest p-value a
    permutation test of that metric can honestly give.

    >>> round(split_probability(15, 8, 3, 2), 4)
    0.1436
    """

    def log_comb(n: int, k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    rest = candidate - carrying_candidate
    if rest < 0 or rest > pooled - carrying:
        return 1.0
    return math.exp(log_comb(pooled - carrying, rest) - log_comb(pooled, candidate))


def _normal_two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


def _verdict(row: Difference) -> Verdict:
    if row.adjusted_p is None or row.adjusted_p > FALSE_DISCOVERY_RATE or not row.difference:
        return "no evidence"
    if row.better is None:
        return "changed"
    went_down = row.difference < 0
    return "better" if went_down == (row.better == "lower") else "worse"


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


# --- per-trace columns over the pooled traces --------------------------------------------------


@dataclass(slots=True)
class _Column:
    """One metric of one scope over the pooled traces (baseline first, then candidate)."""

    tool: str | None
    name: str
    #: Carrying traces per side (what the row rests on).
    carriers: tuple[int, int]
    #: A ratio ``Σy / Σx``: per-trace numerators and denominators.
    y: np.ndarray | None = None
    x: np.ndarray | None = None
    #: A size percentile: the quantile, the distinct sizes, and one entry per (trace, size)
    #: sorted by size (``pos``: pooled trace, ``count``: messages, ``starts``: each size's
    #: first entry).
    q: float = 0.0
    sizes: tuple[np.ndarray, np.ndarray] = (np.empty(0), np.empty(0))
    values: np.ndarray = field(default_factory=lambda: np.empty(0))
    pos: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    count: np.ndarray = field(default_factory=lambda: np.empty(0))
    starts: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    def counts(self, weights: np.ndarray) -> np.ndarray:
        """Messages of each size under per-trace ``weights`` (rows × pooled traces)."""
        return np.add.reduceat(weights[:, self.pos] * self.count, self.starts, axis=1)


class _Pool:
    """The two sets' traces side by side: baseline at positions ``0 … n_b - 1``, candidate
    after (a trace in both sets is in both, as each set holds it). Each per-trace frame is
    pooled once with a ``pos`` column and split per tool, so a metric is one ``bincount``."""

    def __init__(self, baseline: TraceSet, candidate: TraceSet) -> None:
        self.sets = (baseline, candidate)
        self.sizes = (baseline.trace_count, candidate.trace_count)
        self.n = sum(self.sizes)
        self.offsets = (0, self.sizes[0])
        ids = [pd.Index(s.traces["trace_id"]) for s in self.sets]
        self.frames: dict[str, pd.DataFrame] = {}
        self.by_tool: dict[str, dict[str, pd.DataFrame]] = {}
        for attr in ("tools", "error_types", "findings", "sizes"):
            parts = [
                getattr(s, attr).assign(
                    pos=ids[i].get_indexer(getattr(s, attr)["trace_id"]) + self.offsets[i]
                )
                for i, s in enumerate(self.sets)
                if len(getattr(s, attr))
            ]
            frame = (
                pd.concat(parts, ignore_index=True)
                if parts
                else pd.DataFrame(columns=[*getattr(self.sets[0], attr).columns, "pos"])
            )
            self.frames[attr] = frame
            self.by_tool[attr] = {str(t): f for t, f in frame.groupby("tool")} if len(frame) else {}
        self.durations = np.concatenate([s.traces["duration_s"].to_numpy(float) for s in self.sets])

    def side(self, i: int) -> slice:
        return slice(self.offsets[i], self.offsets[i] + self.sizes[i])

    def frame(self, attr: str, tool: str | None) -> pd.DataFrame:
        if tool is None:
            return self.frames[attr]
        return self.by_tool[attr].get(tool, self.frames[attr].iloc[:0])

    def per_trace(self, frame: pd.DataFrame, column: str) -> np.ndarray:
        """``column`` summed per pooled trace (0 for traces without rows)."""
        if not len(frame):
            return np.zeros(self.n)
        return np.bincount(
            frame["pos"].to_numpy(np.int64), weights=frame[column].to_numpy(float), minlength=self.n
        )

    def touching(self, frame: pd.DataFrame) -> np.ndarray:
        """Whether each pooled trace has a row in ``frame``."""
        out = np.zeros(self.n, dtype=bool)
        out[frame["pos"].to_numpy(np.int64)] = True
        return out

    def carried(self, mask: np.ndarray) -> tuple[int, int]:
        return int(mask[self.side(0)].sum()), int(mask[self.side(1)].sum())


def _scope_columns(pool: _Pool, tool: str | None) -> Iterator[_Column]:
    """Every metric of one scope. An error type or finding kind one set lacks is 0 over that
    set's own traces (a kind can appear or vanish, and that counts)."""
    tools = pool.frame("tools", tool)
    touching = np.ones(pool.n, dtype=bool) if tool is None else pool.touching(tools)
    ones = np.ones(pool.n)

    def col(name: str) -> np.ndarray:
        return pool.per_trace(tools, name)

    def ratio(name: str, y: np.ndarray, x: np.ndarray, carriers: np.ndarray) -> _Column:
        return _Column(tool, name, pool.carried(carriers), y=y, x=x)

    def share(name: str, y: np.ndarray, x: np.ndarray) -> _Column:
        return ratio(name, y, x, x > 0)

    def anywhere(name: str) -> np.ndarray:
        return (col(name) > 0).astype(float)

    yield ratio("calls_per_trace", col("calls"), ones, touching)
    yield share("error_rate", col("errors"), col("results"))
    yield share("pairing_problem_rate", col("pairing_problems"), col("calls"))
    yield share("loop_rate", anywhere("loop_calls"), anywhere("calls"))
    yield share("error_streak_rate", anywhere("streak_calls"), anywhere("calls"))
    yield ratio("wasted_tokens_per_trace", col("wasted_tokens"), ones, touching)
    # What the Tool Messages add to the later model calls, over the traces whose every Tool
    # Message has the figure: one stored before it was derived has none, one of a model
    # without a price no cost. A trace with no Tool Message (of the tool) adds nothing.
    costed = touching & (col("uncosted") == 0)
    yield ratio("reread_tokens_per_trace", np.where(costed, col("reread_tokens"), 0.0),
                costed * 1.0, costed)  # fmt: skip
    priced = costed & (col("unpriced") == 0)
    dollars = np.where(priced, col("cost_nano_usd"), 0.0) / 1e9
    yield ratio("cost_per_trace", dollars, priced * 1.0, priced)
    yield share("suggestion_rate", col("suggestions"), col("results"))
    followed = col("followed")
    yield share("follow_rate", followed, followed + col("ignored"))
    yield from _size_columns(pool, pool.frame("sizes", tool), tool)
    if tool is None:
        # Durations are the traces' own (first to last message); a tool's share is unknown.
        known = ~np.isnan(pool.durations)
        yield share("duration_s", np.where(known, pool.durations, 0.0), known * 1.0)
    # Per trace, not per result: how often a run hits this error does not move when the run
    # makes more or fewer other calls (a loop that disappears would otherwise make an
    # unchanged error look more frequent).
    for attr, key, prefix in (
        ("error_types", "error_type", "error_type"),
        ("findings", "name", "finding"),
    ):
        frame = pool.frame(attr, tool)
        if len(frame):
            for kind, rows in frame.groupby(key):
                yield ratio(f"{prefix}:{kind}", pool.per_trace(rows, "n"), ones, touching)


def _size_columns(pool: _Pool, sizes: pd.DataFrame, tool: str | None) -> Iterator[_Column]:
    entries = sizes.groupby(["tokens", "pos"]).size().reset_index(name="count")
    pos = entries["pos"].to_numpy(np.int64)
    tokens = entries["tokens"].to_numpy(float)
    count = entries["count"].to_numpy(float)
    carrying = np.zeros(pool.n, dtype=bool)
    carrying[pos] = True
    values, starts = np.unique(tokens, return_index=True)
    in_candidate = pos >= pool.offsets[1]
    sorted_sizes = (
        np.repeat(tokens[~in_candidate], count[~in_candidate].astype(np.int64)),
        np.repeat(tokens[in_candidate], count[in_candidate].astype(np.int64)),
    )
    for name, q in PERCENTILES.items():
        yield _Column(
            tool, name, pool.carried(carrying), q=q, sizes=sorted_sizes, values=values,
            pos=pos, count=count, starts=starts.astype(np.int64),
        )  # fmt: skip


# --- values, resampling, verdicts --------------------------------------------------------------


def _values(pool: _Pool, c: _Column) -> tuple[float | None, float | None]:
    if c.y is None or c.x is None:
        return tuple(  # type: ignore[return-value]
            nearest_rank(s, c.q) if len(s) else None for s in c.sizes
        )
    out = []
    for i in (0, 1):
        x = float(c.x[pool.side(i)].sum())
        out.append(float(c.y[pool.side(i)].sum()) / x if x > 0 else None)
    return out[0], out[1]


def _blocks(total: int, width: int) -> Iterator[tuple[int, int]]:
    step = max(1, min(total, BLOCK // max(width, 1)))
    for start in range(0, total, step):
        yield start, min(step, total - start)


def _statistics(
    pool: _Pool,
    columns: list[_Column],
    draws: int,
    make: Callable[[int], tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """The difference of every column under ``draws`` weightings (``make(rows)`` gives the
    baseline's and the candidate's weights per pooled trace): ``draws`` × columns."""
    pairs = [(i, c.y, c.x) for i, c in enumerate(columns) if c.y is not None and c.x is not None]
    ratios = [i for i, _, _ in pairs]
    y = np.zeros((pool.n, len(pairs)))
    x = np.zeros((pool.n, len(pairs)))
    for j, (_, numerator, denominator) in enumerate(pairs):
        y[:, j], x[:, j] = numerator, denominator
    widest = max([pool.n, *(len(c.pos) for c in columns)])
    out = np.empty((draws, len(columns)))
    for start, rows in _blocks(draws, widest):
        wb, wc = make(rows)
        if ratios:
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start : start + rows, ratios] = (wc @ y) / (wc @ x) - (wb @ y) / (wb @ x)
        counted: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # p50 and p95 share counts
        for i, c in enumerate(columns):
            if c.y is None:
                if id(c.pos) not in counted:
                    counted[id(c.pos)] = (c.counts(wb), c.counts(wc))
                cb, cc = counted[id(c.pos)]
                out[start : start + rows, i] = grouped_quantile(
                    cc, c.values, c.q
                ) - grouped_quantile(cb, c.values, c.q)
    return out


def _p_value(pool: _Pool, c: _Column, observed: float, permuted: np.ndarray) -> float:
    tolerance = 1e-9 * max(1.0, abs(observed))
    extreme = int((np.isnan(permuted) | (np.abs(permuted) >= abs(observed) - tolerance)).sum())
    if extreme:
        return (1 + extreme) / (1 + len(permuted))
    spread = float(np.nanstd(permuted))
    tail = _normal_two_sided(observed / spread) if spread > 0 else 0.0
    floor = split_probability(pool.n, pool.sizes[1], sum(c.carriers), c.carriers[1])
    return min(1 / (1 + len(permuted)), max(tail, floor))


def _interval(
    pool: _Pool, c: _Column, difference: float, boot: np.ndarray
) -> tuple[float | None, float | None]:
    if c.name in RATES and c.y is not None and c.x is not None:
        b, s = pool.side(0), pool.side(1)
        rates = [float(c.y[side].sum() / c.x[side].sum()) for side in (b, s)]
        sizes = [effective_size(c.y[side], c.x[side]) for side in (b, s)]
        return newcombe(rates[0], sizes[0], rates[1], sizes[1])
    finite = boot[~np.isnan(boot)]
    if not len(finite):
        return None, None
    low, high = np.percentile(finite, [2.5, 97.5])
    return min(float(low), difference), max(float(high), difference)


def _resample(
    pool: _Pool, columns: list[_Column], observed: list[float], seed: int
) -> tuple[list[float], list[tuple[float | None, float | None]]]:
    """Permutation p-values and intervals of ``columns`` (every one carried by enough traces
    on both sides)."""
    rng = np.random.default_rng(seed)
    labels = np.zeros(pool.n)
    labels[pool.side(1)] = 1.0

    def relabel(rows: int) -> tuple[np.ndarray, np.ndarray]:
        candidate = rng.permuted(np.tile(labels, (rows, 1)), axis=1)
        return 1.0 - candidate, candidate

    def poisson(rows: int) -> tuple[np.ndarray, np.ndarray]:
        weights = rng.poisson(1.0, (rows, pool.n)).astype(float)
        only_b, only_c = weights.copy(), weights
        only_b[:, pool.side(1)] = 0.0
        only_c[:, pool.side(0)] = 0.0
        return only_b, only_c

    permuted = _statistics(pool, columns, PERMUTATIONS, relabel)
    boot = _statistics(pool, columns, BOOTSTRAP, poisson)
    # The observed statistic as the permutations measure it (grouped quantiles for sizes).
    actual = _statistics(pool, columns, 1, lambda rows: (1.0 - labels[None, :], labels[None, :]))[0]
    p_values = [_p_value(pool, c, float(actual[i]), permuted[:, i]) for i, c in enumerate(columns)]
    intervals = [_interval(pool, c, observed[i], boot[:, i]) for i, c in enumerate(columns)]
    return p_values, intervals


def _diff_lists(base: pd.DataFrame, cand: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if cand.empty:
        return cand
    known = set(map(tuple, base[keys].to_numpy().tolist())) if not base.empty else set()
    keep = [tuple(row) not in known for row in cand[keys].to_numpy().tolist()]
    return cand[keep].sort_values(["n", *keys], ascending=[False] + [True] * len(keys))


def compare(baseline: TraceSet, candidate: TraceSet, seed: int = SEED) -> Comparison:
    """Compare two trace sets: every metric overall and for each tool both sets call, BH
    across all of them, plus the fingerprints, tools and schema issues only one set has."""
    base_tools = set(baseline.tools["tool"]) if not baseline.tools.empty else set()
    cand_tools = set(candidate.tools["tool"]) if not candidate.tools.empty else set()
    pool = _Pool(baseline, candidate)
    columns: list[_Column] = []
    for tool in [None, *sorted(base_tools & cand_tools)]:
        columns.extend(sorted(_scope_columns(pool, tool), key=lambda c: _order(c.name)))
    rows: list[Difference] = []
    tested: list[int] = []
    for i, c in enumerate(columns):
        spec = metric_spec(c.name)
        base, cand = _values(pool, c)
        row = Difference(
            c.tool, c.name, spec.label, spec.better, base, cand, c.carriers[0], c.carriers[1],
            difference=None if base is None or cand is None else cand - base,
        )  # fmt: skip
        if min(c.carriers) < MIN_TRACES or row.difference is None:
            row = replace(row, verdict="too few traces")
        else:
            tested.append(i)
        rows.append(row)
    if tested:
        p_values, intervals = _resample(
            pool, [columns[i] for i in tested], [rows[i].difference or 0.0 for i in tested], seed
        )
        adjusted = benjamini_hochberg(p_values)
        for i, p, q, (low, high) in zip(tested, p_values, adjusted, intervals, strict=True):
            rows[i] = replace(rows[i], low=low, high=high, p_value=p, adjusted_p=q)
            rows[i] = replace(rows[i], verdict=_verdict(rows[i]))
    notes = [
        f"the {side} holds {counted(s.trace_count, 'trace')}, fewer than {MIN_TRACES}: nothing "
        "can be inferred"
        for side, s in (("baseline", baseline), ("candidate", candidate))
        if s.trace_count < MIN_TRACES
    ]
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
