"""Fuzzing the import: mutated real records never break it, on SQLite and PostgreSQL.

For every format, the records of its golden cases (real shapes, cut down by hand) are mutated
(truncated, bytes flipped, keys deleted or duplicated, values of another type, huge strings
and integers, NUL, deep nesting, odd timestamps, unknown item types) and imported in batches
with the format forced. Every record must end imported, updated, unchanged or cleanly rejected: no
exception escapes, the import is ``done``, and the records add up.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from formats_helpers import GOLDEN, records_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db.engine import make_engine
from db.schema import ImportRun, RejectedRecord, TraceRow
from ingest.importing.batches import ImportSummary
from ingest.importing.pipeline import import_paths
from ingest.model import Rejected

#: Mutated records per format and example, and examples per format: ≥ 1,000 per format.
RECORDS_PER_EXAMPLE = 350
EXAMPLES = 3

#: Timestamps at and past the edges of what a database and Python can hold.
ODD_TIMESTAMPS: tuple[Any, ...] = (
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T00:00:00-14:00",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:59:59.999999+00:00",
    "1899-12-31T23:59:59Z",
    "not a time",
    -(10**20),
    10**20,
    1e308,
    -1,
)
HUGE_INTS: tuple[int, ...] = (2**63, -(2**63) - 1, 2**64, 10**30, -(10**40))
ODD_STRINGS: tuple[str, ...] = (
    "x" * 250,
    "y" * 450,
    "z" * 5000,
    "nul\x00inside",
    "\x00",
    "\ud800",  # a lone surrogate: orjson refuses to dump it, so the record is written raw below
    "é" * 300,
    # JSON text inside a string (arguments, a result's content) holding the values a store may
    # refuse once it is parsed: an escaped NUL, a lone surrogate, a huge integer, deep nesting.
    '{"k": "a\\u0000b"}',
    '{"\\u0000": 1}',
    '{"k": "\\ud800"}',
    '{"n": 18446744073709551616, "m": -1e400}',
    "[" * 200 + "]" * 200,
)
UNKNOWN_TYPES = ("hologram_call", "sticker", "remove", "future_block_v9")


def outcome_counts(summary: ImportSummary) -> dict[str, int]:
    """How the records of an import ended, by outcome word: the one place that names them."""
    return {
        "imported": summary.records_imported,
        "updated": summary.records_updated,
        "unchanged": summary.records_unchanged,
        "rejected": summary.rejected,
    }


def golden_records() -> dict[str, list[bytes]]:
    """Format -> the compact JSON of every record of its golden cases."""
    found: dict[str, list[bytes]] = {}
    for path in sorted(GOLDEN.glob("*/*/input.json*")):
        fmt = path.parent.parent.name
        for record in records_of(path):
            if not isinstance(record, Rejected):
                found.setdefault(fmt, []).append(orjson.dumps(record.value))
    return found


GOLDEN_RECORDS = golden_records()


# ---- mutations --------------------------------------------------------------------------------


def _nodes(value: Any) -> list[Any]:
    """Every object and array inside ``value`` (itself included)."""
    out, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            out.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node)
    return out


def _odd_value(rng: random.Random) -> Any:
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice(HUGE_INTS)
    if kind == 1:
        return rng.choice(ODD_STRINGS)
    if kind == 2:
        return rng.choice(ODD_TIMESTAMPS)
    if kind == 3:
        deep: Any = "bottom"
        for _ in range(rng.choice((50, 199, 201, 260))):
            deep = [deep] if rng.random() < 0.5 else {"d": deep}
        return deep
    return rng.choice((None, True, 0, -1.5, "", [], {}, "text", [1, "a"], {"k": None}))


def _mutate_value(value: Any, rng: random.Random) -> Any:
    """``value`` changed in one to three places, in place where it is a container."""
    for _ in range(rng.randint(1, 3)):
        nodes = _nodes(value)
        if not nodes:
            return _odd_value(rng)
        node = rng.choice(nodes)
        op = rng.randrange(6)
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
            if op == 0:
                del node[key]
            elif op == 1 and "type" in node:
                node["type"] = rng.choice(UNKNOWN_TYPES)
            elif op == 2:
                node[key] = rng.choice(ODD_TIMESTAMPS)
            elif op == 3:
                node[rng.choice(ODD_STRINGS[:3]) if rng.random() < 0.2 else key + "_x"] = node[key]
            else:
                node[key] = _odd_value(rng)
        elif isinstance(node, list) and node:
            index = rng.randrange(len(node))
            if op == 0:
                del node[index]
            elif op == 1:
                node.insert(index, node[index])
            else:
                node[index] = _odd_value(rng)
    return value


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        # Lone surrogates and ints past 64 bits: written as JSON text by hand, as a log might.
        import json

        return json.dumps(value, ensure_ascii=True).encode()


def _mutate_bytes(raw: bytes, rng: random.Random) -> bytes:
    op = rng.randrange(4)
    if op == 0:
        return raw[: rng.randrange(max(len(raw), 1))]
    if op == 1:
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data).replace(b"\n", b" ")
    if op == 2:
        # A key repeated: the same object names it twice.
        return raw.replace(b'{"', b'{"dup":1,"dup":"two","', 1)
    return raw.replace(b'"', b'"\\u0000', 1)


MUTATIONS: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    lambda raw, rng: _dumps(_mutate_value(orjson.loads(raw), rng)),
    lambda raw, rng: _dumps(_mutate_value(orjson.loads(raw), rng)),
    lambda raw, rng: _dumps(_mutate_value(orjson.loads(raw), rng)),
    _mutate_bytes,
)


def mutated_file(
    path: Path, fmt: str, rng: random.Random, records: int = RECORDS_PER_EXAMPLE
) -> int:
    """Write ``records`` mutated records of ``fmt`` as JSONL; how many lines."""
    sources = GOLDEN_RECORDS[fmt]
    lines = []
    for _ in range(records):
        raw = rng.choice(sources)
        lines.append(rng.choice(MUTATIONS)(raw, rng) if rng.random() < 0.9 else raw)
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
    return len(lines)


# ---- the test ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(GOLDEN_RECORDS))
def test_mutated_records_are_imported_or_cleanly_rejected(
    fmt: str, db_url: str, tmp_path: Path
) -> None:
    engine = make_engine(db_url)

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    # Hypothesis draws the seed (a few hundred draws per record would be too much data for it).
    @given(st.integers(min_value=0, max_value=2**32 - 1))
    def import_mutations(seed: int) -> None:
        path = tmp_path / f"{fmt}.jsonl"
        mutated_file(path, fmt, random.Random(seed))
        summary = import_paths(engine, [path], format_name=fmt, workers=0)
        outcomes = outcome_counts(summary)
        assert summary.records == sum(outcomes.values()), (summary.records, outcomes)
        with engine.connect() as conn:
            state = conn.execute(
                sa.select(ImportRun.state).where(ImportRun.id == summary.import_id)
            ).scalar_one()
            stored_rejections = conn.execute(
                sa.select(sa.func.count())
                .select_from(RejectedRecord)
                .where(RejectedRecord.import_id == summary.import_id)
            ).scalar_one()
            stored_traces = conn.execute(
                sa.select(sa.func.count())
                .select_from(TraceRow)
                .where(TraceRow.import_id == summary.import_id)
            ).scalar_one()
        # A rejection is kept once (however often it is read); an updated trace moves to the
        # import that brought its new version (a trace imported and then updated by a later
        # record of the same import is one row).
        assert (state, stored_rejections) == ("done", summary.rejected_new)
        assert summary.traces <= stored_traces <= summary.traces + summary.updated

    try:
        import_mutations()
    finally:
        engine.dispose()


#: Mutated records per format on ClickHouse: one file per format into one store (a store's
#: tables are created once; every import is one insert per table).
CLICKHOUSE_RECORDS = 120


def _import_every_format(url: str, folder: Path) -> dict[str, int]:
    """One seeded mutated file per format imported into the store at ``url``; the records per
    outcome over all of them. Every import must account for each record and end ``done``."""
    engine = make_engine(url)
    totals: dict[str, int] = {}
    try:
        for number, fmt in enumerate(sorted(GOLDEN_RECORDS)):
            path = folder / f"{fmt}.jsonl"
            mutated_file(path, fmt, random.Random(number), records=CLICKHOUSE_RECORDS)
            summary = import_paths(engine, [path], format_name=fmt, workers=0)
            outcomes = outcome_counts(summary)
            assert summary.records == sum(outcomes.values()), (fmt, summary.records, outcomes)
            with engine.connect() as conn:
                state = conn.execute(
                    sa.select(ImportRun.state).where(ImportRun.id == summary.import_id)
                ).scalar_one()
            assert state == "done", fmt
            for outcome, n in outcomes.items():
                totals[outcome] = totals.get(outcome, 0) + n
    finally:
        engine.dispose()
    return totals


def test_mutated_records_are_imported_or_cleanly_rejected_on_clickhouse(
    clickhouse_cluster: Any, tmp_path: Path
) -> None:
    """The same mutations, every format, into the 2-shard cluster: no exception escapes, every
    import is ``done``, and every record ends as it does in SQLite."""
    found = _import_every_format(clickhouse_cluster.url, tmp_path)
    expected = _import_every_format(f"sqlite:///{tmp_path / 'fuzz.db'}", tmp_path)
    assert found == expected
    assert min(expected.values()) > 0, expected  # every outcome met
