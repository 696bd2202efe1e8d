"""``benchmarks.revision_bench``: one import in a fresh interpreter, by the code of a given tree,
into a fresh SQLite file that is removed afterwards; every message of the workload imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import revision_bench
from benchmarks.ingest_bench import REPO
from benchmarks.workload import ensure_workload


def test_one_import_runs_the_trees_code_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(revision_bench, "BENCH_DIR", tmp_path)
    workload, stats = ensure_workload(tmp_path, 300, 7)
    seconds, cpu, messages = revision_bench.one_import(REPO, "sqlite", workload, 0)
    assert messages == stats.messages == 300
    assert seconds > 0 and cpu > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [workload.name, workload.with_suffix("").name + ".meta.json"]
    )
