"""``pytest -m pg`` selects exactly the tests that talk to PostgreSQL (``make test-fast`` runs
``-m "not browser and not pg"``): the ``postgresql`` variant of a test parametrized over both
databases, a test that asks for ``pg_url``, and a test marked by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "tests/test_schema_replay.py",
    "tests/test_pg_session.py",
    "tests/test_bench_store_build.py",
]


def _collected(marker: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--collect-only", "-q", "-m", marker, *FILES],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_the_pg_marker_selects_the_postgresql_tests() -> None:
    assert _collected("pg") == [
        "tests/test_schema_replay.py::test_a_replayed_database_equals_a_migrated_one[postgresql]",
        "tests/test_pg_session.py::test_a_postgresql_session_has_its_settings",
        "tests/test_bench_store_build.py::test_a_tiny_bench_store_and_its_scaled_copy_on_postgresql",
    ]


def test_not_pg_keeps_the_sqlite_variants() -> None:
    assert _collected("not pg") == [
        "tests/test_schema_replay.py::test_a_replayed_database_equals_a_migrated_one[sqlite]",
        "tests/test_bench_store_build.py::test_a_tiny_bench_store_and_its_scaled_copy_on_sqlite",
    ]
