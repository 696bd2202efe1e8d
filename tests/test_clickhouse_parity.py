"""The same answers from ClickHouse as from SQLite (issue 41): the real files of every format and
the generator's scenarios imported into both, then ``summary --json`` and ``pairs`` (CSV and
JSON Lines) compared byte for byte — on the 2-shard cluster (whose shards must both hold
traces, none split between them) and on the in-process current engine (chdb)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ingest.cli import app
from ingest.scenarios import generate

runner = CliRunner()

#: A Claude Code session imported when half written, then again grown: stored as an update
#: (a new version of the trace, which ClickHouse reads without FINAL or a merge).
GROWN = "claude-code/f6108699-47cc-4b21-8ca6-3223992990b3.jsonl"
#: The real files: every one of ``../shared/realdata`` (Claude Code sessions, Langfuse
#: exports, OpenAI chat and legacy files), but the one grown below.
FORMATS = ("claude-code", "langfuse-export", "openai-chat", "openai-legacy")


@pytest.fixture(scope="module")
def files(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = [
        str(p)
        for folder in FORMATS
        for p in sorted((realdata / folder).iterdir())
        if p != realdata / GROWN
    ]
    scenarios = tmp_path_factory.mktemp("scenarios")
    generate(scenarios, seed=7)
    # Records the import rejects and keeps, raw bytes and all (not UTF-8, not JSON).
    (scenarios / "broken.jsonl").write_bytes(b'{"messages": [\n\xff\xfe not json\n')
    out += sorted(str(p) for p in scenarios.iterdir() if p.name != "ground_truth.json")
    return out


def _run(*args: str) -> bytes:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


def _answers(db: str, files: list[str], folder: Path, realdata: Path) -> dict[str, Any]:
    lines = (realdata / GROWN).read_bytes().splitlines(keepends=True)
    grown = folder / "grown.jsonl"
    grown.write_bytes(b"".join(lines[:30]))
    assert b" 1 trace imported," in _run("import", "--db", db, str(grown))
    grown.write_bytes(b"".join(lines))
    assert b" 1 updated (+11 -0 messages)," in _run("import", "--db", db, *files, str(grown))
    return _read(db)


def _read(db: str) -> dict[str, Any]:
    return {
        "summary": _run("summary", "--json", "--db", db),
        "pairs.csv": _run("pairs", "--format", "csv", "--db", db),
        "pairs.jsonl": _run("pairs", "--db", db),
    }


@pytest.fixture(scope="module")
def sqlite_answers(
    files: list[str], realdata: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("sqlite")
    return _answers(str(folder / "store.db"), files, folder, realdata)


def _same(found: dict[str, Any], expected: dict[str, Any]) -> None:
    assert found["summary"] == expected["summary"]
    assert found["pairs.csv"] == expected["pairs.csv"]
    assert found["pairs.jsonl"] == expected["pairs.jsonl"]
    # Not two empty answers: the store holds what the files hold.
    assert b'"traces": 0' not in expected["summary"]
    assert expected["pairs.csv"].count(b"\n") > 1000


def test_the_cluster_answers_as_sqlite_and_holds_traces_on_both_shards(
    clickhouse_cluster: Any,
    files: list[str],
    sqlite_answers: dict[str, Any],
    realdata: Path,
    tmp_path: Path,
) -> None:
    servers = ",".join(
        f"{c.connection.hosts[0][0]}:{c.connection.hosts[0][1]}" for c in clickhouse_cluster.shards
    )
    db = (
        f"clickhouse://{servers}/{clickhouse_cluster.database}?cluster={clickhouse_cluster.cluster}"
    )
    _same(_answers(db, files, tmp_path, realdata), sqlite_answers)
    per_shard = [
        {
            trace
            for (trace,) in shard.execute(
                f"SELECT DISTINCT trace_id FROM {clickhouse_cluster.database}.messages_local"
            )
        }
        for shard in clickhouse_cluster.shards
    ]
    traces = [
        shard.execute(f"SELECT count() FROM {clickhouse_cluster.database}.traces_local")[0][0]
        for shard in clickhouse_cluster.shards
    ]
    assert all(n > 0 for n in traces), traces
    # The grown session's first version is still stored beside its second: not read.
    versions = [
        shard.execute(
            f"SELECT uniqExact(version) FROM {clickhouse_cluster.database}.messages_local"
        )[0][0]
        for shard in clickhouse_cluster.shards
    ]
    assert sorted(versions) == [1, 2]
    assert not per_shard[0] & per_shard[1]  # no trace's messages on two shards
    # Every trace with messages lies on the shard of its traces row.
    for shard, held in zip(clickhouse_cluster.shards, per_shard, strict=True):
        ids = {
            i
            for (i,) in shard.execute(f"SELECT id FROM {clickhouse_cluster.database}.traces_local")
        }
        assert held <= ids


@pytest.fixture
def chdb_database(chdb_session: Any) -> Iterator[str]:
    database = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield database
    finally:
        chdb_session.query(f"DROP DATABASE IF EXISTS {database}")


def test_chdb_answers_as_sqlite_also_after_importing_the_same_files_again(
    chdb_session: Any,
    chdb_database: str,
    files: list[str],
    sqlite_answers: dict[str, Any],
    realdata: Path,
    tmp_path: Path,
) -> None:
    db = f"chdb://?database={chdb_database}"
    _same(_answers(db, files, tmp_path, realdata), sqlite_answers)
    found = chdb_session.query(
        f"SELECT uniqExact(version) FROM {chdb_database}.messages_local", "CSV"
    )
    assert str(found).strip() == "2"  # the grown session's two versions, one read
    again = _run("import", "--db", db, *files, str(tmp_path / "grown.jsonl"))
    assert b" 0 traces imported, 0 updated," in again
    _same(_read(db), sqlite_answers)
