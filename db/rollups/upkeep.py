"""Rollups: summary tables the import keeps exact, in the same transaction as the traces.

The pages chart counts over millions of Tool Messages; summing a few thousand rollup rows instead
keeps a page's cost flat as the store grows. Each rollup (a table of ``db.schema``'s ``Rollup*``
rows) holds what one family of charts needs, counted per **grain**: a set of the trace dimensions
the sidebar filters on (:class:`Dim`: the day of the trace's start, import, agent, model), the
other dimensions left NULL. A filter on one dimension reads that dimension's grain; a filter on
several reads the grain of all four (:data:`FULL`); the token-size and execution-time histograms
and the activity, whose rows are many, keep the single-dimension grains only, and such a filter
reads the base tables (``db.rollups.read``).

**One way in.** Every change of the base rows goes through :func:`subtract` (before: the rows of
the given traces as they are) and :func:`add` (after): an import, an update that replaces a trace,
an append, a re-analysis, a correction, a deletion. Both compute the traces' contributions from the
base tables with the same statements (:data:`ROLLUPS`), so what is added is exactly what will be
subtracted. :func:`rebuild` recomputes everything (``toollens rebuild-rollups``).

Contributions are grouped per trace in SQL and spread over the grains in Python; rows are upserted
in key order (two PostgreSQL writers then lock them in the same order) and a row whose count falls
to zero is deleted. Distinct-trace figures stay additive: a trace contributes 1 to each group it
belongs to, so e.g. "traces with this fingerprint" is a plain sum over the grain's rows.

A ClickHouse store keeps the same rows as signed inserts, summed by the store, and brackets each
change with the rollup state instead of a transaction (``db.clickhouse.rollups``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntFlag
from functools import cache, lru_cache, partial
from typing import Any, cast

import orjson
from sqlalchemy import (
    Connection,
    Engine,
    Integer,
    Table,
    and_,
    bindparam,
    case,
    delete,
    func,
    literal,
    literal_column,
    or_,
    select,
    true,
    union_all,
)

from db import catalogue, dialect, schema
from db.queries.common import (
    COUNTED_FINDING,
    effective_error_type,
)
from db.rollups import state as rollup_state
from db.rollups import value_buckets
from db.writes.transaction import writing


class Dim(IntFlag):
    """The trace dimensions a rollup row can be counted by."""

    DAY = 1
    IMPORT = 2
    AGENT = 4
    MODEL = 8


#: Every dimension: the grain a filter on several dimensions reads.
FULL = Dim.DAY | Dim.IMPORT | Dim.AGENT | Dim.MODEL
#: No dimension, then one each, then all: the grains of most rollups.
GRAINS: tuple[int, ...] = (0, Dim.DAY, Dim.IMPORT, Dim.AGENT, Dim.MODEL, FULL)
#: The size and duration histograms have a row per distinct token count or duration, the activity
#: one per hour: their full grain would be as large as the results themselves, so they keep one
#: dimension at most.
SINGLE_GRAINS: tuple[int, ...] = (0, Dim.DAY, Dim.IMPORT, Dim.AGENT, Dim.MODEL)
#: The execution-time histogram is read only under a trace filter (unfiltered, each percentile is
#: one look-up in the duration indexes): it keeps no grain without a dimension. Its rows are
#: nearly one per timed result per grain on traces timed to the millisecond, so each grain left
#: out is import time saved.
FILTER_GRAINS: tuple[int, ...] = (Dim.DAY, Dim.IMPORT, Dim.AGENT, Dim.MODEL)
#: Blocks of days, aligned on 1970-01-01, that the day-grain value buckets are also counted by
#: (:data:`BLOCK_GRAINS`): a range of many days reads its whole blocks and only the days at its
#: edges (:func:`day_ranges`) — 150 days are 17 to 30 rows per tool and bucket instead of 150.
BLOCK_DAYS: tuple[int, ...] = (8, 64)
#: The grain of each block length: the day's bit (a row's ``day`` is its block's first day, so
#: its keys order by it like a day's) and a bit of its own above the dimensions'.
BLOCK_GRAINS: dict[int, int] = {8: 16 | int(Dim.DAY), 64: 32 | int(Dim.DAY)}
#: Trace ids per contribution statement.
CHUNK = 500
#: Trace ids per contribution statement on ClickHouse, which reads a statement's views whole
#: (each builds the set of every trace's latest version): few, large statements, each within
#: its 256 KiB of text (the ids are listed up to three times).
CLICKHOUSE_CHUNK = 5_000
#: Per engine kept its own way (ClickHouse: signed rows summed by the store, registered by
#: ``db.clickhouse.rollups``, which imports this module): how rows are added to a rollup
#: (``(conn, table, columns, rows)``, the measures negated to take rows away) and how every
#: rollup is recounted (``(engine)``, the traces counted).
INSERTERS: dict[str, Callable[[Connection, str, list[str], list[tuple[Any, ...]]], None]] = {}
RECOUNTS: dict[str, Callable[[Engine], int]] = {}
#: Row keys this process has computed, per rollup (:func:`_keys`), at most this many each.
KEY_CACHE_ROWS = 20_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

r, c, t = schema.ToolResultRow, schema.ToolCallRow, schema.TraceRow


@dataclass(frozen=True, slots=True)
class Rollup:
    """One rollup: its table, the grains it keeps and how traces contribute to it.

    ``contributions(ids)`` selects, for the traces ``ids`` (a list, or the bound :data:`IDS`;
    ``None``: every trace), rows of ``trace_id``, ``tool``, then :attr:`keys` and
    :attr:`measures` (``n`` first), grouped per trace and key.

    A rollup with a :attr:`source` is counted from that rollup's rows of its own grains, each
    mapped by :attr:`derive` (``(keys, measures)`` to its own): no statement of its own.
    """

    table: Table
    grains: tuple[int, ...]
    keys: tuple[str, ...]
    measures: tuple[str, ...]
    contributions: Callable[[Sequence[int] | None], Any]
    #: The first key is a value whose bucket (``db.rollups.value_buckets``) follows the tool in the
    #: row keys: the exact rows of one bucket are one range of keys (``row_key``).
    by_value: bool = False
    source: str | None = None
    derive: Callable[[tuple[Any, ...], list[int]], tuple[tuple[Any, ...], list[int]]] | None = None
    #: Every measure is a plain sum over the rows (no trace counted once): a batch's statement
    #: groups the rows by the trace's dimensions at once, without grouping per trace first.
    additive: bool = False
    #: :attr:`contributions` without window functions, where it needs them (an engine without
    #: them: ClickHouse 18.16); ``None``: the same statement.
    windowless: Callable[[Sequence[int] | None], Any] | None = None


def _of(column: Any, ids: Any) -> Any:
    """``column IN ids`` (a list, or :data:`IDS`); every row when ``ids`` is ``None`` (a
    rebuild)."""
    return true() if ids is None else column.in_(ids)


#: The trace ids of a batch, bound when its contributions are read: each rollup's statement is
#: built once (building it for every batch cost a tenth of the rollup upkeep).
IDS: Any = bindparam("ids", expanding=True)


def _by_keys(
    source: catalogue.Source, tool: Any, sums: Sequence[Any] = (func.count(),)
) -> Callable[[Sequence[int] | None], Any]:
    """The contributions of a rollup counted by its catalogue source's keys: the source's base
    rows (where its condition holds) grouped per trace, ``tool`` and the keys, with ``sums``
    (``n`` first). What the upkeep stores and what a read expects are one declaration."""
    trace_id = source.base.trace_id
    keys = (tool, *source.keys.values())

    def contributions(ids: Sequence[int] | None) -> Any:
        return (
            select(trace_id, *keys, *sums)
            .where(_of(trace_id, ids), *source.where)
            .group_by(trace_id, *keys)
        )

    return contributions


_results = _by_keys(catalogue.RESULTS, r.tool, tuple(catalogue.RESULT_SUMS.values()))
_sizes = _by_keys(catalogue.SIZES, r.tool)


# Timed results only (``db.queries.durations``: a known duration ≥ 0), each exact value its own
# row, so that every nearest-rank percentile read from the counts is a stored duration.
_durations = _by_keys(catalogue.DURATIONS, r.tool)
_calls = _by_keys(catalogue.CALLS, c.tool_name)


def _signatures(ids: Sequence[int] | None) -> Any:
    # One row per (trace, signature): its calls (occurrences are numbered 1 … n, so the count is
    # the highest), the errors among their results and the tokens of the repeats' results.
    result = schema.aliased(schema.ToolResultRow)
    per = (
        select(
            c.trace_id.label("trace_id"),
            func.max(c.tool_name).label("tool"),
            func.count().label("occurrences"),
            func.count().filter(result.status == "error").label("errors"),
            func.coalesce(func.sum(result.tokens).filter(c.occurrence >= 2), 0).label("wasted"),
        )
        .outerjoin(result, and_(result.trace_id == c.trace_id, result.message_seq == c.result_seq))
        .where(_of(c.trace_id, ids))
        .group_by(c.trace_id, c.signature)
        .subquery()
    )
    return select(
        per.c.trace_id,
        per.c.tool,
        per.c.occurrences,
        func.count(),
        func.sum(per.c.errors),
        func.sum(per.c.wasted),
    ).group_by(per.c.trace_id, per.c.tool, per.c.occurrences)


def _share_bin() -> Any:
    # Never divided by zero, though those rows take the first branch: ClickHouse computes every
    # branch of a CASE, and 18.16 fails an integer division by zero.
    raw = (t.tool_result_tokens * 10) // case((t.total_tokens <= 0, 1), else_=t.total_tokens)
    return case((t.total_tokens <= 0, None), (raw >= 9, 9), else_=raw)


def _traces(ids: Sequence[int] | None) -> Any:
    # Every trace once with tool NULL, and once per tool it calls (the tool filter's traces).
    whole = select(
        t.id,
        literal(None).label("tool"),
        t.max_occurrence,
        t.token_counts,
        _share_bin(),
        literal(1),
        t.message_count,
        t.total_tokens,
        t.tool_result_tokens,
    ).where(_of(t.id, ids))
    per_tool = (
        select(
            t.id,
            c.tool_name,
            func.max(c.occurrence),
            func.min(t.token_counts),
            func.min(_share_bin()),
            literal(1),
            func.min(t.message_count),
            func.min(t.total_tokens),
            func.min(t.tool_result_tokens),
        )
        .join(c, c.trace_id == t.id)
        .where(_of(t.id, ids))
        .group_by(t.id, c.tool_name)
    )
    return whole.union_all(per_tool)


def _first_of(per: Any, partition: Sequence[str], by: str, *, windows: bool) -> tuple[Any, Any]:
    """The FROM clause over the subquery ``per`` and a flag: 1 on the row of each ``partition``
    whose column ``by`` is the smallest (NULL first), else 0. By a window function; or, without
    them, by a join with each partition's smallest value (``per`` has one row per value)."""
    value = per.c[by]
    if windows:
        first = func.row_number().over(
            partition_by=[per.c[p] for p in partition], order_by=(value.is_not(None), value)
        )
        return per, case((first == 1, 1), else_=0)
    firsts = (
        select(
            *(per.c[p].label(f"first_{p}") for p in partition),
            func.count().filter(value.is_(None)).label("first_nulls"),
            func.min(value).label("first_value"),
        )
        .group_by(*(per.c[p] for p in partition))
        .subquery("firsts")
    )
    joined = per.join(firsts, and_(*(per.c[p] == firsts.c[f"first_{p}"] for p in partition)))
    nulls = firsts.c.first_nulls
    chosen = or_(and_(nulls > 0, value.is_(None)), and_(nulls == 0, value == firsts.c.first_value))
    return joined, case((chosen, 1), else_=0)


def _findings(ids: Sequence[int] | None, *, windows: bool = True) -> Any:
    per = (
        select(
            schema.FindingRow.trace_id.label("trace_id"),
            schema.FindingRow.tool.label("tool"),
            schema.FindingRow.name.label("kind"),
            func.count().label("n"),
        )
        .where(_of(schema.FindingRow.trace_id, ids), COUNTED_FINDING)
        .group_by(schema.FindingRow.trace_id, schema.FindingRow.tool, schema.FindingRow.name)
        .subquery()
    )
    # The kind's first tool in the trace (NULL first) carries the trace for the kind's total.
    source, first = _first_of(per, ("trace_id", "kind"), "tool", windows=windows)
    return select(per.c.trace_id, per.c.tool, per.c.kind, per.c.n, literal(1), first).select_from(
        source
    )


def _fingerprints(ids: Sequence[int] | None, *, windows: bool = True) -> Any:
    effective = effective_error_type
    per = (
        select(
            r.trace_id.label("trace_id"),
            r.tool.label("tool"),
            r.fingerprint.label("fingerprint"),
            effective.label("effective_type"),
            func.count().label("n"),
        )
        .where(_of(r.trace_id, ids), r.status == "error", r.fingerprint.is_not(None))
        .group_by(r.trace_id, r.tool, r.fingerprint, effective)
        .subquery()
    )
    # The trace counts once per fingerprint, on the row of its smallest type (NULL first);
    # not labelled `error_type`, a column of its own expression (ClickHouse would read the
    # label inside it).
    source, first = _first_of(per, ("trace_id", "fingerprint"), "effective_type", windows=windows)
    return select(
        per.c.trace_id, per.c.tool, per.c.fingerprint, per.c.effective_type, per.c.n, first
    ).select_from(source)


def _activity(ids: Sequence[int] | None) -> Any:
    """The activity per hour of a Tool Message's time: its own timestamp, else its trace's
    start (``db.queries.time_buckets.result_time``); the days are derived from the hours."""
    error = r.status == "error"
    at = dialect.epoch_seconds(func.coalesce(r.timestamp, t.started_at))
    hour = dialect.floor_div(at, 3600)
    effective = case((error, effective_error_type))
    return (
        select(r.trace_id, r.tool, hour, error, effective, func.count(), func.sum(r.tokens))
        .join(t, t.id == r.trace_id)
        .where(_of(r.trace_id, ids))
        .group_by(r.trace_id, r.tool, hour, error, effective)
    )


_input_shares = _by_keys(catalogue.INPUT_SHARES, r.tool)


def _table(model: Any) -> Table:
    return cast(Table, model.__table__)


def _size_bucket(keys: tuple[Any, ...], measures: list[int]) -> tuple[tuple[Any, ...], list[int]]:
    # (tokens,), [n] -> (bucket,), [n, tokens]
    return (value_buckets.bucket_of(keys[0]),), [measures[0], measures[0] * int(keys[0])]


def _duration_bucket(
    keys: tuple[Any, ...], measures: list[int]
) -> tuple[tuple[Any, ...], list[int]]:
    # (duration_ms,), [n] -> (bucket,), [n]
    return (value_buckets.bucket_of(keys[0]),), measures


def _day_of_hour(keys: tuple[Any, ...], measures: list[int]) -> tuple[tuple[Any, ...], list[int]]:
    # (hour, error, error_type), [n, tokens] -> (day, ...): whole seconds floored to hours, then
    # the hours to days, is the seconds floored to days (86,400 = 24 × 3,600).
    hour = keys[0]
    return (None if hour is None else hour // 24, *keys[1:]), measures


#: Every rollup, by table name.
ROLLUPS: dict[str, Rollup] = {
    rollup.table.name: rollup
    for rollup in (
        Rollup(
            _table(schema.RollupResultRow),
            GRAINS,
            tuple(catalogue.RESULTS.keys),
            tuple(catalogue.RESULT_SUMS),
            _results,
            additive=True,
        ),
        Rollup(
            _table(schema.RollupSizeRow),
            SINGLE_GRAINS,
            tuple(catalogue.SIZES.keys),
            ("n",),
            _sizes,
            by_value=True,
            additive=True,
        ),
        Rollup(
            _table(schema.RollupDurationRow),
            FILTER_GRAINS,
            ("duration_ms",),
            ("n",),
            _durations,
            by_value=True,
            additive=True,
        ),
        Rollup(
            _table(schema.RollupSizeBucketRow),
            (Dim.DAY, *BLOCK_GRAINS.values()),
            ("bucket",),
            ("n", "tokens"),
            _sizes,
            source="rollup_sizes",
            derive=_size_bucket,
        ),
        Rollup(
            _table(schema.RollupDurationBucketRow),
            (Dim.DAY, *BLOCK_GRAINS.values()),
            ("bucket",),
            ("n",),
            _durations,
            source="rollup_durations",
            derive=_duration_bucket,
        ),
        Rollup(
            _table(schema.RollupCallRow),
            GRAINS,
            tuple(catalogue.CALLS.keys),
            ("n",),
            _calls,
            additive=True,
        ),
        Rollup(
            _table(schema.RollupSignatureRow),
            GRAINS,
            ("occurrences",),
            ("n", "errors", "wasted_tokens"),
            _signatures,
        ),
        Rollup(
            _table(schema.RollupTraceRow),
            GRAINS,
            ("max_occurrence", "token_counts", "share_bin"),
            ("n", "messages", "total_tokens", "tool_result_tokens"),
            _traces,
        ),
        Rollup(
            _table(schema.RollupFindingRow),
            GRAINS,
            ("kind",),
            ("n", "traces_tool", "traces_kind"),
            _findings,
            windowless=partial(_findings, windows=False),
        ),
        Rollup(
            _table(schema.RollupActivityRow),
            SINGLE_GRAINS,
            ("hour", "error", "error_type"),
            ("n", "tokens"),
            _activity,
            additive=True,
        ),
        Rollup(
            _table(schema.RollupActivityDayRow),
            SINGLE_GRAINS,
            ("result_day", "error", "error_type"),
            ("n", "tokens"),
            _activity,
            source="rollup_activity",
            derive=_day_of_hour,
        ),
        Rollup(
            _table(schema.RollupInputShareRow),
            GRAINS,
            tuple(catalogue.INPUT_SHARES.keys),
            ("n",),
            _input_shares,
            additive=True,
        ),
        Rollup(
            _table(schema.RollupFingerprintRow),
            GRAINS,
            ("fingerprint", "error_type"),
            ("n", "traces"),
            _fingerprints,
            windowless=partial(_fingerprints, windows=False),
        ),
    )
}

#: The dimension columns, in :class:`Dim` order (plain ints: ``IntFlag`` arithmetic is slow).
_DIMS: tuple[tuple[int, str], ...] = (
    (int(Dim.DAY), "day"),
    (int(Dim.IMPORT), "import_id"),
    (int(Dim.AGENT), "agent"),
    (int(Dim.MODEL), "model"),
)


def day_number(moment: datetime | None) -> int | None:
    """Days since 1970-01-01 (UTC) of ``moment``, the rollups' ``day`` (floored before 1970).

    >>> day_number(datetime(1969, 12, 31, 23, tzinfo=UTC))
    -1
    """
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH).days


#: The smallest day a key can hold (the encoding of NULL is just below it).
FIRST_DAY = -(2**31) + 1
#: ``tool`` of :func:`value_range` that leaves the tool open.
ANY_TOOL: Any = object()
_DAY, _IMPORT, _AGENT, _MODEL = (int(d) for d in Dim)


def _number(value: int | None) -> bytes:
    # Offset so that negative days sort before positive ones, and every value after NULL.
    return (0 if value is None else value + 2**31).to_bytes(4, "big")


@lru_cache(maxsize=8192)
def _text(value: str | None, size: int) -> bytes:
    if value is None:
        return bytes(size)
    return hashlib.blake2b(value.encode(), digest_size=size).digest()


def _slot(grain: int, dims: tuple[Any, ...]) -> bytes:
    """The 4 key bytes after the grain: the value of the grain's leading dimension — the day
    where the grain has it, else the import, agent or model (a text as its hash)."""
    if grain & _DAY:
        return _number(dims[0])
    if grain & _IMPORT:
        return _number(dims[1])
    if grain & _AGENT:
        return _text(dims[2], 4)
    if grain & _MODEL:
        return _text(dims[3], 4)
    return _number(None)


def key_prefix(grain: int, day: int | None) -> bytes:
    """The first 5 bytes of the keys of a grain with the day: its grain, then its day: the
    rows of a range of days are one range of keys (see :func:`row_key`)."""
    return bytes([grain]) + _number(day)


def grain_range(grain: int) -> tuple[bytes, bytes]:
    """``(first, end)``: every row of ``grain`` has ``first <= key < end``."""
    return key_prefix(grain, None), key_prefix(grain + 1, None)


def _successor(prefix: bytes) -> bytes:
    return (int.from_bytes(prefix, "big") + 1).to_bytes(len(prefix), "big")


def value_range(grain: int, dims: tuple[Any, ...], tool: Any = ANY_TOOL) -> tuple[bytes, bytes]:
    """``(first, end)``: the keys of the ``grain`` rows whose leading dimension has its value
    in ``dims`` (day, import, agent, model) — and whose tool is ``tool``, unless
    :data:`ANY_TOOL` — lie in ``first <= key < end``. Other values that share the hash lie
    there too: readers still compare the columns."""
    prefix = bytes([grain]) + _slot(grain, dims)
    if tool is not ANY_TOOL:
        prefix += _text(tool, 3)
    return prefix, _successor(prefix)


def row_key(
    grain: int,
    dims: tuple[Any, ...],
    tool: Any,
    keys: tuple[Any, ...],
    *,
    by_value: bool = False,
) -> bytes:
    """A rollup row's identity, 16 bytes that order the primary key: the grain (1), the value
    of its leading dimension (4: :func:`_slot`), a hash of the tool (3), then a hash of the
    grain, dimensions, tool and keys (8). So the rows of one day, import, agent or model are one
    range of keys, and those of one tool a range within it (:func:`value_range`); a range of
    days is one too. A rollup :attr:`~Rollup.by_value` puts the bucket of its value before the
    hash (2 + 6 bytes): the rows of a day, tool and bucket are one range (:func:`bucket_range`)."""
    return _key((grain, *dims, tool, *keys), by_value)


_KEYS: dict[str, dict[tuple[Any, ...], bytes]] = {}


def _keys(rollup: Rollup, rows: dict[tuple[Any, ...], list[int]]) -> list[bytes]:
    """:func:`_key` of each of ``rows`` of ``rollup``, remembered: a batch's rows mostly repeat
    rows of the batches before it (the same days, tools and values: most of an import's
    rows), and hashing them again would be a sixth of the upkeep's time. Per rollup,
    since a row tuple alone does not say how its values hash (``True`` equals ``1``)."""
    cache = _KEYS.setdefault(rollup.table.name, {})
    if len(cache) > KEY_CACHE_ROWS:
        cache.clear()
    out = []
    for row in rows:
        key = cache.get(row)
        if key is None:
            key = cache[row] = _key(row, rollup.by_value)
        out.append(key)
    return out


def _key(row: tuple[Any, ...], by_value: bool = False) -> bytes:
    """:func:`row_key` of a row ``(grain, day, import, agent, model, tool, *keys)``."""
    grain = row[0]
    digest = hashlib.blake2b(orjson.dumps(row), digest_size=8).digest()
    head = bytes([grain]) + _slot(grain, row[1:5]) + _text(row[5], 3)
    if by_value:
        bucket = value_buckets.bucket_of(row[6]).to_bytes(value_buckets.WIDTH, "big")
        return head + bucket + digest[: 8 - value_buckets.WIDTH]
    return head + digest


def bucket_range(day: int, tool: Any, bucket: int) -> tuple[bytes, bytes]:
    """``(first, end)``: the keys of the day-grain rows of a :attr:`~Rollup.by_value` rollup
    for ``day``, ``tool`` and value ``bucket`` lie in ``first <= key < end`` (with those of
    tools that share the hash: readers compare the tool)."""
    prefix = key_prefix(_DAY, day) + _text(tool, 3) + bucket.to_bytes(value_buckets.WIDTH, "big")
    return prefix, _successor(prefix)


def _chunks(ids: Sequence[int], size: int = CHUNK) -> Iterator[Sequence[int]]:
    for i in range(0, len(ids), size):
        yield ids[i : i + size]


def _trace_dims() -> list[Any]:
    """The trace's day (of its start), import, agent and model: what a rollup row is counted by."""
    return [
        dialect.floor_div(dialect.epoch_seconds(t.started_at), 86_400),
        t.import_id,
        t.agent,
        t.model,
    ]


def _per_dims(rollup: Rollup, ids: Any) -> tuple[Any, list[Any]]:
    """The contributions of the traces ``ids`` (every trace: ``None``) summed per trace
    dimensions (day, import, agent, model), tool and keys — a statement's FROM clause and its
    grouped columns, shared by :func:`contributions` and :func:`_spread`."""
    per_trace = rollup.contributions(ids).subquery("per_trace")
    cols = list(per_trace.c)
    group = [*_trace_dims(), *cols[1 : 2 + len(rollup.keys)]]
    return per_trace.join(t, t.id == cols[0]), group


def _by_position(count: int) -> list[Any]:
    # Grouped by position: the same expressions twice would differ in their bound parameters,
    # which PostgreSQL does not take for the same expression.
    return [literal_column(str(i)) for i in range(1, count + 1)]


def _measures(rollup: Rollup, source: Any) -> list[Any]:
    return [func.sum(m) for m in list(source.c)[2 + len(rollup.keys) :]]


@cache
def _contribution_statement(name: str) -> Any:
    """The statement of :func:`contributions` for the rollup ``name``, its traces :data:`IDS`."""
    rollup = ROLLUPS[name]
    if rollup.additive:
        # The per-trace statement with the trace's dimensions in place of its id: one GROUP BY
        # instead of two (the results' statement 25 % faster on SQLite).
        per_trace = rollup.contributions(IDS)
        trace_id, *rest = per_trace.selected_columns
        dims = _trace_dims()
        return (
            per_trace.with_only_columns(*dims, *rest)
            # (A statement that joins the traces already has this condition: twice is harmless.)
            .where(t.id == trace_id)
            .group_by(None)
            .group_by(*_by_position(len(dims) + 1 + len(rollup.keys)))
        )
    source, group = _per_dims(rollup, IDS)
    return (
        select(*group, *_measures(rollup, source.left))
        .select_from(source)
        .group_by(*_by_position(len(group)))
    )


@cache
def _joined_statement(name: str) -> Any:
    """The statement of :func:`contributions` for an engine without positional GROUP BY, window
    functions or joins of several tables in one SELECT (ClickHouse 18.16): the per-trace rows
    (:attr:`Rollup.windowless`) joined to their traces' dimensions, grouped by name."""
    rollup = ROLLUPS[name]
    per_trace = (rollup.windowless or rollup.contributions)(IDS).subquery("per_trace")
    cols = list(per_trace.c)
    dims = (
        select(t.id.label("dims_id"), *(d.label(f"dim_{i}") for i, d in enumerate(_trace_dims())))
        .where(t.id.in_(IDS))
        .subquery("dims")
    )
    group = [*(dims.c[f"dim_{i}"] for i in range(4)), *cols[1 : 2 + len(rollup.keys)]]
    return (
        select(*group, *_measures(rollup, per_trace))
        .select_from(per_trace.join(dims, dims.c.dims_id == cols[0]))
        .group_by(*group)
    )


def contributions(
    conn: Connection, rollup: Rollup, ids: Sequence[int]
) -> dict[tuple[Any, ...], list[int]]:
    """What the traces ``ids`` add to ``rollup``: per row (grain, dimensions, tool, keys), its
    measures.

    The database sums the traces' rows (:attr:`Rollup.contributions`) per trace dimensions,
    tool and keys — a batch's traces share few dimensions, so few rows come back — and each of
    those is spread over the grains here (measured twice as fast as a cross join with the
    grains and a second GROUP BY in SQL, and several times faster than spreading every
    trace's rows in Python)."""
    out: dict[tuple[Any, ...], list[int]] = {}
    width = 4 + 1 + len(rollup.keys)
    # Positions in (tool, *keys) of the keys the database returns as 0/1.
    bools = [
        1 + i for i, name in enumerate(rollup.keys) if rollup.table.c[name].type.python_type is bool
    ]
    # Per grain, which of (day, import, agent, model) it keeps: the spread below is the
    # import's innermost loop, written out (a generator per key cost a fifth of the upkeep).
    masks = [(int(g), *(bool(g & bit) for bit, _ in _DIMS)) for g in rollup.grains]
    if conn.dialect.name == "clickhouse":
        stmt, size = _joined_statement(rollup.table.name), CLICKHOUSE_CHUNK
    else:
        stmt, size = _contribution_statement(rollup.table.name), CHUNK
    for chunk in _chunks(ids, size):
        for row in conn.execute(stmt, {"ids": list(chunk)}):
            day, import_id, agent, model = row[0], row[1], row[2], row[3]
            rest = tuple(row[4:width])
            if bools:
                listed = list(rest)
                for i in bools:
                    listed[i] = bool(listed[i])
                rest = tuple(listed)
            measures = [int(v or 0) for v in row[width:]]
            for grain, by_day, by_import, by_agent, by_model in masks:
                key = (
                    grain,
                    day if by_day else None,
                    import_id if by_import else None,
                    agent if by_agent else None,
                    model if by_model else None,
                    *rest,
                )
                found = out.get(key)
                if found is None:
                    out[key] = measures.copy()
                else:
                    for i, m in enumerate(measures):
                        found[i] += m
    return out


def blocks_of(rollup: Rollup) -> list[tuple[int, int]]:
    """``(grain, days)`` of each block grain of ``rollup``."""
    return [(grain, days) for days, grain in BLOCK_GRAINS.items() if grain in rollup.grains]


def derived(
    rollup: Rollup, rows: dict[tuple[Any, ...], list[int]]
) -> dict[tuple[Any, ...], list[int]]:
    """What ``rows`` of :attr:`Rollup.source` (:func:`contributions`) add to the derived
    ``rollup``: those of its grains, mapped by :attr:`Rollup.derive` and summed; a day-grain
    row counts in its blocks of days too (:data:`BLOCK_GRAINS`)."""
    assert rollup.derive is not None
    out: dict[tuple[Any, ...], list[int]] = {}
    blocks = blocks_of(rollup)
    for row, measures in rows.items():
        grain = row[0]
        if grain not in rollup.grains:
            continue
        keys, mapped = rollup.derive(row[6:], measures)
        targets = [(*row[:6], *keys)]
        day = row[1]
        if grain == _DAY and day is not None:
            # (Traces without a start fall in no range of days: their day rows are not read.)
            targets += [(block, day - day % days, *row[2:6], *keys) for block, days in blocks]
        for key in targets:
            found = out.get(key)
            if found is None:
                out[key] = list(mapped)
            else:
                for i, m in enumerate(mapped):
                    found[i] += m
    return out


def day_ranges(
    low: int | None, high: int | None, lengths: Sequence[int] = tuple(BLOCK_DAYS)
) -> list[tuple[int, int | None, int | None]]:
    """The days ``low <= day < high`` (``None``: unbounded) as ``(grain, first, end)`` ranges of
    rows: whole blocks of the longest of ``lengths`` that fit, then of the shorter ones at the
    edges, then single days (the day grain); a block grain's ``first`` and ``end`` are multiples
    of its length.

    >>> day_ranges(5, 150, (8, 64))
    [(33, 64, 128), (17, 8, 64), (1, 5, 8), (17, 128, 144), (1, 144, 150)]
    >>> day_ranges(None, 20, (8,))
    [(17, None, 16), (1, 16, 20)]
    >>> day_ranges(3, 6, (8,))
    [(1, 3, 6)]
    """
    if not lengths:
        return [(_DAY, low, high)] if low is None or high is None or low < high else []
    days, finer = lengths[-1], lengths[:-1]
    first = None if low is None else -(-low // days) * days
    end = None if high is None else high // days * days
    if first is not None and end is not None and first >= end:
        return day_ranges(low, high, finer)
    found: list[tuple[int, int | None, int | None]] = [(BLOCK_GRAINS[days], first, end)]
    if low is not None:
        found += day_ranges(low, first, finer)
    if high is not None:
        found += day_ranges(end, high, finer)
    return found


def _apply(conn: Connection, ids: Sequence[int], sign: int) -> None:
    if ids and complete(conn):
        count(conn, ids, sign)


def count(conn: Connection, ids: Sequence[int], sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) the contributions of the traces ``ids`` to every
    rollup, whatever the state says: :func:`add` and :func:`subtract` once it said complete,
    and a ClickHouse store's writer, which marks the rollups incomplete while it writes
    (``db.clickhouse.rollups``)."""
    if not ids:
        return
    ids = sorted(set(ids))
    counted: dict[str, dict[tuple[Any, ...], list[int]]] = {}
    for name, rollup in ROLLUPS.items():
        if rollup.source is None:
            rows = contributions(conn, rollup, ids)
        else:
            rows = derived(rollup, counted[rollup.source])
        counted[name] = rows
        _upsert(conn, rollup, rows, sign)


def add(conn: Connection, ids: Sequence[int]) -> None:
    """Count the traces ``ids`` (their rows as stored now) into every rollup."""
    _apply(conn, ids, 1)


def subtract(conn: Connection, ids: Sequence[int]) -> None:
    """Take the traces ``ids`` (their rows as stored now) out of every rollup: call it before
    their rows change or go, and :func:`add` after."""
    _apply(conn, ids, -1)


def _columns(rollup: Rollup) -> list[str]:
    return ["grain", *(name for _, name in _DIMS), "tool", *rollup.keys, *rollup.measures]


def _upsert(
    conn: Connection, rollup: Rollup, rows: dict[tuple[Any, ...], list[int]], sign: int
) -> None:
    """Add (``sign`` 1) or take away (-1) ``rows``, in key order (PostgreSQL writers then lock
    rows in the same order), deleting the rows whose count falls to zero."""
    if not rows:
        return
    name = rollup.table.name
    columns = ["key", *_columns(rollup)]
    keyed = sorted(zip(_keys(rollup, rows), rows.items(), strict=True))
    if sign > 0:
        values = [(key, *row, *measures) for key, (row, measures) in keyed]
    else:
        values = [(key, *row, *(-m for m in measures)) for key, (row, measures) in keyed]
    inserter = INSERTERS.get(conn.dialect.name)
    if inserter is not None:
        inserter(conn, name, columns, values)
        return
    dialect.add_into(conn, name, columns, rollup.measures, values)
    if sign < 0:
        table = rollup.table
        gone = [key for key, _ in keyed]
        for i in range(0, len(gone), CHUNK):
            conn.execute(delete(table).where(table.c.key.in_(gone[i : i + CHUNK]), table.c.n <= 0))


def complete(conn: Connection) -> bool:
    """Whether the rollups hold the whole store (see :class:`db.schema.RollupState`), but for
    the :func:`pending` ones."""
    return rollup_state.read(conn).complete


def pending_in(conn: Connection) -> list[str]:
    """:func:`pending`, on an open connection."""
    # Each once: a migration undone and done again lists its rollups twice.
    return [name for name in rollup_state.read(conn).pending if name in ROLLUPS]


def counted(conn: Connection, table: str) -> bool:
    """Whether the rollup ``table`` holds the whole store (readers may use it): read once per
    transaction (``db.rollups.state``)."""
    state = rollup_state.read(conn)
    return state.complete and table not in state.pending


def pending(engine: Engine) -> list[str]:
    """The rollups a migration added to a store with traces, not counted yet."""
    with engine.connect() as conn:
        return pending_in(conn)


def is_complete(engine: Engine) -> bool:
    """Whether the rollups hold the whole store (else readers use the base tables)."""
    with engine.connect() as conn:
        return complete(conn)


def _spread(rollup: Rollup) -> Any:
    """Every row of ``rollup`` for the whole store, in one statement: the per-trace rows
    joined to their traces, repeated once per grain (a small UNION of constants), the
    dimensions outside the grain NULL, summed per rollup row — for :func:`rebuild`, where the
    database grouping everything at once is many times faster than :func:`contributions`.
    A derived rollup gets its source's rows of its own grains (:func:`derived` maps them)."""
    counted = ROLLUPS[rollup.source] if rollup.source is not None else rollup
    source, group = _per_dims(counted, None)
    # A block grain's rows are the day grain's, counted in their blocks by :func:`derived`.
    spread_grains = [g for g in rollup.grains if g not in BLOCK_GRAINS.values()]
    grains = union_all(
        *(select(literal(int(g), Integer).label("grain")) for g in spread_grains)
    ).subquery("grains")
    dims = [
        case((grains.c.grain.op("&")(bit) != 0, expr))
        for (bit, _), expr in zip(_DIMS, group[:4], strict=True)
    ]
    spread = (grains.c.grain, *dims, *group[4:])
    return (
        select(*spread, *_measures(counted, source.left))
        .select_from(source.join(grains, true()))
        .group_by(*_by_position(len(spread)))
    )


def _mapped(
    rollup: Rollup, rows: dict[tuple[Any, ...], list[int]]
) -> dict[tuple[Any, ...], list[int]]:
    return rows if rollup.source is None else derived(rollup, rows)


def rebuild(engine: Engine, *, chunk: int = 20_000, only: Sequence[str] | None = None) -> int:
    """Recompute every rollup (``only``: those tables) from the base tables, in one
    transaction; the traces counted.

    For recovery (``toollens rebuild-rollups``), for stores from before the rollups, and
    (``only``) for a rollup a migration added to a store that has the others. A ClickHouse
    store recounts every rollup its own way (``db.clickhouse.rollups.rebuild``)."""
    recount = RECOUNTS.get(engine.dialect.name)
    if recount is not None:
        return recount(engine)
    chosen = (
        [ROLLUPS[name] for name in dict.fromkeys(only)]
        if only is not None
        else list(ROLLUPS.values())
    )
    with writing(engine) as conn:
        for rollup in chosen:
            conn.execute(delete(rollup.table))
        if only is None:
            conn.execute(delete(schema.RollupState))
            conn.execute(
                _table(schema.RollupState)
                .insert()
                .values(id=1, complete=True, rebuilt_at=datetime.now(UTC), pending=None)
            )
        else:
            left = [name for name in pending_in(conn) if name not in only]
            conn.execute(
                _table(schema.RollupState)
                .update()
                .where(schema.RollupState.id == 1)
                .values(pending=" ".join(left) or None)
            )
        rollup_state.forget(conn)
        for rollup in chosen:
            # A derived rollup reads its source's keys, then maps each chunk of rows.
            read = ROLLUPS[rollup.source] if rollup.source is not None else rollup
            nkeys = len(read.keys)
            bools = [read.table.c[name].type.python_type is bool for name in read.keys]
            rows: dict[tuple[Any, ...], list[int]] = {}
            result = conn.execute(_spread(rollup).execution_options(yield_per=chunk))
            for row in result:
                keys = tuple(
                    bool(v) if is_bool else v
                    for is_bool, v in zip(bools, row[6 : 6 + nkeys], strict=True)
                )
                rows[(*row[:6], *keys)] = [int(v or 0) for v in row[6 + nkeys :]]
                if len(rows) >= chunk:
                    _upsert(conn, rollup, _mapped(rollup, rows), 1)
                    rows = {}
            _upsert(conn, rollup, _mapped(rollup, rows), 1)
        traces = conn.execute(select(func.count(t.id))).scalar_one()
    if dialect.name_of(engine) == "postgresql":
        # Every row was replaced, a derived rollup's rows several times (a chunk's upserts
        # update the rows earlier chunks wrote): clear the dead row versions and refresh the
        # statistics at once rather than whenever autovacuum comes: a recount leaves several
        # dead rows per live one and no statistics, and the pages' plans over those rollups are
        # then much slower (docs/postgresql.md).
        dialect.reclaim_space(engine, [rollup.table.name for rollup in chosen])
    return int(traces)


__all__ = [
    "ANY_TOOL",
    "BLOCK_DAYS",
    "BLOCK_GRAINS",
    "FILTER_GRAINS",
    "FULL",
    "GRAINS",
    "ROLLUPS",
    "SINGLE_GRAINS",
    "Dim",
    "Rollup",
    "add",
    "blocks_of",
    "bucket_range",
    "complete",
    "contributions",
    "count",
    "counted",
    "day_number",
    "derived",
    "grain_range",
    "is_complete",
    "pending",
    "pending_in",
    "rebuild",
    "row_key",
    "subtract",
    "value_range",
]
