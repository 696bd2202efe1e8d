"""The catalogue of figures: every dimension, condition and measure the pages count, declared once
with its base-table form and its rollup form.

A page asks :func:`db.figures.read` for measures of one :class:`Source`, grouped by some of its
:class:`Dimension` values, where some :class:`Condition` holds, under the sidebar's filters. The
compiler (``db.figures``) picks the form: the rollup's when ``db.rollups.read.scope`` says the
rollups hold the filtered data, else the base table's, with the dialect's planner steering.
Nothing here runs a query or knows which form will be read.

Each form of an entry is an expression over its own table: ``base`` over the rows the import
writes (``tool_results``, ``tool_calls`` …), ``rollup`` over the rollup rows (``rollup_results``
…). Both must give the same figure for every filter the rollups answer; the rollup exactness test
(``tests/test_rollups.py``) compares every measure of every source, by every dimension, over a
grid of filters, on both databases.

The rollup upkeep reads the same declarations: a source's :attr:`Source.keys` are the columns its
rollup is counted by, with the base expression each holds (``db.rollups.upkeep`` groups a trace's
rows by them), so a dimension read from the rollup is the expression the upkeep stored.

Adding a figure: a :class:`Measure` (or a :class:`Dimension`) here, then one
:func:`db.figures.read` call and its chart (``docs/architecture.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    and_,
    case,
    false,
    func,
    literal,
    or_,
    select,
    true,
)

from db import schema
from db.contract.vocabulary import PAIR_STATES, STATUSES
from db.queries.common import (
    COUNTED_FINDING,
    TRACE,
    UNCLASSIFIED,
    corrected_result,
    effective_error_type,
    effective_verdict,
    error_type_label,
    input_share_bin,
    next_call_outcome,
    total,
    unpaired_result,
)
from db.queries.filters import (
    Filters,
    restrict_calls,
    restrict_findings,
    restrict_results,
    restrict_traces,
)
from db.queries.planner import grouping_key, restrict_calls_in_index, restrict_results_in_index
from db.queries.time_buckets import BucketUnit, bucket_number, bucket_of, result_time, whole

if TYPE_CHECKING:
    import pandas as pd

Restrict = Callable[[Any, Filters], Any]


def _table(model: Any) -> Table:
    table: Table = model.__table__
    return table


@dataclass(frozen=True, slots=True, eq=False)
class Source:
    """A family of figures: the base rows they count and the rollup that counts them.

    ``restrict`` applies the sidebar's filters to a base statement; ``restrict_in_index`` does
    the same for a statement that reads a small indexed subset of the rows (``db.queries.planner``).
    ``where`` holds on every base row the source counts (its rollup holds only those rows).
    """

    name: str
    #: The base table the statements read.
    base: Any
    #: The rollup table (``db.rollups.ROLLUPS``) and its count column.
    rollup: Table
    restrict: Restrict
    restrict_in_index: Restrict
    where: tuple[Any, ...] = ()
    #: Every read of the source is of an indexed subset (``where`` selects one).
    indexed: bool = False
    #: The rollup has rows for every trace (``tool`` NULL) besides the per-tool rows
    #: (``db.rollups.read.scope``'s ``tool="all"``).
    every_trace_row: bool = False
    #: The rollup's key columns (after ``tool``) and the base expression each holds: what the
    #: upkeep groups a trace's rows by (``db.rollups.upkeep``).
    keys: dict[str, Any] = field(default_factory=dict)
    #: Other rollups that hold the same figures, tried after :attr:`rollup` (one still being
    #: counted, or one that keeps a dimension coarser than asked): forms that differ between
    #: them are :class:`PerRollup`.
    also: tuple[Table, ...] = ()
    #: Conditions on every rollup row read (the rollup's counterpart of :attr:`where`).
    rollup_where: tuple[Any, ...] = ()
    #: The base rows are a derived table built under the filters (which it applies itself),
    #: not :attr:`base` restricted: its forms are the names of its columns.
    rows: Callable[[Filters], Any] | None = None

    @property
    def rollups(self) -> tuple[Table, ...]:
        """The rollups that may answer, in the order they are tried."""
        return (self.rollup, *self.also)


@dataclass(frozen=True, slots=True)
class PerRollup:
    """A rollup form that differs between the rollups of a source (:attr:`Source.also`): the
    form on each, by table name. A rollup without one cannot answer a request that needs it."""

    forms: dict[str, Any]

    def on(self, table: Table) -> Any:
        """The form on ``table`` (``None``: it has none)."""
        return self.forms.get(table.name)


@dataclass(frozen=True, slots=True)
class Coarse:
    """A dimension's rollup form finer than the value asked (hours for days or weeks): the
    rollup's value and the function mapping it to the asked one. The compiler groups by the
    rollup's value, then sums each asked value's rows (additive measures only)."""

    value: Any
    to: Callable[[int], int]


def on(form: Any, table: Table) -> Any:
    """A rollup ``form`` as it reads ``table`` (a :class:`PerRollup` picks that table's)."""
    return form.on(table) if isinstance(form, PerRollup) else form


@dataclass(frozen=True, slots=True, eq=False)
class Dimension:
    """A value figures are grouped by (``rollup`` ``None``: one the rollup does not keep, read
    from the base tables)."""

    name: str
    source: Source
    base: Any
    rollup: Any
    #: A plain indexed column: grouped over an indexed subset, SQLite would walk its index and
    #: fetch every row, so the base form is :func:`db.queries.planner.grouping_key` there.
    steer: bool = False
    #: The few values analysis writes: under a trace filter the base form counts them in one
    #: pass without GROUP BY (``db.queries.planner.one_pass_counts``).
    values: tuple[Any, ...] | None = None
    #: The rollup keeps the value only on the rows where this condition holds (the rule that
    #: decided an error): the dimension is read under it.
    within: Condition | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Condition:
    """A condition on the rows a figure counts."""

    name: str
    source: Source
    base: ColumnElement[bool]
    #: ``None``: the rollup does not keep it (a request under it reads the base tables; a
    #: measure counted under it gives its own rollup form).
    rollup: Any
    #: The rows it selects are a small subset with an index of its own (errors, verdicts,
    #: advice, corrections, loops): the filters are tested in that index (``db.queries.planner``).
    indexed: bool = False

    def __and__(self, other: Condition) -> Condition:
        return Condition(
            f"{self.name} & {other.name}",
            self.source,
            and_(self.base, other.base),
            _both(self.rollup, other.rollup),
            self.indexed or other.indexed,
        )


def _both(a: Any, b: Any) -> Any:
    """The rollup form where rollup forms ``a`` and ``b`` both hold (``None``: one is not kept;
    per rollup where either differs between them)."""
    if a is None or b is None:
        return None
    if isinstance(a, PerRollup) or isinstance(b, PerRollup):
        tables = {*(a.forms if isinstance(a, PerRollup) else ())}
        tables |= {*(b.forms if isinstance(b, PerRollup) else ())}
        forms = {}
        for name in tables:
            x = a.forms.get(name) if isinstance(a, PerRollup) else a
            y = b.forms.get(name) if isinstance(b, PerRollup) else b
            forms[name] = None if x is None or y is None else and_(x, y)
        return PerRollup(forms)
    return and_(a, b)


Aggregate = Literal["count", "sum", "min", "max", "distinct"]


@dataclass(frozen=True, slots=True, eq=False)
class Measure:
    """A figure summed over the rows: ``count`` of rows (where ``when`` holds), or an
    aggregate of a value.

    The rollup form of a count sums the rollup's count column; ``rollup`` overrides the rollup
    aggregate where the rollup keeps a figure of its own (distinct traces, a sum it stores): a
    function of the request's filters (the column may depend on them) to the aggregate.
    """

    name: str
    source: Source
    aggregate: Aggregate = "count"
    #: ``(base, rollup)`` expressions of the aggregated value (not for ``count``).
    value: tuple[Any, Any] | None = None
    when: Condition | None = None
    rollup: Callable[[Filters], Any] | None = None
    #: The rollup form is exact only grouped by this dimension (a count of distinct traces that
    #: the rollup keeps per value of it).
    needs: Dimension | None = None
    #: The rollup form reads another source's rollup (as one value over its rows for the
    #: filters, where :attr:`apart_where` holds): ``rollup`` gives the aggregate over it.
    #: Read ungrouped only.
    apart: Source | None = None
    apart_where: tuple[Any, ...] = ()

    def named(self, name: str) -> Measure:
        """The measure under another column name."""
        return replace(self, name=name)


def lowest(dimension: Dimension, name: str | None = None) -> Measure:
    """The smallest value of ``dimension`` among the rows."""
    return Measure(
        name or dimension.name, dimension.source, "min", (dimension.base, dimension.rollup)
    )


def highest(dimension: Dimension, name: str | None = None) -> Measure:
    """The largest value of ``dimension`` among the rows."""
    return Measure(
        name or dimension.name, dimension.source, "max", (dimension.base, dimension.rollup)
    )


# --- Tool Messages ----------------------------------------------------------------------------

r, rr = schema.ToolResultRow, schema.RollupResultRow
_error = r.status == "error"


def _timing() -> Any:
    """How a Tool Message's execution time is known (``db.queries.durations``): ``span`` or
    ``timed`` (a duration ≥ 0 from a span, or from timestamps), ``negative``, ``missing``."""
    return case(
        (r.duration_ms.is_(None), "missing"),
        (r.duration_ms < 0, "negative"),
        (r.duration_source == "span", "span"),
        else_="timed",
    )


RESULTS = Source(
    "results",
    base=schema.ToolResultRow,
    rollup=_table(schema.RollupResultRow),
    restrict=restrict_results,
    restrict_in_index=restrict_results_in_index,
    keys={
        "status": r.status,
        "status_source": r.status_source,
        "rule": case((_error, r.rule)),
        "error_type": effective_error_type,
        "verdict": effective_verdict,
        "suggested": r.suggestion.is_not(None),
        "pair_state": r.pair_state,
        "unanswered": r.call_seq.is_(None),
        "name_mismatch": func.coalesce(r.name_mismatch, false()),
        "corrected": corrected_result,
        "timing": _timing(),
        "next_call": case((_error, next_call_outcome)),
        "suggestion_kind": r.suggestion_kind,
    },
)
#: What each Tool Message adds to the results rollup's sums (``db.rollups.upkeep``).
RESULT_SUMS: dict[str, Any] = {
    "n": func.count(),
    "tokens": func.sum(r.tokens),
    "with_images": func.count().filter(r.image_tokens > 0),
    "image_tokens": func.coalesce(func.sum(r.image_tokens), 0),
    "later_calls": func.coalesce(total(r.later_calls), 0),
    "reread_tokens": func.coalesce(total(r.reread_tokens), 0),
    "reread_cached": func.coalesce(total(r.reread_cached), 0),
    "cost_nano_usd": func.coalesce(total(r.cost_nano_usd), 0),
    "priced": func.count().filter(r.cost_nano_usd.is_not(None)),
    "measured": func.count().filter(r.reread_measured.is_(True)),
}

TOOL = Dimension("tool", RESULTS, r.tool, rr.tool, steer=True)
#: The effective error type (a reviewer's correction wins), NULL where none.
ERROR_TYPE = Dimension("error_type", RESULTS, effective_error_type, rr.error_type)
#: The effective error type, :data:`db.queries.common.UNCLASSIFIED` where none.
ERROR_TYPE_LABEL = Dimension(
    "error_type",
    RESULTS,
    func.coalesce(effective_error_type, literal(UNCLASSIFIED)),
    func.coalesce(rr.error_type, literal(UNCLASSIFIED)),
)
VERDICT = Dimension("verdict", RESULTS, effective_verdict, rr.verdict)
STATUS_SOURCE = Dimension("status_source", RESULTS, r.status_source, rr.status_source)
#: The kind of the advice, ``none_label`` where none (:func:`suggestion_kind`).
SUGGESTION_KIND = Dimension("suggestion_kind", RESULTS, r.suggestion_kind, rr.suggestion_kind)


def suggestion_kind(none_label: str) -> Dimension:
    """The kind of a Tool Message's advice, ``none_label`` where it has none."""
    return Dimension(
        "suggestion_kind",
        RESULTS,
        func.coalesce(r.suggestion_kind, literal(none_label)),
        func.coalesce(rr.suggestion_kind, literal(none_label)),
    )


def error_type(none_label: str) -> Dimension:
    """The effective error type, ``none_label`` where there is none."""
    return Dimension(
        "error_type",
        RESULTS,
        func.coalesce(effective_error_type, literal(none_label)),
        func.coalesce(rr.error_type, literal(none_label)),
    )


IS_ERROR = Condition("error", RESULTS, _error, rr.status == "error", indexed=True)
#: The rule that decided an error, ``(none)`` where none did (read among errors).
RULE = Dimension(
    "rule",
    RESULTS,
    func.coalesce(r.rule, literal("(none)")),
    func.coalesce(rr.rule, literal("(none)")),
    within=IS_ERROR,
)
#: The next call's outcome after an error (``db.queries.common.next_call_outcome``).
NEXT_CALL = Dimension("next_call", RESULTS, next_call_outcome, rr.next_call, within=IS_ERROR)
ADVISED = Condition(
    "advised", RESULTS, r.suggestion.is_not(None), rr.suggested.is_(True), indexed=True
)
HAS_VERDICT = Condition(
    "has verdict", RESULTS, effective_verdict.is_not(None), rr.verdict.is_not(None), indexed=True
)
DECIDED = Condition(
    "decided",
    RESULTS,
    effective_verdict.in_(("followed", "ignored")),
    rr.verdict.in_(("followed", "ignored")),
    indexed=True,
)
CORRECTED = Condition("corrected", RESULTS, corrected_result, rr.corrected.is_(True), indexed=True)
HAS_ERROR_TYPE = Condition(
    "typed", RESULTS, effective_error_type.is_not(None), rr.error_type.is_not(None)
)


def _status(value: str) -> Condition:
    return Condition(f"status {value}", RESULTS, r.status == value, rr.status == value)


def _verdict(value: str) -> Condition:
    return Condition(
        f"verdict {value}", RESULTS, effective_verdict == value, rr.verdict == value, indexed=True
    )


RESULTS_N = Measure("results", RESULTS)
ERRORS = Measure("errors", RESULTS, when=IS_ERROR)
FOLLOWED = Measure("followed", RESULTS, when=_verdict("followed"))
IGNORED = Measure("ignored", RESULTS, when=_verdict("ignored"))


def verdict_count(verdict: str) -> Measure:
    """Tool Messages whose effective verdict is ``verdict``."""
    return Measure(verdict, RESULTS, when=_verdict(verdict))


def status_count(status: str) -> Measure:
    """Tool Messages of ``status``, as the summary names them (``status_<status>``)."""
    return Measure(f"status_{status}", RESULTS, when=_status(status))


#: Results that are not some call's answer, by why (the summary's pair states of results).
UNPAIRED: tuple[Measure, ...] = (
    Measure(
        "unpaired_orphan_result",
        RESULTS,
        when=Condition(
            "orphan", RESULTS, r.pair_state == "orphan_result", rr.pair_state == "orphan_result"
        ),
    ),
    Measure(
        "unpaired_duplicate_result",
        RESULTS,
        when=Condition(
            "duplicate",
            RESULTS,
            r.pair_state == "duplicate_result",
            rr.pair_state == "duplicate_result",
        ),
    ),
    Measure(
        "unpaired_result_before_call",
        RESULTS,
        when=Condition(
            "early",
            RESULTS,
            (r.pair_state == "result_before_call") & r.call_seq.is_(None),
            (rr.pair_state == "result_before_call") & rr.unanswered.is_(True),
        ),
    ),
)
#: What the Tool Messages add to the model calls after them (``ingest.analysis.costs``): their own
#: tokens (the first read), the calls that read them, the tokens of the reads after the first,
#: of them cached reads, every read priced (nanodollars), and how many results have a price and
#: how many were measured from the calls' usage (the others are estimates).
TOKENS_ADDED = Measure("tokens_added", RESULTS, "sum", (r.tokens, rr.tokens))
LATER_CALLS = Measure(
    "later_calls", RESULTS, "sum", (func.coalesce(r.later_calls, 0), rr.later_calls)
)
REREAD_TOKENS = Measure(
    "reread_tokens", RESULTS, "sum", (func.coalesce(r.reread_tokens, 0), rr.reread_tokens)
)
REREAD_CACHED = Measure(
    "reread_cached", RESULTS, "sum", (func.coalesce(r.reread_cached, 0), rr.reread_cached)
)
COST = Measure(
    "cost_nano_usd", RESULTS, "sum", (func.coalesce(r.cost_nano_usd, 0), rr.cost_nano_usd)
)
PRICED = Measure(
    "priced", RESULTS, "sum", (case((r.cost_nano_usd.is_not(None), 1), else_=0), rr.priced)
)
MEASURED = Measure(
    "measured", RESULTS, "sum", (case((r.reread_measured.is_(True), 1), else_=0), rr.measured)
)


def in_trace(trace_id: int) -> Condition:
    """The rows of one trace (read from the base tables: the rollups keep no trace)."""
    return Condition(f"trace {trace_id}", RESULTS, r.trace_id == trace_id, None)


COST_MEASURES: tuple[Measure, ...] = (
    TOKENS_ADDED,
    LATER_CALLS,
    REREAD_TOKENS,
    REREAD_CACHED,
    COST,
    PRICED,
    MEASURED,
)

NAME_MISMATCHES = Measure(
    "name_mismatch",
    RESULTS,
    when=Condition("name mismatch", RESULTS, r.name_mismatch.is_(True), rr.name_mismatch.is_(True)),
)

#: Tool Messages no call shows as its answer (an orphan, a duplicate, one before its call).
LONE_RESULT = Condition(
    "lone",
    RESULTS,
    unpaired_result,
    or_(rr.pair_state.in_(("orphan_result", "duplicate_result")), rr.unanswered.is_(True)),
)


def result_pair_state(state: str) -> Condition:
    """Tool Messages of pair state ``state``."""
    return Condition(f"pair state {state}", RESULTS, r.pair_state == state, rr.pair_state == state)


#: Tool Messages carrying images (the rollup keeps their count and tokens, not the condition).
HAS_IMAGES = Condition("images", RESULTS, r.image_tokens > 0, None)
WITH_IMAGES = Measure("results", RESULTS, when=HAS_IMAGES, rollup=lambda _f: total(rr.with_images))
IMAGE_TOKENS = Measure(
    "image_tokens",
    RESULTS,
    "sum",
    (r.image_tokens, rr.image_tokens),
    when=HAS_IMAGES,
    rollup=lambda _f: total(rr.image_tokens),
)


# --- Token sizes ------------------------------------------------------------------------------

sr = schema.RollupSizeRow

#: Tool Messages by their token count (the rollup keeps one row per distinct count and tool).
SIZES = Source(
    "sizes",
    base=schema.ToolResultRow,
    rollup=_table(schema.RollupSizeRow),
    restrict=restrict_results,
    restrict_in_index=restrict_results_in_index,
    keys={"tokens": r.tokens},
)
SIZE_TOOL = Dimension("tool", SIZES, r.tool, sr.tool, steer=True)
SIZE_RESULTS = Measure("results", SIZES)


def over_budget(budget: int) -> Measure:
    """Tool Messages of more than ``budget`` tokens."""
    above = Condition(f"tokens > {budget}", SIZES, r.tokens > budget, sr.tokens > budget)
    return Measure("over", SIZES, when=above)


# --- Input shares -----------------------------------------------------------------------------

rs = schema.RollupInputShareRow

#: Tool Messages whose trace reported the input tokens of the model call that read them.
INPUT_SHARES = Source(
    "input_shares",
    base=schema.ToolResultRow,
    rollup=_table(schema.RollupInputShareRow),
    restrict=restrict_results,
    restrict_in_index=restrict_results_in_index,
    where=(r.read_input_tokens > 0,),
    keys={"bin": input_share_bin()},
)
#: The :data:`db.queries.common.INPUT_SHARE_BINS` index of the share of that input.
INPUT_SHARE = Dimension("bin", INPUT_SHARES, input_share_bin(), rs.bin)
INPUT_SHARE_TOOL = Dimension("tool", INPUT_SHARES, r.tool, rs.tool, steer=True)
INPUT_SHARE_RESULTS = Measure("results", INPUT_SHARES)


# --- Tool calls -------------------------------------------------------------------------------

c, cr = schema.ToolCallRow, schema.RollupCallRow

CALLS = Source(
    "calls",
    base=schema.ToolCallRow,
    rollup=_table(schema.RollupCallRow),
    restrict=restrict_calls,
    restrict_in_index=restrict_calls_in_index,
    keys={
        "occurrence": c.occurrence,
        "pair_state": c.pair_state,
        "reused_id": func.coalesce(c.reused_id, false()),
        "ping_pong": func.coalesce(c.ping_pong, false()),
    },
)
CALL_TOOL = Dimension("tool", CALLS, c.tool_name, cr.tool, steer=True)
CALL_PAIR_STATE = Dimension("pair_state", CALLS, c.pair_state, cr.pair_state, values=PAIR_STATES)
CALLS_N = Measure("calls", CALLS)


def capped_occurrence(cap: int) -> Dimension:
    """A call's occurrence (1st, 2nd … time its signature appears in its trace), ``cap`` for
    every occurrence from ``cap`` on."""
    return Dimension(
        "occurrence",
        CALLS,
        case((c.occurrence >= cap, cap), else_=c.occurrence),
        case((cr.occurrence >= cap, cap), else_=cr.occurrence),
        values=tuple(range(1, cap + 1)),
    )


def call_pair_state(state: str) -> Condition:
    """Calls of pair state ``state``."""
    return Condition(f"pair state {state}", CALLS, c.pair_state == state, cr.pair_state == state)


#: Calls in an A-B-A-B ping-pong (the predicate of their partial index).
PING_PONG = Condition(
    "ping-pong", CALLS, c.ping_pong == true(), cr.ping_pong.is_(True), indexed=True
)
PING_PONG_CALLS = Measure("calls", CALLS, when=PING_PONG)

REUSED_IDS = Measure(
    "reused_id",
    CALLS,
    when=Condition("reused id", CALLS, c.reused_id.is_(True), cr.reused_id.is_(True)),
)


def late_calls(k: int) -> Condition:
    """Calls at occurrence ``k`` or later of their signature in their trace (the loops at
    ``k``: ``db.queries.summary.loop_counts``), off the occurrence index."""
    return Condition(
        f"occurrence >= {k}", CALLS, c.occurrence >= k, cr.occurrence >= k, indexed=True
    )


def loop_signatures(k: int) -> Measure:
    """Signatures that reach occurrence ``k`` in their trace: one call each is the ``k``-th."""
    at_k = Condition(f"occurrence {k}", CALLS, c.occurrence == k, cr.occurrence == k)
    return Measure("signatures", CALLS, when=at_k)


def late_call_count(k: int) -> Measure:
    """Calls at occurrence ``k`` or later."""
    return Measure("late", CALLS, when=late_calls(k))


# --- Error fingerprints -----------------------------------------------------------------------

fp = schema.RollupFingerprintRow

FINGERPRINTS = Source(
    "fingerprints",
    base=schema.ToolResultRow,
    rollup=_table(schema.RollupFingerprintRow),
    restrict=restrict_results_in_index,
    restrict_in_index=restrict_results_in_index,
    where=(_error, r.fingerprint.is_not(None)),
    indexed=True,
)
FINGERPRINT = Dimension("fingerprint", FINGERPRINTS, r.fingerprint, fp.fingerprint)
FINGERPRINT_TOOL = Dimension("tool", FINGERPRINTS, r.tool, fp.tool)
FINGERPRINT_ERROR_TYPE = Dimension(
    "error_type",
    FINGERPRINTS,
    func.coalesce(effective_error_type, literal(UNCLASSIFIED)),
    func.coalesce(fp.error_type, literal(UNCLASSIFIED)),
)
FINGERPRINT_ERRORS = Measure("errors", FINGERPRINTS)
#: Traces with the fingerprint (the rollup counts each trace once per fingerprint).
FINGERPRINT_TRACES = Measure(
    "traces",
    FINGERPRINTS,
    "distinct",
    (r.trace_id, None),
    rollup=lambda _f: total(fp.traces),
    needs=FINGERPRINT,
)
#: Distinct fingerprints among the errors.
FINGERPRINT_COUNT = Measure(
    "fingerprints",
    FINGERPRINTS,
    "distinct",
    (r.fingerprint, None),
    rollup=lambda _f: func.count(fp.fingerprint.distinct()),
)


# --- Findings ---------------------------------------------------------------------------------

fr = schema.RollupFindingRow

FINDINGS = Source(
    "findings",
    base=schema.FindingRow,
    rollup=_table(schema.RollupFindingRow),
    restrict=restrict_findings,
    restrict_in_index=restrict_findings,
    where=(COUNTED_FINDING,),
    indexed=True,
)
FINDING_TOOL = Dimension("tool", FINDINGS, schema.FindingRow.tool, fr.tool, steer=True)
FINDING_KIND = Dimension("kind", FINDINGS, schema.FindingRow.name, fr.kind)
FINDINGS_N = Measure("n", FINDINGS)
ON_A_TOOL = Condition(
    "on a tool", FINDINGS, schema.FindingRow.tool.is_not(None), fr.tool.is_not(None)
)
#: Traces with the kind: the rollup counts each trace once per kind (on its first tool), and
#: once per tool and kind (read under a tool filter). Read by kind alone.
FINDING_TRACES = Measure(
    "traces",
    FINDINGS,
    "distinct",
    (schema.FindingRow.trace_id, None),
    rollup=lambda f: total(fr.traces_tool if f.tool else fr.traces_kind),
    needs=FINDING_KIND,
)
#: Tools with a finding.
FINDING_TOOLS = Measure("tools", FINDINGS, "distinct", (schema.FindingRow.tool, fr.tool))


def finding_kind(kind: str) -> Condition:
    """Findings of ``kind``."""
    return Condition(f"kind {kind}", FINDINGS, schema.FindingRow.name == kind, fr.kind == kind)


# --- Traces -----------------------------------------------------------------------------------

tr = schema.RollupTraceRow

TRACES = Source(
    "traces",
    base=schema.TraceRow,
    rollup=_table(schema.RollupTraceRow),
    restrict=restrict_traces,
    restrict_in_index=restrict_traces,
    every_trace_row=True,
)
TRACES_N = Measure("traces", TRACES, "count", rollup=lambda _f: func.sum(tr.n))
TOTAL_TOKENS = Measure(
    "total_tokens", TRACES, "sum", (schema.TraceRow.total_tokens, tr.total_tokens)
)
TOOL_RESULT_TOKENS = Measure(
    "tool_result_tokens", TRACES, "sum", (schema.TraceRow.tool_result_tokens, tr.tool_result_tokens)
)
#: How a trace's tokens were counted (``exact``, ``estimate``).
TOKEN_COUNT_KIND = Dimension("token_counts", TRACES, schema.TraceRow.token_counts, tr.token_counts)
#: Traces that report tokens (the rollup's share bin is NULL for the others).
HAS_TOKENS = Condition(
    "tokens", TRACES, schema.TraceRow.total_tokens > 0, tr.share_bin.is_not(None)
)


def share_bin(bins: int) -> Dimension:
    """A trace's share of its tokens spent on tool results, in ``bins`` bins (a share of 1.0,
    or an inconsistent count above it, in the last): read under :data:`HAS_TOKENS`. The
    rollup keeps tenths."""
    raw = (schema.TraceRow.tool_result_tokens * bins) // schema.TraceRow.total_tokens
    return Dimension(
        "bin",
        TRACES,
        case((raw >= bins, bins - 1), else_=raw),
        tr.share_bin if bins == 10 else None,
        within=HAS_TOKENS,
    )


MESSAGES = Measure(
    "messages",
    TRACES,
    "sum",
    (schema.TraceRow.message_count, tr.messages),
    rollup=lambda _f: func.sum(tr.messages),
)


# --- Activity over time -----------------------------------------------------------------------

ah, ad = schema.RollupActivityRow, schema.RollupActivityDayRow
_HOURS, _DAYS = _table(schema.RollupActivityRow), _table(schema.RollupActivityDayRow)


def _per_activity(hours: Any, days: Any) -> PerRollup:
    return PerRollup({_HOURS.name: hours, _DAYS.name: days})


#: Tool Messages on the time axis (``db.queries.time_buckets``): counted per hour, and per day
#: (derived from the hours) where that rollup is counted.
ACTIVITY = Source(
    "activity",
    base=_table(schema.ToolResultRow).join(TRACE, TRACE.id == r.trace_id),
    rollup=_DAYS,
    also=(_HOURS,),
    restrict=restrict_results,
    restrict_in_index=restrict_results,
    where=(result_time().is_not(None),),
    rollup_where=(_per_activity(ah.hour.is_not(None), ad.result_day.is_not(None)),),
)
ACTIVITY_RESULTS = Measure("results", ACTIVITY)
ACTIVITY_ERROR = Condition(
    "error", ACTIVITY, _error, _per_activity(ah.error.is_(True), ad.error.is_(True))
)
ACTIVITY_ERRORS = Measure("errors", ACTIVITY, when=ACTIVITY_ERROR)
ACTIVITY_TOKENS = Measure(
    "tokens", ACTIVITY, "sum", (r.tokens, _per_activity(ah.tokens, ad.tokens))
)
#: The effective error type, :data:`db.queries.common.UNCLASSIFIED` where none (the rollups
#: keep it on errors).
ACTIVITY_ERROR_TYPE = Dimension(
    "error_type",
    ACTIVITY,
    error_type_label(),
    _per_activity(
        func.coalesce(ah.error_type, literal(UNCLASSIFIED)),
        func.coalesce(ad.error_type, literal(UNCLASSIFIED)),
    ),
    within=ACTIVITY_ERROR,
)
#: The hour of a Tool Message's time (whole hours since the epoch), kept by the hours alone.
ACTIVITY_HOUR = Dimension("hour", ACTIVITY, whole(3600), _per_activity(ah.hour, None))
#: The day of a Tool Message's time (whole days since the epoch), kept by the days alone.
ACTIVITY_DAY = Dimension("day", ACTIVITY, whole(86_400), _per_activity(None, ad.result_day))


def time_bucket(unit: BucketUnit) -> Dimension:
    """The bucket of ``unit`` a Tool Message falls in (``db.queries.time_buckets``): summed from
    the days for days and weeks, from the hours for hours (and for days while the days are
    counted), from the base tables for minutes."""
    day_grain = unit in ("day", "week")
    return Dimension(
        "bucket",
        ACTIVITY,
        bucket_number(unit),
        _per_activity(
            None if unit == "minute" else Coarse(ah.hour, bucket_of(3600, unit)),
            Coarse(ad.result_day, bucket_of(86_400, unit)) if day_grain else None,
        ),
    )


# --- Histograms and quantiles -----------------------------------------------------------------

#: Timed Tool Messages (a known duration ≥ 0, ``db.queries.durations``), per exact duration.
DURATIONS = Source(
    "durations",
    base=schema.ToolResultRow,
    rollup=_table(schema.RollupDurationRow),
    restrict=restrict_results,
    restrict_in_index=restrict_results_in_index,
    where=(r.duration_ms >= 0,),
    keys={"duration_ms": r.duration_ms},
)
DURATION_TOOL = Dimension("tool", DURATIONS, r.tool, schema.RollupDurationRow.tool, steer=True)
DURATION = Dimension("duration_ms", DURATIONS, r.duration_ms, schema.RollupDurationRow.duration_ms)
SIZE = Dimension("tokens", SIZES, r.tokens, sr.tokens)


@dataclass(frozen=True, slots=True, eq=False)
class Histogram:
    """Rows counted per (tool, exact value): the source's base rows, or its by-value rollup
    (``db.rollups.upkeep``'s ``by_value``), under a range of days through its day-grain
    value buckets (``db.rollups.wide_histograms``). Nearest-rank quantiles and extremes read
    from it are values that occurred (``db.distributions``)."""

    value: Dimension
    tool: Dimension
    #: The day-grain bucket rollup of the value rollup.
    buckets: Table
    #: The bucket rollup keeps each bucket's total of the values.
    sums: bool
    #: Whole values: rollup rows read unsummed are summed in Python (cheaper than the
    #: database's sort for a GROUP BY, ``db.queries.ranks.summed_counts``).
    integral: bool
    #: The base table has (tool, value) and (value) indexes: the dialect's steering may look a
    #: rank up in them (``db.queries.planner``).
    indexed: bool = False

    @property
    def source(self) -> Source:
        return self.value.source


SIZE_HISTOGRAM = Histogram(
    SIZE, SIZE_TOOL, _table(schema.RollupSizeBucketRow), sums=True, integral=True
)
DURATION_HISTOGRAM = Histogram(
    DURATION,
    DURATION_TOOL,
    _table(schema.RollupDurationBucketRow),
    sums=False,
    integral=False,
    indexed=True,
)

#: How each Tool Message's execution time is known, from the results rollup's ``timing``.
TIMED = Condition("timed", RESULTS, r.duration_ms >= 0, rr.timing.in_(("span", "timed")))
TIMING_MEASURES: tuple[Measure, ...] = (
    RESULTS_N,
    Measure("timed", RESULTS, when=TIMED),
    Measure(
        "missing",
        RESULTS,
        when=Condition("missing", RESULTS, r.duration_ms.is_(None), rr.timing == "missing"),
    ),
    Measure(
        "negative",
        RESULTS,
        when=Condition("negative", RESULTS, r.duration_ms < 0, rr.timing == "negative"),
    ),
    Measure(
        "from_spans",
        RESULTS,
        when=Condition(
            "span",
            RESULTS,
            and_(r.duration_ms >= 0, r.duration_source == "span"),
            rr.timing == "span",
        ),
    ),
)


# --- Loops ------------------------------------------------------------------------------------


def loop_groups(k: int, filters: Filters) -> Select[Any]:
    """One row per looping (trace, signature) at ``k`` with its figures, unordered and unpaged:
    ``trace_id``, ``signature``, ``tool``, ``occurrences``, ``run_length``, ``errors`` (error
    results among its calls), ``wasted_tokens`` (of the results answering the repeats).

    Occurrences of a signature in a trace are numbered 1 … n, so each looping signature has
    exactly one call at ``occurrence == k``: those few calls (off the occurrence index) are the
    keys, and each key's calls are read from its trace. A group's figures do not depend on
    ``k``: with a higher ``k`` the rows are the groups of at least ``k`` calls.
    """
    keys = restrict_calls_in_index(
        select(grouping_key(c.trace_id).label("trace_id"), c.signature.label("signature")).where(
            c.occurrence == k
        ),
        filters,
    ).subquery()
    call = schema.aliased(schema.ToolCallRow)
    result = schema.aliased(schema.ToolResultRow)
    # One join per SELECT (the keys' calls, then the results answering them): the only form
    # ClickHouse 18.16 runs; SQLite and PostgreSQL flatten it into the one join.
    calls = (
        select(
            keys.c.trace_id,
            keys.c.signature,
            call.tool_name,
            call.run_length,
            call.occurrence,
            call.result_seq,
        )
        .select_from(keys)
        .join(call, and_(call.trace_id == keys.c.trace_id, call.signature == keys.c.signature))
        .subquery("loop_calls")
    )
    q = calls.c
    return (
        select(
            q.trace_id,
            q.signature,
            func.max(q.tool_name).label("tool"),
            func.count().label("occurrences"),
            func.max(q.run_length).label("run_length"),
            func.count().filter(result.status == "error").label("errors"),
            func.coalesce(func.sum(result.tokens).filter(q.occurrence >= 2), 0).label(
                "wasted_tokens"
            ),
        )
        .select_from(calls)
        # The result that answers the call (its pairing is stored on the call at import).
        .outerjoin(result, and_(result.trace_id == q.trace_id, result.message_seq == q.result_seq))
        .group_by(q.trace_id, q.signature)
    )


@dataclass(frozen=True, slots=True, eq=False)
class Loops:
    """The loop figures at ``k`` (``db.queries.loops``): looping signatures from their groups
    (:func:`loop_groups`), or from ``rollup_signatures`` (one row per tool and number of
    calls); the traces with a loop from ``rollup_traces``' highest occurrence."""

    source: Source
    tool: Dimension
    signatures: Measure
    calls: Measure
    traces: Measure
    errors: Measure
    wasted_tokens: Measure


sg = schema.RollupSignatureRow


@cache
def loops_at(k: int) -> Loops:
    """The loop figures at threshold ``k``."""
    source = Source(
        f"loops at {k}",
        base=None,
        rollup=_table(schema.RollupSignatureRow),
        restrict=_unrestricted,
        restrict_in_index=_unrestricted,
        rows=lambda f: loop_groups(k, f).subquery("loop_groups"),
        rollup_where=(sg.occurrences >= k,),
    )
    return Loops(
        source,
        Dimension("tool", source, "tool", sg.tool),
        Measure("signatures", source),
        Measure("calls", source, "sum", ("occurrences", sg.n * sg.occurrences)),
        Measure(
            "traces",
            source,
            "distinct",
            ("trace_id", None),
            rollup=lambda _f: total(tr.n),
            apart=TRACES,
            apart_where=(tr.max_occurrence >= k,),
        ),
        Measure("errors", source, "sum", ("errors", sg.errors)),
        Measure("wasted_tokens", source, "sum", ("wasted_tokens", sg.wasted_tokens)),
    )


def _unrestricted(stmt: Any, _filters: Filters) -> Any:
    return stmt


#: Every dimension and measure of each source: what the rollup exactness test compares
#: (parametrized entries at sample parameters).
ENTRIES: dict[str, tuple[tuple[Dimension, ...], tuple[Measure, ...]]] = {
    RESULTS.name: (
        (
            TOOL,
            ERROR_TYPE,
            ERROR_TYPE_LABEL,
            VERDICT,
            STATUS_SOURCE,
            RULE,
            NEXT_CALL,
            SUGGESTION_KIND,
            suggestion_kind("(none)"),
            error_type("(none)"),
        ),
        (
            RESULTS_N,
            ERRORS,
            FOLLOWED,
            IGNORED,
            *(verdict_count(v) for v in ("unclear", "no_next_action")),
            *(status_count(st) for st in STATUSES),
            *UNPAIRED,
            NAME_MISMATCHES,
            Measure("advised", RESULTS, when=ADVISED),
            Measure("corrected", RESULTS, when=CORRECTED),
            Measure("lone", RESULTS, when=LONE_RESULT),
            WITH_IMAGES.named("with_images"),
            IMAGE_TOKENS,
            *COST_MEASURES,
            *TIMING_MEASURES[1:],
        ),
    ),
    CALLS.name: (
        (CALL_TOOL, CALL_PAIR_STATE, capped_occurrence(10)),
        (
            CALLS_N,
            REUSED_IDS,
            PING_PONG_CALLS.named("ping_pong"),
            loop_signatures(2),
            late_call_count(3),
        ),
    ),
    FINGERPRINTS.name: (
        (FINGERPRINT, FINGERPRINT_TOOL, FINGERPRINT_ERROR_TYPE),
        (
            FINGERPRINT_ERRORS,
            FINGERPRINT_TRACES,
            FINGERPRINT_COUNT,
            lowest(FINGERPRINT_TOOL, "first_tool"),
            highest(FINGERPRINT_ERROR_TYPE, "last_type"),
        ),
    ),
    FINDINGS.name: ((FINDING_TOOL, FINDING_KIND), (FINDINGS_N, FINDING_TRACES, FINDING_TOOLS)),
    TRACES.name: (
        (TOKEN_COUNT_KIND, share_bin(10)),
        (TRACES_N, MESSAGES, TOTAL_TOKENS, TOOL_RESULT_TOKENS),
    ),
    SIZES.name: ((SIZE_TOOL,), (SIZE_RESULTS, over_budget(1000), highest(SIZE, "largest"))),
    INPUT_SHARES.name: ((INPUT_SHARE, INPUT_SHARE_TOOL), (INPUT_SHARE_RESULTS,)),
    DURATIONS.name: (
        (DURATION_TOOL,),
        (Measure("timed", DURATIONS), lowest(DURATION, "fastest"), highest(DURATION, "slowest")),
    ),
    ACTIVITY.name: (
        (time_bucket("hour"), time_bucket("day"), time_bucket("week"), ACTIVITY_ERROR_TYPE),
        (ACTIVITY_RESULTS, ACTIVITY_ERRORS, ACTIVITY_TOKENS),
    ),
    loops_at(2).source.name: (
        (loops_at(2).tool,),
        (
            loops_at(2).signatures,
            loops_at(2).calls,
            loops_at(2).traces,
            loops_at(2).errors,
            loops_at(2).wasted_tokens,
        ),
    ),
}


# --- Rates ------------------------------------------------------------------------------------


def ratio(numerator: float, denominator: float, digits: int | None = None) -> float | None:
    """``numerator / denominator`` (rounded to ``digits``), ``None`` when the denominator is 0:
    "0 %" would claim, say, that advice is never followed when nothing was decided."""
    if not denominator:
        return None
    value = numerator / denominator
    return value if digits is None else round(value, digits)


def rate(numerator: pd.Series, denominator: pd.Series, digits: int | None = None) -> pd.Series:
    """:func:`ratio` row by row (an object column: ``None`` where the denominator is 0)."""
    import pandas as pd

    return pd.Series(
        [ratio(n, d, digits) for n, d in zip(numerator, denominator, strict=True)],
        index=numerator.index,
        dtype="object",
    )


def follow_rate(followed: Any, ignored: Any, digits: int | None = None) -> Any:
    """The follow rate: followed / (followed + ignored), the advice whose fate is known.

    Scalars give a scalar (:func:`ratio`), columns a column (:func:`rate`)."""
    if isinstance(followed, int | float):
        return ratio(followed, followed + ignored, digits)
    return rate(followed, followed + ignored, digits)


__all__ = [
    "ADVISED",
    "CALLS",
    "CORRECTED",
    "DECIDED",
    "ERRORS",
    "FINDINGS",
    "FINGERPRINTS",
    "HAS_VERDICT",
    "IS_ERROR",
    "RESULTS",
    "STATUSES",
    "TRACES",
    "Coarse",
    "Condition",
    "Dimension",
    "Histogram",
    "Loops",
    "Measure",
    "PerRollup",
    "Source",
    "follow_rate",
    "loops_at",
    "on",
    "rate",
    "ratio",
    "time_bucket",
]
