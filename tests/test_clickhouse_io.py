"""``toollens export`` and ``toollens receive`` on a ClickHouse store (issue 41): the incident
reports of the real files byte for byte as SQLite's, on the 2-shard cluster and on chdb; real
OTLP spans (protobuf and JSON) posted to a ``toollens receive`` process on loopback, stored on
the cluster and in a chdb folder with the ``summary --json`` and ``pairs`` SQLite gives for the
same spans; the receiver's rounds at most one a second there; and the rows of a write cut short
never read as a later trace's or version's."""

from __future__ import annotations

import csv
import io
import os
import re
import signal
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import test_clickhouse_parity
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_agent import genai_run, openinference_run, otlp_json, provider
from test_otlp_durability import batches, free_port, receive
from typer.testing import CliRunner

from db.clickhouse.dialect import client_of
from db.clickhouse.rows import StoredRows
from db.door import CLICKHOUSE_ROUND_SECONDS, round_seconds
from db.engine import make_engine
from ingest.cli import app
from ingest.otlp.assembler import TraceAssembler
from ingest.otlp.spool import SpanRef
from ingest.outputs.report import REPORT_FORMATS, build_report, render

runner = CliRunner()
#: The fixture giving a test a chdb database of its own (dropped after it).
chdb_database = test_clickhouse_parity.chdb_database

#: Every file of ``../shared/realdata`` (245 traces, 217 of them with tool calls).
FORMATS = ("claude-code", "langfuse-export", "openai-chat", "openai-legacy")
#: A report's time of writing, fixed so that two stores' reports can be compared.
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
#: Every how many traces (by id) a report is compared: a report reads nine queries, about
#: 0.3 s on chdb and 0.7 s on the 2018 cluster, so not all 217.
EVERY = 8
#: A Claude Code session imported when half written, then again grown (an update).
GROWN = "claude-code/f6108699-47cc-4b21-8ca6-3223992990b3.jsonl"


def _run(*args: str) -> bytes:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


def _import(db: str, realdata: Path) -> None:
    _run("import", "--db", db, *(str(realdata / f) for f in FORMATS))


# ---- export ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlite_store(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("sqlite") / "store.db")
    _import(db, realdata)
    return db


@pytest.fixture(scope="module")
def sampled(sqlite_store: str) -> list[str]:
    """Every :data:`EVERY`-th trace id ``pairs`` lists (what ``export`` takes)."""
    rows = csv.DictReader(
        io.StringIO(_run("pairs", "--format", "csv", "--db", sqlite_store).decode())
    )
    ids = sorted({row["trace"] for row in rows})
    assert len(ids) == 217
    return ids[::EVERY]


def _reports(db: str, ids: list[str]) -> dict[str, str]:
    engine = make_engine(db)
    try:
        out = {}
        for trace in ids:
            report = build_report(engine, trace, now=NOW)
            # The import's own time differs between two stores' imports of the same files.
            report["trace"]["imported_at"] = None
            for kind in REPORT_FORMATS:
                out[f"{trace}.{kind}"] = render(report, kind)
        return out
    finally:
        engine.dispose()


#: What differs between two ``export`` runs of the same trace: when each report and each
#: import was made.
_TIMES = re.compile(rb'(Generated `?|"generated_at": "|"imported_at": ")[0-9T:.+-]+')


def _exported(db: str, trace: str) -> dict[str, bytes]:
    return {
        kind: _TIMES.sub(rb"\1-", _run("export", trace, "--db", db, "--format", kind))
        for kind in REPORT_FORMATS
    }


@pytest.fixture(scope="module")
def sqlite_reports(sqlite_store: str, sampled: list[str]) -> dict[str, str]:
    reports = _reports(sqlite_store, sampled)
    assert len(reports) == 3 * len(sampled) == 84
    flagged = sum(len(orjson.loads(reports[f"{t}.json"])["flagged"]) for t in sampled)
    assert flagged == 19  # not 84 empty reports
    return reports


def _same_exports(db: str, sqlite_store: str, sampled: list[str], expected: dict[str, str]) -> None:
    found = _reports(db, sampled)
    assert [k for k in expected if found[k] != expected[k]] == []
    # The command itself, on the first and the last trace compared, in every format.
    for trace in (sampled[0], sampled[-1]):
        assert _exported(db, trace) == _exported(sqlite_store, trace)


def test_the_cluster_exports_the_reports_sqlite_exports(
    clickhouse_cluster: Any,
    realdata: Path,
    sqlite_store: str,
    sampled: list[str],
    sqlite_reports: dict[str, str],
) -> None:
    _import(clickhouse_cluster.url, realdata)
    _same_exports(clickhouse_cluster.url, sqlite_store, sampled, sqlite_reports)


def test_chdb_exports_the_reports_sqlite_exports(
    chdb_database: str,
    realdata: Path,
    sqlite_store: str,
    sampled: list[str],
    sqlite_reports: dict[str, str],
) -> None:
    db = f"chdb://?database={chdb_database}"
    _import(db, realdata)
    _same_exports(db, sqlite_store, sampled, sqlite_reports)


# ---- receive ----------------------------------------------------------------------------------


def _post(port: int, body: bytes, content_type: str) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/traces", data=body, headers={"Content-Type": content_type}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def _exports() -> tuple[list[tuple[bytes, str]], list[tuple[bytes, str]]]:
    """What is posted to the receiver in its first run and in its second: five OpenInference
    runs in protobuf, three GenAI runs in JSON, and one more OpenInference run whose first two
    spans come in the first run (stored as they are when it stops) and the rest, its root
    among them, in the second (the same trace stored again: an update)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    first = [(body, "application/x-protobuf") for body in batches()]
    for n in range(3):
        exporter = InMemorySpanExporter()
        genai_run(provider(exporter, trace_base=0x300 + n))
        body = orjson.dumps(otlp_json(exporter.get_finished_spans()))
        first.append((body, "application/json"))
    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter, trace_base=0x400))
    spans = exporter.get_finished_spans()
    assert [span.parent is None for span in spans] == [False] * 5 + [True]
    first.append((encode_spans(spans[:2]).SerializeToString(), "application/x-protobuf"))
    second = [(encode_spans(spans[2:]).SerializeToString(), "application/x-protobuf")]
    return first, second


def _received(db: str, spool: Path, *, kill: bool = False) -> None:
    """Everything of :func:`_exports` posted to ``toollens receive --db db``, run twice (a
    stop stores what the receiver holds, as its next start finds stored). ``kill``: the first
    run ends in ``kill -9`` once every export was answered (whatever it had not stored yet, its
    next start stores from the spool)."""
    first, second = _exports()
    for bodies in (first, second):
        port = free_port()
        # A start stores again what the spool holds before it listens: slow on the 2018
        # cluster of a busy machine.
        with receive(db, spool, port, quiet=3600, start_seconds=120) as process:
            for body, content_type in bodies:
                _post(port, body, content_type)
            if kill and bodies is first:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(10)


def _answers_of(db: str) -> dict[str, bytes]:
    return {
        "summary": _run("summary", "--json", "--db", db),
        "pairs": _run("pairs", "--db", db),
    }


@pytest.fixture(scope="module")
def received_by_sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("received")
    db = str(folder / "store.db")
    _received(db, folder / "spool")
    answers = _answers_of(db)
    assert b'"traces": 9,' in answers["summary"]
    assert answers["pairs"].count(b"\n") == 5 * 2 + 3 + 2
    return answers


def test_the_receiver_stores_on_the_cluster_what_sqlite_stores_across_a_kill_9(
    clickhouse_cluster: Any, received_by_sqlite: dict[str, bytes], tmp_path: Path
) -> None:
    _received(clickhouse_cluster.url, tmp_path / "spool", kill=True)
    assert _answers_of(clickhouse_cluster.url) == received_by_sqlite
    database = clickhouse_cluster.database
    per_shard = [
        shard.execute(f"SELECT count() FROM {database}.traces_local")[0][0]
        for shard in clickhouse_cluster.shards
    ]
    # Nine traces over both shards; the grown one twice (its two versions).
    assert sum(per_shard) == 10 and min(per_shard) > 0, per_shard
    versions = clickhouse_cluster.execute(
        f"SELECT version, count() FROM {database}.traces_all GROUP BY version ORDER BY version"
    )
    assert versions == [(1, 9), (2, 1)]


def test_the_receiver_stores_in_a_chdb_folder_what_sqlite_stores_across_a_kill_9(
    received_by_sqlite: dict[str, bytes], tmp_path: Path
) -> None:
    pytest.importorskip("chdb", reason="chdb is not installed (the in-process ClickHouse)")
    db = f"chdb://{tmp_path / 'ch'}"
    _received(db, tmp_path / "spool", kill=True)
    # chdb keeps one engine per process: the receiver's is gone, another process reads.
    answers = {}
    for name, args in (("summary", ["summary", "--json"]), ("pairs", ["pairs"])):
        command = [sys.executable, "-m", "ingest.cli", *args, "--db", db]
        answers[name] = subprocess.run(command, capture_output=True, check=True).stdout
    assert answers == received_by_sqlite


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _root(trace_id: str, offset: int) -> SpanRef:
    return SpanRef(trace_id, "0000000000000001", True, offset, 10)


def test_on_clickhouse_the_receiver_writes_at_most_one_round_a_second(
    chdb_database: str, tmp_path: Path
) -> None:
    clickhouse = make_engine(f"chdb://?database={chdb_database}")
    sqlite = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    assert (round_seconds(clickhouse), round_seconds(sqlite)) == (CLICKHOUSE_ROUND_SECONDS, 0.0)
    assert CLICKHOUSE_ROUND_SECONDS == 1.0
    clickhouse.dispose()
    sqlite.dispose()
    rounds: list[list[str]] = []
    clock = _Clock()
    assembler = TraceAssembler(
        lambda groups: rounds.append([g.trace_id for g in groups]),
        tmp_path / "spans.jsonl",
        round_seconds=1.0,
        clock=clock,
    )
    assembler.add([_root("a" * 32, 0)])
    assert assembler.flush(everything=False) == 1  # a complete trace: due at once
    clock.now += 0.5
    assembler.add([_root("b" * 32, 10)])
    clock.now += 0.3
    assembler.add([_root("c" * 32, 20)])
    # Due, but the last round began 0.8 s ago: they wait, then go as one round.
    assert assembler.flush(everything=False) == 0
    clock.now += 0.2
    assert assembler.flush(everything=False) == 2
    assembler.add([_root("d" * 32, 30)])
    assert assembler.flush(everything=False) == 0
    assert assembler.flush(everything=True) == 1  # a stop stores everything at once
    assert rounds == [["a" * 32], ["b" * 32, "c" * 32], ["d" * 32]]


def test_the_rows_of_a_write_cut_short_are_never_read_as_a_later_trace_or_version(
    chdb_database: str, realdata: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import whose ``traces`` rows were not written (the insert failed: every trace's
    other rows are in, new traces' and a new version's) and the same files imported again:
    the answers are SQLite's for one import, not the dead rows read with the new ones."""
    lines = (realdata / GROWN).read_bytes().splitlines(keepends=True)
    half, grown = tmp_path / "half" / "grown.jsonl", tmp_path / "grown.jsonl"
    half.parent.mkdir()
    half.write_bytes(b"".join(lines[:30]))
    grown.write_bytes(b"".join(lines))
    files = [*(str(realdata / f) for f in ("openai-chat", "openai-legacy")), str(grown)]
    sqlite, db = str(tmp_path / "store.db"), f"chdb://?database={chdb_database}"
    for store in (sqlite, db):
        _run("import", "--db", store, str(half))
    _run("import", "--db", sqlite, *files)
    write = StoredRows.write

    def fail_on_traces(self: StoredRows, client: Any, layout: Any) -> None:
        if self.table == "traces":
            raise OSError("connection reset while inserting")
        write(self, client, layout)

    monkeypatch.setattr(StoredRows, "write", fail_on_traces)
    result = runner.invoke(app, ["import", "--db", db, *files])
    assert result.exit_code != 0
    monkeypatch.undo()
    engine = make_engine(db)
    try:
        dead = client_of(engine).query(
            f"SELECT count() FROM {chdb_database}.messages_local WHERE trace_id > 1 OR version > 1"
        )[1][0][0]
    finally:
        engine.dispose()
    assert dead > 0  # the cut-short import's rows are on disk
    assert b" updated (+11 -0 messages)," in _run("import", "--db", db, *files)
    assert _answers_of(db) == _answers_of(sqlite)


def test_serve_otlp_refuses_a_chdb_store_in_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["serve", "--otlp", "--db", f"chdb://{tmp_path / 'ch'}"])
    assert result.exit_code == 2
    assert result.output == (
        "Error: --otlp: a chdb store opens in one process only, and the dashboard and the "
        "receiver are two: run `toollens receive` alone, or use a ClickHouse cluster\n"
    )
    assert not (tmp_path / "ch").exists()  # refused before the store was opened


def test_a_chdb_folder_another_process_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("chdb", reason="chdb is not installed (the in-process ClickHouse)")
    folder = tmp_path / "ch"
    hold = "import sys; from db.engine import make_engine; make_engine(sys.argv[1]); print('open'"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"{hold}, flush=True); sys.stdin.read()", f"chdb://{folder}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        command = [sys.executable, "-m", "ingest.cli", "receive", "--db", f"chdb://{folder}"]
        refused = subprocess.run([*command, "--port", str(free_port())], capture_output=True)
    finally:
        holder.communicate(timeout=30)
    assert refused.returncode == 2
    last = refused.stderr.decode().splitlines()[-1]
    assert last.startswith(f"Error: chdb at {folder}: "), last
    assert last.endswith(
        "(chdb keeps a store to the one process that opened it: is another process using it?)"
    )
    assert b"Traceback" not in refused.stderr
