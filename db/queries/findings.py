"""Queries behind the Findings page: every finding kind, and the list of its occurrences.

A name mismatch is one problem stored twice (on the call and on the Tool Message that answers
it under another name); every count and list here takes it once, from the call. The message of
an occurrence is :func:`db.contract.vocabulary.finding_message` of the stored facts it is about, the
sentence ``toollens lint`` prints for it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    case,
    func,
    select,
    tuple_,
)

from db import figures
from db.catalogue import (
    FINDING_KIND,
    FINDING_TOOL,
    FINDING_TOOLS,
    FINDING_TRACES,
    FINDINGS_N,
    ON_A_TOOL,
    finding_kind,
)
from db.contract.vocabulary import FINDING_KINDS, finding_level, finding_message
from db.queries.common import TRACE, call_pair_key, labelled, result_pair_key, to_frame
from db.queries.filters import NO_FILTERS, Filters, restrict_findings, restrict_rows
from db.queries.planner import bounded_walks
from db.schema import FindingRow, ToolCallRow, ToolResultRow, aliased

#: Columns of :func:`finding_occurrences`.
OCCURRENCE_COLUMNS: tuple[str, ...] = (
    "trace", "title", "pair", "tool", "call_id", "message",
)  # fmt: skip


def finding_kind_counts(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Every finding kind in vocabulary order, zeros included.

    Columns: ``kind``, ``level`` (``error`` / ``warning``), ``occurrences``, ``traces`` (traces
    with at least one), ``tools`` (tools with at least one).
    """
    with engine.connect() as conn:
        rows = figures.rows(
            conn, [FINDINGS_N, FINDING_TRACES, FINDING_TOOLS], [FINDING_KIND], filters=filters
        )
    found = {str(name): (int(n), int(t), int(u)) for name, n, t, u in rows}
    kinds = list(FINDING_KINDS) + sorted(set(found) - set(FINDING_KINDS))
    return pd.DataFrame(
        {
            "kind": kinds,
            "level": [finding_level(k) for k in kinds],
            "occurrences": [found.get(k, (0, 0, 0))[0] for k in kinds],
            "traces": [found.get(k, (0, 0, 0))[1] for k in kinds],
            "tools": [found.get(k, (0, 0, 0))[2] for k in kinds],
        }
    )


def finding_counts_by_tool(engine: Engine, filters: Filters = NO_FILTERS) -> pd.DataFrame:
    """Occurrences per tool and kind: ``tool``, ``kind``, ``occurrences`` (the tool scorecard's
    counts per kind), by tool then vocabulary order."""
    with engine.connect() as conn:
        df = figures.read(
            conn,
            [FINDINGS_N.named("occurrences")],
            [FINDING_TOOL, FINDING_KIND],
            [ON_A_TOOL],
            filters,
        )
    order = {kind: i for i, kind in enumerate(FINDING_KINDS)}
    df["_order"] = df["kind"].map(lambda k: order.get(k, len(order)))
    df = df.sort_values(["tool", "_order", "kind"]).drop(columns="_order")
    return df.reset_index(drop=True)


def _of_kind(kind: str, columns: Any = FindingRow) -> list[ColumnElement[bool]]:
    """The findings of ``kind`` that count (``name = kind AND COUNTED_FINDING``): a name mismatch
    counts on its call; every other kind's rows all count. ``columns``: ``findings``' columns,
    or a subquery's of the same names."""
    if kind == "name_mismatch":
        return [columns.name == kind, columns.call_index.is_not(None)]
    return [columns.name == kind]


def _finding_on(row: Any, *, on_call: bool) -> Any:
    """``row`` (a call where ``on_call``, else a Tool Message) is the one the finding is about:
    a finding with a ``call_index`` is about that call, another about its message's result."""
    f = FindingRow
    listed = f.call_index.is_not(None) if on_call else f.call_index.is_(None)
    same = [row.trace_id == f.trace_id, row.message_seq == f.message_seq]
    return and_(listed, *same, *([row.call_index == f.call_index] if on_call else []))


def _occurrences(page: Any) -> Any:
    """The occurrences of ``page`` (a subquery of finding ids) with the facts their message is
    made of."""
    call = aliased(ToolCallRow, name="call")
    result = aliased(ToolResultRow, name="result")
    answer = aliased(ToolResultRow, name="answer")
    call_pair = call_pair_key(FindingRow.message_seq, FindingRow.call_index)
    result_pair = result_pair_key(result)
    return (
        select(
            TRACE.display_id.label("trace"),
            TRACE.title.label("title"),
            case((FindingRow.call_index.is_not(None), call_pair), else_=result_pair).label("pair"),
            FindingRow.tool.label("tool"),
            func.coalesce(call.tool_call_id, result.tool_call_id).label("given_id"),
            *labelled(FindingRow.message_seq, FindingRow.call_index),
            result.call_seq.label("answers_seq"),
            result.call_index.label("answers_index"),
            *labelled(call.schema_issue, call.schema_detail, call.args_error),
            answer.provided_name.label("answered_name"),
            *labelled(result.tokens, result.summary),
        )
        .select_from(page)
        .join(FindingRow, FindingRow.id == page.c.id)
        .join(TRACE, TRACE.id == FindingRow.trace_id)
        .outerjoin(call, _finding_on(call, on_call=True))
        .outerjoin(
            answer,
            and_(answer.trace_id == FindingRow.trace_id, answer.message_seq == call.result_seq),
        )
        .outerjoin(result, _finding_on(result, on_call=False))
        .order_by(FindingRow.id)
    )


def _clickhouse_occurrences(conn: Connection, page: Any) -> pd.DataFrame:
    """:func:`_occurrences` on ClickHouse, which joins once per SELECT: the page's findings,
    their traces, calls and results read apart (each by its keys) and put together here."""
    f, c, r = FindingRow, ToolCallRow, ToolResultRow
    found = conn.execute(
        select(f.trace_id, f.tool, f.message_seq, f.call_index)
        .where(f.id.in_(select(page.c.id)))
        .order_by(f.id)
    ).all()
    if not found:
        return pd.DataFrame(columns=_OCCURRENCE_FACTS)
    traces = {
        i: (display_id, title)
        for i, display_id, title in conn.execute(
            select(TRACE.id, TRACE.display_id, TRACE.title).where(
                TRACE.id.in_({t for t, *_ in found})
            )
        )
    }
    call_keys = [(t, s, i) for t, _, s, i in found if i is not None]
    calls = {
        (t, s, i): rest
        for t, s, i, *rest in conn.execute(
            select(
                c.trace_id, c.message_seq, c.call_index, c.tool_call_id, c.schema_issue,
                c.schema_detail, c.args_error, c.result_seq,
            ).where(tuple_(c.trace_id, c.message_seq, c.call_index).in_(call_keys or [(0, 0, 0)]))
        )
    }  # fmt: skip
    result_keys: set[tuple[Any, Any]] = {(t, s) for t, _, s, i in found if i is None}
    result_keys |= {(t, rest[4]) for (t, _, _), rest in calls.items() if rest[4] is not None}
    results = {
        (t, s): rest
        for t, s, *rest in conn.execute(
            select(
                r.trace_id, r.message_seq, r.tool_call_id, r.call_seq, r.call_index, r.tokens,
                r.summary, r.provided_name,
            ).where(tuple_(r.trace_id, r.message_seq).in_(list(result_keys) or [(0, 0)]))
        )
    }  # fmt: skip
    none: list[Any] = [None] * 8
    rows = []
    for trace_id, tool, seq, index in found:
        call = calls.get((trace_id, seq, index), none[:5]) if index is not None else none[:5]
        result = results.get((trace_id, seq), none[:6]) if index is None else none[:6]
        answer = results.get((trace_id, call[4]), none[:6]) if call[4] is not None else none[:6]
        if index is not None:
            pair = f"{seq}:{index}"
        else:
            pair = f"{result[1]}:{result[2]}" if result[1] is not None else f"r{seq}"
        display_id, title = traces.get(trace_id, (None, None))
        rows.append(
            (
                display_id, title, pair, tool, call[0] if call[0] is not None else result[0],
                seq, index, result[1], result[2], call[1], call[2], call[3], answer[5],
                result[3], result[4],
            )
        )  # fmt: skip
    return pd.DataFrame(rows, columns=_OCCURRENCE_FACTS)


#: The columns of :func:`_occurrences`.
_OCCURRENCE_FACTS = [
    "trace", "title", "pair", "tool", "given_id", "message_seq", "call_index", "answers_seq",
    "answers_index", "schema_issue", "schema_detail", "args_error", "answered_name", "tokens",
    "summary",
]  # fmt: skip


def finding_occurrence_count(engine: Engine, kind: str, filters: Filters = NO_FILTERS) -> int:
    """How many occurrences of ``kind`` :func:`finding_occurrences` pages through: the kind's
    counted findings, from the findings rollup where it answers the filters (counted from the
    findings' rows, a frequent kind is a read of every one of its rows)."""
    with engine.connect() as conn:
        return figures.counts(conn, [FINDINGS_N], [finding_kind(kind)], filters)["n"]


def finding_occurrences(
    engine: Engine,
    kind: str,
    filters: Filters = NO_FILTERS,
    *,
    limit: int = 50,
    offset: int = 0,
) -> pd.DataFrame:
    """One page of the occurrences of one finding kind across traces, in import order.

    Columns (:data:`OCCURRENCE_COLUMNS`): ``trace`` (display id), ``title``, ``pair`` (URL
    ``pair`` value: the call, else the Tool Message), ``tool``, ``call_id`` (the call's
    ``tool_call_id``, else the Tool Message's; ``#seq.index`` / ``#seq`` without one),
    ``message`` (:func:`db.contract.vocabulary.finding_message`).
    """
    # The page's ids first, in id order; only those few are joined to their trace, call and
    # results.
    with engine.connect() as conn:
        found: list[int] | None = None
        for walk in bounded_walks(conn, offset + limit):
            # The first findings in id order (the table itself), the kind and the filters
            # tested on each: a frequent kind fills the page within the first few hundred.
            f = FindingRow
            first = (
                select(f.id, f.name, f.call_index, f.trace_id, f.tool)
                .order_by(f.id)
                .limit(walk)
                .subquery("walked")
            )
            ids = restrict_rows(
                select(first.c.id).where(*_of_kind(kind, first.c)),
                filters,
                tool=first.c.tool,
                trace_id=first.c.trace_id,
            )
            found = list(conn.execute(_page(ids, first.c.id, limit, offset)).scalars())
            if len(found) == limit:
                break
            found = None
        if found is not None:
            page = select(FindingRow.id).where(FindingRow.id.in_(found)).subquery("page")
        else:
            ids = restrict_findings(select(FindingRow.id).where(*_of_kind(kind)), filters)
            page = _page(ids, FindingRow.id, limit, offset).subquery("page")
        if conn.dialect.name == "clickhouse":
            rows = _clickhouse_occurrences(conn, page)
        else:
            rows = to_frame(conn, _occurrences(page))
    if rows.empty:
        return pd.DataFrame({column: pd.Series([], dtype=object) for column in OCCURRENCE_COLUMNS})
    records = rows.astype(object).where(rows.notna(), None).to_dict("records")
    rows["call_id"] = [_call_id(r) for r in records]
    rows["message"] = [
        finding_message(
            kind,
            schema_issue=r["schema_issue"],
            schema_detail=r["schema_detail"],
            args_error=r["args_error"],
            answered_name=r["answered_name"],
            tokens=int(r["tokens"]) if r["tokens"] is not None else None,
            summary=r["summary"],
        )
        for r in records
    ]
    return rows[list(OCCURRENCE_COLUMNS)].reset_index(drop=True)


def _page(ids: Any, order: Any, limit: int, offset: int) -> Any:
    return ids.order_by(order).limit(limit).offset(offset)


def _call_id(row: dict[str, Any]) -> str:
    if row["given_id"]:
        return str(row["given_id"])
    if row["call_index"] is not None:
        return f"#{row['message_seq']}.{row['call_index']}"
    if row["answers_seq"] is not None:  # the Tool Message's call, as lint names it
        return f"#{row['answers_seq']}.{row['answers_index']}"
    return f"#{row['message_seq']}"
