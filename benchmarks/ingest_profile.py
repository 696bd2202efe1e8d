"""``python -m benchmarks.ingest_bench --profile``: where an import spends its time.

cProfile of ``import_paths`` in the parent process, in one process (``workers=0``) and with the
worker processes (``workers=2``), on a SQLite file; the workers' share shows as their CPU time.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from pathlib import Path
from typing import Any

from benchmarks.ingest_bench import BENCH_DIR, REPO, _cpu_split, _remove_sqlite
from benchmarks.workload import ensure_workload


def _area(filename: str, name: str) -> str:
    """Where a profiled function lives: a repo file, a third-party package or a builtin."""
    if filename == "~":
        return name
    path = Path(filename)
    if "site-packages" in path.parts:
        return path.parts[path.parts.index("site-packages") + 1]
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return f"stdlib {path.name}"


def print_profile(profile: cProfile.Profile, seconds: float, top: int) -> None:
    """Own time grouped by file/package, then the top functions by own time."""
    stats = pstats.Stats(profile)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    areas: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        key = _area(filename, name)
        areas[key] = areas.get(key, 0.0) + tottime
    print(f"  own time by file / package (share of {seconds:.2f} s wall):")
    for key, own in sorted(areas.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {own:7.2f} s {own / seconds:6.1%}  {key}")
    print("  top functions by own time:")
    ranked = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in ranked:
        where = _area(filename, name) if filename == "~" else f"{_area(filename, name)}:{line}"
        print(f"    {tottime:7.2f} s {cumtime:7.2f} s cum {ncalls:>9,} calls  {name}  {where}")


def profile(args: Any) -> None:
    """Profile ``import_paths`` (parent process) with workers=0 and workers=2 on SQLite."""
    from db.engine import make_engine
    from ingest.importing.pipeline import import_paths

    workload, _ = ensure_workload(BENCH_DIR, args.profile_messages, args.seed)
    for workers in (0, 2):
        db_file = BENCH_DIR / f"profile-{workers}.db"
        _remove_sqlite(db_file)
        engine = make_engine(str(db_file))
        prof = cProfile.Profile()
        own, children = _cpu_split()
        started = time.perf_counter()
        prof.enable()
        summary = import_paths(engine, [workload], workers=workers)
        prof.disable()
        seconds = time.perf_counter() - started
        own_after, children_after = _cpu_split()
        engine.dispose()
        _remove_sqlite(db_file)
        # The profile covers the parent only; the workers' share shows in their CPU time.
        print(
            f"profile workers={workers}: {summary.messages:,} messages in {seconds:.2f} s "
            f"({summary.messages / seconds:,.0f} msgs/s under cProfile); CPU: parent "
            f"{own_after - own:.1f} s, workers {children_after - children:.1f} s"
        )
        print_profile(prof, seconds, args.top)
