"""CSV from Arrow tables by Arrow's C++ writer, times spelled beforehand: ``toollens pairs``.

The writer quotes every text value (quotes doubled; a missing value is an empty field, so ``""``
and no value differ) and writes numbers as the shortest decimal that reads back as the same
value. A time in UTC it would write as ``2026-11-03 09:00:00.123456Z``, spending most of the
writer's time for a pair on it (it converts each instant through the time zone database); here
the time is cast to the same text without the zone (ten times cheaper), ``Z`` appended, and
written as a text value, quoted: ``"2026-11-03 09:00:00.123456Z"``, the same value to any CSV
reader.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as arrow_csv


def utc_text(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Timestamps as ``YYYY-MM-DD HH:MM:SS.ffffffZ`` in UTC (null stays null): the text
    Arrow's CSV writer gives a ``timestamp[us, UTC]``, ten times faster."""
    utc = pc.cast(values, pa.timestamp("us", tz="UTC")) if values.type.tz else values
    naive = pc.cast(utc, pa.timestamp("us"))
    return pc.binary_join_element_wise(pc.cast(naive, pa.string()), "Z", "")


def text_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each timestamp column as text (what :func:`write_csv` writes)."""
    return pa.schema(
        [pa.field(f.name, pa.string()) if pa.types.is_timestamp(f.type) else f for f in schema]
    )


def write_csv(tables: Iterable[pa.Table], schema: pa.Schema, out: BinaryIO) -> None:
    """A header, then the rows of ``tables`` (each of ``schema``) as CSV to ``out``."""
    written = text_schema(schema)
    with arrow_csv.CSVWriter(out, written) as writer:
        for table in tables:
            columns = [
                utc_text(column) if pa.types.is_timestamp(column.type) else column
                for column in table.columns
            ]
            writer.write_table(pa.Table.from_arrays(columns, schema=written))
