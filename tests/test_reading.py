"""Reading files apart from importing them: traces and rejections from files, no database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ingest import formats
from ingest.formats.base import Deferred
from ingest.input.jsonrecord import decode_value
from ingest.input.reading import (
    UnknownFormatError,
    finish_deferred,
    read_file,
    resolve_format,
    split_file,
)
from ingest.model import Rejected, Trace

ROOT = Path(__file__).resolve().parents[1]
TAU_GOLDEN = ROOT / "tests" / "golden" / "openai_chat" / "tau_bench" / "input.json"

# Runs ``toollens lint`` in a process where importing SQLAlchemy fails, then names the modules of
# ``db`` that got loaded anyway (only the plain-Python ones may be: the vocabulary and the
# exact JSON reader).
LINT_WITHOUT_SQLALCHEMY = """
import sys
sys.modules["sqlalchemy"] = None  # from here on, `import sqlalchemy` raises ImportError
from ingest.cli import app
try:
    app(sys.argv[1:])
finally:
    print("db modules:", sorted(m for m in sys.modules if m == "db" or m.startswith("db.")))
"""


def test_lint_runs_where_sqlalchemy_cannot_be_imported() -> None:
    result = subprocess.run(
        [sys.executable, "-c", LINT_WITHOUT_SQLALCHEMY, "lint", str(TAU_GOLDEN)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        f"{TAU_GOLDEN}:17 47712c8233a0 call_x1: error_without_suggestion: "
        "Error: reservation not found",
        "2 traces, 3 tool calls, 3 tool results",
        "  cancel_reservation: 1 finding (error_without_suggestion 1)",
        "  calculate: 0 findings ()",
        "  get_user_details: 0 findings ()",
        "1 finding",
        "db modules: ['db', 'db.contract', 'db.contract.exact_json', 'db.contract.vocabulary',"
        " 'db.contract.widths']",
    ]
    assert result.returncode == 1  # one finding, over the default threshold of 0


def test_read_file_sniffs_the_format_and_gives_the_parsers_traces() -> None:
    traces = list(read_file(TAU_GOLDEN, "tau.json"))
    assert all(isinstance(t, Trace) for t in traces)
    assert [(t.format, t.source_file, t.source_line) for t in traces if isinstance(t, Trace)] == [
        ("openai_chat", "tau.json", 2),
        ("openai_chat", "tau.json", 17),
    ]


def _the_one_rejection(path: Path, data: bytes) -> Rejected:
    """What reading a file holding ``data`` gives: one rejection, and nothing else."""
    path.write_bytes(data)
    [rejected] = list(read_file(path))
    assert isinstance(rejected, Rejected)
    return rejected


def test_an_unknown_format_is_one_rejection_naming_every_registered_format(
    tmp_path: Path,
) -> None:
    rejected = _the_one_rejection(tmp_path / "x.json", b'{"hello": "world"}')
    assert (rejected.reason, rejected.line, rejected.raw) == (
        "unknown_format",
        1,
        b'{"hello": "world"}',
    )
    assert rejected.message == (
        'could not recognize the trace format (otlp: record 1: no "resourceSpans" array; '
        'langfuse: record 1: no "observations" array; langsmith: record 1: no "id" / '
        '"run_type" key); '
        f"pass --format NAME to read it as one (one of: {', '.join(formats.format_names())})"
    )


def test_an_unknown_format_rejection_names_the_closest_formats_and_why_not(
    tmp_path: Path,
) -> None:
    rejected = _the_one_rejection(
        tmp_path / "x.jsonl", b'{"input": "hi", "output": 3}\n{"messages": "none"}\n'
    )
    assert rejected.message.startswith(
        'could not recognize the trace format (langchain: record 2: "messages" is string, '
        'not an array; anthropic: record 2: "messages" is string, not an array; openai_chat: '
        'record 2: "messages" is string, not an array); pass --format NAME to read it as one '
        "(one of: "
    )


def test_resolve_format_names_the_valid_formats_for_an_unknown_one() -> None:
    assert resolve_format("toolbench") is formats.toolbench.FORMAT
    with pytest.raises(UnknownFormatError) as excinfo:
        resolve_format("xml")
    assert str(excinfo.value) == (
        f"unknown format 'xml' (valid formats: {', '.join(formats.format_names())})"
    )


def test_a_deferred_record_is_finished_into_the_trace_reading_it_whole_gives(
    tmp_path: Path,
) -> None:
    # A NUL escape in a key and a string: the worker's decoding must replace it as the reader did.
    conversation = {
        "id": "c1",
        "messages": [
            {"role": "user", "content": "find\u0000it", "extra\u0000key": 1},
            {"role": "assistant", "content": None, "tool_calls": []},
        ],
    }
    path = tmp_path / "c.jsonl"
    path.write_bytes(orjson.dumps(conversation) + b"\n")
    [deferred] = list(split_file(path, "c.jsonl", defer=True))
    assert isinstance(deferred, Deferred)
    assert (deferred.format, deferred.record.value) == ("openai_chat", None)  # left undecoded
    finished = finish_deferred(deferred)
    [whole] = list(read_file(path, "c.jsonl"))
    assert isinstance(finished, Trace) and finished == whole
    assert finished.messages[0].content == "find\ufffdit"


def test_decode_value_replaces_nul_in_keys_and_strings_only() -> None:
    assert decode_value(b'{"a\\u0000": ["x\\u0000y", 1]}') == {"a\ufffd": ["x\ufffdy", 1]}
    assert decode_value(b'"a\\u0000"') == "a\x00"  # a bare string is no record: left as it is
