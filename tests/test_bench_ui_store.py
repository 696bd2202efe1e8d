"""``make bench-ui --db STORE`` measures an existing store as it is: it never deletes a store
it was pointed at (a 10M-message store was once rebuilt at 1M because ``--messages`` was left
out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import ui_bench
from benchmarks.ui_store import marker


class _Engine:
    def dispose(self) -> None:
        pass


def test_a_bench_store_of_another_size_is_measured_as_it_is_unless_rebuild_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.db"
    path.write_bytes(b"stands for a 10M-message store")
    monkeypatch.setattr(ui_bench, "store_marker", lambda engine: marker(10_000_000, 7))
    monkeypatch.setattr(ui_bench, "make_engine", lambda url: _Engine())
    built: list[tuple[Path, int]] = []
    monkeypatch.setattr(ui_bench, "build_store", lambda p, m, s: built.append((p, m)))

    url = ui_bench.ensure_store(path, 1_000_000, 7)

    assert url == f"sqlite:///{path}"
    assert path.read_bytes() == b"stands for a 10M-message store"
    assert built == []

    ui_bench.ensure_store(path, 1_000_000, 7, rebuild=True)
    assert not path.exists()
    assert built == [(path, 1_000_000)]
