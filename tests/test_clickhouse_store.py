"""The ClickHouse store's parts that need no server: its URLs and password, the one-line error
for a server that does not answer, and the SQL the catalogue's statements compile to (which the
2018 server and the current engine both run: ``tests/test_clickhouse_parity.py``)."""

from __future__ import annotations

import re
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Float, Integer, String, cast, column, func, literal, select, table
from typer.testing import CliRunner

from db.clickhouse import client as ch_client
from db.clickhouse.dialect import SHADOW, ClickHouseDialect, result_name
from db.clickhouse.url import PASSWORD_FILE_ENV, ClickHouseUrlError, parse
from db.engine import PASSWORD_ENV, display_url, resolve_url
from ingest.cli import app

runner = CliRunner()


def test_a_cluster_url_names_every_server_its_database_and_cluster() -> None:
    target = parse("clickhouse://ann@ch1.internal:9000,ch2.internal:9001/traces?cluster=prod")
    assert target.hosts == (("ch1.internal", 9000), ("ch2.internal", 9001))
    assert (target.user, target.database, target.cluster) == ("ann", "traces", "prod")
    assert parse("clickhouse://h/").hosts == (("h", 9000),)
    assert parse("clickhouse://h:9440/d?secure=1").secure is True
    assert parse("chdb:///var/lib/toollens?database=runs").path == "/var/lib/toollens"
    assert parse("chdb://?database=runs").path is None


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("clickhouse://h:port/d", "the port of h is not a number: 'port'"),
        ("clickhouse://h:9000/d;drop", "the database name 'd;drop' is not a plain name"),
        ("clickhouse://h:9000/d?cluster=a-b", "the cluster name 'a-b' is not a plain name"),
    ],
)
def test_a_url_that_cannot_be_read_says_why(url: str, said: str) -> None:
    with pytest.raises(ClickHouseUrlError) as caught:
        parse(url)
    assert str(caught.value) == said


def test_the_password_comes_from_the_file_then_the_environment_and_is_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "pw"
    secret.write_text("from-file\nignored\n")
    monkeypatch.setenv(PASSWORD_ENV, "from-env")
    assert parse("clickhouse://h:1/d").password == "from-env"
    monkeypatch.setenv(PASSWORD_FILE_ENV, str(secret))
    assert parse("clickhouse://h:1/d").password == "from-file"
    assert parse("clickhouse://u:in-url@h:1/d").password == "in-url"
    shown = display_url(resolve_url("clickhouse://u:in-url@h1:1,h2:2/d?cluster=c"))
    assert shown == "clickhouse://u:***@h1:1,h2:2/d?cluster=c"
    assert "from-file" not in repr(parse("clickhouse://h:1/d"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    port = _free_port()
    result = runner.invoke(app, ["summary", "--db", f"clickhouse://u:hunter2@127.0.0.1:{port}/d"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines == [
        f"Error: ClickHouse at 127.0.0.1:{port}: Code: 210. Connection refused "
        f"(127.0.0.1:{port}) (start the ClickHouse servers, or fix the hosts and ports in --db)"
    ]
    assert "hunter2" not in result.output


def _sql(stmt: Any) -> str:
    dialect = ClickHouseDialect()
    dialect.database = "store"  # type: ignore[attr-defined]
    text = str(stmt.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    return " ".join(text.split())


t = table("tool_results", column("status"), column("tokens"), column("flag"), column("ms"))


def test_filtered_aggregates_become_if_combinators() -> None:
    stmt = select(
        func.count().filter(t.c.status == "error").label("errors"),
        func.sum(t.c.tokens).filter(t.c.status == "error").label("error_tokens"),
    )
    assert _sql(stmt) == (
        "SELECT countIf(ifNull(tool_results.status = 'error', 0)) AS errors, "
        "sumIf(tool_results.tokens, ifNull(tool_results.status = 'error', 0)) AS error_tokens "
        "FROM store.tool_results AS tool_results"
    )


def test_flags_casts_and_limits_are_spelled_for_clickhouse() -> None:
    stmt = (
        select(
            cast(t.c.ms, Float).label("s"),
            cast(literal(None), Integer).label("none"),
            func.substr(t.c.status, 1, 3).label("head"),
        )
        .where(t.c.flag.is_(True), t.c.status.is_not(None))
        .limit(5)
        .offset(10)
    )
    assert _sql(stmt) == (
        "SELECT CAST(tool_results.ms AS Nullable(Float64)) AS s, "
        "CAST(NULL AS Nullable(Int64)) AS none, "
        "if(isNull(tool_results.status), NULL, arrayStringConcat(arraySlice("
        "extractAll(assumeNotNull(tool_results.status), '(?s).'), 1, 3))) AS head "
        "FROM store.tool_results AS tool_results "
        "WHERE ifNull(tool_results.flag = 1, 0) AND tool_results.status IS NOT NULL "
        "LIMIT 10, 5"
    )


def test_a_label_naming_a_column_of_its_own_expression_is_renamed_and_given_back() -> None:
    total = func.coalesce(func.sum(t.c.tokens), 0).label("tokens")
    stmt = select(total).order_by(total.desc())
    assert _sql(stmt) == (
        f"SELECT coalesce(sum(tool_results.tokens), 0) AS tokens{SHADOW} "
        f"FROM store.tool_results AS tool_results ORDER BY tokens{SHADOW} DESC"
    )
    assert result_name(f"tokens{SHADOW}") == "tokens"


def test_literals_are_quoted_so_the_engine_reads_the_same_text(chdb_session: Any) -> None:
    text = "it's a \\ back'slash\n100% \t \u00e9 \U0001f600"
    found = ch_client.ChdbClient(parse("chdb://")).query(f"SELECT {ch_client.literal(text)} AS v")
    assert found == (["v"], [(text,)])


def _without_seconds(line: str) -> str:
    return re.sub(r" in [0-9.]+ s$", "", line.strip())


def test_the_demo_fills_a_clickhouse_store_as_it_fills_sqlite(
    clickhouse_db: str, tmp_path: Path
) -> None:
    """``toollens demo`` on ClickHouse: the same import line and the same summary as on SQLite."""
    sqlite = str(tmp_path / "demo.db")
    outputs = []
    for db in (sqlite, clickhouse_db):
        made = runner.invoke(app, ["demo", "--db", db, "--out", str(tmp_path / "traces")])
        assert made.exit_code == 0, made.output
        summary = runner.invoke(app, ["summary", "--json", "--db", db])
        assert summary.exit_code == 0, summary.output
        outputs.append((_without_seconds(made.output), summary.output))
    assert outputs[0][0] == ("3 files, 60 traces imported, 0 updated, 0 unchanged, 0 rejected")
    assert outputs[1] == outputs[0]


def test_copying_a_clickhouse_store_onto_itself_is_refused_in_one_line() -> None:
    url = "clickhouse://h1:9000,h2:9000/d?cluster=c"
    result = runner.invoke(app, ["copy", "--from", url, "--to", url])
    assert result.exit_code == 2
    assert result.output == "Error: --from and --to name the same store\n"


#: Characters of one, two, three and four bytes, a newline and a quote.
CUT = "a\u00e9\u20ac\U0001f3af\nb'c\U0001f600d"


def _cut_on(client: Any) -> list[str]:
    dialect = ClickHouseDialect()
    stmts = [select(func.substr(literal(CUT), start, n)) for start, n in ((1, 4), (4, 3), (2, 9))]
    stmts.append(select(func.substr(cast(literal(None), String), 1, 2)))
    sql = [str(s.compile(dialect=dialect, compile_kwargs={"literal_binds": True})) for s in stmts]
    return [client.query(q % {})[1][0][0] for q in sql]


def test_substr_cuts_characters_as_sqlite_on_chdb(chdb_session: Any) -> None:
    assert _cut_on(ch_client.ChdbClient(parse("chdb://"))) == [CUT[0:4], CUT[3:6], CUT[1:10], None]


def test_substr_cuts_characters_as_sqlite_on_the_2018_server(clickhouse_cluster: Any) -> None:
    host, port = clickhouse_cluster.shards[0].connection.hosts[0]
    client = ch_client.NativeClient(parse(f"clickhouse://{host}:{port}/default"))
    try:
        assert _cut_on(client) == [CUT[0:4], CUT[3:6], CUT[1:10], None]
    finally:
        client.close()


def test_an_import_writes_each_table_in_big_blocks(
    chdb_session: Any, realdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8,564 messages: two of the importer's usual batches (5,000 messages), one block of
    messages for ClickHouse (up to 50,000)."""
    inserts: list[tuple[str, int]] = []
    insert = ch_client.ChdbClient.insert

    def counted(self: Any, table: str, columns: Any, rows: Any) -> None:
        inserts.append((table.split(".")[-1], len(rows)))
        insert(self, table, columns, rows)

    monkeypatch.setattr(ch_client.ChdbClient, "insert", counted)
    database = f"t_{uuid.uuid4().hex[:12]}"
    try:
        db = f"chdb://?database={database}"
        out = runner.invoke(app, ["import", "--db", db, str(realdata)])
        assert out.exit_code == 0, out.output
        assert "245 traces imported" in out.output
    finally:
        chdb_session.query(f"DROP DATABASE IF EXISTS {database}")
    assert [n for table, n in inserts if table == "messages_local"] == [8564]
    assert [n for table, n in inserts if table == "traces_local"] == [245]
