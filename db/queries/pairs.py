"""The pairs: every call beside its Tool Message, one definition for the Tool calls page and
``toollens pairs``.

One row per tool call (with the result that answers it, if any) plus one row per Tool Message
that no call shows as its answer (results answering no call, and second answers to an answered
call), with the fields :data:`PAIR_COLUMNS`. The page filters, sorts and pages them in SQL
(:func:`list_pairs`, only one page travels to pandas); ``toollens pairs`` streams them all in
the page's default order as Arrow tables, for CSV and JSON Lines alike (:func:`iter_pair_tables`),
and library callers as Python values in any of the page's orders (:func:`iter_pairs`).

A row's ``pair`` is its address in the trace, the ``pair`` URL parameter of the Trace page:
``"<message seq>:<call index>"`` for a call, ``"r<message seq>"`` for a Tool Message of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import (
    ColumnElement,
    Engine,
    Float,
    Integer,
    String,
    and_,
    bindparam,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    null,
    or_,
    select,
    union_all,
)

from db import figures
from db.bulk.arrow_read import UTC_MICROSECONDS, conform, stream_range_tables
from db.bulk.streaming import stream_ranges
from db.catalogue import (
    CALLS_N,
    ERROR_TYPE,
    HAS_ERROR_TYPE,
    IS_ERROR,
    LONE_RESULT,
    RESULTS_N,
    call_pair_state,
    result_pair_state,
)
from db.contract.rows import PREVIEW_BREAKS, PREVIEW_CHARS
from db.contract.vocabulary import CALL_KINDS, PAIR_STATES, STATUSES, VERDICTS
from db.queries.common import (
    call_pair_key,
    effective_error_type,
    effective_verdict,
    labelled,
    unpaired_result,
)
from db.queries.filters import NO_FILTERS, Filters, restrict_calls, restrict_results
from db.schema import (
    FindingRow,
    ToolCallRow,
    ToolResultRow,
    TraceRow,
)

SORT_KEYS: tuple[str, ...] = (
    "trace", "time", "tool", "status", "error_type", "pair_state", "tokens", "duration_s",
    "occurrence", "verdict",
)  # fmt: skip
#: The fields of a pair, in order: the columns of ``toollens pairs`` and of the Tool calls table.
#: ``time`` is the call's (a lone result's own); ``arguments`` and ``result`` are the first
#: :data:`PREVIEW_CHARS` characters of the raw arguments and of the Tool Message, on one line;
#: ``duration_s`` is the tool's execution time in seconds (``ingest.analysis.durations``: the tool
#: span's own, else the result's time minus the call's; negative when stamped before its call);
#: ``kind`` is who ran the call (``contract.vocabulary.CallKind``: client, server, mcp; empty for a
#: result without call). :data:`COST_COLUMNS` say what the Tool Message adds to the model calls
#: after it (``ingest.analysis.costs``).
PAIR_COLUMNS: tuple[str, ...] = (
    "trace", "title", "pair", "time", "model", "call_id", "tool", "kind", "arguments", "result",
    "duration_s", "pair_state", "status", "status_source", "error_type", "tokens", "occurrence",
    "suggestion", "verdict", "verdict_reason", "later_calls", "reread_tokens", "reread_cached",
    "cost_usd", "cost_basis",
)  # fmt: skip
#: The model calls after the Tool Message that still had it in their input, the tokens of their
#: reads after the first, of them cached reads (empty for an estimate), every read priced in
#: USD (empty without a price for the model), and ``usage`` or ``estimate``: measured from the
#: calls' reported usage or estimated from the assistant turns after it.
COST_COLUMNS: tuple[str, ...] = PAIR_COLUMNS[-5:]
_COST_TYPES = {
    "later_calls": pa.int64(), "reread_tokens": pa.int64(), "reread_cached": pa.int64(),
    "cost_usd": pa.float64(),
}  # fmt: skip
#: Where a pair lies in its trace (the page's order and links); :func:`list_pairs` returns
#: them after :data:`PAIR_COLUMNS`.
POSITION_COLUMNS: tuple[str, ...] = ("trace_id", "seq", "call_index", "result_seq")
#: Most distinct error types offered as a filter.
ERROR_TYPE_CHOICES = 200


@dataclass(frozen=True, slots=True)
class PairQuery:
    """What the Tool calls page narrows the pairs to, and how it sorts them.

    Empty fields mean "all". ``trace`` matches a part of the trace's display id (any case);
    ``sort`` is one of :data:`SORT_KEYS`. ``min_tokens`` (inclusive) and ``max_tokens``
    (exclusive) bound the Tool Message's tokens; ``finding`` keeps the pairs with a finding of
    that kind (on the call or on its Tool Message).
    """

    status: str | None = None
    error_type: str | None = None
    pair_state: str | None = None
    verdict: str | None = None
    trace: str | None = None
    #: Who ran the call (client, server, mcp): only calls of that kind, no lone results.
    kind: str | None = None
    sort: str = "trace"
    descending: bool = False
    min_tokens: int | None = None
    max_tokens: int | None = None
    finding: str | None = None
    #: How the Tool Message's status was recognized (``explicit``, ``protocol``, ``inferred``).
    status_source: str | None = None


ALL_PAIRS = PairQuery()


def _result_conditions(q: PairQuery) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if q.status:
        conds.append(ToolResultRow.status == q.status)
    if q.error_type:
        conds.append(effective_error_type == q.error_type)
    if q.verdict:
        conds.append(effective_verdict == q.verdict)
    if q.status_source:
        conds.append(ToolResultRow.status_source == q.status_source)
    if q.min_tokens is not None:
        conds.append(ToolResultRow.tokens >= q.min_tokens)
    if q.max_tokens is not None:
        conds.append(ToolResultRow.tokens < q.max_tokens)
    return conds


def _needs_answer(q: PairQuery) -> bool:
    """True when a condition reads the call's Tool Message."""
    return bool(
        q.status or q.error_type or q.verdict or q.status_source or q.finding
        or q.min_tokens is not None or q.max_tokens is not None
    )  # fmt: skip


def _answer_required(q: PairQuery) -> bool:
    """True when a condition on the Tool Message rules out every call without one (each of
    :func:`_result_conditions` is false on NULL; a finding may be on the call itself)."""
    return bool(_result_conditions(q))


def _call_has_finding(kind: str) -> ColumnElement[bool]:
    """A finding of ``kind`` on the call, or on the Tool Message that answers it."""
    f, c = FindingRow, ToolCallRow
    return exists(
        select(f.id).where(
            f.trace_id == c.trace_id,
            f.name == kind,
            or_(
                and_(f.message_seq == c.message_seq, f.call_index == c.call_index),
                and_(f.message_seq == c.result_seq, f.call_index.is_(None)),
            ),
        )
    )


def _result_has_finding(kind: str) -> ColumnElement[bool]:
    """A finding of ``kind`` on a Tool Message of its own."""
    f = FindingRow
    return exists(
        select(f.id).where(
            f.trace_id == ToolResultRow.trace_id,
            f.name == kind,
            f.message_seq == ToolResultRow.message_seq,
            f.call_index.is_(None),
        )
    )


def _traces_named(q: PairQuery) -> Any:
    """Ids of the traces whose display id contains ``q.trace`` (any case)."""
    return select(TraceRow.id).where(TraceRow.display_id.icontains(q.trace, autoescape=True))


def _call_rows(
    f: Filters,
    q: PairQuery,
    *,
    count: bool = False,
    traces: tuple[Any, Any] | None = None,
    one_line: bool = True,
) -> Any:
    """Every call, with the Tool Message that answers it (outer join: unanswered calls too);
    ``count``: only the number of those rows (joining the answer only when a condition needs
    it: a call has at most one answer, so the join adds no rows).

    A condition on the answer (status, error type, verdict, status source, token bounds) is
    false for a call without one, so under such a condition the join is an inner join (the
    same rows): the planner may then start from the few matching Tool Messages (the error
    results' partial index) instead of joining every call to its answer.

    The trace's display id is joined later, to the rows of one page: a join here lets the
    planner start from ``traces`` and sort every call.

    ``traces``: only the calls of the traces with ids from its first to its second value, the
    bound stated for the answers too (PostgreSQL does not carry a range across a join, and
    hashed every Tool Message of the store for each range of ``toollens pairs``).

    ``one_line=False``: the arguments only cut to their preview's length, their line breaks
    left for the caller to replace (:func:`_one_line`).
    """
    answer = _answer()
    if traces is not None:
        answer = and_(answer, ToolResultRow.trace_id.between(*traces))
    stmt: Any
    if count:
        stmt = select(func.count()).select_from(ToolCallRow)
        if _answer_required(q):
            stmt = stmt.join(ToolResultRow, answer)
        elif _needs_answer(q):
            stmt = stmt.outerjoin(ToolResultRow, answer)
    else:
        stmt = (
            select(
                ToolCallRow.trace_id.label("trace_id"),
                ToolCallRow.message_seq.label("seq"),
                ToolCallRow.call_index.label("call_index"),
                call_pair_key(ToolCallRow.message_seq, ToolCallRow.call_index).label("pair"),
                ToolCallRow.timestamp.label("time"),
                ToolCallRow.tool_call_id.label("call_id"),
                ToolCallRow.tool_name.label("tool"),
                ToolCallRow.kind.label("kind"),
                (
                    _preview(ToolCallRow.arguments_raw)
                    if one_line
                    else func.substr(ToolCallRow.arguments_raw, 1, PREVIEW_CHARS)
                ).label("arguments"),
                _seconds().label("duration_s"),
                ToolCallRow.pair_state.label("pair_state"),
                *_result_fields(),
                ToolCallRow.occurrence.label("occurrence"),
            )
            .select_from(ToolCallRow)
            .join(ToolResultRow, answer, isouter=not _answer_required(q))
        )
    stmt = restrict_calls(stmt, f).where(*_result_conditions(q))
    if traces is not None:
        stmt = stmt.where(ToolCallRow.trace_id.between(*traces))
    return _narrowed(stmt, q, ToolCallRow, _call_has_finding, lambda kind: ToolCallRow.kind == kind)


def _result_fields() -> list[Any]:
    """The pair's fields that come from its Tool Message (NULL for a call without answer)."""
    r = ToolResultRow
    return [
        *labelled(r.status, r.status_source),
        effective_error_type.label("error_type"),
        *labelled(r.tokens, r.suggestion),
        effective_verdict.label("verdict"),
        r.verdict_reason.label("verdict_reason"),
        r.message_seq.label("result_seq"),
        r.preview.label("result"),
        *labelled(r.later_calls, r.reread_tokens, r.reread_cached),
        (cast(r.cost_nano_usd, Float) / 1e9).label("cost_usd"),
        case(
            (r.reread_measured.is_(True), literal("usage")),
            (r.reread_measured.is_(False), literal("estimate")),
        ).label("cost_basis"),
    ]


def _lone_address() -> ColumnElement[str]:
    """The ``pair`` of a Tool Message no call shows as its answer: ``"r<message seq>"``."""
    return literal("r") + cast(ToolResultRow.message_seq, String)


def _seconds() -> ColumnElement[Any]:
    """The stored execution time of the Tool Message in seconds (``ingest.analysis.durations``)."""
    return cast(ToolResultRow.duration_ms, Float) / 1000.0


def _preview(text: Any) -> ColumnElement[str]:
    """``db.contract.rows.one_line_preview`` of ``text``, in SQL (the Tool Message's is stored)."""
    head = func.substr(text, 1, PREVIEW_CHARS)
    for brk in PREVIEW_BREAKS:
        head = func.replace(head, literal(brk), literal(" "))
    return head


def _one_line(head: pa.ChunkedArray) -> pa.ChunkedArray:
    """The rest of :func:`_preview` in Arrow, for a text already cut to its length: each of
    the breaks a space, in the same order. SQLite's ``replace`` copies the text once per
    break: four of them cost about a fifth of reading the pairs; Arrow's kernels, a few
    milliseconds."""
    for brk in PREVIEW_BREAKS:
        head = pc.replace_substring(head, pattern=brk, replacement=" ")
    return head


def _answer() -> ColumnElement[bool]:
    # A call's answer: the Tool Message at its result seq (at most one row per call).
    return and_(
        ToolResultRow.trace_id == ToolCallRow.trace_id,
        ToolResultRow.message_seq == ToolCallRow.result_seq,
    )


def _lone_result_rows(f: Filters, q: PairQuery, *, count: bool = False) -> Any:
    """Tool Messages no call shows as its answer: orphans, early results, second answers."""
    stmt: Any
    if count:
        stmt = select(func.count()).select_from(ToolResultRow)
    else:
        stmt = select(
            ToolResultRow.trace_id.label("trace_id"),
            ToolResultRow.message_seq.label("seq"),
            cast(null(), Integer).label("call_index"),
            _lone_address().label("pair"),
            ToolResultRow.timestamp.label("time"),
            ToolResultRow.tool_call_id.label("call_id"),
            ToolResultRow.tool.label("tool"),
            cast(null(), String).label("kind"),
            cast(null(), String).label("arguments"),
            _seconds().label("duration_s"),
            ToolResultRow.pair_state.label("pair_state"),
            *_result_fields(),
            cast(null(), Integer).label("occurrence"),
        )
    stmt = restrict_results(stmt, f).where(unpaired_result, *_result_conditions(q))
    # A result no call answers has no call kind.
    return _narrowed(stmt, q, ToolResultRow, _result_has_finding, lambda _kind: false())


def _narrowed(
    stmt: Any,
    q: PairQuery,
    row: type[ToolCallRow] | type[ToolResultRow],
    has_finding: Callable[[str], Any],
    of_kind: Callable[[str], Any],
) -> Any:
    """``stmt`` (one part of the pairs table, read from ``row``'s table) narrowed by the
    query's finding, trace, pair state and call kind."""
    if q.finding:
        stmt = stmt.where(has_finding(q.finding))
    if q.trace:
        stmt = stmt.where(row.trace_id.in_(_traces_named(q)))
    if q.pair_state:
        stmt = stmt.where(row.pair_state == q.pair_state)
    if q.kind:
        stmt = stmt.where(of_kind(q.kind))
    return stmt


def count_pairs(engine: Engine, filters: Filters = NO_FILTERS, query: PairQuery = ALL_PAIRS) -> int:
    """How many rows the pairs table has under ``filters`` and ``query``.

    Without conditions on the pairs but their state, a sum of rollup rows (the calls, and the
    Tool Messages no call shows as its answer) where the filters allow."""
    state = query.pair_state
    with engine.connect() as conn:
        if replace(query, pair_state=None, sort="trace", descending=False) == ALL_PAIRS:
            # Calls and lone Tool Messages of the state: catalogued figures.
            calls = figures.counts(
                conn, [CALLS_N], [call_pair_state(state)] if state else [], filters
            )["calls"]
            lone = figures.counts(
                conn,
                [RESULTS_N],
                [LONE_RESULT, *([result_pair_state(state)] if state else [])],
                filters,
            )["results"]
            return calls + lone
        stmt = select(
            _call_rows(filters, query, count=True).scalar_subquery(),
            _lone_result_rows(filters, query, count=True).scalar_subquery(),
        )
        calls, lone_results = conn.execute(stmt).one()
    return int(calls) + int(lone_results)


def _order(columns: Any, query: PairQuery) -> list[Any]:
    """``ORDER BY`` of the pairs table over ``columns`` (a subquery's or the union's)."""
    position = [columns.trace_id, columns.seq, func.coalesce(columns.call_index, -1)]
    if query.sort == "trace":
        return [c.desc() for c in position] if query.descending else position
    column = columns[query.sort]
    return [column.is_(None), column.desc() if query.descending else column, *position]


def _check_sort(query: PairQuery) -> None:
    if query.sort not in SORT_KEYS:
        raise ValueError(f"unknown sort key {query.sort!r} (one of {', '.join(SORT_KEYS)})")


def list_pairs(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    query: PairQuery = ALL_PAIRS,
    *,
    limit: int = 100,
    offset: int = 0,
) -> pd.DataFrame:
    """One page of the pairs table (columns: :data:`PAIR_COLUMNS`, :data:`POSITION_COLUMNS`).

    Sorted by ``query.sort`` (empty values last, in both directions), then by trace and
    position. ``sort="trace"`` keeps the import order of traces and the message order inside.
    """
    _check_sort(query)
    # The page is among the first ``offset + limit`` rows of each part under the same order, so
    # each part is cut there before the union is sorted: sorted by trace, the calls part comes
    # in the order of its (trace_id, message_seq, call_index) index and stops early.
    first = offset + limit
    parts = []
    for rows in (_call_rows(filters, query), _lone_result_rows(filters, query)):
        part = rows.subquery()
        parts.append(select(select(part).order_by(*_order(part.c, query)).limit(first).subquery()))
    pairs = union_all(*parts).subquery("pairs")
    page = select(pairs).order_by(*_order(pairs.c, query)).limit(limit).offset(offset).subquery()
    with engine.connect() as conn:
        result = conn.execute(_with_trace(page, query))
        df = pd.DataFrame(result.all(), columns=list(result.keys()))
    for col in ("call_index", "occurrence", "tokens", "result_seq"):
        df[col] = df[col].astype("Int64")
    df["duration_s"] = df["duration_s"].astype("Float64")
    return df


def _with_trace(rows: Any, query: PairQuery) -> Any:
    """The pairs of the subquery ``rows`` with their trace's display id, in :data:`PAIR_COLUMNS`
    then :data:`POSITION_COLUMNS` order, sorted by ``query``.

    The display id is joined last, to the rows that are left: a join inside the parts lets the
    planner start from ``traces`` and sort every call.
    """
    columns = {
        **dict(rows.c.items()),
        "trace": TraceRow.display_id.label("trace"),
        "title": TraceRow.title.label("title"),
        "model": TraceRow.model.label("model"),
    }
    return (
        select(*(columns[c] for c in (*PAIR_COLUMNS, *POSITION_COLUMNS)))
        .join(TraceRow, TraceRow.id == rows.c.trace_id)
        .order_by(*_order(rows.c, query))
    )


def pair_table(engine: Engine, filters: Filters, query: PairQuery, limit: int) -> pd.DataFrame:
    """The first ``limit`` rows of :func:`list_pairs` with only the :data:`PAIR_COLUMNS`: the
    page's downloads, the same columns as ``toollens pairs``."""
    return list_pairs(engine, filters, query, limit=limit)[list(PAIR_COLUMNS)]


def iter_pairs(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    query: PairQuery = ALL_PAIRS,
    *,
    batch: int = 5000,
) -> Iterator[dict[str, Any]]:
    """Yield every pair as a dict of :data:`PAIR_COLUMNS`, streaming from the database (any
    store size fits in memory): ``toollens pairs``, in the order of :func:`list_pairs`."""
    for rows in iter_pair_batches(engine, filters, query, batch=batch):
        for row in rows:
            yield dict(zip(PAIR_COLUMNS, row, strict=True))


def iter_pair_batches(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    query: PairQuery = ALL_PAIRS,
    *,
    batch: int = 5000,
) -> Iterator[list[tuple[Any, ...]]]:
    """:func:`iter_pairs` as lists of tuples in :data:`PAIR_COLUMNS` order (for writers that take
    many rows at once, such as ``csv.writer.writerows``).

    In the default order (by trace, ascending) the pairs are read a range of
    :data:`STREAM_TRACES` traces at a time off the driver's cursor (:mod:`db.bulk.streaming`): each
    range sorts a few thousand pairs where one statement would sort them all, and no row goes
    through SQLAlchemy's result objects; ``batch`` does not apply (a list per range). Any other
    order streams one statement in lists of up to ``batch`` rows.
    """
    _check_sort(query)
    if query.sort == "trace" and not query.descending:
        yield from _stream_by_trace_ranges(engine, filters, query)
        return
    pairs = union_all(_call_rows(filters, query), _lone_result_rows(filters, query)).subquery(
        "pairs"
    )
    stmt = _with_trace(pairs, query)
    width = len(PAIR_COLUMNS)
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True, yield_per=batch).execute(stmt)
        for part in result.partitions():
            yield [tuple(row[:width]) for row in part]


#: Traces per statement when the pairs are streamed in trace order (about 10,000 pairs).
STREAM_TRACES = 1000


def _trace_ranges(engine: Engine, size: int = STREAM_TRACES) -> Generator[tuple[int, int]]:
    """``(first id, last id)`` of consecutive runs of ``size`` stored traces, in id order,
    each as soon as its ids are read: the readers of the first ranges start while the rest
    are counted off, instead of ``toollens pairs`` waiting for every id before its first
    read."""
    with engine.connect() as conn:
        ids = conn.execution_options(yield_per=size).execute(
            select(TraceRow.id).order_by(TraceRow.id)
        )
        for run in ids.partitions():
            yield run[0][0], run[-1][0]


def _stream_by_trace_ranges(
    engine: Engine, filters: Filters, query: PairQuery
) -> Iterator[list[tuple[Any, ...]]]:
    """The pairs in trace order, one statement per range of trace ids."""
    with closing(_trace_ranges(engine)) as ranges:
        yield from stream_ranges(engine, _range_statement(filters, query), ranges)


def _range_bounds() -> tuple[Any, Any]:
    return bindparam("lo", 0, type_=Integer), bindparam("hi", 0, type_=Integer)


def _range_parts(filters: Filters, query: PairQuery, *, one_line: bool = True) -> Any:
    """The calls and the lone Tool Messages of the traces with ids from the bind parameter
    ``lo`` to ``hi``, unsorted, without their trace's fields (a union of the two parts);
    ``one_line`` as :func:`_call_rows` takes it."""
    lo, hi = _range_bounds()
    return union_all(
        _call_rows(filters, query, traces=(lo, hi), one_line=one_line),
        _lone_result_rows(filters, query).where(ToolResultRow.trace_id.between(lo, hi)),
    )


def _range_statement(filters: Filters, query: PairQuery) -> Any:
    """The pairs of the traces with ids from the bind parameter ``lo`` to ``hi``, in
    :data:`PAIR_COLUMNS`, sorted by ``query``."""
    rows = _with_trace(_range_parts(filters, query).subquery("pairs"), query)
    # The rows' traces lie in the range too: said, so the join reads those traces by their key
    # (else PostgreSQL hashes every trace of the store for each range).
    lo, hi = _range_bounds()
    rows = rows.where(TraceRow.id.between(lo, hi))
    return rows.with_only_columns(*rows.selected_columns[: len(PAIR_COLUMNS)])


#: The Arrow types of :data:`PAIR_COLUMNS` (:func:`iter_pair_tables`): times are UTC instants.
PAIR_SCHEMA = pa.schema(
    [
        (name, {"time": UTC_MICROSECONDS, "duration_s": pa.float64(), "tokens": pa.int64(),
                "occurrence": pa.int64(), **_COST_TYPES}.get(name, pa.string()))
        for name in PAIR_COLUMNS
    ]
)  # fmt: skip


def iter_pair_tables(
    engine: Engine, filters: Filters = NO_FILTERS, query: PairQuery = ALL_PAIRS
) -> Generator[pa.Table]:
    """The pairs of :func:`iter_pairs` (in trace order, the only order it takes) as Arrow
    tables of :data:`PAIR_SCHEMA`, read by the ADBC drivers (:mod:`db.bulk.arrow_read`), one table
    per range of :data:`STREAM_TRACES` traces: ``toollens pairs``.

    Each range is two statements, its pairs unsorted (:func:`_range_parts`, the page's
    definition) and its traces, put together in Arrow (:func:`_assemble`) by the thread that
    read them: SQLite's sort of each range's rows and its lookup of the trace for every row
    cost more than the reading.

    On PostgreSQL every pair (no filters, no conditions: what ``toollens pairs`` lists) comes
    from four statements a range instead (:func:`_every_pair_reads`): its calls, their
    answers' fields, its lone Tool Messages and its traces, each read off its own index, the
    calls joined to their answers in Arrow (:func:`_assemble_every`). PostgreSQL's hash join
    of the calls to their answers, and the text it makes for each row, cost it more CPU than
    reading and sending the tables (docs/postgresql.md, "Streaming many rows"). SQLite joins by
    the index it reads anyway: reading apart costs its client more CPU and saves nothing, so it
    keeps the one statement. ClickHouse reads the four statements too: a join of its
    Distributed tables on 18.16 is not one it can run for them."""
    _check_sort(query)
    if query.sort != "trace" or query.descending:
        raise ValueError("the pairs are read as tables in trace order only")
    statements: tuple[Any, ...]
    if (
        engine.dialect.name in ("postgresql", "clickhouse")
        and filters == NO_FILTERS
        and query == ALL_PAIRS
    ):
        statements, assemble = _every_pair_reads(), _assemble_every
    else:
        statements = (_range_parts(filters, query, one_line=False), _range_traces())
        assemble = _assemble
    with closing(_trace_ranges(engine)) as ranges:
        yield from stream_range_tables(engine, statements, ranges, assemble)


def _range_traces() -> Any:
    """The fields of the traces with ids from ``lo`` to ``hi`` that a pair shows."""
    lo, hi = _range_bounds()
    return select(
        TraceRow.id.label("id"),
        TraceRow.display_id.label("trace"),
        *labelled(TraceRow.title, TraceRow.model),
    ).where(TraceRow.id.between(lo, hi))


def _every_pair_reads() -> tuple[Any, ...]:
    """The statements :func:`_assemble_every` puts every pair of a range together from."""
    lo, hi = _range_bounds()
    lone = _lone_result_rows(NO_FILTERS, ALL_PAIRS).where(ToolResultRow.trace_id.between(lo, hi))
    return _range_calls(), _range_answers(), lone, _range_traces()


def _range_calls() -> Any:
    """The calls of the traces with ids from the bind parameter ``lo`` to ``hi``, each with
    its answer's message seq (``answer_seq``), without its answer's fields and its ``pair``
    (:func:`_assemble_every` makes both), the arguments' text no shorter than the preview."""
    lo, hi = _range_bounds()
    c = ToolCallRow
    raw = c.arguments_raw
    # Cut only where the text may be longer than the preview (four bytes a character at most,
    # the length in bytes known without reading the text): PostgreSQL's substr walks every
    # preview's characters, a large share of the statement's CPU; :func:`_assemble_every`
    # cuts the rest in Arrow.
    head = case(
        (func.octet_length(raw) <= 4 * PREVIEW_CHARS, raw),
        else_=func.substr(raw, 1, PREVIEW_CHARS),
    )
    return select(
        c.trace_id.label("trace_id"),
        c.message_seq.label("seq"),
        c.call_index.label("call_index"),
        c.timestamp.label("time"),
        c.tool_call_id.label("call_id"),
        c.tool_name.label("tool"),
        c.kind.label("kind"),
        head.label("arguments"),
        *labelled(c.pair_state, c.occurrence),
        c.result_seq.label("answer_seq"),
    ).where(c.trace_id.between(lo, hi))


def _range_answers() -> Any:
    """The Tool Messages of the traces with ids from ``lo`` to ``hi``, with only the fields a
    call takes from its answer (:data:`ANSWER_FIELDS`): the few that are rows of their own
    are read apart, whole (:func:`_lone_result_rows`; reading the fields of a row of their own
    for every Tool Message costs both the server and the client CPU for nothing)."""
    lo, hi = _range_bounds()
    r = ToolResultRow
    return select(
        r.trace_id.label("trace_id"), _seconds().label("duration_s"), *_result_fields()
    ).where(r.trace_id.between(lo, hi))


#: What a call's row takes from its answer (NULL without one): the fields of
#: :func:`_result_fields` and the execution time.
ANSWER_FIELDS: tuple[str, ...] = (
    "duration_s", "status", "status_source", "error_type", "tokens", "suggestion", "verdict",
    "verdict_reason", "result_seq", "result", *COST_COLUMNS,
)  # fmt: skip
#: A range's rows as :func:`_range_parts` gives them, the Arrow types :func:`_assemble_every`
#: gives them (a driver types an empty column as it likes).
_PART_SCHEMA = pa.schema(
    [
        (name, {"trace_id": pa.int64(), "seq": pa.int64(), "call_index": pa.int64(),
                "result_seq": pa.int64(), "time": UTC_MICROSECONDS, "duration_s": pa.float64(),
                "tokens": pa.int64(), "occurrence": pa.int64(), **_COST_TYPES}.get(name,
                                                                                pa.string()))
        for name in ("trace_id", "seq", "call_index", "pair", "time", "call_id", "tool", "kind",
                     "arguments", "duration_s", "pair_state", *ANSWER_FIELDS[1:], "occurrence")
    ]
)  # fmt: skip


def _assemble_every(tables: Sequence[pa.Table]) -> pa.Table:
    """One range's pairs from its calls, their answers, its lone Tool Messages and its traces
    (``tables``: the rows of :func:`_range_calls`, :func:`_range_answers`,
    :func:`_lone_result_rows` and the traces), as :func:`_assemble` gives them."""
    calls, answers, lone, traces = tables
    at = _answer_rows(calls, answers, traces["id"])
    call_rows = {name: calls[name] for name in calls.column_names}
    call_rows.update({name: answers[name].take(at) for name in ANSWER_FIELDS})
    # :func:`_call_address`, made here in Arrow: in PostgreSQL it costs the server CPU per row.
    seq, index = (calls[name].cast(pa.string()) for name in ("seq", "call_index"))
    call_rows["pair"] = pc.binary_join_element_wise(seq, index, ":")
    arguments = calls["arguments"].cast(pa.string())  # SQLite: NULLs alone read as integers
    call_rows["arguments"] = pc.utf8_slice_codeunits(arguments, 0, PREVIEW_CHARS)
    names = _PART_SCHEMA.names
    parts = [
        conform(pa.table([call_rows[name] for name in names], names=names), _PART_SCHEMA),
        conform(lone.select(names), _PART_SCHEMA),
    ]
    return _assemble([pa.concat_tables(parts), traces])


def _answer_rows(calls: pa.Table, results: pa.Table, ids: pa.ChunkedArray) -> pa.Array:
    """For each of ``calls``, the row of ``results`` that answers it (the Tool Message of its
    trace at its answer seq), NULL for a call without answer. The key of a row is its trace's
    place in ``ids`` (the range's traces: fewer than :data:`STREAM_TRACES`) and its seq, one
    integer far from overflowing; the Tool Messages' keys are sorted and each call's looked up.
    A trace has one Tool Message at a seq (a message holds at most one tool result)."""

    def keys(table: pa.Table, seq: str) -> np.ndarray[Any, np.dtype[np.int64]]:
        trace = _ints(
            pc.index_in(table["trace_id"].cast(pa.int64()), value_set=ids.cast(pa.int64()))
        )
        at = _ints(table[seq])
        return np.where((trace < 0) | (at < 0), -1, trace * width + at)

    width = 1 + max(
        int(_ints(calls["answer_seq"]).max(initial=0)),
        int(_ints(results["result_seq"]).max(initial=0)),
    )
    wanted, held = keys(calls, "answer_seq"), keys(results, "result_seq")
    order = np.argsort(held, kind="stable")
    ordered = held[order]
    at = np.minimum(np.searchsorted(ordered, wanted), max(len(ordered) - 1, 0))
    found = (wanted >= 0) & (ordered[at] == wanted) if len(ordered) else np.zeros(len(wanted), bool)
    return pa.array(order[at] if len(ordered) else np.zeros(len(wanted), np.int64), mask=~found)


#: Most rows out of order a range's rows take slotted in between slices of the rows in order
#: (two slices each, joined again); a range with more is sorted.
SLOTTED_ROWS = 256


def _in_trace_order(rows: pa.Table) -> pa.Table:
    """``rows`` (a range's calls and lone Tool Messages) sorted by trace, message and call
    index, a lone Tool Message before the calls of its message's seq (it has none), as a
    stable sort orders them.

    The databases give most of a range's rows in that order already: SQLite all its calls, in
    the order of the index it reads them by, then the few lone Tool Messages; PostgreSQL the
    answered calls in the order of their answers' table, then the unanswered ones and the lone
    Tool Messages. Where no more than :data:`SLOTTED_ROWS` rows follow the first one out of
    order, those are put in their places between slices of the rows before it
    (:func:`_slotted`) and the slices are joined into one table, which copies each column
    once in bulk (Arrow's sort gathers every value of every row by its index, much slower).
    Otherwise, all rows are sorted."""
    slotted = _slotted(rows)
    if slotted is not None:
        return slotted
    position = pc.coalesce(rows["call_index"].cast(pa.int64()), pa.scalar(-1, pa.int64()))
    return (
        rows.append_column("_position", position)
        .sort_by([("trace_id", "ascending"), ("seq", "ascending"), ("_position", "ascending")])
        .drop_columns("_position")
    )


def _slotted(rows: pa.Table) -> pa.Table | None:
    """``rows`` in order with the rows from the first one out of order on each put after the
    rows before it with a key not above its own; ``None`` when more than
    :data:`SLOTTED_ROWS` rows follow it, or when the keys (trace, seq and call index in one
    integer) do not fit in 62 bits."""
    trace, seq, index = (_ints(rows[name]) for name in ("trace_id", "seq", "call_index"))
    if min(trace.min(initial=0), seq.min(initial=0), index.min(initial=0) + 1) < 0:
        return None
    width, calls = int(seq.max(initial=0)) + 1, int(index.max(initial=0)) + 2
    if (int(trace.max(initial=0)) + 1) * width * calls >= 2**62:
        return None
    key = (trace * width + seq) * calls + index + 1
    falls = np.flatnonzero(np.diff(key) <= 0)
    ordered = int(falls[0]) + 1 if len(falls) else len(key)
    if len(key) - ordered > SLOTTED_ROWS:
        return None
    order = ordered + np.argsort(key[ordered:], kind="stable")
    places = np.searchsorted(key[:ordered], key[order], side="right")
    head, pieces, start = rows.slice(0, ordered), [], 0
    for place, row in zip(places.tolist(), order.tolist(), strict=True):
        pieces += [head.slice(start, place - start), rows.slice(row, 1)]
        start = place
    if not pieces:
        return rows
    # One chunk again: each later step (casts, joins, the writers) costs something per chunk,
    # and PostgreSQL's ranges have a hundred rows to slot in (their unanswered calls).
    return pa.concat_tables([*pieces, head.slice(start)]).combine_chunks()


def _ints(column: pa.ChunkedArray) -> np.ndarray[Any, np.dtype[np.int64]]:
    """A column of integers without NULLs as a NumPy array (NULLs as -1)."""
    return np.asarray(pc.fill_null(column.cast(pa.int64()), -1).to_numpy(), dtype=np.int64)


def _assemble(tables: Sequence[pa.Table]) -> pa.Table:
    """One range's pairs (``tables``: its rows from :func:`_range_parts` with the arguments
    only cut, its traces) as :func:`_range_statement` gives them: in trace order, with their
    trace's fields and the arguments on one line."""
    rows, traces = tables
    rows = _in_trace_order(rows)
    at = pc.index_in(rows["trace_id"].cast(pa.int64()), value_set=traces["id"].cast(pa.int64()))
    columns = {name: rows[name] for name in rows.column_names}
    columns.update({name: traces[name].take(at) for name in ("trace", "title", "model")})
    table = conform(
        pa.table([columns[name] for name in PAIR_COLUMNS], names=PAIR_COLUMNS), PAIR_SCHEMA
    )
    at_arguments = PAIR_COLUMNS.index("arguments")
    return table.set_column(at_arguments, "arguments", _one_line(table["arguments"]))


def pair_choices(engine: Engine, filters: Filters = NO_FILTERS) -> dict[str, list[str]]:
    """Values the pairs filters offer: ``status``, ``error_type`` (those present),
    ``pair_state``, ``verdict`` and ``kind``."""
    # Only error results have an error type: the distinct ones come off the errors index,
    # filtered where they lie.
    # (On the rollup, the distinct types of the filters' grain rows: a few thousand instead of
    # every error's index entry.)
    with engine.connect() as conn:
        found = figures.rows(
            conn,
            [],
            [ERROR_TYPE],
            [IS_ERROR, HAS_ERROR_TYPE],
            filters,
            order=[("error_type", False)],
            limit=ERROR_TYPE_CHOICES,
        )
    error_types = [str(v) for (v,) in found]
    return {
        "status": list(STATUSES),
        "error_type": error_types,
        "pair_state": list(PAIR_STATES),
        "verdict": list(VERDICTS),
        "kind": list(CALL_KINDS),
    }
