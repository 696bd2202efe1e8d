"""The ClickHouse test machinery: the 2-shard loopback cluster of ``.ci/clickhouse-cluster`` and
the in-process current engine (chdb) run the same SQL and give the same answers.

One schema and one SQL for both engines (issue 41): the Debian server is 18.16, chdb is current,
so what is written here keeps to what both have — MergeTree, Distributed, ``argMax``, ``LIMIT n
BY`` — and reads the latest version of a row without ``FINAL``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

#: Tool Messages of 60 traces, 5 each (version 1); the first two of every even trace were
#: written again (version 2, an error of more tokens): 360 rows, 300 latest versions.
TRACES = [f"trace-{i:03d}" for i in range(60)]
ROWS: list[tuple[str, int, int, str, int]] = [
    (trace, seq, 1, "success", 10 * seq + i) for i, trace in enumerate(TRACES) for seq in range(5)
] + [(trace, seq, 2, "error", 1000 + seq) for trace in TRACES[::2] for seq in range(2)]
COLUMNS = "trace_id String, seq UInt32, version UInt32, status String, tokens UInt32"

LOCAL_TABLE = (
    "CREATE TABLE {db}.tool_messages_local ({columns}) "
    "ENGINE = MergeTree() ORDER BY (trace_id, seq, version)"
)
#: The latest version of each Tool Message by ``argMax`` (no FINAL, no merge needed).
LATEST_BY_ARGMAX = (
    "SELECT trace_id, seq, argMax(status, version), argMax(tokens, version) FROM {table} "
    "GROUP BY trace_id, seq ORDER BY trace_id, seq"
)
#: The same by ``LIMIT 1 BY``: each row's newest version first, the first kept.
LATEST_BY_LIMIT_BY = (
    "SELECT trace_id, seq, status, tokens FROM {table} "
    "ORDER BY trace_id, seq, version DESC LIMIT 1 BY trace_id, seq"
)
#: A page's figure over the latest versions (a subquery: 18.16 has no WITH … AS).
STATUS_FIGURE = (
    "SELECT status, count(), sum(tokens) FROM ("
    "SELECT trace_id, seq, argMax(status, version) AS status, argMax(tokens, version) AS tokens "
    "FROM {table} GROUP BY trace_id, seq) GROUP BY status ORDER BY status"
)


def latest_rows() -> list[list[Any]]:
    """The latest version of each row, worked out in Python."""
    latest: dict[tuple[str, int], tuple[int, str, int]] = {}
    for trace, seq, version, status, tokens in ROWS:
        if (trace, seq) not in latest or version > latest[(trace, seq)][0]:
            latest[(trace, seq)] = (version, status, tokens)
    return [[t, s, status, tokens] for (t, s), (_, status, tokens) in sorted(latest.items())]


def as_lists(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    return [list(row) for row in rows]


@pytest.fixture(scope="module")
def expected() -> dict[str, list[list[Any]]]:
    latest = latest_rows()
    errors = [r for r in latest if r[2] == "error"]
    successes = [r for r in latest if r[2] == "success"]
    return {
        "latest": latest,
        "figure": [
            ["error", len(errors), sum(r[3] for r in errors)],
            ["success", len(successes), sum(r[3] for r in successes)],
        ],
    }


def test_the_figures_worked_out_by_hand(expected: dict[str, list[list[Any]]]) -> None:
    assert len(ROWS) == 360
    assert expected["figure"] == [["error", 60, 60_030], ["success", 240, 12_810]]


def test_a_distributed_table_spreads_traces_over_both_shards_and_reads_the_latest_versions(
    clickhouse_cluster: Any, expected: dict[str, list[list[Any]]]
) -> None:
    db = clickhouse_cluster.database
    clickhouse_cluster.on_every_shard(LOCAL_TABLE.format(db=db, columns=COLUMNS))
    clickhouse_cluster.on_every_shard(
        f"CREATE TABLE {db}.tool_messages AS {db}.tool_messages_local ENGINE = Distributed("
        f"{clickhouse_cluster.cluster}, {db}, tool_messages_local, cityHash64(trace_id))"
    )
    written = clickhouse_cluster.insert(
        f"INSERT INTO {db}.tool_messages (trace_id, seq, version, status, tokens) VALUES", ROWS
    )
    assert written == 360
    per_shard = [
        shard.execute(f"SELECT count(), uniqExact(trace_id) FROM {db}.tool_messages_local")[0]
        for shard in clickhouse_cluster.shards
    ]
    assert all(rows > 0 for rows, _ in per_shard), per_shard
    assert sum(rows for rows, _ in per_shard) == 360
    # Sharded by trace: no trace is split, so per-trace figures never cross shards.
    assert sum(traces for _, traces in per_shard) == 60
    assert clickhouse_cluster.execute(f"SELECT count() FROM {db}.tool_messages") == [(360,)]
    table = f"{db}.tool_messages"
    assert (
        as_lists(clickhouse_cluster.execute(LATEST_BY_ARGMAX.format(table=table)))
        == (expected["latest"])
    )
    assert (
        as_lists(clickhouse_cluster.execute(LATEST_BY_LIMIT_BY.format(table=table)))
        == (expected["latest"])
    )
    assert (
        as_lists(clickhouse_cluster.execute(STATUS_FIGURE.format(table=table)))
        == (expected["figure"])
    )


def chdb_rows(session: Any, sql: str) -> list[list[Any]]:
    return list(json.loads(session.query(sql, "JSONCompact").data())["data"])


def test_the_in_process_current_engine_gives_the_same_answers_to_the_same_sql(
    chdb_session: Any, expected: dict[str, list[list[Any]]]
) -> None:
    db = "toollens_machinery"
    chdb_session.query(f"DROP DATABASE IF EXISTS {db}")
    chdb_session.query(f"CREATE DATABASE {db}")
    chdb_session.query(LOCAL_TABLE.format(db=db, columns=COLUMNS))
    values = ", ".join(f"('{t}', {s}, {v}, '{st}', {n})" for t, s, v, st, n in ROWS)
    chdb_session.query(f"INSERT INTO {db}.tool_messages_local VALUES {values}")
    table = f"{db}.tool_messages_local"
    assert chdb_rows(chdb_session, f"SELECT count() FROM {table}") == [[360]]
    assert chdb_rows(chdb_session, LATEST_BY_ARGMAX.format(table=table)) == expected["latest"]
    assert chdb_rows(chdb_session, LATEST_BY_LIMIT_BY.format(table=table)) == expected["latest"]
    assert chdb_rows(chdb_session, STATUS_FIGURE.format(table=table)) == expected["figure"]
    chdb_session.query(f"DROP DATABASE {db}")
