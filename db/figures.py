"""One door for every catalogued figure: measures, a grouping and the filters in, a frame out.

:func:`read` compiles a request on the catalogue (``db.catalogue``) for the connection's
dialect: the rollup form when ``db.rollups.read.scope`` finds rows of a grain that answer the
filters, else the base-table form with the dialect's planner steering (``db.queries.planner``):

* the filters are tested in the index of the subset a statement reads when a condition selects
  a small indexed subset (errors, verdicts, advice …);
* the grouped columns of such a statement are :func:`db.queries.planner.grouping_key`\\ s;
* under a trace filter, a count per value of a dimension with a known vocabulary is one pass
  of filtered counts without GROUP BY (:func:`db.queries.planner.one_pass_counts`).

Both forms return the same rows: no caller chooses between them.

>>> from db.catalogue import ERRORS, ERROR_TYPE_LABEL, TOOL
>>> read(conn, [ERRORS], by=[TOOL, ERROR_TYPE_LABEL], filters=f)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, Table, and_, func, select

from db.catalogue import Coarse, Condition, Dimension, Measure, Source, on
from db.queries.common import to_frame, total
from db.queries.filters import NO_FILTERS, Filters
from db.queries.planner import grouping_key, one_pass_counts
from db.rollups.read import scope

if TYPE_CHECKING:
    import pandas as pd

#: ``(name, descending)``: a column of the request to order by.
Order = tuple[str, bool]


def _source(
    measures: Sequence[Measure], by: Sequence[Dimension], where: Sequence[Condition]
) -> Source:
    parts: list[Measure | Dimension | Condition] = [*measures, *by, *where]
    sources = {id(x.source): x.source for x in parts}
    if len(sources) != 1:
        names = sorted(s.name for s in sources.values())
        raise ValueError(f"a request reads one source, not {names}")
    return next(iter(sources.values()))


def _when(m: Measure, where: Sequence[Condition]) -> Condition | None:
    # A measure counted where its own condition already holds needs no filter of its own.
    return None if m.when is None or m.when in where else m.when


def _rollup_measure(
    m: Measure,
    table: Table,
    grouped: bool,
    where: Sequence[Condition],
    filters: Filters,
    apart: dict[int, list[Any]],
) -> Any:
    when = _when(m, where)
    cond = None if when is None else on(when.rollup, table)
    expr: Any
    if m.apart is not None:
        # One value over the other rollup's rows for the filters.
        assert m.rollup is not None
        rows = apart[id(m)]
        expr = select(m.rollup(filters)).where(*rows, *m.apart_where).scalar_subquery()
        return func.coalesce(expr, 0)
    if m.rollup is not None:
        expr = m.rollup(filters)
    elif m.aggregate == "count":
        assert when is None or cond is not None, f"{m.name} needs a rollup form"
        expr = total(table.c.n, cond)
    else:
        assert m.value is not None
        value = on(m.value[1], table)
        if m.aggregate == "sum":
            expr = total(value, cond)
        elif m.aggregate == "min":
            expr = func.min(value)
        elif m.aggregate == "max":
            expr = func.max(value)
        else:
            expr = func.count(value.distinct())
    if m.aggregate == "sum" or (not grouped and m.aggregate == "count"):
        # A sum over no rows is NULL where the base tables count 0 (and a sum is 0 over no
        # rows in both forms).
        expr = func.coalesce(expr, 0)
    return expr


def _base_form(form: Any, rows: Any) -> Any:
    """A base form over a source's rows: a derived source's forms name its columns."""
    return rows.c[form] if isinstance(form, str) else form


def _base_measure(m: Measure, where: Sequence[Condition], *also: Any, rows: Any = None) -> Any:
    own = _when(m, where)
    conds = [c for c in ((own.base if own is not None else None), *also) if c is not None]
    when = and_(*conds) if len(conds) > 1 else (conds[0] if conds else None)
    expr: Any
    if m.aggregate == "count":
        expr = func.count()
    else:
        assert m.value is not None
        value = _base_form(m.value[0], rows)
        if m.aggregate == "sum":
            expr = func.sum(value)
        elif m.aggregate == "min":
            expr = func.min(value)
        elif m.aggregate == "max":
            expr = func.max(value)
        else:
            expr = func.count(value.distinct())
    return expr if when is None else expr.filter(when)


def _keeps(
    table: Table,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    where: Sequence[Condition],
) -> bool:
    """Whether rollup ``table`` keeps every dimension, condition and measured value of a
    request (a bin width or a condition it does not store is read from the base tables)."""
    forms = [d.rollup for d in by] + [c.rollup for c in where]
    if any(isinstance(on(f, table), Coarse) for f in forms) and any(
        m.aggregate not in ("count", "sum") for m in measures
    ):
        # Finer rows are summed into the asked ones: additive measures only.
        return False
    for m in measures:
        if m.rollup is None and m.value is not None:
            forms.append(m.value[1])
        if m.rollup is None and m.when is not None and m.when not in where:
            forms.append(m.when.rollup)
    return all(on(form, table) is not None for form in forms)


def _shared_when(
    measures: Sequence[Measure], by: Sequence[Dimension], where: Sequence[Condition]
) -> list[Condition]:
    """An ungrouped request whose measures all count under one condition reads only the rows
    where it holds (a WHERE, off its index where it has one), not every row filtered per
    measure: the condition, or nothing."""
    whens = {id(m.when): m.when for m in measures}
    if by or not measures or len(whens) != 1:
        return []
    when = next(iter(whens.values()))
    return [] if when is None or when in where else [when]


def _ordered(stmt: Any, labels: dict[str, Any], order: Sequence[Order]) -> Any:
    if order:
        stmt = stmt.order_by(*(labels[n].desc() if down else labels[n] for n, down in order))
    return stmt


def _tool_rows(source: Source) -> str:
    return "all" if source.every_trace_row else "tool"


@dataclass(frozen=True, slots=True)
class _Pick:
    """The rollup that answers a request: its table, the conditions that select the filtered
    rows, and those of the other rollups its measures read (by measure)."""

    table: Table
    at: list[Any]
    apart: dict[int, list[Any]]


def _pick(
    conn: Connection,
    source: Source,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    where: Sequence[Condition],
    filters: Filters,
) -> _Pick | None:
    """The first rollup of ``source`` that keeps the request and holds the filtered data, or
    ``None`` (the base tables answer)."""
    for table in source.rollups:
        if not _keeps(table, measures, by, where):
            continue
        at = scope(conn, table, filters, tool=_tool_rows(source))
        if at is None:
            continue
        apart: dict[int, list[Any]] = {}
        for m in measures:
            if m.apart is not None:
                rows = scope(conn, m.apart.rollup, filters, tool=_tool_rows(m.apart))
                if rows is None:
                    return None
                apart[id(m)] = rows
        return _Pick(table, at, apart)
    return None


def _check(
    measures: Sequence[Measure], by: Sequence[Dimension], where: Sequence[Condition]
) -> Source:
    source = _source(measures, by, where)
    for d in by:
        if d.within is not None and d.within not in where:
            raise ValueError(f"{d.name} is kept where {d.within.name} only")
    for m in measures:
        if m.needs is not None and m.needs not in by:
            raise ValueError(f"{m.name} is counted per {m.needs.name} only")
        if m.apart is not None and by:
            raise ValueError(f"{m.name} is read ungrouped only")
    return source


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A request's statement, and the dimensions read finer than asked (name -> the mapping
    to the asked value, :class:`db.catalogue.Coarse`): their rows are summed after reading."""

    stmt: Any
    coarse: dict[str, Callable[[int], int]]


def _rollup_statement(
    pick: _Pick,
    source: Source,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    where: Sequence[Condition],
    filters: Filters,
) -> tuple[Any, list[Any], dict[str, Any], dict[str, Callable[[int], int]]]:
    table, labels, coarse = pick.table, {}, {}
    keys = []
    for d in by:
        form = on(d.rollup, table)
        if isinstance(form, Coarse):
            coarse[d.name] = form.to
            form = form.value
        keys.append(form)
        labels[d.name] = form.label(d.name)
    for m in measures:
        expr = _rollup_measure(m, table, bool(by), where, filters, pick.apart)
        labels[m.name] = expr.label(m.name)
    conds = [on(c, table) for c in source.rollup_where] + [on(c.rollup, table) for c in where]
    stmt = select(*labels.values()).where(*pick.at, *conds)
    return stmt, keys, labels, coarse


def _base_statement(
    source: Source,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    where: Sequence[Condition],
    filters: Filters,
) -> tuple[Any, list[Any], dict[str, Any]]:
    labels: dict[str, Any] = {}
    where = [*where, *_shared_when(measures, by, where)]
    rows = None if source.rows is None else source.rows(filters)
    subset = source.indexed or any(c.indexed for c in where)
    keys = [grouping_key(d.base) if d.steer and subset else _base_form(d.base, rows) for d in by]
    for d, key in zip(by, keys, strict=True):
        labels[d.name] = key.label(d.name)
    for m in measures:
        expr = _base_measure(m, where, rows=rows)
        if m.aggregate == "sum":
            expr = func.coalesce(expr, 0)
        labels[m.name] = expr.label(m.name)
    stmt = (
        select(*labels.values())
        .select_from(source.base if rows is None else rows)
        .where(*source.where, *(c.base for c in where))
    )
    if rows is None:
        restrict = source.restrict_in_index if subset else source.restrict
        stmt = restrict(stmt, filters)
    return stmt, keys, labels


def _compile(
    conn: Connection,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    where: Sequence[Condition],
    filters: Filters,
    *,
    order: Sequence[Order],
    limit: int | None,
    offset: int | None,
    rollups_only: bool = False,
) -> _Compiled | None:
    source = _check(measures, by, where)
    pick = _pick(conn, source, measures, by, where, filters)
    coarse: dict[str, Callable[[int], int]] = {}
    if pick is not None:
        stmt, keys, labels, coarse = _rollup_statement(pick, source, measures, by, where, filters)
    elif rollups_only:
        return None
    else:
        stmt, keys, labels = _base_statement(source, measures, by, where, filters)
    if keys:
        stmt = stmt.group_by(*keys)
    if not coarse:
        # Finer rows are ordered and paged once summed (:func:`_summed_coarse`).
        stmt = _ordered(stmt, labels, order)
        if limit is not None:
            stmt = stmt.limit(limit)
        if offset is not None:
            stmt = stmt.offset(offset)
    return _Compiled(stmt, coarse)


def statement(
    conn: Connection,
    measures: Sequence[Measure],
    by: Sequence[Dimension] = (),
    where: Sequence[Condition] = (),
    filters: Filters = NO_FILTERS,
    *,
    order: Sequence[Order] = (),
    limit: int | None = None,
    offset: int | None = None,
) -> Select[Any]:
    """The statement of a request (see :func:`read`): its columns are the dimensions, then the
    measures, each labelled by its name. (A request read finer than asked, from a
    :class:`db.catalogue.Coarse` form, needs :func:`read`.)"""
    compiled = _compile(conn, measures, by, where, filters, order=order, limit=limit, offset=offset)
    assert compiled is not None and not compiled.coarse, "read() sums the finer rows"
    result: Select[Any] = compiled.stmt
    return result


def _summed_coarse(
    df: pd.DataFrame,
    compiled: _Compiled,
    by: Sequence[Dimension],
    measures: Sequence[Measure],
    order: Sequence[Order],
    limit: int | None,
    offset: int | None,
) -> pd.DataFrame:
    """The rows read finer than asked, each mapped to its asked value and summed, ordered and
    paged as the request asks."""
    for name, to in compiled.coarse.items():
        df[name] = [to(int(v)) for v in df[name]]
    names = [d.name for d in by]
    df = df.groupby(names, as_index=False, sort=False)[[m.name for m in measures]].sum()
    if order:
        df = df.sort_values([n for n, _ in order], ascending=[not down for _, down in order])
    start = offset or 0
    df = df.iloc[start : None if limit is None else start + limit]
    return df.reset_index(drop=True)


def _one_pass(
    conn: Connection,
    measures: Sequence[Measure],
    dim: Dimension,
    where: Sequence[Condition],
    filters: Filters,
) -> list[tuple[Any, ...]] | None:
    """The rows of a count per value of ``dim`` as one pass of filtered counts, or ``None``
    when a value outside ``dim.values`` is counted (the grouped statement then reads it)."""
    source = dim.source
    values = dim.values or ()
    subset = source.indexed or any(c.indexed for c in where)
    present = [func.count().filter(dim.base == v) for v in values]
    per_value = [_base_measure(m, where, dim.base == v) for v in values for m in measures]
    restrict = source.restrict_in_index if subset else source.restrict
    row = conn.execute(
        restrict(
            select(func.count(), *present, *per_value)
            .select_from(source.base)
            .where(*source.where, *(c.base for c in where)),
            filters,
        )
    ).one()
    counted, found, rest = row[0], row[1 : 1 + len(values)], row[1 + len(values) :]
    if counted != sum(found):
        return None
    width = len(measures)
    return [
        (value, *rest[i * width : (i + 1) * width])
        for i, (value, n) in enumerate(zip(values, found, strict=True))
        if n
    ]


def _ascending(values: Sequence[Any]) -> bool:
    # The one pass gives its rows in the order of the values.
    return list(values) == sorted(values)


def _one_pass_rows(
    conn: Connection,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    where: Sequence[Condition],
    filters: Filters,
    order: Sequence[Order],
    limit: int | None,
) -> list[tuple[Any, ...]] | None:
    """The rows of the request as one pass (:func:`_one_pass`) where that shape applies."""
    if (
        len(by) == 1
        and by[0].values is not None
        and (not order or (list(order) == [(by[0].name, False)] and _ascending(by[0].values)))
        and limit is None
        and all(m.aggregate in ("count", "sum") and m.rollup is None for m in measures)
        and one_pass_counts(filters)
        and by[0].source.rows is None
        and _pick(conn, by[0].source, measures, by, where, filters) is None
    ):
        return _one_pass(conn, measures, by[0], where, filters)
    return None


def rows(
    conn: Connection,
    measures: Sequence[Measure],
    by: Sequence[Dimension] = (),
    where: Sequence[Condition] = (),
    filters: Filters = NO_FILTERS,
    *,
    order: Sequence[Order] = (),
    limit: int | None = None,
    offset: int | None = None,
) -> list[tuple[Any, ...]]:
    """:func:`read`'s rows as tuples (for callers that build no frame)."""
    found = _one_pass_rows(conn, measures, by, where, filters, order, limit)
    if found is not None:
        return found
    compiled = _compile(conn, measures, by, where, filters, order=order, limit=limit, offset=offset)
    assert compiled is not None
    return _tuples(conn, compiled, measures, by, order, limit, offset)


def _tuples(
    conn: Connection,
    compiled: _Compiled,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    order: Sequence[Order],
    limit: int | None,
    offset: int | None,
) -> list[tuple[Any, ...]]:
    if compiled.coarse:
        frame = _frame(conn, compiled, measures, by, order, limit, offset)
        return list(frame.itertuples(index=False, name=None))
    return [tuple(row) for row in conn.execute(compiled.stmt)]


def _frame(
    conn: Connection,
    compiled: _Compiled,
    measures: Sequence[Measure],
    by: Sequence[Dimension],
    order: Sequence[Order],
    limit: int | None,
    offset: int | None,
) -> pd.DataFrame:
    df = to_frame(conn, compiled.stmt)
    if compiled.coarse:
        df = _summed_coarse(df, compiled, by, measures, order, limit, offset)
    return df


def read(
    conn: Connection,
    measures: Sequence[Measure],
    by: Sequence[Dimension] = (),
    where: Sequence[Condition] = (),
    filters: Filters = NO_FILTERS,
    *,
    order: Sequence[Order] = (),
    limit: int | None = None,
    offset: int | None = None,
) -> pd.DataFrame:
    """``measures`` per value of the dimensions ``by`` (every combination that has rows),
    counted over the rows where every condition of ``where`` holds, under ``filters``.

    Columns: the dimensions' names, then the measures'; ordered by ``order``, at most
    ``limit`` rows after ``offset``. Ungrouped, one row (counts of nothing are 0).
    """
    found = _one_pass_rows(conn, measures, by, where, filters, order, limit)
    if found is not None:
        import pandas as pd

        return pd.DataFrame(found, columns=[*(d.name for d in by), *(m.name for m in measures)])
    compiled = _compile(conn, measures, by, where, filters, order=order, limit=limit, offset=offset)
    assert compiled is not None
    return _frame(conn, compiled, measures, by, order, limit, offset)


def from_rollups(
    conn: Connection,
    measures: Sequence[Measure],
    by: Sequence[Dimension] = (),
    where: Sequence[Condition] = (),
    filters: Filters = NO_FILTERS,
) -> list[tuple[Any, ...]] | None:
    """:func:`rows` where a rollup answers, else ``None``: for a figure that a caller has a
    cheaper way to read than the base tables (an estimate the rollup settles, or not)."""
    compiled = _compile(
        conn, measures, by, where, filters, order=(), limit=None, offset=None, rollups_only=True
    )
    if compiled is None:
        return None
    return _tuples(conn, compiled, measures, by, (), None, None)


def counts(
    conn: Connection,
    measures: Sequence[Measure],
    where: Sequence[Condition] = (),
    filters: Filters = NO_FILTERS,
) -> dict[str, int]:
    """``measures`` over every row where ``where`` holds: name -> value (0 for no rows)."""
    row = conn.execute(statement(conn, measures, (), where, filters)).one()
    return {m.name: int(v or 0) for m, v in zip(measures, row, strict=True)}


def _under(m: Measure, where: Sequence[Condition]) -> Measure | None:
    """``m`` counted only where every condition of ``where`` holds as well (``None``: a
    measure that cannot take them as its own condition)."""
    if not where:
        return m
    if m.aggregate not in ("count", "sum") or m.rollup is not None or m.apart is not None:
        return None
    conds = [*where, *([m.when] if m.when is not None and m.when not in where else [])]
    when = conds[0]
    for cond in conds[1:]:
        when = when & cond
    return replace(m, when=when)


def counts_of(
    conn: Connection,
    requests: Sequence[tuple[Sequence[Measure], Sequence[Condition]]],
    filters: Filters = NO_FILTERS,
) -> dict[str, int]:
    """Several ungrouped requests of one source, ``(measures, where)`` each, as :func:`counts`
    gives them: one statement where a rollup answers them all (each measure counted under its
    request's conditions), else one per request (each reads its own indexed subset)."""
    folded = [_under(m, where) for measures, where in requests for m in measures]
    together = [m for m in folded if m is not None]
    if len(together) == len(folded) and together:
        source = _source(together, (), ())
        if _pick(conn, source, together, (), (), filters) is not None:
            return counts(conn, together, (), filters)
    found: dict[str, int] = {}
    for measures, where in requests:
        found |= counts(conn, measures, where, filters)
    return found


__all__ = ["Order", "counts", "counts_of", "from_rollups", "read", "rows", "statement"]
