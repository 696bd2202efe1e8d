"""CSV of Arrow tables with the times spelled beforehand (``ingest.outputs.pairs_csv``): each time
is the text Arrow's writer gives a UTC timestamp, as a quoted value."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.csv as arrow_csv
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ingest.outputs.pairs_csv import text_schema, utc_text, write_csv

UTC_US = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("name", pa.string()), ("time", UTC_US), ("n", pa.int64())])
times = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


def _arrow_text(values: list[datetime | None]) -> list[str]:
    out = io.BytesIO()
    arrow_csv.write_csv(pa.table({"t": pa.array(values, UTC_US)}), out)
    return out.getvalue().decode().split("\n")[1:-1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | times, max_size=30))
@example([datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC)])
def test_utc_text_is_the_writers_text_of_the_timestamp(values: list[datetime | None]) -> None:
    ours = utc_text(pa.array(values, UTC_US)).to_pylist()
    assert [v if v is not None else "" for v in ours] == _arrow_text(values)


def test_a_time_in_another_zone_is_written_in_utc() -> None:
    tokyo = pa.array([0, None], pa.timestamp("us", tz="Asia/Tokyo"))
    assert utc_text(tokyo).to_pylist() == ["1970-01-01 00:00:00.000000Z", None]


def test_write_csv_quotes_text_and_times_and_leaves_a_missing_value_empty() -> None:
    t0 = datetime(2026, 11, 3, 9, 0, 0, 123456, tzinfo=UTC)
    tables = [
        pa.table({"name": ['say "hi", twice', ""], "time": [t0, None], "n": [4, None]}, SCHEMA),
        pa.table({"name": [None], "time": [t0], "n": [-1]}, SCHEMA),
    ]
    out = io.BytesIO()
    write_csv(tables, SCHEMA, out)
    assert out.getvalue().decode().split("\n") == [
        '"name","time","n"',
        '"say ""hi"", twice","2026-11-03 09:00:00.123456Z",4',
        '"",,',
        ',"2026-11-03 09:00:00.123456Z",-1',
        "",
    ]
    rows = list(csv.reader(io.StringIO(out.getvalue().decode())))
    assert rows[1] == ['say "hi", twice', "2026-11-03 09:00:00.123456Z", "4"]
    assert text_schema(SCHEMA).field("time").type == pa.string()
