"""Keeping the content search current: what the import and ``reanalyze`` call.

The content search covers the text of every message (Tool Messages included) and the raw
arguments of every tool call. :func:`index_traces` adds the rows of newly written traces and
:func:`unindex_traces` takes out those about to be deleted, both inside the writer's
transaction, so the index never disagrees with the rows. How each database indexes (an FTS5
table on SQLite, a GIN index on PostgreSQL) is :mod:`db.dialect`'s business; the query is
:mod:`db.queries.search`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from db import dialect

#: The searched tables (see :data:`db.dialect.SEARCHED_COLUMNS`).
SEARCHED_TABLES: tuple[str, ...] = tuple(dialect.SEARCHED_COLUMNS)


def index_traces(
    conn: Connection,
    trace_ids: Sequence[int],
    tables: Sequence[str] = SEARCHED_TABLES,
    from_seq: int | None = None,
) -> None:
    """Add the messages and tool-call arguments of ``trace_ids`` (just written on ``conn``) to
    the content search; ``tables``: only these of :data:`SEARCHED_TABLES` (``reanalyze``
    rewrites the calls and keeps the messages); ``from_seq``: only the rows of messages at or
    after that position (the messages appended to a trace)."""
    for table in tables:
        dialect.index_search_rows(conn, table, trace_ids, from_seq)


def unindex_traces(
    conn: Connection, trace_ids: Sequence[int], tables: Sequence[str] = SEARCHED_TABLES
) -> None:
    """Take the rows of ``trace_ids`` out of the content search, before they are deleted on
    ``conn``; ``tables`` as for :func:`index_traces`."""
    for table in tables:
        dialect.unindex_search_rows(conn, table, trace_ids)


def is_search_object(name: str | None, type_: str) -> bool:
    """Whether a database object belongs to the content search and not to the models (the
    FTS5 tables and their shadow tables; the generated vector columns and their GIN indexes):
    Alembic's comparison of the schema with the models leaves them out."""
    if name is None:
        return False
    if type_ == "table":
        return any(name.startswith(dialect.search_table(t)) for t in SEARCHED_TABLES)
    if type_ == "index":
        return name in {dialect.search_index_name(t) for t in SEARCHED_TABLES}
    if type_ == "column":
        return name == dialect.SEARCH_VECTOR
    return False
