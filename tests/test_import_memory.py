"""Memory bounded by the limits, not the input (issue 46): a record over the limit keeps only a
bounded head, a compression bomb stops at the ratio cap from the CLI and from an upload, and
millions of blank lines are skipped without a step per line, on SQLite and PostgreSQL. The
peak-RSS figures of the full-size inputs come from ``benchmarks/memory_bench.py``."""

from __future__ import annotations

import io
import json
import zlib
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from dashboard.uploads import import_uploaded
from db.engine import make_engine
from db.schema import RejectedRecord
from ingest.cli import app
from ingest.input import bytestream
from ingest.input.jsonrecord import REJECTED_RAW_BYTES
from ingest.input.jsonstream import iter_records
from ingest.model import Rejected

runner = CliRunner()
MIB = 1024 * 1024


def _message(text: str) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": text}]}).encode()


def _bomb(size: int) -> bytes:
    """A gzip of one record of ``size`` bytes of one repeated letter (~1,000 times smaller)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [compressor.compress(b'{"messages": [{"role": "user", "content": "')]
    parts += [compressor.compress(b"a" * MIB) for _ in range(size // MIB)]
    parts += [compressor.compress(b'"}]}\n'), compressor.flush()]
    return b"".join(parts)


def _kept(db_url: str) -> list[tuple[str, int]]:
    engine = make_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(RejectedRecord.reason, sa.func.length(RejectedRecord.raw)).order_by(
                RejectedRecord.id
            )
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def test_a_record_over_the_limit_keeps_only_a_bounded_head(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big = _message("x" * 3 * MIB)
    path.write_bytes(_message("a") + b"\n" + big + b"\n")
    result = runner.invoke(app, ["import", "--db", db_url, "--max-record-mb", "2", str(path)])
    assert result.exit_code == 0, result.output
    assert f"record is {len(big)} bytes, over the limit of {2 * MIB}" in result.output
    assert _kept(db_url) == [("record_too_large", REJECTED_RAW_BYTES)]
    assert REJECTED_RAW_BYTES == MIB


@pytest.fixture
def small_ratio_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # The ratio is checked past 1 MiB instead of 64 MiB: the bombs of the tests stay small.
    monkeypatch.setattr(bytestream, "RATIO_CHECK_BYTES", MIB)


BOMB_MESSAGE = "the input decompresses to over 200 times its compressed size"


@pytest.mark.usefixtures("small_ratio_window")
def test_a_compression_bomb_stops_at_the_ratio_cap_from_the_cli(
    db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(_bomb(40 * MIB))
    assert len(path.read_bytes()) < 60_000
    result = runner.invoke(app, ["import", "--db", db_url, str(path)])
    assert result.exit_code == 0, result.output
    assert "0 traces imported, 0 updated, 0 unchanged, 2 rejected" in result.output
    assert BOMB_MESSAGE in result.output
    assert _kept(db_url) == [("truncated", REJECTED_RAW_BYTES), ("input_too_large", 0)]


@pytest.mark.usefixtures("small_ratio_window")
def test_a_compression_bomb_stops_at_the_ratio_cap_from_an_upload(db_url: str) -> None:
    engine = make_engine(db_url)
    summary = import_uploaded(engine, [("bomb.jsonl.gz", _bomb(40 * MIB))], max_mb=200)
    engine.dispose()
    assert (summary.traces, summary.rejected) == (0, 2)
    assert [r.reason for r in summary.rejections] == ["truncated", "input_too_large"]
    assert BOMB_MESSAGE in summary.rejections[1].message
    assert _kept(db_url) == [("truncated", REJECTED_RAW_BYTES), ("input_too_large", 0)]


def test_the_ratio_cap_can_be_raised_for_an_input_that_compresses_that_well(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bytestream, "RATIO_CHECK_BYTES", MIB)
    path = tmp_path / "dense.jsonl.gz"
    path.write_bytes(_bomb(3 * MIB))
    result = runner.invoke(
        app, ["import", "--db", db_url, "--max-compression-ratio", "5000", str(path)]
    )
    assert result.exit_code == 0, result.output
    assert "1 trace imported, 0 updated, 0 unchanged, 0 rejected" in result.output


def test_blank_lines_by_the_million_are_skipped_with_their_lines_counted() -> None:
    blank = b"\n" * 3_000_000 + b"  \r\n\t\n"
    stream = io.BytesIO(_message("a") + b"\n" + blank + b" " + _message("b") + b"\n\n")
    records = list(iter_records(stream, "x.jsonl"))
    assert not any(isinstance(r, Rejected) for r in records)
    assert [(r.line, r.value["messages"][0]["content"]) for r in records] == [  # type: ignore[union-attr]
        (1, "a"),
        (3_000_004, "b"),
    ]
