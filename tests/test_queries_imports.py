"""Queries of the Imports page, on SQLite and PostgreSQL: import history and rejected records.

On ``analysis_store``, so every value asserted here is exact.
"""

from __future__ import annotations

import sqlalchemy as sa
from dbfixture import PAGES2_LONG_RAW
from page_support import rows

from db.queries import imports


def test_import_history_lists_the_newest_import_first(analysis_store: sa.Engine) -> None:
    df = imports.import_history(analysis_store)
    assert imports.count_imports(analysis_store) == 2
    cols = ["id", "origin", "files", "traces_imported", "rejected", "messages", "state", "paths"]
    assert rows(df[cols]) == [
        (2, "upload", 2, 1, 2, 11, "done", "c.jsonl, bad.jsonl"),
        (1, "cli", 1, 2, 0, 16, "done", "ab.jsonl"),
    ]


def test_rejected_records_show_location_reason_and_a_2kb_preview(analysis_store: sa.Engine) -> None:
    df = imports.rejected_records(analysis_store)
    assert imports.count_rejected(analysis_store) == 2
    assert rows(df[["location", "reason", "raw_bytes"]]) == [
        ("bad.jsonl:3", "invalid_json", 16),
        ("bad.jsonl:7", "unknown_format", 5000),
    ]
    assert df["raw_preview"].iloc[0] == '{"role": "tool",'
    long_preview = df["raw_preview"].iloc[1]
    assert long_preview == PAGES2_LONG_RAW[:2048].decode("utf-8", errors="replace")
    assert long_preview.startswith("\ufffdx") and len(long_preview) == 2048


def test_rejected_records_of_one_import_are_paged(analysis_store: sa.Engine) -> None:
    assert imports.count_rejected(analysis_store, import_id=1) == 0
    assert rows(imports.rejected_reasons(analysis_store, import_id=2)) == [
        ("invalid_json", 1),
        ("unknown_format", 1),
    ]
    page = imports.rejected_records(analysis_store, import_id=2, limit=1, offset=1)
    assert list(page["location"]) == ["bad.jsonl:7"]


def test_import_history_lists_the_unknown_items_each_import_kept(analysis_store: sa.Engine) -> None:
    from db.schema import ImportRun

    with analysis_store.begin() as conn:
        conn.execute(
            sa.update(ImportRun)
            .where(ImportRun.id == 2)
            .values(unknown_items={"sticker": 1, "hologram_call": 3})
        )
    df = imports.import_history(analysis_store)
    assert rows(df[["id", "unknown_items"]]) == [(2, "hologram_call ×3, sticker ×1"), (1, "")]
