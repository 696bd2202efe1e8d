"""One definition of the pairs: ``toollens pairs`` lists exactly what the Tool calls page shows.

The fixture store (``dbfixture.build_fixture``) has paired calls, a call without answer, a
result answering no call, a second answer, corrected error types and verdicts, and advice; the
page's table comes from ``db.queries.pairs.list_pairs`` (the function the page calls), the CLI's
rows from its CSV and JSON Lines output.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from dbfixture import OpenPage, fixture_store
from typer.testing import CliRunner

from dashboard import pages
from db.engine import make_engine
from db.queries.pairs import PAIR_COLUMNS, POSITION_COLUMNS, count_pairs, list_pairs
from ingest.cli import app

runner = CliRunner()


def _json_value(value: Any) -> Any:
    """A page table cell as ``toollens pairs`` writes it in JSON Lines."""
    if value is None or pd.isna(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return int(value) if isinstance(value, int) else value


def _csv_cell(value: Any) -> str:
    """A page table cell as the csv module writes it (empty for a missing value)."""
    return "" if value is None or pd.isna(value) else str(value)


@pytest.fixture
def pairs_store(db_url: str) -> str:
    """The fixture store on each database; its URL."""
    return fixture_store(db_url)


def test_the_cli_csv_lists_the_pages_pairs_with_the_same_values(pairs_store: str) -> None:
    engine = make_engine(pairs_store)
    total = count_pairs(engine)
    page = list_pairs(engine, limit=total)
    engine.dispose()
    assert total == 10
    assert list(page.columns) == [*PAIR_COLUMNS, *POSITION_COLUMNS]

    result = runner.invoke(app, ["pairs", "--db", pairs_store, "--format", "csv"])
    assert result.exit_code == 0
    table = list(csv.reader(io.StringIO(result.stdout)))
    assert table[0] == list(PAIR_COLUMNS)
    shown = [[_csv_cell(v) for v in row] for row in page[list(PAIR_COLUMNS)].itertuples(False)]
    assert table[1:] == shown
    # The fixture's pairs in all their kinds, so the comparison covers every column.
    assert {row[PAIR_COLUMNS.index("pair_state")] for row in table[1:]} >= {
        "paired", "missing_result", "orphan_result", "duplicate_result",
    }  # fmt: skip
    for column in ("call_id", "suggestion", "verdict", "verdict_reason", "status_source"):
        assert any(row[PAIR_COLUMNS.index(column)] for row in table[1:]), column


def test_the_cli_jsonl_keeps_the_pages_types(pairs_store: str) -> None:
    engine = make_engine(pairs_store)
    page = list_pairs(engine, limit=count_pairs(engine))[list(PAIR_COLUMNS)]
    engine.dispose()
    lines = runner.invoke(app, ["pairs", "--db", pairs_store]).stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [list(r) for r in rows] == [list(PAIR_COLUMNS)] * len(page)
    expected = [[_json_value(v) for v in row] for row in page.astype(object).itertuples(False)]
    assert [list(r.values()) for r in rows] == expected


def test_the_page_shows_every_cli_column_what_the_call_did_first(
    open_page: OpenPage, sqlite_url: str
) -> None:
    at = open_page(fixture_store(sqlite_url), pages.CALLS.script)
    shown = list(at.dataframe[0].proto.column_order)
    # Tool, error type, arguments and result first (on screen at 1,440 px: the browser test
    # measures), then where the call is, then the other fields in the CLI's order.
    head = ["tool", "error_type", "arguments", "result", "status", "pair", "trace", "title"]
    assert shown == head + [c for c in PAIR_COLUMNS if c not in head]


def _import_one_call(
    engine: Any, run: str, model: str, ask: str, call: Any, answer: str, t0: Any, answered: Any
) -> None:
    """A trace with one call (asked and made at ``t0``), its answer at ``answered``, and a Tool
    Message that answers no call (``zz``, "stray", no time)."""
    from ingest.importing.pipeline import import_traces
    from ingest.model import Message, ToolResult, Trace

    trace = Trace(
        format="openai_chat", source_file="a.json", external_id=run, model=model,
        messages=[
            Message(seq=0, role="user", content=ask, timestamp=t0),
            Message(seq=1, role="assistant", tool_calls=[call], timestamp=t0),
            Message(seq=2, role="tool", content=answer,
                    tool_result=ToolResult(tool_call_id=call.tool_call_id), timestamp=answered),
            Message(seq=3, role="tool", content="stray", tool_result=ToolResult(tool_call_id="zz")),
        ],
    )  # fmt: skip
    import_traces(engine, [trace], origin="test", source="pairs")


def test_a_pair_shows_its_time_model_previews_and_duration(engine: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from ingest.model import ToolCall

    t0 = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)
    call = ToolCall(
        call_index=0, tool_call_id="c1", name="read_file",
        arguments_raw='{"path":\n"/etc/app.conf"}', arguments={"path": "/etc/app.conf"},
    )  # fmt: skip
    _import_one_call(
        engine, "run-a", "gpt-4o", "Read the\nconfig", call, "line one\nline two " + "x" * 200,
        t0, t0 + timedelta(seconds=2, milliseconds=250),
    )  # fmt: skip
    page = list_pairs(engine)
    rows = page[["title", "pair", "model", "arguments", "result", "duration_s"]]
    assert [[_json_value(v) for v in r] for r in rows.astype(object).itertuples(False)] == [
        ["Read the config", "1:0", "gpt-4o", '{"path": "/etc/app.conf"}',
         "line one line two " + "x" * 102, 2.25],
        ["Read the config", "r3", "gpt-4o", None, "stray", None],
    ]  # fmt: skip
    assert page["time"].tolist()[0] == pd.Timestamp(t0)
    assert pd.isna(page["time"].tolist()[1])


def test_the_cli_csv_writes_times_durations_and_quoted_text_exactly(engine: Any) -> None:
    """The CSV as Arrow's writer makes it from the tables the ADBC drivers read: text quoted
    (quotes doubled), a missing value empty, times in UTC to the microsecond, durations as the
    shortest decimal that reads back as the same float."""
    from datetime import UTC, datetime, timedelta

    from ingest.model import ToolCall

    t0 = datetime(2026, 11, 3, 9, 0, 0, 123456, tzinfo=UTC)
    call = ToolCall(
        call_index=0, tool_call_id="c1", name="grep",
        arguments_raw='{"q": "a,\\"b\\""}', arguments={"q": 'a,"b"'},
    )  # fmt: skip
    _import_one_call(
        engine, "run-csv", "m-1", "Find it", call, 'Error: no match for "b"',
        t0, t0 + timedelta(seconds=0.1),
    )  # fmt: skip
    url = engine.url.render_as_string(hide_password=False)
    result = runner.invoke(app, ["pairs", "--db", url, "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        ",".join(f'"{c}"' for c in PAIR_COLUMNS),
        '"run-csv","Find it","1:0","2026-11-03 09:00:00.123456Z","m-1","c1","grep","client",'
        '"{""q"": ""a,\\""b\\""""}","Error: no match for ""b""",0.1,"paired","error",'
        '"inferred","other",8,1,,,,0,0,,,"estimate"',
        '"run-csv","Find it","r3",,"m-1","zz","(unknown)",,,"stray",,"orphan_result",'
        '"success","inferred",,2,,,,,0,0,,,"estimate"',
    ]
    # Read back by the csv module, each cell is the page's value as text.
    page = list_pairs(engine, limit=10)[list(PAIR_COLUMNS)].astype(object)
    table = list(csv.reader(io.StringIO(result.stdout)))[1:]
    for row, shown in zip(table, page.itertuples(False), strict=True):
        assert row[PAIR_COLUMNS.index("duration_s")] == (
            "" if pd.isna(shown.duration_s) else repr(shown.duration_s)
        )
        assert row[PAIR_COLUMNS.index("result")] == shown.result


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"pair_state": "paired"},
        {"status": "error"},
        {"verdict": "ignored"},
        {"kind": "client"},
    ],
)
def test_the_arrow_tables_hold_the_pages_rows_under_a_condition(
    pairs_store: str, query: dict[str, str]
) -> None:
    """``iter_pair_tables`` (sorted and joined to the traces in Arrow) lists what the page's
    SQL lists, under the page's conditions too."""
    from db.queries.pairs import PairQuery, iter_pair_tables

    q = PairQuery(**query)
    engine = make_engine(pairs_store)
    page = list_pairs(engine, query=q, limit=1000)[list(PAIR_COLUMNS)].astype(object)
    tables = list(iter_pair_tables(engine, query=q))
    engine.dispose()
    rows = [list(r.values()) for t in tables for r in t.to_pylist()]
    shown = [[None if pd.isna(v) else v for v in row] for row in page.itertuples(False)]
    assert rows == shown
    assert len(rows) > 0


@pytest.mark.parametrize("size", [1, 1000])
def test_the_calls_joined_to_their_answers_in_arrow_are_the_pages_statement(
    pairs_store: str, size: int
) -> None:
    """Every pair read as four tables a range (calls, their answers, lone Tool Messages,
    traces; PostgreSQL's way) and read by the page's statement (SQLite's): the same tables, on
    both databases, a trace a range or all in one."""
    from db.bulk.arrow_read import stream_range_tables
    from db.queries import pairs as p

    engine = make_engine(pairs_store)
    ranges = list(p._trace_ranges(engine, size))
    joined = (p._range_parts(p.NO_FILTERS, p.ALL_PAIRS, one_line=False), p._range_traces())
    every = p._every_pair_reads()
    apart = pa.concat_tables(stream_range_tables(engine, every, ranges, p._assemble_every))
    together = pa.concat_tables(stream_range_tables(engine, joined, ranges, p._assemble))
    engine.dispose()
    assert apart.to_pylist() == together.to_pylist()
    assert apart.schema == together.schema == p.PAIR_SCHEMA
    assert apart.num_rows == 10 and len(ranges) == (3 if size == 1 else 1)


#: Raw arguments with every line break the preview replaces, in and around the cut at 120
#: characters (``"\r\n"`` split by it), after characters of two and four bytes in UTF-8; ``c4``
#: has more bytes than 120 characters can (``toollens pairs`` on PostgreSQL has the server cut
#: that one, the others it cuts in Arrow).
BROKEN_ARGUMENTS = {
    "c1": '{\r\n\t"path": "a.py",\r\n\t"text": "x\ry"\n}',
    "c2": "é" * 60 + "🙂" * 59 + "\r\nrest",
    "c3": "\t" * 118 + "\n\r\n\r",
    "c4": "ü" * 119 + "\r\n" + "x" * 300,
}
BROKEN_PREVIEWS = {
    "c1": '{  "path": "a.py",  "text": "x y" }',
    "c2": "é" * 60 + "🙂" * 59 + " ",
    "c3": " " * 118 + "  ",
    "c4": "ü" * 119 + " ",
}


def test_the_arguments_preview_is_one_line_in_the_page_and_in_the_cli(
    db_url: str, tmp_path: Any
) -> None:
    """The page cuts and joins the arguments in SQL, ``toollens pairs`` cuts them in SQL and
    joins them in Arrow: the same one-line text of the same characters, on both databases."""
    import orjson

    from db.contract.rows import one_line_preview
    from db.queries.pairs import iter_pair_tables
    from ingest.importing.pipeline import import_paths

    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for call_id, raw in BROKEN_ARGUMENTS.items():
        function = {"name": "edit", "arguments": raw}
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": function}
        ]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    path = tmp_path / "broken.jsonl"
    path.write_bytes(orjson.dumps({"id": "broken", "messages": messages}) + b"\n")
    engine = make_engine(db_url)
    assert import_paths(engine, [path]).traces == 1
    assert {k: one_line_preview(v) for k, v in BROKEN_ARGUMENTS.items()} == BROKEN_PREVIEWS
    page = list_pairs(engine, limit=10)
    tables = list(iter_pair_tables(engine))
    engine.dispose()
    assert dict(zip(page["call_id"], page["arguments"], strict=True)) == BROKEN_PREVIEWS
    rows = [r for t in tables for r in t.to_pylist()]
    assert {r["call_id"]: r["arguments"] for r in rows} == BROKEN_PREVIEWS
    result = runner.invoke(app, ["pairs", "--db", db_url, "--format", "jsonl"])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r["call_id"]: r["arguments"] for r in lines} == BROKEN_PREVIEWS


def test_the_cli_lists_an_error_after_a_thousand_successes(db_url: str, tmp_path: Any) -> None:
    """A range whose first 1,100 pairs have no error type, suggestion or verdict, then one
    that has: every pair listed, the error's fields as the page shows them (SQLite's driver
    types a column by its first batch of rows, 1,024 by default, and failed on the error)."""
    import orjson

    from ingest.importing.pipeline import import_paths

    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(1101):
        function = {"name": "lookup", "arguments": orjson.dumps({"n": i}).decode()}
        call = {"id": f"c{i}", "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        content = "Error: order 7 not found. Use search_orders instead." if i == 1100 else "ok"
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": content})
    path = tmp_path / "long.jsonl"
    path.write_bytes(orjson.dumps({"id": "long", "messages": messages}) + b"\n")
    engine = make_engine(db_url)
    assert import_paths(engine, [path]).traces == 1
    last = list_pairs(engine, limit=1, offset=1100).iloc[0]
    engine.dispose()
    assert (last["call_id"], last["status"]) == ("c1100", "error")
    for out_format in ("jsonl", "csv"):
        result = runner.invoke(app, ["pairs", "--db", db_url, "--format", out_format])
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        if out_format == "jsonl":
            rows = [json.loads(line) for line in lines]
            assert [r["call_id"] for r in rows] == [f"c{i}" for i in range(1101)]
            error = rows[-1]
            assert {k: error[k] for k in ("status", "error_type", "suggestion", "verdict")} == {
                k: last[k] for k in ("status", "error_type", "suggestion", "verdict")
            }
            assert (error["error_type"], error["suggestion"]) == (
                "not_found",
                "Use search_orders instead.",
            )
            assert {r["error_type"] for r in rows[:-1]} == {None}
        else:
            assert len(list(csv.reader(io.StringIO(result.stdout)))) == 1102


def test_the_cli_lists_the_pages_pairs_of_every_real_trace(db_url: str, realdata: Any) -> None:
    """Every real trace of every format in one store: ``toollens pairs`` (Arrow, a range of a
    thousand traces at a time) lists exactly the page's rows, with the page's values."""
    from ingest.importing.pipeline import import_paths

    files = sorted(p for p in realdata.rglob("*") if p.is_file() and p.parent != realdata)
    engine = make_engine(db_url)
    summary = import_paths(engine, files, workers=0)
    assert summary.rejected == 0
    total = count_pairs(engine)
    page = list_pairs(engine, limit=total)[list(PAIR_COLUMNS)]
    engine.dispose()
    lines = runner.invoke(app, ["pairs", "--db", db_url]).stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    expected = [[_json_value(v) for v in row] for row in page.astype(object).itertuples(False)]
    assert [list(r.values()) for r in rows] == expected
    assert len(rows) == total == 2320


@pytest.mark.parametrize("out_format", ["jsonl", "csv"])
def test_the_cli_stops_quietly_when_its_reader_does(
    sqlite_url: str, tmp_path: Any, out_format: str
) -> None:
    """``toollens pairs | head -1``: the reader closes the pipe after a line; the command
    stops without a traceback, with status 1 (as Python's own writes do), in both formats."""
    import subprocess
    import sys

    import orjson

    from ingest.importing.pipeline import import_paths

    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(3000):  # some 900 kB of lines: more than a pipe holds
        function = {"name": "lookup", "arguments": orjson.dumps({"n": i, "pad": "x" * 60}).decode()}
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": function}
        ]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "found " * 20})
    path = tmp_path / "many.jsonl"
    path.write_bytes(orjson.dumps({"id": "many", "messages": messages}) + b"\n")
    engine = make_engine(sqlite_url)
    assert import_paths(engine, [path]).traces == 1
    engine.dispose()
    command = [sys.executable, "-m", "ingest.cli", "pairs", "--db", sqlite_url]
    proc = subprocess.Popen(
        [*command, "--format", out_format], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    status = proc.wait(timeout=120)
    assert proc.stderr.read() == b""
    assert status == 1
    assert first.startswith(b'{"trace":"many"' if out_format == "jsonl" else b'"trace","title"')
