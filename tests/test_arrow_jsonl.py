"""JSON Lines from Arrow tables read back as orjson's encoding of the same values."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ingest.outputs.arrow_jsonl import json_lines

SCHEMA = pa.schema(
    [
        ("text", pa.string()),
        ("count", pa.int64()),
        ("seconds", pa.float64()),
        ("time", pa.timestamp("us", tz="UTC")),
    ]
)
#: Every time a Python datetime holds (years 1 to 9999, as Arrow spells them: four digits).
times = st.datetimes(timezones=st.just(UTC))
rows = st.fixed_dictionaries(
    {
        # A few values again and again, as a pair's trace, tool and status repeat.
        "text": st.none()
        | st.sampled_from(["ok", 'say "hi"', "x\u0001y", ""])
        | st.text(st.characters(exclude_categories=["Cs"])),
        "count": st.none() | st.integers(-(2**63), 2**63 - 1),
        "seconds": st.none() | st.floats(allow_nan=True, allow_infinity=True),
        "time": st.none() | times,
    }
)


def _expected(row: dict[str, Any]) -> Any:
    return orjson.loads(orjson.dumps(row))


EDGES = [
    datetime.min.replace(tzinfo=UTC),
    datetime.max.replace(tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    datetime(2026, 1, 1, tzinfo=UTC),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(rows, max_size=20))
@example([{"text": None, "count": None, "seconds": None, "time": t} for t in EDGES])
def test_each_line_reads_back_as_orjsons_encoding_of_the_row(data: list[dict[str, Any]]) -> None:
    table = pa.Table.from_pylist(data, schema=SCHEMA)
    text = json_lines(table).decode()
    assert text.count("\n") == len(data)
    got = [json.loads(line) for line in text.split("\n")[:-1]]
    assert got == [_expected(row) for row in data]
    for line, row in zip(got, data, strict=True):
        # Floats stay floats (4.0, not 4), as the page and orjson keep them.
        if row["seconds"] is not None and math.isfinite(row["seconds"]):
            assert isinstance(line["seconds"], float)


def test_the_lines_are_exact_text() -> None:
    table = pa.table(
        {
            "s": pa.array(['a"b\\c', None, "x\ny\u0001", "é😀"]),
            "f": pa.array([4.0, None, float("nan"), 1e16]),
            "t": pa.array(
                [
                    datetime(2025, 3, 3, 10, 9, 15, tzinfo=UTC),
                    None,
                    datetime(2025, 3, 3, 10, 9, 15, 5, tzinfo=UTC),
                    None,
                ],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    assert json_lines(table, ["S", "F", "T"]).decode().splitlines() == [
        '{"S":"a\\"b\\\\c","F":4.0,"T":"2025-03-03T10:09:15+00:00"}',
        '{"S":null,"F":null,"T":null}',
        '{"S":"x\\ny\\u0001","F":null,"T":"2025-03-03T10:09:15.000005+00:00"}',
        '{"S":"é😀","F":1e+16,"T":null}',
    ]


def test_a_slice_writes_only_its_own_lines() -> None:
    table = pa.table({"n": pa.array([1, 2, 3], pa.int64())})
    assert json_lines(table.slice(1, 1)) == b'{"n":2}\n'
    assert json_lines(table.slice(3)) == b""


def test_repeated_and_missing_strings_of_a_slice_are_each_written_where_they_are() -> None:
    column = pa.array(["skip", "a", None, "a", 'q"', None, 'q"', "\u0001", "a"]).slice(1)
    assert json_lines(pa.table({"s": column})).decode().splitlines() == [
        '{"s":"a"}', '{"s":null}', '{"s":"a"}', '{"s":"q\\""}', '{"s":null}', '{"s":"q\\""}',
        '{"s":"\\u0001"}', '{"s":"a"}',
    ]  # fmt: skip


def test_a_table_in_chunks_writes_its_rows_in_order() -> None:
    chunked = pa.chunked_array([pa.array([1, None], pa.int64()), pa.array([3], pa.int64())])
    table = pa.table({"n": chunked, "empty": pa.nulls(3)})
    assert json_lines(table).decode().splitlines() == [
        '{"n":1,"empty":null}',
        '{"n":null,"empty":null}',
        '{"n":3,"empty":null}',
    ]


def test_no_columns_make_empty_objects_and_a_key_per_column_is_required() -> None:
    assert json_lines(pa.table({"n": pa.array([1, 2])}).select([])) == b"{}\n{}\n"
    with pytest.raises(ValueError, match="1 keys for 2 columns"):
        json_lines(pa.table({"a": [1], "b": [2]}), ["a"])
    with pytest.raises(TypeError, match="no JSON text for a column of bool"):
        json_lines(pa.table({"a": [True]}))


def test_lines_written_to_a_file_come_after_what_it_buffered_and_before_what_follows(
    tmp_path: Any,
) -> None:
    """``write_json_lines`` to a file with a descriptor (Polars writes to the descriptor
    itself): what the file object holds unwritten goes first, the lines in table order, then
    what is written after them; the same bytes as ``json_lines``."""
    from ingest.outputs.arrow_jsonl import write_json_lines

    first = pa.table({"s": ["a\nb", None], "n": [1, 2]})
    second = pa.table({"s": ["é" * 50_000], "n": [3]})  # more than one chunk of Polars'
    path = tmp_path / "lines.jsonl"
    with path.open("wb") as out:
        out.write(b"head\n")
        write_json_lines(first, out)
        out.write(b"mid\n")
        write_json_lines(second, out, ["S", "N"])
        write_json_lines(first.select([]), out)
        out.write(b"tail\n")
    assert path.read_bytes() == (
        b"head\n"
        + json_lines(first)
        + b"mid\n"
        + json_lines(second, ["S", "N"])
        + b"{}\n{}\n"
        + b"tail\n"
    )
    assert json_lines(first) == b'{"s":"a\\nb","n":1}\n{"s":null,"n":2}\n'
