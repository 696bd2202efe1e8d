"""The streaming record reader: container detection, exact positions, every rejection reason."""

from __future__ import annotations

import gzip
import io
import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.input.bytestream import CHUNK_SIZE, open_input, read_head
from ingest.input.jsonrecord import REJECTED_RAW_BYTES
from ingest.input.jsonstream import iter_records
from ingest.input.records import Record
from ingest.model import Rejected

TAU_BENCH = "openai-chat/tau-bench-gpt-4o-airline.json"
TRUNCATED = "input ends inside a JSON value (unclosed array or object)"


class Trickle(io.RawIOBase):
    """A stream that hands out at most ``step`` bytes per read, to put a chunk boundary
    at every position of the input."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step, self.pos = data, step, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        piece = self.data[self.pos : self.pos + min(self.step, len(buffer))]
        buffer[: len(piece)] = piece
        self.pos += len(piece)
        return len(piece)


def read(data: bytes, step: int | None = None, **limits: int) -> list[Record | Rejected]:
    stream: Any = io.BytesIO(data) if step is None else Trickle(data, step)
    return list(iter_records(stream, "t.json", **limits))


def summary(items: list[Record | Rejected]) -> list[tuple[Any, ...]]:
    """(line, offset, raw, value) for records; (line, offset, raw, reason, message) otherwise."""
    return [
        (i.line, i.byte_offset, i.raw, i.value)
        if isinstance(i, Record)
        else (i.line, i.byte_offset, i.raw, i.reason, i.message)
        for i in items
    ]


# --- containers ------------------------------------------------------------------------------


def test_a_pretty_printed_array_yields_each_element_at_the_line_where_it_starts() -> None:
    data = b'[\n  {"a": 1},\n  {\n    "b": [2, "]"]\n  }\n]\n'
    assert summary(read(data)) == [
        (2, 4, b'{"a": 1}', {"a": 1}),
        (3, 16, b'{\n    "b": [2, "]"]\n  }', {"b": [2, "]"]}),
    ]


def test_a_compact_array_on_one_line_yields_every_element_on_line_one() -> None:
    data = b'[{"a":"x,]}"},[1,{"b":null}],{}]'
    assert summary(read(data)) == [
        (1, 1, b'{"a":"x,]}"}', {"a": "x,]}"}),
        (1, 14, b'[1,{"b":null}]', [1, {"b": None}]),
        (1, 29, b"{}", {}),
    ]


def test_jsonl_yields_one_record_per_non_blank_line_with_crlf_and_no_final_newline() -> None:
    data = b'\xef\xbb\xbf{"a": 1}\r\n\r\n   \n{"b": 2}\r\n  {"c": 3}'
    assert summary(read(data)) == [
        (1, 3, b'{"a": 1}', {"a": 1}),
        (4, 19, b'{"b": 2}', {"b": 2}),
        (5, 29, b'  {"c": 3}', {"c": 3}),
    ]


def test_jsonl_whose_first_line_is_blank_starts_at_the_first_record() -> None:
    assert summary(read(b'\n\n{"a": 1}\n[2]\n')) == [
        (3, 2, b'{"a": 1}', {"a": 1}),
        (4, 11, b"[2]", [2]),
    ]


def test_a_pretty_printed_object_is_one_document() -> None:
    data = b'\xef\xbb\xbf\n{\n  "a": 1,\n  "b": [\n    2\n  ]\n}\n\n'
    assert summary(read(data)) == [
        (2, 4, b'{\n  "a": 1,\n  "b": [\n    2\n  ]\n}', {"a": 1, "b": [2]}),
    ]


@pytest.mark.parametrize(
    "data", [b"", b"   \r\n\t\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n", b"[]", b"[ \n ]"]
)
def test_empty_input_or_an_empty_array_yields_nothing(data: bytes) -> None:
    assert read(data) == []


def test_strings_with_escaped_quotes_and_backslashes_do_not_confuse_the_splitter() -> None:
    elements = [
        {"a": 'say \\"hi\\" [', "b": "\\"},
        {"c": "\\\\", "d": '"{'},
        {"e": 'x\\"', "f": "]\\\\\\"},
        ["\\", "\\\\", '\\"'],
        {"g": "\\" * 5 + '"' + "\\" * 4},  # runs of 11 and 8 backslashes once encoded
    ]
    data = json.dumps(elements).encode()
    assert [r.value for r in read(data) if isinstance(r, Record)] == elements
    for step in (1, 2, 3, 5, 7):
        assert summary(read(data, step)) == summary(read(data))


def test_elements_straddling_chunk_boundaries_are_read_exactly() -> None:
    elements = [
        {"n": i, "text": 'a \\"quoted\\" back\\\\slash ' * (i * 997 % 600)} for i in range(300)
    ]
    data = json.dumps(elements, indent=1).encode()
    assert len(data) > 2 * CHUNK_SIZE
    records = read(data)
    assert [r.value for r in records if isinstance(r, Record)] == elements
    assert all(r.raw == data[r.byte_offset : r.byte_offset + len(r.raw)] for r in records)
    assert all(r.line == data.count(b"\n", 0, r.byte_offset) + 1 for r in records)
    assert summary(read(data, 65521)) == summary(records)


# --- rejections ------------------------------------------------------------------------------


def test_invalid_utf8_is_rejected_with_the_index_of_the_first_bad_byte() -> None:
    data = b'{"a": "ok"}\n{"a": "caf\xc3\xa9 \xe9t\xe9"}\n[{"b": "\xff"}]\n'
    assert summary(read(data)) == [
        (1, 0, b'{"a": "ok"}', {"a": "ok"}),
        (
            2,
            12,
            b'{"a": "caf\xc3\xa9 \xe9t\xe9"}',
            "invalid_utf8",
            "invalid UTF-8 at byte 13 of the record",
        ),
        (3, 31, b'[{"b": "\xff"}]', "invalid_utf8", "invalid UTF-8 at byte 8 of the record"),
    ]


def test_invalid_utf8_far_into_a_long_record_is_located_exactly() -> None:
    # Two-byte characters put one across the 1 MiB window the check decodes in.
    text = "é".encode() * (CHUNK_SIZE // 2 + 3)
    line = b'{"a": "' + text + b"\xe2\x28" + b'"}'
    [item] = read(line + b"\n")
    # The rejection keeps the record's head (1 MiB); the message locates the byte exactly.
    assert len(line) > REJECTED_RAW_BYTES
    assert (item.line, item.byte_offset, item.raw) == (1, 0, line[:REJECTED_RAW_BYTES])
    assert isinstance(item, Rejected)
    assert (item.reason, item.message) == (
        "invalid_utf8",
        f"invalid UTF-8 at byte {7 + len(text)} of the record",
    )


def test_invalid_utf8_in_an_array_element_rejects_only_that_element() -> None:
    data = b'[{"a": 1},\n {"b": "\xc3"},\n {"c": 3}]'
    assert summary(read(data)) == [
        (1, 1, b'{"a": 1}', {"a": 1}),
        (2, 12, b'{"b": "\xc3"}', "invalid_utf8", "invalid UTF-8 at byte 7 of the record"),
        (3, 25, b'{"c": 3}', {"c": 3}),
    ]


def test_malformed_json_carries_orjson_s_message() -> None:
    data = b'{"a": }\n{"b": 1}\n'
    assert summary(read(data)) == [
        (
            1,
            0,
            b'{"a": }',
            "malformed_json",
            "malformed JSON: unexpected character, expected a JSON value: line 1 column 7 (char 6)",
        ),
        (2, 8, b'{"b": 1}', {"b": 1}),
    ]


def test_a_malformed_array_element_is_rejected_and_reading_goes_on() -> None:
    data = b'[\n {"a": 1} {"b": 2},\n {"c": "x\ny"},\n {"d": 4}\n]'
    assert summary(read(data)) == [
        (
            2,
            3,
            b'{"a": 1} {"b": 2}',
            "malformed_json",
            "malformed JSON: unexpected content after document: line 1 column 10 (char 9)",
        ),
        (
            3,
            23,
            b'{"c": "x\ny"}',
            "malformed_json",
            "malformed JSON: unexpected control character in string: line 1 column 9 (char 8)",
        ),
        (5, 38, b'{"d": 4}', {"d": 4}),
    ]


def test_missing_array_elements_are_reported_at_their_separator() -> None:
    assert summary(read(b'[{"a": 1},,{"b": 2},]')) == [
        (1, 1, b'{"a": 1}', {"a": 1}),
        (1, 10, b"", "malformed_json", "malformed JSON: missing array element before ','"),
        (1, 11, b'{"b": 2}', {"b": 2}),
        (1, 20, b"", "malformed_json", "malformed JSON: missing array element before ']'"),
    ]


def test_data_after_the_array_is_rejected_as_one_record_and_reading_stops() -> None:
    data = b'[{"a": 1}]\n\n[{"b": 2}]\n{"c": 3}\n'
    assert summary(read(data)) == [
        (1, 1, b'{"a": 1}', {"a": 1}),
        (
            3,
            12,
            b'[{"b": 2}]\n{"c": 3}',
            "malformed_json",
            "malformed JSON: unexpected data after the top-level array",
        ),
    ]


def test_a_brace_closing_the_array_rejects_the_rest() -> None:
    data = b'[{"a": 1},\n {"b": 2}}, {"c": 3}]'
    assert summary(read(data)) == [
        (1, 1, b'{"a": 1}', {"a": 1}),
        (
            2,
            12,
            b'{"b": 2}}, {"c": 3}]',
            "malformed_json",
            "malformed JSON: unmatched '}' in the top-level array",
        ),
    ]


def test_nul_characters_are_replaced_not_rejected() -> None:
    data = b'{"a\\u0000": "x\\u0000y", "b": ["\\u0000", {"c": "\\\\u0000"}]}\n'
    [record] = read(data)
    assert isinstance(record, Record)
    assert record.value == {"a\ufffd": "x\ufffdy", "b": ["\ufffd", {"c": "\\u0000"}]}
    assert record.raw == data[:-1]


def test_nul_characters_in_array_elements_are_replaced_too() -> None:
    [record] = read(b'[["\\u0000"]]')
    assert isinstance(record, Record) and record.value == ["\ufffd"]


@pytest.mark.parametrize("escape", [b"\\ud800", b"\\udfff", b"\\ud800\\u0041", b"\\uDBFFx"])
def test_unpaired_surrogate_escapes_are_rejected_as_lone_surrogate(escape: bytes) -> None:
    data = b'{"ok": "\\ud83d\\ude00"}\n{"a": "' + escape + b'"}\n'
    assert summary(read(data)) == [
        (1, 0, b'{"ok": "\\ud83d\\ude00"}', {"ok": "\U0001f600"}),
        (
            2,
            23,
            b'{"a": "' + escape + b'"}',
            "lone_surrogate",
            "unpaired UTF-16 surrogate escape in a string",
        ),
    ]


def test_an_over_long_jsonl_line_is_skipped_and_the_next_line_is_read() -> None:
    data = b'{"a": "0123456789"}\r\n{"b": 1}\n'
    assert summary(read(data, max_record_bytes=10)) == [
        (1, 0, b'{"a": "012', "record_too_large", "record is 19 bytes, over the limit of 10"),
        (2, 21, b'{"b": 1}', {"b": 1}),
    ]


def test_an_over_long_line_is_skipped_without_holding_it_in_memory() -> None:
    long_line = b'{"a": "' + b"x" * (3 * CHUNK_SIZE) + b'"}'
    data = b'{"first": 1}\n' + long_line + b'\r\n{"b": 1}'
    items = summary(read(data, max_record_bytes=CHUNK_SIZE))
    size = len(long_line)
    assert items == [
        (1, 0, b'{"first": 1}', {"first": 1}),
        (
            2,
            13,
            long_line[:CHUNK_SIZE],
            "record_too_large",
            f"record is {size} bytes, over the limit of {CHUNK_SIZE}",
        ),
        (3, 13 + size + 2, b'{"b": 1}', {"b": 1}),
    ]


def test_an_over_long_array_element_is_skipped_and_its_size_is_exact() -> None:
    big = b'{"a": "' + b'\\"' * (2 * CHUNK_SIZE) + b'"}'
    data = b'[\n{"x": 1},\n' + big + b'  \n,\n{"y": 2}]'
    limit = CHUNK_SIZE // 2
    expected = [
        (2, 2, b'{"x": 1}', {"x": 1}),
        (
            3,
            12,
            big[:limit],
            "record_too_large",
            f"record is {len(big)} bytes, over the limit of {limit}",
        ),
        (5, 12 + len(big) + 5, b'{"y": 2}', {"y": 2}),
    ]
    assert summary(read(data, max_record_bytes=limit)) == expected
    assert summary(read(data, 100_003, max_record_bytes=limit)) == expected


def test_a_small_array_element_over_the_limit_is_rejected() -> None:
    assert summary(read(b'[{"a": "0123456789"}, {"b": 1}]', max_record_bytes=10)) == [
        (1, 1, b'{"a": "012', "record_too_large", "record is 19 bytes, over the limit of 10"),
        (1, 22, b'{"b": 1}', {"b": 1}),
    ]


def test_a_document_over_the_limit_is_rejected_with_its_size() -> None:
    data = b'{"a":\n "' + b"x" * (2 * CHUNK_SIZE) + b'"}\n\n'
    size = len(data) - 2
    assert summary(read(data, max_record_bytes=100)) == [
        (1, 0, data[:100], "record_too_large", f"record is {size} bytes, over the limit of 100"),
    ]


def test_nesting_deeper_than_the_limit_is_rejected_in_jsonl() -> None:
    data = b'{"a": [[1]]}\n{"a": [[[1]]]}\n'
    assert summary(read(data, max_depth=3)) == [
        (1, 0, b'{"a": [[1]]}', {"a": [[1]]}),
        (2, 13, b'{"a": [[[1]]]}', "too_deep", "nesting deeper than 3 levels"),
    ]


@pytest.mark.parametrize("depth", [2, 3, 4, 5])
def test_nesting_at_the_limit_is_accepted_in_arrays_and_one_more_level_is_not(depth: int) -> None:
    element = b'{"a": ' * depth + b"1" + b"}" * depth
    data = b"[" + element + b", " + b"[" * (depth + 1) + b"]" * (depth + 1) + b"]"
    assert summary(read(data, max_depth=depth)) == [
        (1, 1, element, json.loads(element)),
        (
            1,
            3 + len(element),
            data[3 + len(element) : -1],
            "too_deep",
            f"nesting deeper than {depth} levels",
        ),
    ]


def test_nesting_beyond_what_orjson_parses_is_too_deep_not_malformed() -> None:
    element = b"[" * 2000 + b"]" * 2000
    for data in (element + b"\n", b"[" + element + b"]"):
        [item] = read(data)
        assert isinstance(item, Rejected)
        assert (item.reason, item.message) == ("too_deep", "nesting deeper than 512 levels")


def test_an_array_cut_inside_an_element_rejects_the_unfinished_element_as_truncated() -> None:
    data = b'[\n  {"a": 1},\n  {"b": [1, "x'
    assert summary(read(data)) == [
        (2, 4, b'{"a": 1}', {"a": 1}),
        (3, 16, b'{"b": [1, "x', "truncated", TRUNCATED),
    ]


def test_an_array_cut_after_an_element_yields_it_then_reports_the_missing_bracket() -> None:
    data = b'[{"a": 1},\n{"b": 2}\n'
    assert summary(read(data)) == [
        (1, 1, b'{"a": 1}', {"a": 1}),
        (2, 11, b'{"b": 2}', {"b": 2}),
        (3, 20, b"", "truncated", TRUNCATED),
    ]


def test_a_document_cut_before_it_closes_is_truncated() -> None:
    data = b'{\n  "a": [1,\n  "b": "unfinished\n'
    assert summary(read(data)) == [(1, 0, data[:-1], "truncated", TRUNCATED)]


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (b"42", "number"),
        (b"-1.5e3", "number"),
        (b'"x"', "string"),
        (b"true", "boolean"),
        (b"null", "null"),
    ],
)
def test_scalars_are_not_records(value: bytes, name: str) -> None:
    message = f"expected a JSON object or array, got {name}"
    assert summary(read(value + b"\n{}\n")) == [
        (1, 0, value, "not_a_record", message),
        (2, len(value) + 1, b"{}", {}),
    ]
    assert summary(read(b"[{}, " + value + b"]")) == [
        (1, 1, b"{}", {}),
        (1, 5, value, "not_a_record", message),
    ]


# --- compressed input ------------------------------------------------------------------------


def test_gzip_is_detected_by_its_magic_bytes_whatever_the_extension(tmp_path: Path) -> None:
    data = b'[{"a": 1},\n {"b": 2}]'
    for name in ("t.json.gz", "t.json"):
        path = tmp_path / name
        path.write_bytes(gzip.compress(data))
        assert read_head(path) == data
        assert read_head(path, 5) == data[:5]
        with open_input(path) as stream:
            assert summary(list(iter_records(stream, "t.json"))) == summary(read(data))
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b'{"a": 1}\n')
    with open_input(str(plain)) as stream:
        assert stream.read() == b'{"a": 1}\n'


def test_a_cut_off_gzip_yields_what_it_holds_then_unreadable_input(tmp_path: Path) -> None:
    data = b"".join(b'{"n": %d}\n' % i for i in range(20000))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(data)[:-2000])
    head = read_head(path, len(data))
    assert 100_000 < len(head) < len(data) and data.startswith(head)
    with open_input(path) as stream:
        *items, last = iter_records(stream, "cut.jsonl.gz")
    # Every line that could be decompressed is there, the cut one included, then the damage.
    assert b"".join(i.raw + b"\n" for i in items)[: len(head)] == head
    assert [i.value for i in items[:-1] if isinstance(i, Record)] == [
        {"n": n} for n in range(len(items) - 1)
    ]
    assert isinstance(last, Rejected)
    assert (last.byte_offset, last.reason, last.message) == (
        len(head),
        "unreadable_input",
        "cannot read the rest of the input: "
        "Compressed file ended before the end-of-stream marker was reached",
    )


def test_stdin_is_read_through_dash_and_gunzipped(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"a": 1}\n{"b": 2}\n'
    stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(data))))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert read_head("-") == data
    with open_input("-") as stream:
        assert [r.value for r in iter_records(stream, "-") if isinstance(r, Record)] == [
            {"a": 1},
            {"b": 2},
        ]


# --- properties ------------------------------------------------------------------------------


def quoted(text: str, times: int) -> str:
    """``text`` JSON-encoded ``times`` times: JSON inside JSON strings, with long backslash runs."""
    for _ in range(times):
        text = json.dumps(text)
    return text


SCALARS = (
    st.text()
    | st.builds(quoted, st.text(alphabet='a"\\\n', max_size=6), st.integers(1, 5))
    # Past 64 signed bits an integer is read as its digits (jsonrecord.decode_value).
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def without_nul(value: Any) -> Any:
    """What the reader yields: U+0000 replaced by U+FFFD in keys and strings."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    if isinstance(value, dict):
        return {k.replace("\x00", "\ufffd"): without_nul(v) for k, v in value.items()}
    return value


def check_round_trip(
    data: bytes, pieces: list[bytes], offsets: list[int], values: list[Any], step: int
) -> None:
    for items in (read(data), read(data, step)):
        assert [i.value for i in items if isinstance(i, Record)] == [without_nul(v) for v in values]
        assert [(i.byte_offset, i.raw) for i in items] == list(zip(offsets, pieces, strict=True))
        assert [i.line for i in items] == [data.count(b"\n", 0, o) + 1 for o in offsets]


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(st.dictionaries(st.text(), VALUES, max_size=5), max_size=8),
    ascii_only=st.booleans(),
    step=st.integers(min_value=1, max_value=40),
)
def test_arrays_and_jsonl_read_back_exactly_what_was_written(
    records: list[dict[str, Any]], ascii_only: bool, step: int
) -> None:
    # Pretty-printed array.
    pieces = [
        json.dumps(r, indent=2, ensure_ascii=ascii_only).replace("\n", "\n  ").encode()
        for r in records
    ]
    data, offsets = b"[\n  ", []
    for piece in pieces:
        offsets.append(len(data))
        data += piece + b",\n  "
    data = (data[:-4] if pieces else data) + b"\n]\n"
    check_round_trip(data, pieces, offsets, records, step)
    # Compact array.
    pieces = [
        json.dumps(r, separators=(",", ":"), ensure_ascii=ascii_only).encode() for r in records
    ]
    offsets = [1 + sum(len(p) + 1 for p in pieces[:i]) for i in range(len(pieces))]
    check_round_trip(b"[" + b",".join(pieces) + b"]", pieces, offsets, records, step)
    # JSONL, CRLF line ends, no final newline.
    offsets = [sum(len(p) + 2 for p in pieces[:i]) for i in range(len(pieces))]
    check_round_trip(b"\r\n".join(pieces), pieces, offsets, records, step)


# --- memory, speed and real data -------------------------------------------------------------


def test_a_50_mb_array_is_read_in_bounded_memory(tmp_path: Path) -> None:
    element = {
        "role": "tool",
        "content": "a tool result, " * 6000 + '{"quoted": "[x]"}',
        "id": "c1",
    }
    body = json.dumps(element).encode()
    count = 50_000_000 // len(body)
    path = tmp_path / "big.json"
    with open(path, "wb") as out:
        out.write(b"[" + b",\n".join([body] * count) + b"]")
    tracemalloc.start()
    try:
        with open(path, "rb") as stream:
            seen = sum(1 for item in iter_records(stream, "big.json") if isinstance(item, Record))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen == count
    assert peak < 20_000_000


def test_a_huge_element_over_the_limit_is_skipped_in_bounded_memory() -> None:
    data = b'[{"a": "' + b"x" * (40 * CHUNK_SIZE) + b'"}, {"b": 1}]'
    tracemalloc.start()
    try:
        items = summary(list(iter_records(io.BytesIO(data), "t.json", max_record_bytes=CHUNK_SIZE)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [i[3] for i in items] == ["record_too_large", {"b": 1}]
    assert peak < 8 * CHUNK_SIZE


@pytest.mark.realdata
def test_the_tau_bench_array_yields_its_200_runs_exactly(realdata: Path) -> None:
    path = realdata / TAU_BENCH
    with open_input(path) as stream:
        items = list(iter_records(stream, TAU_BENCH))
    assert len(items) == 200
    assert all(isinstance(i, Record) for i in items)
    assert (items[0].line, items[0].byte_offset) == (2, 4)
    data = path.read_bytes()
    assert all(i.raw == data[i.byte_offset : i.byte_offset + len(i.raw)] for i in items)
    assert [i.value for i in items if isinstance(i, Record)] == json.loads(data)
