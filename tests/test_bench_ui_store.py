"""``make bench-ui --db STORE`` never deletes a store it did not build: a store it was pointed
at is measured as it is (a 10M-message store was once rebuilt at 1M because ``--messages`` was
left out); only its own ``.bench/ui-<size>.db`` files are rebuilt when their marker differs,
and a missing file elsewhere is refused, not created."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import ui_cache
from benchmarks.ui_cache import Refused, Request, store_marker_for


def _fake_store(
    monkeypatch: pytest.MonkeyPatch, path: Path, content: bytes, marker: str | None
) -> list[tuple[Path, int]]:
    """A file ``path`` holding ``content``, read as a store whose marker is ``marker``; returns
    the list of builds made."""
    path.write_bytes(content)
    markers = {path: marker}
    monkeypatch.setattr(
        ui_cache, "_read_marker", lambda url: markers.get(Path(url.split("///", 1)[1]))
    )
    built: list[tuple[Path, int]] = []
    monkeypatch.setattr(
        ui_cache, "_build_sqlite", lambda p, req, log: built.append((p, req.messages))
    )
    return built


def test_a_bench_store_of_another_size_is_measured_as_it_is_unless_rebuild_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.db"
    built = _fake_store(
        monkeypatch, path, b"stands for a 10M-message store", store_marker_for(10_000_000, 7)
    )
    said: list[str] = []

    url = ui_cache.ensure(str(path), Request(1_000_000, 7), said.append)

    assert url == f"sqlite:///{path}"
    assert path.read_bytes() == b"stands for a 10M-message store"
    assert built == []
    assert said == [
        f"store: {path} holds ui-bench v3 messages=10000000 seed=7 (1m x10); measuring it as it "
        "is (--rebuild replaces it)"
    ]
    ui_cache.ensure(str(path), Request(1_000_000, 7, rebuild=True), said.append)
    assert built == [(path, 1_000_000)]


def test_a_store_the_bench_did_not_build_is_never_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "team.db"
    built = _fake_store(monkeypatch, path, b"a real store", None)
    said: list[str] = []

    ui_cache.ensure(str(path), Request(1_000_000, 7, rebuild=True), said.append)

    assert built == []
    assert said == [f"store: {path} was not built by the bench; measuring it as it is"]


def test_a_missing_file_elsewhere_is_refused_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    with pytest.raises(Refused) as refused:
        ui_cache.ensure(str(missing), Request(1_000_000, 7))
    assert str(refused.value) == (
        f"store: {missing} does not exist; the bench builds stores only as .bench/ui-<size>.db "
        "(leave out --db) or in a PostgreSQL schema toollens_bench_<size>"
    )
    assert not missing.exists()


def test_its_own_store_is_rebuilt_when_its_marker_differs_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ui_cache, "BENCH_DIR", tmp_path)
    own = tmp_path / "ui-3m.db"
    built = _fake_store(
        monkeypatch, own, b"an older 3M store", "ui-bench v2 messages=3000000 seed=11"
    )
    said: list[str] = []

    ui_cache.ensure(None, Request(3_000_000, 11), said.append)

    assert built == [(own, 3_000_000)]
    assert said == [
        f"store: {own} holds ui-bench v2 messages=3000000 seed=11, not ui-bench v3 "
        "messages=3000000 seed=11 (1m x3); rebuilding it"
    ]


def test_its_own_file_holding_a_foreign_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ui_cache, "BENCH_DIR", tmp_path)
    own = tmp_path / "ui-1m.db"
    built = _fake_store(monkeypatch, own, b"someone's store", None)

    with pytest.raises(Refused, match="was not built by the bench; move it away"):
        ui_cache.ensure(None, Request(1_000_000, 11))
    assert built == []


def _empty_store(folder: Path) -> str:
    """The URL of a migrated, empty SQLite store in ``folder``."""
    from db.engine import make_engine

    url = f"sqlite:///{folder / 'store.db'}"
    make_engine(url).dispose()
    return url


def test_the_bench_times_toollens_summary_in_processes_of_its_own(tmp_path: Path) -> None:
    from benchmarks.ui_bench import SUMMARY_RUNS, summary_seconds

    url = _empty_store(tmp_path)
    runs = summary_seconds(url)
    assert len(runs) == SUMMARY_RUNS == 3
    assert all(0 < r < 60 for r in runs)
    with pytest.raises(RuntimeError, match="toollens summary failed"):
        summary_seconds(f"sqlite:///{tmp_path / 'missing.db'}")


def test_the_bench_times_toollens_pairs_in_both_formats(tmp_path: Path) -> None:
    from benchmarks.ui_bench import PAIRS_FORMATS, pairs_seconds

    url = _empty_store(tmp_path)
    assert PAIRS_FORMATS == ("jsonl", "csv")
    for out_format in PAIRS_FORMATS:
        assert 0 < pairs_seconds(url, out_format) < 60
