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
from sqlalchemy import (
    Connection,
    Engine,
    Integer,
    String,
    and_,
    case,
    cast,
    func,
    literal,
    null,
    select,
    union_all,
)

from db.dialect import search_match, search_snippets, search_words
from db.filters import NO_FILTERS, Filters, restrict_calls, restrict_rows
from db.queries.common import result_pair_key
from db.schema import MessageRow, ToolCallRow, ToolResultRow, TraceRow

#: The columns of a hit, in order.
HIT_COLUMNS: tuple[str, ...] = (
    "trace", "title", "kind", "role", "tool", "pair", "seq", "snippet",
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


def _message_hits(conn: Connection, words: list[str], f: Filters) -> Any:
    source, match = search_match(conn, MessageRow.__table__, words)
    answer = and_(
        ToolResultRow.trace_id == MessageRow.trace_id, ToolResultRow.message_seq == MessageRow.seq
    )
    stmt = (
        select(
            literal("messages").label("source"),
            MessageRow.id.label("row_id"),
            MessageRow.trace_id.label("trace_id"),
            case((MessageRow.role == "tool", literal("result")), else_=literal("message")).label(
                "kind"
            ),
            MessageRow.role.label("role"),
            ToolResultRow.tool.label("tool"),
            case(
                (ToolResultRow.id.is_not(None), result_pair_key()), else_=cast(null(), String)
            ).label("pair"),
            MessageRow.seq.label("seq"),
            cast(null(), Integer).label("call_index"),
        )
        .select_from(source)
        .outerjoin(ToolResultRow, answer)
        .where(match)
    )
    # A message's tool is that of the call it answers: the tool filter keeps Tool Messages.
    return restrict_rows(stmt, f, tool=ToolResultRow.tool, trace_id=MessageRow.trace_id)


def _call_hits(conn: Connection, words: list[str], f: Filters) -> Any:
    source, match = search_match(conn, ToolCallRow.__table__, words)
    stmt = (
        select(
            literal("tool_calls").label("source"),
            ToolCallRow.id.label("row_id"),
            ToolCallRow.trace_id.label("trace_id"),
            literal("arguments").label("kind"),
            literal("assistant").label("role"),
            ToolCallRow.tool_name.label("tool"),
            (
                cast(ToolCallRow.message_seq, String)
                + literal(":")
                + cast(ToolCallRow.call_index, String)
            ).label("pair"),
            ToolCallRow.message_seq.label("seq"),
            ToolCallRow.call_index.label("call_index"),
        )
        .select_from(source)
        .where(match)
    )
    return restrict_calls(stmt, f)


def search_content(
    engine: Engine,
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
        hits = union_all(*parts).subquery("hits")
        total = conn.execute(
            select(func.count()).select_from(select(hits.c.row_id).limit(COUNT_CAP + 1).subquery())
        ).scalar_one()
        order = [hits.c.trace_id, hits.c.seq, func.coalesce(hits.c.call_index, -1)]
        page = select(hits).order_by(*order).limit(limit).offset(offset).subquery("page")
        rows = conn.execute(
            select(
                page,
                TraceRow.display_id.label("trace"),
                TraceRow.title.label("title"),
            )
            .join(TraceRow, TraceRow.id == page.c.trace_id)
            .order_by(page.c.trace_id, page.c.seq, func.coalesce(page.c.call_index, -1))
        ).all()
        # Snippets only for the rows shown: cutting one reads the whole text.
        snippets: dict[tuple[str, int], str] = {}
        for source in ("messages", "tool_calls"):
            ids = [r.row_id for r in rows if r.source == source]
            found = search_snippets(conn, source, words, ids)
            snippets.update({(source, i): s for i, s in found.items()})
    df = pd.DataFrame(
        [
            (*(getattr(r, c) for c in HIT_COLUMNS[:-1]), snippets.get((r.source, r.row_id), ""))
            for r in rows
        ],
        columns=list(HIT_COLUMNS),
    )
    df["seq"] = df["seq"].astype("Int64")
    return SearchPage(df, int(total))
