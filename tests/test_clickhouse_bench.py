"""``make bench-clickhouse``'s store-growing step (:func:`benchmarks.clickhouse_bench.grow`) at a
tiny size on the 2-shard cluster: exact counts per table, the copies' ids, and every copied
trace whole on one shard, as imported traces are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks.clickhouse_bench import (
    GROWN_TABLES,
    base_block,
    copy_statements,
    grow,
    message_count,
)
from benchmarks.workload import ensure_workload
from db.clickhouse.client import NativeClient, connect
from db.clickhouse.schema import Layout
from db.clickhouse.url import parse
from ingest.cli import app

FACTOR = 5


def _counts(client: NativeClient, layout: Layout) -> dict[str, int]:
    """Rows of every version of each grown table, over both shards."""
    return {
        table: int(client.query(f"SELECT count() FROM {layout.every_row(table)}")[1][0][0])
        for table in GROWN_TABLES
    }


def _trace_ids(client: NativeClient, index: int, layout: Layout, table: str) -> set[int]:
    column = "id" if table == "traces" else "trace_id"
    rows = client.server_query(index, f"SELECT DISTINCT {column} FROM {layout.local(table)}")
    return {int(r[0]) for r in rows}


def test_grow_adds_exact_copies_sharded_by_trace(clickhouse_cluster: Any, tmp_path: Path) -> None:
    servers = ",".join(
        f"{c.connection.hosts[0][0]}:{c.connection.hosts[0][1]}" for c in clickhouse_cluster.shards
    )
    url = (
        f"clickhouse://{servers}/{clickhouse_cluster.database}?cluster={clickhouse_cluster.cluster}"
    )
    workload, stats = ensure_workload(tmp_path, 400)
    result = CliRunner().invoke(app, ["import", "--db", url, str(workload)])
    assert result.exit_code == 0, result.output
    target = parse(url)
    client = connect(target)
    assert isinstance(client, NativeClient)
    layout = Layout(target.database, target.cluster)
    try:
        base = _counts(client, layout)
        block = base_block(client, layout)
        base_ids = _trace_ids(client, 0, layout, "traces") | _trace_ids(client, 1, layout, "traces")
        assert base["messages"] == stats.messages == message_count(client, layout)
        assert len(base_ids) == base["traces"] == stats.traces and max(base_ids) == block

        with pytest.raises(ValueError, match="cannot add 2 copies to a store holding 1"):
            copy_statements(layout, copies=2, held=1, block=block)
        steps: list[str] = []
        assert grow(client, layout, block=block, held=1, factor=FACTOR, log=steps.append) == 5
        # Doubling while it fits (1 → 2 → 4), then the rest (4 → 5).
        assert [s.split(" (")[0].strip() for s in steps] == [
            "2 copies of the base",
            "4 copies of the base",
            "5 copies of the base",
        ]

        assert _counts(client, layout) == {t: n * FACTOR for t, n in base.items()}
        assert message_count(client, layout) == stats.messages * FACTOR
        shards = [_trace_ids(client, i, layout, "traces") for i in (0, 1)]
        assert shards[0] and shards[1] and not shards[0] & shards[1]
        assert shards[0] | shards[1] == {i + k * block for i in base_ids for k in range(FACTOR)}
        for table in GROWN_TABLES:
            for index in (0, 1):
                # Every row lies on the shard of its trace.
                assert _trace_ids(client, index, layout, table) <= shards[index], table
        first = min(base_ids)
        _, rows = client.query(
            f"SELECT id, dedupe_key FROM {layout.view('traces')} "
            f"WHERE id IN ({first}, {first + 3 * block}) ORDER BY id"
        )
        assert rows[1] == (first + 3 * block, f"{rows[0][1]}.c3")
    finally:
        client.close()
