"""The benchmark's ceiling writes exactly the rows the pipeline writes (per table), and leaves
the derivation of their values out of its measured time."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from benchmarks.ceiling import TABLES, ceiling_postgresql, ceiling_sqlite
from benchmarks.workload import write_workload
from db.engine import make_engine
from ingest.importing import pipeline


class _Excluded:
    def __init__(self) -> None:
        self.blocks = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        self.blocks += 1
        yield


def _counts(url: str, tables: tuple[str, ...]) -> dict[str, int]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        counts = {t: conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar_one() for t in tables}
    engine.dispose()
    return counts


@contextmanager
def _ceiling(
    db_url: str, tmp_path: Path, workload: Path, messages_only: bool
) -> Iterator[tuple[str, int, int]]:
    """Run the ceiling into a fresh database of ``db_url``'s kind: (its URL, messages, blocks);
    on PostgreSQL its schema is dropped when the block ends."""
    excluded = _Excluded()
    if db_url.startswith("sqlite"):
        db_file = tmp_path / f"ceiling-{messages_only}.db"
        n = ceiling_sqlite(workload, db_file, 300, excluded, messages_only)
        yield f"sqlite:///{db_file}", n, excluded.blocks
        return
    url = sa.engine.make_url(db_url)
    schema = f"c_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(db_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        conninfo = url.set(drivername="postgresql", query={}).render_as_string(hide_password=False)
        n = ceiling_postgresql(workload, conninfo, schema, 300, excluded, messages_only)
        scoped = url.update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False), n, excluded.blocks
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


def test_the_ceiling_writes_the_rows_the_pipeline_writes(tmp_path: Path, db_url: str) -> None:
    workload = tmp_path / "w.jsonl"
    stats = write_workload(workload, 1_500, seed=4)
    engine = make_engine(db_url)
    pipeline.import_paths(engine, [workload], workers=0)
    engine.dispose()
    expected = _counts(db_url, TABLES)
    assert (expected["traces"], expected["messages"]) == (stats.traces, 1_500)
    assert expected["tool_results"] == stats.tool_messages
    with _ceiling(db_url, tmp_path, workload, messages_only=False) as (url, messages, blocks):
        assert messages == 1_500
        assert _counts(url, TABLES) == expected
    # One excluded block (the pipeline's analysis) per batch of about 300 messages.
    assert blocks == 5


def test_the_messages_only_ceiling_writes_one_row_per_message(tmp_path: Path, db_url: str) -> None:
    workload = tmp_path / "w.jsonl"
    write_workload(workload, 1_500, seed=4)
    with _ceiling(db_url, tmp_path, workload, messages_only=True) as (url, messages, blocks):
        assert (messages, blocks) == (1_500, 0)
        assert _counts(url, ("messages",)) == {"messages": 1_500}
