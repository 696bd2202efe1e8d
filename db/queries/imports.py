"""Queries behind the Imports page: import history, what each import did per file and which
traces it updated, and the quarantine of rejected records.

Rejected records keep their raw bytes; only a bounded prefix (``RAW_PREVIEW_BYTES``) is read back
for display, cut in SQL so that a huge rejected line never travels to the browser.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import ColumnElement, Engine, func, select

from db.queries.common import labelled, to_frame
from db.schema import ImportFile, ImportRun, RejectedRecord, TraceRow, TraceUpdate

#: Bytes of a rejected record's raw input shown in the UI (decoded with errors="replace").
RAW_PREVIEW_BYTES = 2048

IMPORT_COLUMNS = (
    "id", "started_at", "finished_at", "origin", "files", "records", "traces_imported",
    "updated", "unchanged", "rejected", "rejected_new", "rejected_known", "messages", "seconds",
    "state", "encoding", "error", "older_copies", "kept_apart", "messages_added",
    "messages_removed",
)  # fmt: skip
#: Columns of :func:`import_files`: records read per file and how each ended.
FILE_COLUMNS = (
    "path", "format", "size", "records", "imported", "updated", "unchanged", "rejected",
)  # fmt: skip
#: Columns of :func:`trace_updates`.
UPDATE_COLUMNS = (
    "trace_id", "display_id", "source_file", "old_messages", "new_messages", "messages_added",
    "messages_removed", "kept_version", "old_hash", "new_hash", "at",
)  # fmt: skip


def count_imports(engine: Engine) -> int:
    """How many imports the store has recorded."""
    with engine.connect() as conn:
        return int(conn.execute(select(func.count(ImportRun.id))).scalar_one())


def import_history(engine: Engine, *, limit: int = 50, offset: int = 0) -> pd.DataFrame:
    """One page of imports, the newest first.

    Columns: ``IMPORT_COLUMNS`` plus ``paths`` (the imported paths joined by ``, ``),
    ``unknown_items`` (``type ×count`` of the items of unknown types kept, joined by ``, ``),
    ``secrets_redacted`` (how many secrets the import replaced; ``None`` for imports made
    before redaction existed) and ``redactions`` (per kind: ``jwt 9, openai_key 3``).
    """
    columns = [getattr(ImportRun, c).label(c) for c in IMPORT_COLUMNS]
    stmt = (
        select(
            *columns,
            ImportRun.paths.label("paths"),
            ImportRun.unknown_items.label("unknown"),
            ImportRun.redactions.label("redactions"),
        )
        .order_by(ImportRun.id.desc())
        .limit(limit)
        .offset(offset)
    )
    with engine.connect() as conn:
        df = to_frame(conn, stmt)
    df["paths"] = df["paths"].map(lambda p: ", ".join(str(x) for x in (p or [])))
    df["unknown_items"] = df.pop("unknown").map(
        lambda counts: ", ".join(f"{kind} ×{n}" for kind, n in sorted((counts or {}).items()))
    )
    kinds = df["redactions"]
    df["secrets_redacted"] = kinds.map(lambda k: None if k is None else sum(k.values()))
    df["redactions"] = kinds.map(_per_kind)
    return df


def import_files(engine: Engine, import_id: int) -> pd.DataFrame:
    """What import ``import_id`` did with each file, in the order read (``FILE_COLUMNS``);
    ``records == imported + updated + unchanged + rejected`` on every row."""
    f = ImportFile
    stmt = (
        select(*[getattr(f, c).label(c) for c in FILE_COLUMNS])
        .where(f.import_id == import_id)
        .order_by(f.id)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def trace_updates(engine: Engine, import_id: int, *, limit: int = 200) -> pd.DataFrame:
    """The traces import ``import_id`` replaced by a new version, with the file each new
    version came from (``UPDATE_COLUMNS``), in the order written."""
    u = TraceUpdate
    columns = [
        (TraceRow.display_id if c == "display_id" else getattr(u, c)).label(c)
        for c in UPDATE_COLUMNS
    ]
    stmt = (
        select(*columns)
        .join(TraceRow, TraceRow.id == u.trace_id)
        .where(u.import_id == import_id)
        .order_by(u.id)
        .limit(limit)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def latest_import_id(engine: Engine) -> int | None:
    """The id of the newest import, if any."""
    with engine.connect() as conn:
        return conn.execute(select(func.max(ImportRun.id))).scalar_one_or_none()


def _per_kind(counts: dict[str, int] | None) -> str | None:
    """``jwt 9, openai_key 3``: kinds by count, then name."""
    if not counts:
        return None
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _rejected_where(import_id: int | None) -> list[ColumnElement[bool]]:
    return [] if import_id is None else [RejectedRecord.import_id == import_id]


def count_rejected(engine: Engine, import_id: int | None = None) -> int:
    """How many rejected records are kept (for one import, or all)."""
    stmt = select(func.count(RejectedRecord.id)).where(*_rejected_where(import_id))
    with engine.connect() as conn:
        return int(conn.execute(stmt).scalar_one())


def rejected_reasons(engine: Engine, import_id: int | None = None) -> pd.DataFrame:
    """Rejected records per reason, the most frequent first. Columns: ``reason``, ``records``."""
    stmt = (
        select(RejectedRecord.reason.label("reason"), func.count().label("records"))
        .where(*_rejected_where(import_id))
        .group_by(RejectedRecord.reason)
        .order_by(func.count().desc(), RejectedRecord.reason)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def rejected_records(
    engine: Engine, import_id: int | None = None, *, limit: int = 20, offset: int = 0
) -> pd.DataFrame:
    """One page of rejected records in file order.

    Columns: ``id``, ``import_id``, ``location`` (``file:line``), ``reason``, ``message``,
    ``raw_bytes`` (full size), ``raw_preview`` (the first ``RAW_PREVIEW_BYTES`` bytes decoded
    as UTF-8 with errors replaced).
    """
    stmt = (
        select(
            *labelled(
                RejectedRecord.id,
                RejectedRecord.import_id,
                RejectedRecord.source_file,
                RejectedRecord.line,
                RejectedRecord.reason,
                RejectedRecord.message,
            ),
            func.length(RejectedRecord.raw).label("raw_bytes"),
            func.substr(RejectedRecord.raw, 1, RAW_PREVIEW_BYTES).label("raw_head"),
        )
        .where(*_rejected_where(import_id))
        .order_by(RejectedRecord.import_id.desc(), RejectedRecord.source_file, RejectedRecord.line)
        .limit(limit)
        .offset(offset)
    )
    with engine.connect() as conn:
        df = to_frame(conn, stmt)
    df.insert(2, "location", df["source_file"] + ":" + df["line"].astype(str))
    df["raw_preview"] = df["raw_head"].map(
        lambda b: bytes(b or b"").decode("utf-8", errors="replace")
    )
    return df.drop(columns=["source_file", "line", "raw_head"])
