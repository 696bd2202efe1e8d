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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, and_, func, select

from db.catalogue import Condition, Dimension, Measure, Source
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


def _rollup_measure(m: Measure, grouped: bool, where: Sequence[Condition], filters: Filters) -> Any:
    when = _when(m, where)
    if m.rollup is not None:
        expr = m.rollup(filters)
    elif m.aggregate == "count":
        assert when is None or when.rollup is not None, f"{m.name} needs a rollup form"
        expr = total(m.source.rollup.c.n, None if when is None else when.rollup)
    else:
        assert m.value is not None
        value = m.value[1]
        if m.aggregate == "sum":
            expr = total(value, None if when is None else when.rollup)
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


def _base_measure(m: Measure, where: Sequence[Condition], *also: Any) -> Any:
    own = _when(m, where)
    conds = [c for c in ((own.base if own is not None else None), *also) if c is not None]
    when = and_(*conds) if len(conds) > 1 else (conds[0] if conds else None)
    expr: Any
    if m.aggregate == "count":
        expr = func.count()
    else:
        assert m.value is not None
        value = m.value[0]
        if m.aggregate == "sum":
            expr = func.sum(value)
        elif m.aggregate == "min":
            expr = func.min(value)
        elif m.aggregate == "max":
            expr = func.max(value)
        else:
            expr = func.count(value.distinct())
    return expr if when is None else expr.filter(when)


def _rolled_up(by: Sequence[Dimension], where: Sequence[Condition]) -> bool:
    """Whether the rollup keeps every dimension and condition of a request (a bin width or a
    condition it does not store is read from the base tables)."""
    return all(d.rollup is not None for d in by) and all(c.rollup is not None for c in where)


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
    measures, each labelled by its name."""
    source = _source(measures, by, where)
    for d in by:
        if d.within is not None and d.within not in where:
            raise ValueError(f"{d.name} is kept where {d.within.name} only")
    for m in measures:
        if m.needs is not None and m.needs not in by:
            raise ValueError(f"{m.name} is counted per {m.needs.name} only")
    at = (
        scope(conn, source.rollup, filters, tool="all" if source.every_trace_row else "tool")
        if _rolled_up(by, where)
        else None
    )
    labels: dict[str, Any] = {}
    if at is not None:
        keys = [d.rollup for d in by]
        for d, key in zip(by, keys, strict=True):
            labels[d.name] = key.label(d.name)
        for m in measures:
            labels[m.name] = _rollup_measure(m, bool(by), where, filters).label(m.name)
        stmt: Any = select(*labels.values()).where(
            *at, *(c.rollup for c in where if c.rollup is not None)
        )
    else:
        where = [*where, *_shared_when(measures, by, where)]
        subset = source.indexed or any(c.indexed for c in where)
        keys = [grouping_key(d.base) if d.steer and subset else d.base for d in by]
        for d, key in zip(by, keys, strict=True):
            labels[d.name] = key.label(d.name)
        for m in measures:
            expr = _base_measure(m, where)
            if m.aggregate == "sum":
                expr = func.coalesce(expr, 0)
            labels[m.name] = expr.label(m.name)
        restrict = source.restrict_in_index if subset else source.restrict
        stmt = restrict(
            select(*labels.values())
            .select_from(source.base)
            .where(*source.where, *(c.base for c in where)),
            filters,
        )
    if keys:
        stmt = stmt.group_by(*keys)
    stmt = _ordered(stmt, labels, order)
    if limit is not None:
        stmt = stmt.limit(limit)
    if offset is not None:
        stmt = stmt.offset(offset)
    result: Select[Any] = stmt
    return result


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
        and scope(conn, by[0].source.rollup, filters) is None
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
    stmt = statement(conn, measures, by, where, filters, order=order, limit=limit, offset=offset)
    return [tuple(row) for row in conn.execute(stmt)]


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
    stmt = statement(conn, measures, by, where, filters, order=order, limit=limit, offset=offset)
    return to_frame(conn, stmt)


def counts(
    conn: Connection,
    measures: Sequence[Measure],
    where: Sequence[Condition] = (),
    filters: Filters = NO_FILTERS,
) -> dict[str, int]:
    """``measures`` over every row where ``where`` holds: name -> value (0 for no rows)."""
    row = conn.execute(statement(conn, measures, (), where, filters)).one()
    return {m.name: int(v or 0) for m, v in zip(measures, row, strict=True)}


__all__ = ["Order", "counts", "read", "rows", "statement"]
