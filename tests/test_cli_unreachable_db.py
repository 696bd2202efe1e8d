"""A database that cannot be reached, does not exist or refuses the user is one ``Error:`` line
(what, where, what to do) and exit 2, for every command that opens the store; never a
traceback, never the password."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from conftest import _pg_admin_url, _require_pg
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from db.engine import describe_connection_failure
from ingest.cli import app

runner = CliRunner()

#: A password that must never be printed.
SECRET = "hunter2-do-not-print"


def command_lines(tmp_path: Path) -> dict[str, list[str]]:
    """Every command that opens the store, with the least it needs besides ``--db``."""
    traces = tmp_path / "t.jsonl"
    return {
        "import": ["import", str(traces)],
        "summary": ["summary"],
        "pairs": ["pairs"],
        "export": ["export", "t1"],
        "compare": ["compare", "--baseline", "import=1", "--candidate", "import=2"],
        "reanalyze": ["reanalyze"],
        "delete": ["delete", "--trace", "t1", "--yes"],
        "prune": ["prune", "--keep-days", "30", "--yes"],
        "vacuum": ["vacuum"],
        "rebuild-rollups": ["rebuild-rollups"],
        "serve": ["serve"],
        "receive": ["receive", "--spool", str(tmp_path / "spool")],
        "demo": ["demo", "--out", str(tmp_path / "demo")],
    }


COMMANDS = list(command_lines(Path("/nonexistent")))


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(tmp_path: Path, command: str, url: str) -> tuple[int, str, str]:
    args = command_lines(tmp_path)[command]
    (tmp_path / "t.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    result = runner.invoke(app, [*args, "--db", url], env={"TOOLLENS_DB_PASSWORD": SECRET})
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_a_closed_port_is_a_one_line_error(tmp_path: Path, command: str) -> None:
    port = closed_port()
    code, out, err = run(tmp_path, command, f"postgresql+psycopg://ann@127.0.0.1:{port}/traces")
    assert (code, out) == (2, "")
    assert err == (
        f"Error: no database server accepts connections at 127.0.0.1:{port} (start the "
        "database server, or fix the host and port in --db / TOOLLENS_DB)\n"
    )
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_database_that_does_not_exist_is_a_one_line_error(tmp_path: Path, command: str) -> None:
    _require_pg()
    server = make_url(_pg_admin_url())
    url = server.set(database="toollens_no_such_database").render_as_string(hide_password=False)
    code, out, err = run(tmp_path, command, url)
    host, port, user = server.host, server.port or 5432, server.username
    assert (code, out) == (2, "")
    assert err == (
        f'Error: database "toollens_no_such_database" does not exist on the server at '
        f"{host}:{port} (create it with createdb -h {host} -p {port} -U {user} "
        "toollens_no_such_database, or name an existing one in --db / TOOLLENS_DB)\n"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_a_role_the_server_does_not_know_is_a_one_line_error_without_the_password(
    tmp_path: Path, command: str
) -> None:
    _require_pg()
    server = make_url(_pg_admin_url())
    url = server.set(username="toollens_no_such_role", password=SECRET)
    code, out, err = run(tmp_path, command, url.render_as_string(hide_password=False))
    assert (code, out) == (2, "")
    assert err == (
        f"Error: the server at {server.host}:{server.port or 5432} has no role "
        '"toollens_no_such_role" (check the user name in --db / TOOLLENS_DB)\n'
    )
    assert SECRET not in err


def test_a_refused_password_is_named_with_where_to_set_it_and_never_shown() -> None:
    # What PostgreSQL answers a wrong password (the test server trusts every local user, so
    # it cannot be made to refuse one): the driver's message, as psycopg gives it.
    url = make_url(f"postgresql+psycopg://ann:{SECRET}@db.example:5433/traces")
    message = (
        'connection failed: connection to server at "10.0.0.5", port 5433 failed: FATAL:  '
        'password authentication failed for user "ann"'
    )
    assert describe_connection_failure(url, message) == (
        'the server at db.example:5433 refused the password of user "ann" (check the '
        "password in TOOLLENS_DB_PASSWORD or --db-password-file)"
    )


def test_a_failure_no_rule_knows_is_named_with_the_url_masked() -> None:
    url = make_url(f"postgresql+psycopg://ann:{SECRET}@db.example/traces")
    said = f"SSL error: certificate verify failed for {SECRET}"
    assert describe_connection_failure(url, said) == (
        "cannot connect to the database postgresql+psycopg://ann:***@db.example/traces: SSL "
        "error: certificate verify failed for *** (check --db / TOOLLENS_DB and that the "
        "server runs)"
    )
