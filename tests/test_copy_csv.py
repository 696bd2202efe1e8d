"""PostgreSQL's CSV of a float and of a time (``db.copy_csv``) is the text Arrow's CSV writer
gives the same value: ``toollens pairs --format csv`` is the same bytes from both databases."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.csv as arrow_csv
import pytest
import sqlalchemy as sa
from conftest import fresh_pg_schema
from hypothesis import example, given, settings
from hypothesis import strategies as st

from db.copy_csv import LONG_DIGITS, copy_ranges, float_text, time_text
from db.engine import make_engine


@pytest.fixture(scope="module")
def pg() -> Iterator[sa.Engine]:
    with fresh_pg_schema() as url:
        engine = make_engine(url)
        yield engine
        engine.dispose()


def _arrow_cells(values: list[Any], arrow_type: pa.DataType) -> list[str]:
    out = io.BytesIO()
    arrow_csv.write_csv(pa.table({"v": pa.array(values, arrow_type)}), out)
    return out.getvalue().decode().split("\n")[1:-1]


def _pg_cells(engine: sa.Engine, spell: Any, values: list[Any], sql_type: str) -> list[str]:
    v = sa.column("v")
    stmt = (
        sa.select(spell(v))
        .select_from(sa.text(f"unnest(CAST(:vs AS {sql_type}[])) WITH ORDINALITY AS u(v, n)"))
        .order_by(sa.text("n"))
    )
    with engine.connect() as conn:
        return [c if c is not None else "" for c in conn.execute(stmt, {"vs": values}).scalars()]


def _around(x: float) -> list[float]:
    """``x``, its neighbours as doubles, and their negatives."""
    near = [math.nextafter(x, -math.inf), x, math.nextafter(x, math.inf)]
    return near + [-y for y in near]


#: Where the two notations change: Arrow's fixed notation from 1e-6 to below 1e10,
#: PostgreSQL's from 1e-4 to below 1e15.
BOUNDARIES = [y for p in (-7, -6, -5, -4, -3, 9, 10, 11, 14, 15, 16) for y in _around(10.0**p)]
SPECIAL = [0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, 1.7976931348623157e308, 0.1 + 0.2]


def test_float_text_at_every_change_of_notation(pg: sa.Engine) -> None:
    values = [*BOUNDARIES, *SPECIAL, None, 1.5e-5, 6.666666666666667e-06, 123456789012.5]
    cells = _pg_cells(pg, float_text, values, "float8")
    assert cells == _arrow_cells(values, pa.float64())
    # A few spelled out, so the rule is visible here too.
    assert cells[-3:] == ["0.000015", "0.000006666666666666667", "1.234567890125e+11"]
    assert cells[-12:-3] == ["0", "-0", "nan", "inf", "-inf", "5e-324",
                             "1.7976931348623157e+308", "0.30000000000000004", ""]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.none()
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.floats(min_value=-1e16, max_value=1e16)
        | st.integers(-(10**12), 10**12).map(lambda ms: ms / 1000.0),
        max_size=40,
    )
)
@example([1e-7, 1.234e-7, 9.99e-7, 1e100, -1e-100, 1e22])
def test_float_text_is_arrows_text(pg: sa.Engine, values: list[float | None]) -> None:
    pg_cells = _pg_cells(pg, float_text, values, "float8")
    arrow_cells = _arrow_cells(values, pa.float64())
    for value, ours, arrows in zip(values, pg_cells, arrow_cells, strict=True):
        if value is not None and math.isfinite(value) and abs(value) >= LONG_DIGITS:
            assert float(ours) == value  # the same double, maybe one digit longer
        else:
            assert ours == arrows


def test_a_whole_float_above_1e16_may_take_a_digit_more_but_reads_back_the_same(
    pg: sa.Engine,
) -> None:
    # PostgreSQL writes the exact digits of a whole double from 1e16 on, where the shortest
    # are one fewer (db.copy_csv.LONG_DIGITS).
    values = [5.987863953885662e16, 1e16, 3e20]
    assert _pg_cells(pg, float_text, values, "float8") == [
        "5.9878639538856624e+16", "1e+16", "3e+20",
    ]  # fmt: skip
    assert _arrow_cells(values, pa.float64()) == ["5.987863953885662e+16", "1e+16", "3e+20"]


times = st.datetimes(
    min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.none() | times, max_size=40))
@example([datetime(2026, 11, 3, 9, 0, 0, 123456, tzinfo=UTC), datetime(1969, 12, 31, tzinfo=UTC)])
def test_time_text_is_arrows_text(pg: sa.Engine, values: list[datetime | None]) -> None:
    utc = pa.timestamp("us", tz="UTC")
    assert _pg_cells(pg, time_text, values, "timestamptz") == _arrow_cells(values, utc)


def test_copy_ranges_hands_over_the_ranges_in_order_without_the_empty_ones(
    pg: sa.Engine,
) -> None:
    n = sa.column("n")
    stmt = (
        sa.select(n, sa.func.concat("a,", n).label("t"))
        .select_from(sa.text("generate_series(1, 9) AS g(n)"))
        .where(
            n.between(sa.bindparam("lo", type_=sa.Integer), sa.bindparam("hi", type_=sa.Integer))
        )
        .order_by(n.desc())
    )
    chunks = list(copy_ranges(pg, stmt, [(7, 9), (20, 30), (1, 2)], quoted=["t"]))
    assert chunks == [b'9,"a,9"\n8,"a,8"\n7,"a,7"\n', b'2,"a,2"\n1,"a,1"\n']


def test_copy_ranges_is_postgresqls(tmp_path: Any) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    stmt = sa.select(sa.literal(1)).where(
        sa.bindparam("lo", type_=sa.Integer) < sa.bindparam("hi", type_=sa.Integer)
    )
    with pytest.raises(ValueError, match="PostgreSQL"):
        list(copy_ranges(engine, stmt, [(1, 2)], quoted=[]))
