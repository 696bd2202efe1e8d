"""`toollens copy` with ClickHouse on either side (issue 41, point 4): the real files of four
formats imported into SQLite, copied to the 2-shard cluster and back into a fresh SQLite store
and PostgreSQL, each giving the same summary and byte-identical pairs; interrupted copies
resumed (also in the middle of a batch of traces, where ClickHouse holds part of it); the
tables a ClickHouse store has no place for refused unless left out by name; the same on the
in-process engine (chdb)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_copy import build_source, expected_table, table_counts
from typer.testing import CliRunner

from db.bulk.copy import CopyInterrupted, CopyRefused
from db.bulk.copy_across import copy_store
from db.clickhouse import copy as clickhouse_copy
from ingest.cli import app

pytestmark = pytest.mark.realdata

runner = CliRunner()

FORMATS = ("claude-code", "langfuse-export", "openai-chat", "openai-legacy")
#: Rows per table the copy carries, in the source built by :func:`source`.
CARRIED = {
    "imports": 2,
    "import_files": 62,
    "rejected_records": 1,
    "traces": 245,
    "messages": 8564,
    "tool_calls": 2320,
    "tool_results": 2306,
    "findings": 526,
    "error_streaks": 36,
}


def _run(*args: str) -> bytes:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


def answers(db: str) -> dict[str, bytes]:
    return {
        "summary": _run("summary", "--json", "--db", db),
        "pairs.csv": _run("pairs", "--format", "csv", "--db", db),
    }


@pytest.fixture(scope="module")
def source(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The real files of four formats in two imports; the first also keeps a rejected record
    whose raw bytes are not UTF-8."""
    folder = tmp_path_factory.mktemp("source")
    broken = folder / "broken.jsonl"
    broken.write_bytes(b'{"messages": [\n\xff\xfe not json\n')
    db = str(folder / "source.db")
    _run("import", "--db", db, str(realdata / "openai-legacy"), str(broken))
    _run("import", "--db", db, *(str(realdata / f) for f in FORMATS))
    return db


@pytest.fixture(scope="module")
def source_answers(source: str) -> dict[str, bytes]:
    found = answers(source)
    assert found["pairs.csv"].count(b"\n") > 1000  # not two empty answers
    return found


def cluster_url(cluster: Any) -> str:
    return str(cluster.url)


def copied(source_url: str, target_url: str, *extra: str) -> str:
    result = runner.invoke(app, ["copy", "--from", source_url, "--to", target_url, *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_sqlite_to_the_cluster_and_back_to_sqlite(
    source: str, source_answers: dict[str, bytes], clickhouse_cluster: Any, tmp_path: Path
) -> None:
    cluster = cluster_url(clickhouse_cluster)
    out = copied(source, cluster)
    assert expected_table(CARRIED) in out
    assert (
        "not copied: source_files (47 files; the registry of files read: the next import "
        "reads them whole)\n"
    ) in out
    assert out.endswith("summary: identical\n")
    assert answers(cluster) == source_answers
    per_shard = [
        shard.execute(f"SELECT count() FROM {clickhouse_cluster.database}.traces_local")[0][0]
        for shard in clickhouse_cluster.shards
    ]
    assert sum(per_shard) == CARRIED["traces"] and all(per_shard), per_shard
    back = str(tmp_path / "back.db")
    out = copied(cluster, back)
    assert expected_table(CARRIED) in out
    assert out.endswith("summary: identical\n")
    assert answers(back) == source_answers
    # The rollups, rebuilt from the copied rows, are those the imports kept up.
    rollups = {n: c for n, c in table_counts(source).items() if n.startswith("rollup_")}
    assert {n: c for n, c in table_counts(back).items() if n.startswith("rollup_")} == rollups


def test_the_cluster_to_postgresql(
    source: str, source_answers: dict[str, bytes], clickhouse_cluster: Any, pg_url: str
) -> None:
    cluster = cluster_url(clickhouse_cluster)
    copied(source, cluster)
    out = copied(cluster, pg_url)
    assert expected_table(CARRIED) in out
    assert out.endswith("summary: identical\n")
    assert answers(pg_url) == source_answers
    # The target's id sequences are past the copied ids: an import gets fresh ones.
    assert table_counts(pg_url)["messages"] == CARRIED["messages"]


#: ``StoredRows.write`` calls of a copy into ClickHouse: one per small table holding rows
#: (3), then per batch of traces one per trace-scoped table (6: the children, then traces).
SMALL_WRITES, UNIT_WRITES = 3, 6


@pytest.mark.parametrize(
    ("cut", "where"),
    [
        (SMALL_WRITES + UNIT_WRITES + 2, "the second batch's messages and calls are in"),
        (SMALL_WRITES + 2 * UNIT_WRITES, "the second batch is in but not its state"),
    ],
)
def test_a_copy_into_the_cluster_cut_inside_a_batch_resumes_without_a_row_twice(
    source: str,
    source_answers: dict[str, bytes],
    clickhouse_cluster: Any,
    monkeypatch: pytest.MonkeyPatch,
    cut: int,
    where: str,
) -> None:
    cluster = cluster_url(clickhouse_cluster)
    write = clickhouse_copy.StoredRows.write
    calls = 0

    def cut_short(rows: Any, client: Any, layout: Any) -> None:
        nonlocal calls
        if calls == cut:
            raise CopyInterrupted(where)
        calls += 1
        write(rows, client, layout)

    with monkeypatch.context() as patch:
        patch.setattr(clickhouse_copy.StoredRows, "write", cut_short)
        with pytest.raises(CopyInterrupted):
            copy_store(source, cluster, batch_rows=2000)
    held = clickhouse_cluster.execute(
        f"SELECT count() FROM {clickhouse_cluster.database}.messages_all"
    )[0][0]
    assert 0 < held < CARRIED["messages"]
    result = copy_store(source, cluster, batch_rows=2000)
    assert result.resumed_rows > 0
    assert result.counts == {name: (n, n) for name, n in CARRIED.items()}
    assert result.summary_differences == []
    # Every row once, also on disk (the views would hide a duplicate trace row, not a child).
    stored = clickhouse_cluster.execute(
        f"SELECT count() FROM {clickhouse_cluster.database}.messages_all"
    )[0][0]
    assert stored == CARRIED["messages"]
    assert answers(cluster) == source_answers


def test_a_copy_from_the_cluster_interrupted_and_resumed_gives_the_same_store(
    source: str, source_answers: dict[str, bytes], clickhouse_cluster: Any, tmp_path: Path
) -> None:
    cluster = cluster_url(clickhouse_cluster)
    copied(source, cluster)
    target = str(tmp_path / "back.db")
    with pytest.raises(CopyInterrupted):
        copy_store(cluster, target, batch_rows=2000, stop_after_batches=4)
    result = copy_store(cluster, target, batch_rows=2000)
    # The three small tables (65 rows) and the first batch of traces were in.
    assert (result.resumed_rows, result.copied_rows) == (2717, 14062 - 2717)
    assert result.counts == {name: (n, n) for name, n in CARRIED.items()}
    assert result.summary_differences == []
    assert answers(target) == source_answers


@pytest.fixture
def chdb_url(chdb_session: Any) -> Iterator[str]:
    database = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield f"chdb://?database={database}"
    finally:
        chdb_session.query(f"DROP DATABASE IF EXISTS {database}")


def test_sqlite_to_chdb_and_back(
    source: str, source_answers: dict[str, bytes], chdb_url: str, tmp_path: Path
) -> None:
    out = copied(source, chdb_url)
    assert expected_table(CARRIED) in out
    assert out.endswith("summary: identical\n")
    assert answers(chdb_url) == source_answers
    back = str(tmp_path / "back.db")
    assert copied(chdb_url, back).endswith("summary: identical\n")
    assert answers(back) == source_answers


def test_notes_and_kept_versions_are_refused_unless_left_out_by_name(
    realdata: Path, chdb_url: str, tmp_path: Path
) -> None:
    """A store with a reviewer's note, a trace update and its kept version: ClickHouse has no
    table for them, so the copy stops before writing unless told to leave them behind."""
    noted = str(tmp_path / "noted.db")
    build_source(f"sqlite:///{noted}", realdata, tmp_path / "files")
    refused = runner.invoke(app, ["copy", "--from", noted, "--to", chdb_url])
    assert refused.exit_code == 2
    assert refused.output == (
        "Error: the source holds annotations (1 rows), trace_versions (1 rows), trace_updates "
        "(1 rows), which a ClickHouse store has no table for: copy without them with "
        "--leave-out annotations,trace_versions,trace_updates\n"
    )
    with pytest.raises(CopyRefused, match=r"--leave-out trace_versions,trace_updates$"):
        copy_store(noted, chdb_url, leave_out=frozenset({"annotations"}))
    out = copied(noted, chdb_url, "--leave-out", "annotations,trace_versions,trace_updates")
    assert (
        "left out: annotations (1 rows)\nleft out: trace_versions (1 rows)\n"
        "left out: trace_updates (1 rows)\n"
    ) in out
    assert out.endswith("summary: identical\n")
    assert answers(chdb_url) == answers(noted)
