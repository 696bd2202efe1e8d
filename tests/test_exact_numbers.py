"""Exact numbers (issue 46): integers in tool-call arguments and Tool Messages are stored and
shown as written at any size, on SQLite and PostgreSQL: stored arguments, the trace page and
``toollens pairs``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from dbfixture import OpenPage
from formats_helpers import chat_call, chat_result
from typer.testing import CliRunner

from dashboard import pages
from db.engine import make_engine
from db.schema import ToolCallRow
from ingest.cli import app
from ingest.importing.pipeline import import_paths

BIG = "18446744073709551616"
NEGATIVE = "-123456789012345678901234567890"
ARGUMENTS = f'{{"n": {BIG}, "m": {NEGATIVE}, "small": 7}}'


def _store(db_url: str, tmp_path: Path) -> None:
    conversation: dict[str, Any] = {
        "id": "big-numbers",
        "messages": [
            {"role": "user", "content": "count"},
            chat_call("call_1", "count", ARGUMENTS),
            chat_result("call_1", f'{{"total": {BIG}}}'),
        ],
    }
    _import_line(db_url, tmp_path, json.dumps(conversation))


def _import_line(db_url: str, tmp_path: Path, line: str) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(line + "\n")
    engine = make_engine(db_url)
    summary = import_paths(engine, [path])
    engine.dispose()
    assert (summary.traces, summary.rejected) == (1, 0)


def _store_object_arguments(db_url: str, tmp_path: Path) -> None:
    """Anthropic's shape: the arguments are a JSON object in the record itself, not a string."""
    line = (
        '{"id": "object-args", "messages": [{"role": "user", "content": "count"}, '
        '{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "count", '
        f'"input": {ARGUMENTS}}}]}}, '
        '{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", '
        f'"content": "total {BIG}"}}]}}]}}'
    )
    _import_line(db_url, tmp_path, line)


def _stored_arguments(db_url: str) -> tuple[Any, str]:
    """The one call's arguments as read back, and as the database's own JSON text."""
    engine = make_engine(db_url)
    with engine.connect() as conn:
        parsed, text = conn.execute(
            sa.select(ToolCallRow.arguments, sa.cast(ToolCallRow.arguments, sa.Text))
        ).one()
    engine.dispose()
    return parsed, text


def _listed_pair(db_url: str) -> dict[str, Any]:
    """The one row ``toollens pairs --format jsonl`` prints."""
    result = CliRunner().invoke(app, ["pairs", "--db", db_url, "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    (pair,) = [json.loads(line) for line in result.output.splitlines() if line.strip()]
    return pair  # type: ignore[no-any-return]


def test_integers_beyond_64_bits_in_object_arguments_are_stored_and_listed_as_written(
    db_url: str, tmp_path: Path
) -> None:
    _store_object_arguments(db_url, tmp_path)
    parsed, _ = _stored_arguments(db_url)
    assert parsed == {"n": int(BIG), "m": int(NEGATIVE), "small": 7}
    pair = _listed_pair(db_url)
    assert pair["arguments"] == f'{{"n":{BIG},"m":{NEGATIVE},"small":7}}'
    assert pair["result"] == f"total {BIG}"


def test_integers_beyond_64_bits_in_arguments_are_stored_exactly(
    db_url: str, tmp_path: Path
) -> None:
    _store(db_url, tmp_path)
    parsed, text = _stored_arguments(db_url)
    assert parsed == {"n": int(BIG), "m": int(NEGATIVE), "small": 7}
    assert type(parsed["n"]) is int
    assert BIG in text and NEGATIVE in text


def test_the_pairs_command_shows_integers_beyond_64_bits_as_written(
    db_url: str, tmp_path: Path
) -> None:
    _store(db_url, tmp_path)
    pair = _listed_pair(db_url)
    assert pair["arguments"] == ARGUMENTS


def test_the_trace_page_shows_integers_beyond_64_bits_as_written(
    open_page: OpenPage, db_url: str, tmp_path: Path
) -> None:
    _store(db_url, tmp_path)
    at = open_page(db_url, pages.TRACE.script, {"trace": "big-numbers"})
    shown = "\n".join(str(c.value) for c in at.code)
    assert f'"n": {BIG}' in shown
    assert f'"m": {NEGATIVE}' in shown
    assert f'"total": {BIG}' in shown
