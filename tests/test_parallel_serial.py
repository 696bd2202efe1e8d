"""Parallel equals serial (issue 46): the same files give the same traces with any number of
workers, id-less records repeated across files included, on both databases."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa

from db.engine import make_engine
from db.schema import TraceRow
from ingest.importing import batches, pipeline


def _files(folder: Path) -> list[Path]:
    """Twelve files of conversations without ids: 4 in every file, 1 of each file's own (a
    batch per file: the batches in flight at once hold the same conversations)."""
    paths = []
    for n in range(12):
        shared = [f"shared question {i}" for i in range(4)]
        own = [f"question of file {n}"]
        lines = [
            orjson.dumps(
                {
                    "messages": [
                        {"role": "user", "content": q},
                        {"role": "assistant", "content": f"answer to {q}"},
                    ]
                }
            )
            for q in shared + own
        ]
        path = folder / f"part-{n}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        paths.append(path)
    return paths


def _stored(engine: sa.Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(sa.select(TraceRow.content_hash, TraceRow.title)).all()
    return sorted((str(h), str(t)) for h, t in rows)


def test_id_less_records_repeated_across_files_are_stored_once_with_any_number_of_workers(
    tmp_path: Path, db_url: str, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches of a few traces, so that many are in flight at once.
    monkeypatch.setattr(batches, "BATCH_MESSAGES", 10)
    paths = _files(tmp_path)
    outcomes = []
    serial_url = sqlite_url.replace("toollens.db", "serial.db")
    for workers, url in ((0, serial_url), (2, db_url)):
        engine = make_engine(url)
        summary = pipeline.import_paths(engine, paths, workers=workers, incremental=False)
        outcomes.append(
            ((summary.traces, summary.updated, summary.unchanged, summary.rejected),
             _stored(engine))
        )  # fmt: skip
        engine.dispose()
    (serial_counts, serial), (parallel_counts, parallel) = outcomes
    assert serial_counts == (16, 0, 44, 0)
    assert len(serial) == 16
    assert parallel_counts == serial_counts
    assert parallel == serial
