"""CSV made by PostgreSQL itself: ``COPY (…) TO STDOUT (FORMAT csv)``, one statement per range,
each value spelled as Arrow's CSV writer spells it.

``toollens pairs --format csv`` on PostgreSQL read each range as Arrow tables (``db.arrow_read``)
and wrote them with Arrow's writer: the client decoded the binary ``COPY``, sorted, joined and
wrote 4-5 million rows (21 CPU-s for the 10M bench store, beside the server's 10), more than two
cores finish in 15 s. Here the server sorts, joins and writes the text, and the client only
copies bytes: per range, the rows of a statement as PostgreSQL's CSV output, with

* every text column quoted (``FORCE_QUOTE``: ``""`` for an empty text, an empty field for a
  missing value, quotes doubled, line breaks kept inside the quotes), numbers and times bare;
* times as :func:`time_text` and floats as :func:`float_text` write them: the text Arrow's
  writer gives a ``timestamp[us, UTC]`` and a ``float64`` (its shortest round-trip digits, in
  fixed notation for decimal exponents from -6 to 9), so the output is byte for byte the one
  the SQLite store's Arrow tables give (tests/test_copy_csv.py compares the two on random
  values) but for floats of :data:`LONG_DIGITS` and more, where PostgreSQL may write one digit
  more of the same double.

The ranges are read on :data:`db.streaming.READERS` pooled connections (``db.streaming
.in_order``), in one transaction each, with the bulk reads' settings for that transaction only
(``db.engine.pg_bulk_sql``).
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Sequence
from contextlib import closing
from typing import Any

from sqlalchemy import ColumnElement, Engine, Float, Integer, String, case, cast, func, literal
from sqlalchemy.sql import Select

from db.arrow_read import range_sql
from db.engine import pg_bulk_sql
from db.streaming import in_order

#: Arrow's writer (double-conversion's shortest mode) writes a float in fixed notation when its
#: decimal exponent is at least this and below :data:`ARROW_FIXED_HIGH`, else as ``1.5e+10``,
#: ``1e-7`` (no zero-padded exponent); PostgreSQL's ``float8out`` (shortest digits too) from -4
#: up to 14, else as ``1.5e+15``, ``1e-07``.
ARROW_FIXED_LOW, ARROW_FIXED_HIGH = -6, 10
PG_FIXED_LOW, PG_FIXED_HIGH = -4, 15
#: From here on PostgreSQL writes a whole double (all of them are) with its exact digits where
#: one fewer would read back the same (``5.9878639538856624e+16``, Arrow ``5.987863953885662e+16``):
#: the only values whose text differs from Arrow's, a duration of 300 million years.
LONG_DIGITS = 1e16
#: Arrow's text of a ``timestamp[us, UTC]`` (``2026-11-03 09:00:00.123456Z``) as a ``to_char``
#: pattern of the time in UTC.
TIME_PATTERN = 'YYYY-MM-DD HH24:MI:SS.US"Z"'


def _power(exponent: int) -> ColumnElement[float]:
    return cast(literal(f"1e{exponent}"), Float)


def float_text(x: Any) -> ColumnElement[str]:
    """Arrow's CSV text of the ``float8`` ``x`` (NULL for NULL), from PostgreSQL's own.

    Both write the shortest digits that read back as the same double; they differ only in
    notation. Each band below is decided by comparing with a power of ten as a double, which
    is exact: the shortest decimal of a double below ``1e-4`` is below ``1e-4`` too."""
    text = cast(x, String)
    size = func.abs(x)
    sign = case((x < 0, literal("-")), else_=literal(""))
    mag = cast(size, String)
    # Decimal exponents ARROW_FIXED_HIGH..PG_FIXED_HIGH-1: PostgreSQL writes the digits of an
    # integer part of 11 to 15 digits (and maybe a fraction), Arrow d.ddd…e+NN.
    whole = func.split_part(mag, ".", 1)
    digits = func.rtrim(func.concat(whole, func.split_part(mag, ".", 2)), "0")
    rest = func.substr(digits, 2)
    exponent_form = func.concat(
        sign,
        func.left(digits, 1),
        case((rest == "", literal("")), else_=func.concat(".", rest)),
        "e+",
        func.length(whole) - 1,
    )
    # Decimal exponents ARROW_FIXED_LOW..PG_FIXED_LOW-1: PostgreSQL writes d.ddde-05 or e-06,
    # Arrow 0.0000dddd.
    mantissa = func.replace(func.split_part(mag, "e", 1), ".", "")
    zeros = cast(func.split_part(mag, "e-", 2), Integer) - 1
    fixed_form = func.concat(sign, "0.", func.repeat("0", zeros), mantissa)
    return case(
        ((size >= _power(PG_FIXED_LOW)) & (size < _power(ARROW_FIXED_HIGH)), text),
        (x == 0, text),
        (x == cast(literal("NaN"), Float), literal("nan")),
        (x == cast(literal("Infinity"), Float), literal("inf")),
        (x == cast(literal("-Infinity"), Float), literal("-inf")),
        ((size >= _power(ARROW_FIXED_HIGH)) & (size < _power(PG_FIXED_HIGH)), exponent_form),
        ((size >= _power(ARROW_FIXED_LOW)) & (size < _power(PG_FIXED_LOW)), fixed_form),
        else_=func.replace(text, "e-0", "e-"),
    )


def time_text(ts: Any) -> ColumnElement[str]:
    """Arrow's CSV text of the ``timestamptz`` ``ts`` (NULL for NULL)."""
    return func.to_char(func.timezone("UTC", ts), TIME_PATTERN)


def copy_ranges(
    engine: Engine,
    stmt: Select[Any],
    ranges: Sequence[tuple[int, int]],
    quoted: Sequence[str],
) -> Generator[bytes]:
    """For each ``(lo, hi)`` of ``ranges`` in turn, the rows of ``stmt`` (bound by the
    parameters ``lo`` and ``hi``, ``db.arrow_read.range_sql``) as PostgreSQL's CSV, UTF-8, the
    columns named in ``quoted`` always quoted; the ranges without rows are left out."""
    if engine.dialect.name != "postgresql":
        raise ValueError("COPY … TO STDOUT is PostgreSQL's")
    columns = ", ".join(f'"{name}"' for name in quoted)
    sql = range_sql(engine, stmt)
    copy_sql = f"COPY ({sql}) TO STDOUT (FORMAT csv, FORCE_QUOTE ({columns}))"
    local = threading.local()
    connections: list[Any] = []
    lock = threading.Lock()

    def read(lo: int, hi: int) -> bytes:
        raw = getattr(local, "raw", None)
        if raw is None:
            raw = local.raw = engine.raw_connection()
            with lock:
                connections.append(raw)
            cur = raw.cursor()
            cur.execute("SELECT set_config('client_encoding', 'UTF8', true)")
            for statement in pg_bulk_sql(local=True):
                cur.execute(statement)
            cur.close()
        cur = raw.cursor()
        try:
            with cur.copy(copy_sql.format(lo=lo, hi=hi)) as copy:
                return b"".join(copy)
        finally:
            cur.close()

    try:
        with closing(in_order(lambda r: read(*r), ranges, "toollens-copy")) as results:
            for data in results:
                if data:
                    yield data
    finally:
        for raw in connections:
            raw.rollback()
            raw.close()
