"""The ceiling of an import, measured in the same run as the pipeline (``make bench``).

The least work any importer of this workload must do: stream the file, ``orjson.loads`` each
line, count the tokens of every message (``ingest.tokens.count_many``, single process) and store
one row per message (trace, seq, role, content, tokens, raw JSON; the column types of the real
``messages`` table, no secondary indexes) with raw DBAPI ``executemany`` into SQLite (WAL) or
``COPY`` into PostgreSQL, one transaction per batch of the pipeline's size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def _message_text(content: Any) -> str:
    # The workload only has strings and nulls; the parsers join text parts the same way.
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def ceiling_batches(path: Path, batch_messages: int) -> Iterator[list[tuple[Any, ...]]]:
    """Rows ``(trace_no, seq, role, content, tokens, raw_json)`` of the workload, in batches."""
    from ingest.tokens import count_many

    rows: list[tuple[int, int, str, str]] = []
    texts: list[str] = []
    with path.open("rb") as stream:
        for trace_no, line in enumerate(stream, 1):
            for seq, message in enumerate(orjson.loads(line)["messages"]):
                texts.append(_message_text(message.get("content")))
                rows.append((trace_no, seq, message["role"], orjson.dumps(message).decode()))
            if len(rows) >= batch_messages:
                yield _with_tokens(rows, texts, count_many(texts))
                rows, texts = [], []
    if rows:
        yield _with_tokens(rows, texts, count_many(texts))


def _with_tokens(
    rows: list[tuple[int, int, str, str]], texts: list[str], counts: list[int]
) -> list[tuple[Any, ...]]:
    return [
        (trace_no, seq, role, text, n, raw)
        for (trace_no, seq, role, raw), text, n in zip(rows, texts, counts, strict=True)
    ]


def ceiling_sqlite(path: Path, db_file: Path, batch_messages: int) -> int:
    """The ceiling on SQLite: raw ``executemany``, one transaction per batch, WAL."""
    from db.engine import SQLITE_JOURNAL_MODE, SQLITE_SYNCHRONOUS

    conn = sqlite3.connect(db_file, isolation_level=None)
    conn.execute(f"PRAGMA journal_mode={SQLITE_JOURNAL_MODE}")
    conn.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
    conn.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, trace_id INTEGER, seq INTEGER, "
        "role VARCHAR(20), content TEXT, tokens INTEGER, raw JSON)"
    )
    sql = "INSERT INTO messages (trace_id, seq, role, content, tokens, raw) VALUES (?,?,?,?,?,?)"
    written = 0
    for rows in ceiling_batches(path, batch_messages):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")
        written += len(rows)
    conn.close()
    return written


def ceiling_postgresql(path: Path, conninfo: str, schema: str, batch_messages: int) -> int:
    """The ceiling on PostgreSQL: ``COPY … FROM STDIN``, one transaction per batch."""
    import psycopg

    written = 0
    with psycopg.connect(conninfo, options=f"-csearch_path={schema}") as conn:
        conn.execute(
            "CREATE TABLE messages (id BIGSERIAL PRIMARY KEY, trace_id INTEGER, seq INTEGER, "
            "role VARCHAR(20), content TEXT, tokens INTEGER, raw JSONB)"
        )
        conn.commit()
        copy_sql = "COPY messages (trace_id, seq, role, content, tokens, raw) FROM STDIN"
        for rows in ceiling_batches(path, batch_messages):
            with conn.transaction(), conn.cursor() as cur, cur.copy(copy_sql) as cp:
                for row in rows:
                    cp.write_row(row)
            written += len(rows)
    return written
