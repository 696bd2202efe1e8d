"""No database password on the command line or the screen: banners, ``ps``, the password file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from db.engine import display_url, resolve_url
from ingest.cli import app
from tests.browser_support import free_port, run_server

PASSWORD = "hunter2-Zq81"


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_the_password_comes_from_the_environment_into_a_url_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLLENS_DB_PASSWORD", PASSWORD)
    assert resolve_url("postgresql://me@h/d") == f"postgresql+psycopg://me:{PASSWORD}@h/d"
    # A password in the URL wins; a SQLite file has none.
    assert resolve_url("postgresql://me:other@h/d") == "postgresql+psycopg://me:other@h/d"
    assert resolve_url("runs.db") == "sqlite:///runs.db"
    assert display_url(resolve_url("postgresql://me@h/d")) == "postgresql+psycopg://me:***@h/d"


def test_a_password_file_is_read_and_never_printed(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The option hands the password on through the process's environment (for the dashboard's
    # child process): restored after the test, so no later test in this worker sends it.
    monkeypatch.setenv("TOOLLENS_DB_PASSWORD", "")
    secret_file = tmp_path / "pw"
    secret_file.write_text(PASSWORD + "\n")
    # PostgreSQL here trusts local connections: any password is accepted, so it is checked
    # by what is printed, not by the server.
    out = CliRunner().invoke(
        app, ["--db-password-file", str(secret_file), "vacuum", "--db", pg_url]
    )
    assert out.exit_code == 0, out.output
    user = make_url(pg_url).username
    assert out.output.startswith(f"vacuumed: postgresql+psycopg://{user}:***@")
    assert PASSWORD not in out.output
    missing = CliRunner().invoke(app, ["--db-password-file", str(tmp_path / "nope"), "summary"])
    assert missing.exit_code == 2
    assert f"Error: --db-password-file: No such file or directory: {tmp_path / 'nope'}" in (
        missing.output
    )


@pytest.mark.parametrize("where", ["password env", "url env"])
def test_serve_shows_no_password_in_its_banner_or_in_ps(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    url = make_url(pg_url)
    if where == "password env":
        monkeypatch.setenv("TOOLLENS_DB_PASSWORD", PASSWORD)
        monkeypatch.setenv("TOOLLENS_DB", pg_url)
    else:
        monkeypatch.delenv("TOOLLENS_DB_PASSWORD", raising=False)
        monkeypatch.setenv(
            "TOOLLENS_DB", url.set(password=PASSWORD).render_as_string(hide_password=False)
        )
    port = free_port()
    command = [sys.executable, "-m", "ingest.cli", "serve", "--port", str(port)]
    with run_server(command, port, tmp_path / "serve.log") as server:
        argv = _cmdline(server.process.pid)
        log = server.log()
    assert "streamlit run" in argv and f"--server.port {port}" in argv
    assert PASSWORD not in argv
    assert "--db" not in argv
    assert PASSWORD not in log
    assert f"(database: postgresql+psycopg://{url.username}:***@" in log
