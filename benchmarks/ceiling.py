"""The ceiling of an import, measured in the same run as the pipeline (``make bench``).

The least work any importer must do to store what the pipeline stores: stream the file,
``orjson.loads`` each line, count the tokens of every message
(``ingest.analysis.tokens.count_many``, single process) and write **the same rows the pipeline
writes** (traces, messages, tool calls, tool results, findings, error streaks: the column types of
the real tables, primary keys only, no secondary indexes, constraints or triggers) with raw DBAPI
``executemany`` into SQLite (WAL) or ``COPY`` into PostgreSQL, one transaction per batch of the
pipeline's size.

The values of those rows (status, error type, pairing, loops …) are what the pipeline derives;
the ceiling takes them from the pipeline's own code (``ingest.importing.batches.analyze_batch``) and
leaves that time out of its measurement (``exclude``): deriving them is the work the pipeline
is measured doing, not a floor.

``messages_only``: the narrower ceiling of earlier versions, one row per message (trace, seq,
role, content, tokens, raw JSON) and nothing else, printed for comparison.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateTable

Exclude = Callable[[], AbstractContextManager[None]]
#: Per table of a batch: the column names, and the rows as tuples in that order.
Batch = dict[str, tuple[tuple[str, ...], list[tuple[Any, ...]]]]
MESSAGES_ONLY_COLUMNS = ("trace_id", "seq", "role", "content", "tokens", "raw")
#: Tables the pipeline writes per trace, parents first.
TABLES = ("traces", "messages", "tool_calls", "tool_results", "findings", "error_streaks")


def _message_text(content: Any) -> str:
    # The workload only has strings and nulls; the parsers join text parts the same way.
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _tables(messages_only: bool) -> list[sa.Table]:
    """The ceiling's tables: the real column types, primary keys only."""
    from db.schema import Base

    metadata = sa.MetaData()
    if messages_only:
        real = Base.metadata.tables["messages"].c
        keep = ("id", *MESSAGES_ONLY_COLUMNS)
        return [sa.Table("messages", metadata, *(_plain(real[name]) for name in keep))]
    return [
        sa.Table(name, metadata, *(_plain(c) for c in Base.metadata.tables[name].c))
        for name in TABLES
    ]


def _plain(column: sa.Column[Any]) -> sa.Column[Any]:
    return sa.Column(column.name, column.type, primary_key=column.primary_key)


def _ddl(tables: list[sa.Table], dialect: Any) -> list[str]:
    return [str(CreateTable(table).compile(dialect=dialect)) for table in tables]


def ceiling_batches(
    path: Path, batch_messages: int, exclude: Exclude, messages_only: bool
) -> Iterator[Batch]:
    """Per batch, the column names and rows of each table."""
    from ingest.analysis.tokens import count_many

    rows = _PipelineRows()
    lines: list[tuple[int, bytes]] = []
    texts: list[str] = []
    values: list[Any] = []

    def batch() -> Batch:
        counts = count_many(texts)
        if messages_only:
            return {"messages": (MESSAGES_ONLY_COLUMNS, _message_rows(lines, values, counts))}
        with exclude():
            return rows.batch(lines)

    with path.open("rb") as stream:
        for line_no, line in enumerate(stream, 1):
            value = orjson.loads(line)
            values.append(value)
            lines.append((line_no, line))
            texts.extend(_message_text(m.get("content")) for m in value["messages"])
            if len(texts) >= batch_messages:
                yield batch()
                lines, texts, values = [], [], []
    if texts:
        yield batch()


def _message_rows(
    lines: list[tuple[int, bytes]], values: list[Any], counts: list[int]
) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    pos = 0
    for (line_no, _), value in zip(lines, values, strict=True):
        for seq, message in enumerate(value["messages"]):
            text = _message_text(message.get("content"))
            out.append((line_no, seq, message["role"], text, counts[pos], message))
            pos += 1
    return out


class _PipelineRows:
    """The rows the pipeline writes for a batch of lines, with trace ids assigned in order."""

    def __init__(self) -> None:
        self.trace_id = 0

    def batch(self, lines: list[tuple[int, bytes]]) -> Batch:
        from db.contract.rows import CHILD_COLUMNS, TraceRecord
        from db.contract.vocabulary import DEFAULT_ENCODING, DEFAULT_TOKEN_BUDGET
        from db.writes.traces import TraceRows
        from ingest.formats.base import Deferred
        from ingest.importing.batches import analyze_batch
        from ingest.input.records import Record
        from ingest.redaction.traces import RedactionSettings

        items = [
            Deferred("openai_chat", "ceiling", Record("ceiling", n, 0, raw, None))
            for n, raw in lines
        ]
        rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in TABLES}
        # The ceiling leaves the deriving of row values out; redaction is part of it.
        analyzed = analyze_batch(
            items, DEFAULT_ENCODING, DEFAULT_TOKEN_BUDGET, RedactionSettings("off")
        )
        for trace_rows in analyzed.items:
            assert isinstance(trace_rows, TraceRows), trace_rows
            self.trace_id += 1
            rows["traces"].append((self.trace_id, 1, *trace_rows.trace))
            for table in TABLES[1:]:
                rows[table].extend((self.trace_id, *r) for r in trace_rows.children(table))
        names = {table: ("trace_id", *CHILD_COLUMNS[table]) for table in TABLES[1:]}
        names["traces"] = ("id", "import_id", *TraceRecord._fields)
        return {table: (names[table], rows[table]) for table in TABLES}


def _json_indexes(table: str, names: tuple[str, ...]) -> frozenset[int]:
    from db.contract.rows import JSON_COLUMNS

    return frozenset(i for i, c in enumerate(names) if c in JSON_COLUMNS[table])


def ceiling_sqlite(
    path: Path, db_file: Path, batch_messages: int, exclude: Exclude, messages_only: bool = False
) -> int:
    """The ceiling on SQLite: raw ``executemany``, one transaction per batch, WAL."""
    from db.dialect import _converted, _sqlite_value
    from db.engine import SQLITE_JOURNAL_MODE, SQLITE_SYNCHRONOUS

    conn = sqlite3.connect(db_file, isolation_level=None)
    conn.execute(f"PRAGMA journal_mode={SQLITE_JOURNAL_MODE}")
    conn.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
    for ddl in _ddl(_tables(messages_only), sqlite_dialect.dialect()):
        conn.execute(ddl)
    written = 0
    for batch in ceiling_batches(path, batch_messages, exclude, messages_only):
        conn.execute("BEGIN IMMEDIATE")
        for table, (names, rows) in batch.items():
            marks = ", ".join("?" * len(names))
            sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})"
            conn.executemany(sql, _converted(rows, _json_indexes(table, names), _sqlite_value))
        conn.execute("COMMIT")
        written += len(batch["messages"][1])
    conn.close()
    return written


def ceiling_postgresql(
    path: Path,
    conninfo: str,
    schema: str,
    batch_messages: int,
    exclude: Exclude,
    messages_only: bool = False,
) -> int:
    """The ceiling on PostgreSQL: ``COPY … FROM STDIN``, one transaction per batch."""
    import psycopg

    from db.dialect import _converted

    written = 0
    with psycopg.connect(conninfo, options=f"-csearch_path={schema}") as conn:
        for ddl in _ddl(_tables(messages_only), postgresql.dialect()):
            conn.execute(ddl)
        conn.commit()
        for batch in ceiling_batches(path, batch_messages, exclude, messages_only):
            with conn.transaction(), conn.cursor() as cur:
                for table, (names, rows) in batch.items():
                    copy_sql = f"COPY {table} ({', '.join(names)}) FROM STDIN"
                    with cur.copy(copy_sql) as cp:
                        for row in _converted(rows, _json_indexes(table, names), None):
                            cp.write_row(row)
            written += len(batch["messages"][1])
    return written
