"""The registry of imported files: what the last import read of each, and which of a file's
traces are already stored as they are now.

An import reads a file's entry before reading the file (to skip it, or read only what was
appended) and saves the entries of the files it read once all their traces are written. The
store keeps one entry per resolved path; the newest import's entry replaces the older one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from sqlalchemy import Engine, Table, delete, insert, select

from db.contract.rows import SourceFileRecord
from db.schema import SourceFileRow, TraceRow
from db.writes.transaction import writing

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
    """Store ``records``, each replacing the entry of its path (one transaction); of two
    records of one path (a file named twice in one import) the later one is kept."""
    records = list({r.path: r for r in records}.values())
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


def stored_content_hashes(engine: Engine, keys: Iterable[str]) -> dict[str, str | None]:
    """The dedupe keys of ``keys`` already stored, with their content hash (``None`` for a
    trace stored before migration 0008, whose hash is unknown)."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}
    traces = cast(Table, TraceRow.__table__)
    key_col, hash_col = traces.c.dedupe_key, traces.c.content_hash
    found: dict[str, str | None] = {}
    with engine.connect() as conn:
        for start in range(0, len(wanted), LOOKUP_CHUNK):
            chunk = wanted[start : start + LOOKUP_CHUNK]
            rows = conn.execute(select(key_col, hash_col).where(key_col.in_(chunk)))
            found.update((str(row[0]), row[1]) for row in rows)
    return found
