"""JSON Lines from Arrow tables, a column at a time: ``toollens pairs`` at millions of rows.

Each column becomes the JSON text of its values through Arrow's compute functions (C++, no
Python object per value; a text column's distinct values escaped once each), each row's line
is those texts joined with the keys, and a table's lines are one contiguous buffer, written as
it is. Read back (``json.loads``), a line holds what ``orjson.dumps`` of the row's Python values
holds: strings escaped as JSON requires (the rare ones with a control character are encoded by
``orjson`` itself), integers as integers, floats as floats (``4.0``, never ``4``; NaN and
infinities as ``null``, as orjson writes them), times in UTC as ISO 8601
(``2025-03-03T10:09:15+00:00``, with microseconds when there are some), a missing value as
``null``. Pure: tables in, bytes out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

#: Characters a JSON string may not hold as they are (besides ``"`` and ``\``).
_CONTROL = r"[\x00-\x1f]"


def _text(values: pa.Array) -> pa.Array:
    """``values`` as the JSON text of each (``null`` where missing)."""
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        # Each distinct string is escaped once: a pair's trace, title, model, tool, status …
        # repeat down the rows (the 1M bench store's 16 text columns: 0.95 → 0.46 s).
        encoded = pc.dictionary_encode(values)
        text = pc.take(_strings(encoded.dictionary), encoded.indices)
    elif pa.types.is_integer(kind):
        text = pc.cast(values, pa.string())
    elif pa.types.is_floating(kind):
        text = _floats(values)
    elif pa.types.is_timestamp(kind):
        text = _times(values)
    elif pa.types.is_null(kind):
        text = pa.nulls(len(values), pa.string())
    else:
        raise TypeError(f"no JSON text for a column of {kind}")
    return pc.fill_null(text, "null")


def _strings(values: pa.Array) -> pa.Array:
    escaped = pc.replace_substring(values, "\\", "\\\\")
    escaped = pc.replace_substring(escaped, '"', '\\"')
    text = pc.binary_join_element_wise('"', escaped, '"', "")
    special = pc.fill_null(pc.match_substring_regex(values, _CONTROL), False)
    if pc.any(special).as_py():
        chosen = pc.filter(values, special).to_pylist()
        encoded = pa.array([orjson.dumps(v).decode() for v in chosen], pa.string())
        text = pc.replace_with_mask(text, special, encoded)
    return text


def _floats(values: pa.Array) -> pa.Array:
    text = pc.cast(values, pa.string())
    whole = pc.invert(pc.match_substring_regex(text, r"[.e]"))
    text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    return pc.if_else(pc.is_finite(values), text, pa.scalar("null"))


def _times(values: pa.Array) -> pa.Array:
    # The date and the time of day, each cast to text, joined: ten times faster than strftime.
    utc = pc.cast(values, pa.timestamp("us", tz="UTC")) if values.type.tz else values
    naive = pc.cast(utc, pa.timestamp("us"))
    day = pc.cast(pc.cast(naive, pa.date32()), pa.string())
    clock = pc.cast(pc.cast(naive, pa.time64("us")), pa.string())
    clock = pc.replace_substring_regex(clock, r"\.000000$", "")
    return pc.binary_join_element_wise('"', day, "T", clock, '+00:00"', "")


def json_lines(table: pa.Table, keys: Sequence[str] | None = None) -> pa.Array:
    """One JSON object per row of ``table`` (its columns under ``keys``, default the column
    names, in order), each line ending in a newline."""
    names = list(keys) if keys is not None else table.column_names
    parts: list[Any] = []
    for i, (name, column) in enumerate(zip(names, table.columns, strict=True)):
        key = orjson.dumps(name).decode()
        parts.append(("{" if i == 0 else ",") + key + ":")
        parts.append(_text(column.combine_chunks()))
    parts.append("}\n")
    if not names:
        return pa.array(["{}\n"] * table.num_rows, pa.string())
    return pc.binary_join_element_wise(*parts, "")


def lines_bytes(lines: pa.Array) -> memoryview:
    """The text of ``lines`` (a string array without nulls) as one buffer, without copying."""
    if len(lines) == 0:
        return memoryview(b"")
    offsets = memoryview(lines.buffers()[1]).cast("i")
    first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return memoryview(lines.buffers()[2])[first:last]
