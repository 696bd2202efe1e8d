"""``toollens serve`` finds a taken port before it prints its banner or starts Streamlit."""

from __future__ import annotations

import socket
from pathlib import Path

from typer.testing import CliRunner

from db.engine import make_engine
from ingest.cli import app

runner = CliRunner()


def test_serve_on_a_taken_port_says_so_and_prints_no_banner(tmp_path: Path) -> None:
    store = tmp_path / "toollens.db"
    make_engine(f"sqlite:///{store}").dispose()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(app, ["serve", "--db", str(store), "--port", str(port)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: port {port} on 127.0.0.1 is not available for the dashboard (Address already "
        "in use); stop what listens there or choose another with --port\n"
    )


def test_serve_otlp_checks_the_receivers_port_too(tmp_path: Path) -> None:
    store = tmp_path / "toollens.db"
    make_engine(f"sqlite:///{store}").dispose()
    with socket.socket() as free, socket.socket() as taken:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
        free.close()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        otlp_port = taken.getsockname()[1]
        result = runner.invoke(
            app,
            ["serve", "--db", str(store), "--port", str(port), "--otlp", "--otlp-port",
             str(otlp_port)],
        )  # fmt: skip
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: port {otlp_port} on 127.0.0.1 is not available for the OTLP receiver (Address "
        "already in use); stop what listens there or choose another with --otlp-port\n"
    )
