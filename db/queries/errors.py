"""Queries behind the Errors page: error types by tool and over time, and grouped errors.

Every figure is aggregated in SQL and uses the effective error type (a reviewer's correction wins
over the derived one). Fingerprints (tool + normalized first line, computed at import) group "the
same error" across traces; the drill-down pages through one fingerprint's occurrences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import pandas as pd
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    func,
    select,
    tuple_,
)

from db import dialect, figures
from db.catalogue import (
    ERROR_TYPE_LABEL,
    ERRORS,
    FINGERPRINT,
    FINGERPRINT_COUNT,
    FINGERPRINT_ERROR_TYPE,
    FINGERPRINT_ERRORS,
    FINGERPRINT_TOOL,
    FINGERPRINT_TRACES,
    IS_ERROR,
    RESULTS_N,
    RULE,
    STATUS_SOURCE,
    TOOL,
    Dimension,
    Measure,
    highest,
)
from db.queries.common import (
    TRACE,
    error_type_label,
    labelled,
    result_message,
    result_pair_key,
    to_frame,
)
from db.queries.filters import NO_FILTERS, Filters, SelectT
from db.queries.planner import restrict_results_in_index
from db.schema import MessageRow, ToolResultRow

TimeUnit = Literal["hour", "day", "import"]

#: Characters of a Tool Message shown as an example (enough for one error line and its advice).
EXAMPLE_CHARS = 300

#: Hour buckets up to this span of time, day buckets beyond it.
HOURLY_MAX_SECONDS = 3 * 24 * 3600


def _is_error() -> ColumnElement[bool]:
    return ToolResultRow.status == "error"


def _restrict(stmt: SelectT, filters: Filters) -> SelectT:
    # Every statement here reads error results: filtered where they lie, in the errors index.
    return restrict_results_in_index(stmt, filters)


def error_totals(engine: Engine, filters: Filters = NO_FILTERS) -> tuple[int, int]:
    """(error results, all results) among the filtered Tool Messages."""
    with engine.connect() as conn:
        # Apart: the errors off the errors index, the results off the trace index.
        n_errors = figures.counts(conn, [ERRORS], where=[IS_ERROR], filters=filters)["errors"]
        n_results = figures.counts(conn, [RESULTS_N], filters=filters)["results"]
    return n_errors, n_results


def tool_error_types(conn: Connection, filters: Filters) -> pd.DataFrame:
    """Errors per (tool, effective error type): ``tool``, ``error_type``, ``errors``."""
    return figures.read(
        conn, [ERRORS], by=[TOOL, ERROR_TYPE_LABEL], where=[IS_ERROR], filters=filters
    )


def error_types_by_tool(
    engine: Engine, filters: Filters = NO_FILTERS, *, top_tools: int = 15
) -> pd.DataFrame:
    """Errors per (tool, error type) for the ``top_tools`` tools with the most errors.

    Columns: ``tool``, ``error_type``, ``errors``; tools ordered by their error total.
    """
    # Every (tool, error type) in one pass (a few hundred groups); the top tools are picked
    # from those rows (an IN on the top tools made SQLite read tools' results through another
    # index).
    with engine.connect() as conn:
        df = tool_error_types(conn, filters)
    if df.empty:
        return df
    totals = df.groupby("tool")["errors"].transform("sum")
    order = df.assign(_total=totals).sort_values(
        ["_total", "tool", "errors", "error_type"], ascending=[False, True, False, True]
    )
    top = order.drop_duplicates("tool")["tool"].head(top_tools)
    order = order[order["tool"].isin(top)]
    return order.drop(columns="_total").reset_index(drop=True)


def _error_time() -> ColumnElement[Any]:
    # A Tool Message's own timestamp when the format has one, else its trace's start.
    return func.coalesce(ToolResultRow.timestamp, TRACE.started_at)


def error_time_unit(engine: Engine, filters: Filters = NO_FILTERS) -> TimeUnit:
    """The natural time axis for the errors: hours for a short span, days, or imports.

    Traces without any timestamp (many formats have none) are placed by their import instead.
    """
    ts = _error_time()
    stmt = _restrict(
        select(func.min(ts), func.max(ts))
        .select_from(ToolResultRow)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id)
        .where(_is_error()),
        filters,
    )
    with engine.connect() as conn:
        first, last = conn.execute(stmt).one()
    if first is None or last is None:
        return "import"
    first, last = pd.Timestamp(first), pd.Timestamp(last)
    return "hour" if (last - first).total_seconds() <= HOURLY_MAX_SECONDS else "day"


def errors_over_time(
    engine: Engine, filters: Filters = NO_FILTERS, *, unit: TimeUnit = "day"
) -> pd.DataFrame:
    """Errors per (time bucket, error type).

    Columns: ``bucket`` (``YYYY-MM-DD``, ``YYYY-MM-DD HH:00`` or ``import N``), ``error_type``,
    ``errors``; sorted by bucket. With ``unit="hour"``/``"day"`` errors without any timestamp
    are left out; ``unit="import"`` places every error by the import that brought its trace.
    """
    label = error_type_label()
    with engine.connect() as conn:
        if unit == "import":
            bucket: Any = TRACE.import_id
        else:
            bucket = dialect.time_bucket(conn, _error_time(), unit)
        stmt = _restrict(
            select(bucket.label("bucket"), label.label("error_type"), func.count().label("errors"))
            .select_from(ToolResultRow)
            .join(TRACE, TRACE.id == ToolResultRow.trace_id)
            .where(_is_error(), bucket.is_not(None))
            .group_by(bucket, label)
            .order_by(bucket, label),
            filters,
        )
        df = to_frame(conn, stmt)
    if unit == "import" and not df.empty:
        df["bucket"] = "import " + df["bucket"].astype(int).astype(str)
    return df


def error_sources(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Errors by how they were recognized: ``status_source`` and the rule that decided.

    Columns: ``status_source`` (explicit | protocol | inferred), ``rule``, ``errors``; the most
    frequent first. ``explicit`` errors were flagged by the source (``is_error`` …); ``inferred``
    ones come from text rules, so their ``rule`` says why.
    """
    with engine.connect() as conn:
        return figures.read(
            conn,
            [ERRORS],
            by=[STATUS_SOURCE, RULE],
            where=[IS_ERROR],
            filters=filters,
            order=[("errors", True), ("status_source", False), ("rule", False)],
        )


def count_error_fingerprints(engine: Engine, filters: Filters = NO_FILTERS) -> int:
    """How many distinct error fingerprints the filtered errors have."""
    with engine.connect() as conn:
        return figures.counts(conn, [FINGERPRINT_COUNT], filters=filters)["fingerprints"]


def error_fingerprints(
    engine: Engine, filters: Filters = NO_FILTERS, *, limit: int = 50, offset: int = 0
) -> pd.DataFrame:
    """One page of error groups, the most frequent first.

    Columns: ``fingerprint``, ``tool``, ``error_type``, ``errors`` (occurrences), ``traces``
    ("same error in N traces"), ``example`` (the first occurrence's content, at most
    ``EXAMPLE_CHARS`` characters).
    """
    if engine.dialect.name == "clickhouse":
        return _clickhouse_fingerprints(engine, filters, limit, offset)
    with engine.connect() as conn:
        groups = _fingerprint_page(conn, filters, limit, offset)
    example = ToolResultRow.__table__.alias("example")
    stmt = (
        select(
            groups.c.fingerprint,
            groups.c.tool,
            groups.c.error_type,
            groups.c.errors,
            groups.c.traces,
            func.substr(MessageRow.content, 1, EXAMPLE_CHARS).label("example"),
        )
        .select_from(groups)
        .join(example, example.c.id == groups.c.example_id)
        .join(
            MessageRow,
            and_(
                MessageRow.trace_id == example.c.trace_id, MessageRow.seq == example.c.message_seq
            ),
        )
        .order_by(groups.c.errors.desc(), groups.c.fingerprint)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def _clickhouse_fingerprints(
    engine: Engine, filters: Filters, limit: int, offset: int
) -> pd.DataFrame:
    """:func:`error_fingerprints` on ClickHouse, which has no correlated subquery and (18.16)
    one JOIN per SELECT: the page, then its groups' first occurrences (``min(id)``, the first
    in id order), then their messages, each a query of its own, put together here."""
    with engine.connect() as conn:
        page = to_frame(conn, _groups(conn, filters, limit, offset))
        if page.empty:
            return page.assign(example=pd.Series(dtype=object))
        firsts = _restrict(
            select(ToolResultRow.fingerprint, func.min(ToolResultRow.id).label("id"))
            .where(_is_error(), ToolResultRow.fingerprint.in_(list(page["fingerprint"])))
            .group_by(ToolResultRow.fingerprint),
            filters,
        )
        first = {fp: i for fp, i in conn.execute(firsts)}
        ids = list(first.values())
        where = conn.execute(
            select(ToolResultRow.id, ToolResultRow.trace_id, ToolResultRow.message_seq).where(
                ToolResultRow.id.in_(ids)
            )
        ).all()
        place = {i: (t, s) for i, t, s in where}
        texts = conn.execute(
            select(
                MessageRow.trace_id,
                MessageRow.seq,
                func.substr(MessageRow.content, 1, EXAMPLE_CHARS),
            ).where(tuple_(MessageRow.trace_id, MessageRow.seq).in_(list(place.values())))
        ).all()
    text = {(t, s): c for t, s, c in texts}
    # The example message of each group; as in the relational form, a group without one is
    # left out.
    example = {fp: place[i] for fp, i in first.items() if place.get(i) in text}
    page["example"] = [text[example[fp]] if fp in example else None for fp in page["fingerprint"]]
    return page[[fp in example for fp in page["fingerprint"]]].reset_index(drop=True)


def group_request(
    pick: Callable[[Dimension], Measure],
) -> tuple[list[Measure], list[Dimension], list[figures.Order]]:
    """The request of the error groups, one per fingerprint, the most frequent first: the
    measures (``tool`` and ``error_type``, the value ``pick`` takes among the group's errors,
    :func:`db.catalogue.highest` or ``lowest``; ``errors``, ``traces``), the dimensions and the
    order, as :func:`db.figures.read` takes them."""
    measures = [pick(FINGERPRINT_TOOL), pick(FINGERPRINT_ERROR_TYPE)]
    measures += [FINGERPRINT_ERRORS, FINGERPRINT_TRACES]
    return measures, [FINGERPRINT], [("errors", True), ("fingerprint", False)]


def _groups(conn: Connection, filters: Filters, limit: int, offset: int) -> Any:
    """One page of error groups (``fingerprint``, ``tool``, ``error_type``, ``errors``,
    ``traces``), the most frequent first."""
    measures, by, order = group_request(highest)
    return figures.statement(
        conn, measures, by, filters=filters, order=order, limit=limit, offset=offset
    )


def _fingerprint_page(conn: Connection, filters: Filters, limit: int, offset: int) -> Any:
    """One page of error groups (:func:`_groups`), each group's first occurrence
    (``example_id``) looked up for the page's groups only."""
    page = _groups(conn, filters, limit, offset).subquery()
    # The first in id order, not min(id): PostgreSQL then walks the fingerprint's entries of
    # ix_tool_results_error_examples in order and stops at the first picked trace.
    example_id = (
        _restrict(
            select(ToolResultRow.id).where(
                _is_error(), ToolResultRow.fingerprint == page.c.fingerprint
            ),
            filters,
        )
        .order_by(ToolResultRow.id)
        .limit(1)
        .scalar_subquery()
    )
    return select(page, example_id.label("example_id")).subquery()


def count_fingerprint_occurrences(
    engine: Engine, fingerprint: str, filters: Filters = NO_FILTERS
) -> int:
    """How many filtered error results carry ``fingerprint``."""
    stmt = _restrict(
        select(func.count()).where(_is_error(), ToolResultRow.fingerprint == fingerprint),
        filters,
    )
    with engine.connect() as conn:
        return int(conn.execute(stmt).scalar_one())


def fingerprint_occurrences(
    engine: Engine,
    fingerprint: str,
    filters: Filters = NO_FILTERS,
    *,
    limit: int = 50,
    offset: int = 0,
) -> pd.DataFrame:
    """One page of the occurrences of one error fingerprint, in import order.

    Columns: ``trace`` (display id), ``pair`` (URL ``pair`` value), ``message_seq``, ``tool``,
    ``error_type``, ``status_source``, ``rule``, ``timestamp``, ``content`` (at most
    ``EXAMPLE_CHARS`` characters).
    """
    stmt = _restrict(
        select(
            TRACE.display_id.label("trace"),
            result_pair_key().label("pair"),
            *labelled(ToolResultRow.message_seq, ToolResultRow.tool),
            error_type_label().label("error_type"),
            *labelled(ToolResultRow.status_source, ToolResultRow.rule, ToolResultRow.timestamp),
            func.substr(MessageRow.content, 1, EXAMPLE_CHARS).label("content"),
        )
        .select_from(ToolResultRow)
        .join(TRACE, TRACE.id == ToolResultRow.trace_id)
        .join(MessageRow, result_message())
        .where(_is_error(), ToolResultRow.fingerprint == fingerprint)
        .order_by(ToolResultRow.id)
        .limit(limit)
        .offset(offset),
        filters,
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)
