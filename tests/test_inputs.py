"""Folders on the command line (``ingest.input.paths``): a folder stands for the trace files below
it, in path order; hidden ones are passed over, the other files named as not read."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingest.cli import app
from ingest.input.paths import Inputs, MissingInput, expand

runner = CliRunner()
LINE = b'{"id": "%s", "messages": [{"role": "user", "content": "hi"}]}\n'


def _tree(root: Path) -> Path:
    """``logs/`` with traces at two depths, a note, a hidden folder and a hidden file."""
    logs = root / "logs"
    for name in ("b.jsonl", "a.JSON", "sub/c.ndjson", "sub/d.jsonl.gz", "z.jsonl",
                 ".git/e.json", "sub/.f.json", "README.md", "sub/notes.txt"):  # fmt: skip
        path = logs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        line = LINE % name.encode()
        path.write_bytes(gzip.compress(line) if name.endswith(".gz") else line)
    return logs


def test_a_folder_stands_for_its_trace_files_in_path_order(tmp_path: Path) -> None:
    logs = _tree(tmp_path)
    single = tmp_path / "notes.txt"
    single.write_bytes(LINE % b"single")
    inputs = expand([logs, single])
    assert inputs == Inputs(
        files=[logs / "a.JSON", logs / "b.jsonl", logs / "sub/c.ndjson",
               logs / "sub/d.jsonl.gz", logs / "z.jsonl", single],
        skipped=[logs / "README.md", logs / "sub/notes.txt"],
    )  # fmt: skip


def test_standard_input_is_kept_only_where_the_command_reads_it(tmp_path: Path) -> None:
    assert expand([Path("-")], stdin=True) == Inputs([Path("-")], [])
    with pytest.raises(MissingInput, match="-: no such file or folder"):
        expand([Path("-")])


def test_a_missing_path_and_a_folder_without_traces_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MissingInput, match="nowhere: no such file or folder"):
        expand([tmp_path / "nowhere"])
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("x")
    with pytest.raises(MissingInput, match=r"docs: no trace file in this folder \(\.json, "):
        expand([tmp_path / "docs"])


def test_import_and_lint_take_a_folder(tmp_path: Path) -> None:
    logs = _tree(tmp_path)
    db = str(tmp_path / "t.db")
    result = runner.invoke(app, ["import", "--db", db, str(logs)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == (
        "Note: 2 files in the folders named are not trace files (.json, .jsonl, .ndjson, .gz)"
        f" and were not read: {logs / 'README.md'}, {logs / 'sub/notes.txt'}"
    )
    assert result.stdout.startswith(
        "5 files, 5 traces imported, 0 updated, 0 unchanged, 0 rejected"
    )
    lint = runner.invoke(app, ["lint", str(logs)])
    assert lint.exit_code == 0, lint.output
    assert lint.stdout.splitlines()[-1] == "0 findings"
    missing = runner.invoke(app, ["import", "--db", db, str(tmp_path / "nowhere")])
    assert missing.exit_code == 2
    assert missing.stderr == f"Error: {tmp_path / 'nowhere'}: no such file or folder\n"
