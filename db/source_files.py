"""The registry of imported files: what the last import read of each, and which of a file's
traces are already stored as they are now.

An import reads a file's entry before reading the file (to skip it, or read only what was
appended) and saves the entries of the files it read once all their traces are written. The
store keeps one entry per resolved path; the newest import's entry replaces the older one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import cast

from sqlalchemy import Engine, Table, column, delete, insert, inspect, select

from db.engine import writing
from db.records import SourceFileRecord
from db.schema import SourceFileRow, TraceRow

SOURCE_FILES = cast(Table, SourceFileRow.__table__)
#: Keys looked up per query (well under every dialect's bound-parameter limit).
LOOKUP_CHUNK = 500


def load_source_files(engine: Engine, paths: Iterable[str]) -> dict[str, SourceFileRecord]:
    """The stored entries of ``paths`` (resolved paths) that have one, by path."""
    wanted = list(dict.fromkeys(paths))
    columns = [SOURCE_FILES.c[name] for name in SourceFileRecord._fields]
    found: dict[str, SourceFileRecord] = {}
    with engine.connect() as conn:
        for start in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[start : start + LOOKUP_CHUNK]
            for row in conn.execute(select(*columns).where(SOURCE_FILES.c.path.in_(chunk))):
                record = SourceFileRecord(*row)
                found[record.path] = record
    return found


def save_source_files(engine: Engine, records: Sequence[SourceFileRecord]) -> None:
    """Store ``records``, each replacing the entry of its path (one transaction)."""
    if not records:
        return
    with writing(engine) as conn:
        paths = [r.path for r in records]
        for start in range(0, len(paths), LOOKUP_CHUNK):
            conn.execute(
                delete(SOURCE_FILES).where(
                    SOURCE_FILES.c.path.in_(paths[start : start + LOOKUP_CHUNK])
                )
            )
        conn.execute(insert(SOURCE_FILES), [r._asdict() for r in records])


def stored_unchanged(engine: Engine, hashes: Mapping[str, str]) -> set[str]:
    """The dedupe keys of ``hashes`` (dedupe key -> content hash) already stored as they are.

    Where the store keeps each trace's content hash (``traces.content_hash``), a stored trace
    whose hash differs is not unchanged (the import updates it); where it does not, a stored
    key is unchanged, since the import would skip that trace as a duplicate anyway.
    """
    keys = list(hashes)
    if not keys:
        return set()
    traces = cast(Table, TraceRow.__table__)
    with engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("traces")}
        # ``traces.content_hash`` arrives with the trace versions; read it where it exists.
        hashed = "content_hash" in columns
        key_col = traces.c.dedupe_key
        selected = [key_col, column("content_hash")] if hashed else [key_col]
        unchanged: set[str] = set()
        for start in range(0, len(keys), LOOKUP_CHUNK):
            chunk = keys[start : start + LOOKUP_CHUNK]
            for row in conn.execute(select(*selected).where(key_col.in_(chunk))):
                if not hashed or row[1] == hashes[row[0]]:
                    unchanged.add(row[0])
    return unchanged
