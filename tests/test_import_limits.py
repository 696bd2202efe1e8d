"""Size limits of one input: a record over the limit is rejected alone, an input past its
decompressed limit stops with a rejection, and both limits come from options or the environment."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingest.cli import app
from ingest.input.bytestream import CHUNK_SIZE
from ingest.input.reading import ReadLimits

runner = CliRunner()


def conversation(conv_id: str, text: str = "hi") -> bytes:
    return json.dumps({"id": conv_id, "messages": [{"role": "user", "content": text}]}).encode()


def test_a_record_over_the_record_limit_is_rejected_alone(sqlite_url: str, tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big = conversation("big", "x" * 2 * 1024 * 1024)
    path.write_bytes(conversation("a") + b"\n" + big + b"\n" + conversation("b") + b"\n")
    result = runner.invoke(app, ["import", "--db", sqlite_url, "--max-record-mb", "1", str(path)])
    assert result.exit_code == 0, result.output
    assert f"{path}:2: record_too_large: record is {len(big)} bytes, over the limit of 1048576" in (
        result.output
    )
    assert "2 traces imported, 0 updated, 0 unchanged, 1 rejected" in result.output


def test_reading_stops_past_the_decompressed_limit(sqlite_url: str, tmp_path: Path) -> None:
    # Lines of 1,000 bytes; the limit (1 MiB + 1) is checked before each 1 MiB read, so
    # reading stops after two reads: 2,097 whole lines, a cut one, then the stop.
    lines = [conversation(f"c{n:05d}", "y" * (1000 - 1 - len(conversation(f"c{n:05d}", ""))))
             for n in range(3000)]  # fmt: skip
    assert {len(line) for line in lines} == {999}
    path = tmp_path / "many.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    gib = (CHUNK_SIZE + 1) / 1024**3
    result = runner.invoke(
        app, ["import", "--db", sqlite_url, "--max-decompressed-gb", repr(gib), str(path)]
    )
    assert result.exit_code == 0, result.output
    assert "2097 traces imported, 0 updated, 0 unchanged, 2 rejected" in result.output
    assert (
        f"{path}:2098: input_too_large: cannot read the rest of the input: the input is over "
        f"the limit of {CHUNK_SIZE + 1} decompressed bytes"
    ) in result.output


def test_limits_come_from_the_environment_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLLENS_MAX_RECORD_MB", "2")
    monkeypatch.setenv("TOOLLENS_MAX_DECOMPRESSED_GB", "0.25")
    assert ReadLimits.of() == ReadLimits(2 * 1024**2, 1024**3 // 4)
    assert ReadLimits.of(max_record_mb=1) == ReadLimits(1024**2, 1024**3 // 4)
    monkeypatch.delenv("TOOLLENS_MAX_RECORD_MB")
    monkeypatch.delenv("TOOLLENS_MAX_DECOMPRESSED_GB")
    assert ReadLimits.of() == ReadLimits(256 * 1024**2, 8 * 1024**3)


def test_a_limit_that_is_not_positive_is_a_usage_error(sqlite_url: str, tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(conversation("a") + b"\n")
    result = runner.invoke(app, ["import", "--db", sqlite_url, "--max-record-mb", "0", str(path)])
    assert (result.exit_code, result.output) == (2, "Error: read limits must be positive\n")
