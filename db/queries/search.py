"""Content search: the messages and tool-call arguments that hold a phrase, across traces.

A query is a phrase: its words (runs of letters and digits, any case) adjacent and in order,
so ``customer_4711`` finds ``customer_4711`` and ``customer-4711``, and ``permission denied``
finds "Permission denied" but not "denied permission". Each database answers from its own
full-text index (see the content search in :mod:`db.dialect`); the shared filters narrow the
traces, and the tool filter keeps the calls of that tool and the Tool Messages answering them.

A hit is one row of :data:`HIT_COLUMNS`: where it is (the trace, its title, the message's
``seq``, and the ``pair`` URL parameter of the Trace page for a call or a Tool Message), what it
is (``kind``: ``arguments`` of a call, a tool ``result``, or another ``message``) and the words
around the match (``snippet``, one line of plain text, the match between « and »).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import sqlalchemy as sa

from db.dialect import search_match, search_snippets, search_words
from db.queries.common import result_pair_key
from db.queries.filters import NO_FILTERS, Filters, restrict_calls, restrict_rows
from db.schema import MessageRow, ToolCallRow, ToolResultRow, TraceRow

#: The columns of a hit, in order.
HIT_COLUMNS: tuple[str, ...] = (
    "trace", "kind", "tool", "snippet", "title", "role", "pair", "seq",
)  # fmt: skip
#: Hits counted at most (the page says "more than" beyond): counting every match of a common
#: word reads its whole index entry.
COUNT_CAP = 10_000


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of hits and how many there are (at most :data:`COUNT_CAP`)."""

    hits: pd.DataFrame
    total: int

    @property
    def capped(self) -> bool:
        """True when there are more hits than were counted."""
        return self.total > COUNT_CAP


def _matches(conn: sa.Connection, row: Any, words: list[str], seq: Any, call_index: Any) -> Any:
    """The rows of the table of ``row`` (a message or a call) that hold ``words``: their table,
    ``row_id``, ``trace_id``, ``seq`` and ``call_index``."""
    source, match = search_match(conn, row.__table__, words)
    return (
        sa.select(
            sa.literal(row.__tablename__).label("source"),
            row.id.label("row_id"),
            row.trace_id.label("trace_id"),
            seq.label("seq"),
            call_index.label("call_index"),
        )
        .select_from(source)
        .where(match)
    )


def _message_hits(conn: sa.Connection, words: list[str], f: Filters) -> Any:
    stmt = _matches(conn, MessageRow, words, MessageRow.seq, sa.cast(sa.null(), sa.Integer))
    if f.tool:
        # A message's tool is that of the call it answers: the tool filter keeps Tool
        # Messages of that tool. Joined only then: a common word matches most messages.
        stmt = stmt.join(ToolResultRow, _answer())
    return restrict_rows(stmt, f, tool=ToolResultRow.tool, trace_id=MessageRow.trace_id)


def _answer() -> Any:
    return sa.and_(
        ToolResultRow.trace_id == MessageRow.trace_id, ToolResultRow.message_seq == MessageRow.seq
    )


def _message_details(conn: sa.Connection, ids: list[int]) -> dict[int, tuple[Any, ...]]:
    """``{message id: (kind, role, tool, pair)}`` of the messages of one page."""
    stmt = (
        sa.select(
            MessageRow.id,
            sa.case((MessageRow.role == "tool", sa.literal("result")), else_=sa.literal("message")),
            MessageRow.role,
            ToolResultRow.tool,
            sa.case(
                (ToolResultRow.id.is_not(None), result_pair_key()),
                else_=sa.cast(sa.null(), sa.String),
            ),
        )
        .outerjoin(ToolResultRow, _answer())
        .where(MessageRow.id.in_(ids))
    )
    return {row[0]: tuple(row[1:]) for row in conn.execute(stmt)}


def _call_details(conn: sa.Connection, ids: list[int]) -> dict[int, tuple[Any, ...]]:
    """``{call id: (kind, role, tool, pair)}`` of the calls of one page."""
    stmt = sa.select(
        ToolCallRow.id, ToolCallRow.tool_name, ToolCallRow.message_seq, ToolCallRow.call_index
    ).where(ToolCallRow.id.in_(ids))
    return {
        i: ("arguments", "assistant", tool, f"{seq}:{index}")
        for i, tool, seq, index in conn.execute(stmt)
    }


def _call_hits(conn: sa.Connection, words: list[str], f: Filters) -> Any:
    stmt = _matches(conn, ToolCallRow, words, ToolCallRow.message_seq, ToolCallRow.call_index)
    return restrict_calls(stmt, f)


def _hit(row: Any, detail: tuple[Any, ...], snippet: str) -> tuple[Any, ...]:
    """One hit in :data:`HIT_COLUMNS` order from a page row, its details and its snippet."""
    kind, role, tool, pair = detail
    values = {
        "trace": row.trace, "title": row.title, "kind": kind, "role": role, "tool": tool,
        "pair": pair, "seq": row.seq, "snippet": snippet,
    }  # fmt: skip
    return tuple(values[c] for c in HIT_COLUMNS)


def search_content(
    engine: sa.Engine,
    text: str,
    filters: Filters = NO_FILTERS,
    *,
    limit: int = 50,
    offset: int = 0,
) -> SearchPage:
    """The hits of ``text`` under ``filters``, in trace order then message order (columns
    :data:`HIT_COLUMNS`), ``limit`` from ``offset``; none when ``text`` has no word."""
    words = search_words(text)
    if not words:
        return SearchPage(pd.DataFrame(columns=list(HIT_COLUMNS)), 0)
    with engine.connect() as conn:
        parts = [_message_hits(conn, words, filters), _call_hits(conn, words, filters)]
        hits = sa.union_all(*parts).subquery("hits")
        total = conn.execute(
            sa.select(sa.func.count()).select_from(
                sa.select(hits.c.row_id).limit(COUNT_CAP + 1).subquery()
            )
        ).scalar_one()
        order = [hits.c.trace_id, hits.c.seq, sa.func.coalesce(hits.c.call_index, -1)]
        page = sa.select(hits).order_by(*order).limit(limit).offset(offset).subquery("page")
        rows = conn.execute(
            sa.select(
                page,
                TraceRow.display_id.label("trace"),
                TraceRow.title.label("title"),
            )
            .join(TraceRow, TraceRow.id == page.c.trace_id)
            .order_by(page.c.trace_id, page.c.seq, sa.func.coalesce(page.c.call_index, -1))
        ).all()
        # Details and snippets only for the rows shown: a common word matches most rows, and
        # cutting a snippet reads the whole text.
        details: dict[tuple[str, int], tuple[Any, ...]] = {}
        snippets: dict[tuple[str, int], str] = {}
        for source, detail in (("messages", _message_details), ("tool_calls", _call_details)):
            ids = [r.row_id for r in rows if r.source == source]
            details.update({(source, i): d for i, d in detail(conn, ids).items()})
            found = search_snippets(conn, source, words, ids)
            snippets.update({(source, i): s for i, s in found.items()})
    df = pd.DataFrame(
        [
            _hit(r, details[(r.source, r.row_id)], snippets.get((r.source, r.row_id), ""))
            for r in rows
        ],
        columns=list(HIT_COLUMNS),
    )
    df["seq"] = df["seq"].astype("Int64")
    return SearchPage(df, int(total))
