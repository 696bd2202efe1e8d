"""``make bench-reimport``: how much faster a re-import is than the first import.

    python -m benchmarks.reimport_bench [--realdata DIR] [--lines N]

Two figures, each on a fresh SQLite file:

* the **real-data set** (``$TOOLLENS_REALDATA`` or ``/work/shared/realdata``, every ``.json``
  and ``.jsonl`` file): the first import, then the same import again with nothing changed
  (target: at least 20x faster);
* a **Claude Code session of N lines** (default 10,000), made by repeating the real sessions'
  lines with fresh uuids, timestamps and tool ids: the first import, then one line appended
  and the file imported again, three times (target: under a second). Each re-import runs in
  a fresh process, as ``toollens import`` would: nothing (the tokenizer, above all) is loaded
  from the import before.

Each import is timed as ``import_paths`` runs, without interpreter start-up or migrations:
wall-clock seconds and the CPU seconds of the importing process (its threads included; worker
processes not), which a machine shared with other work inflates less.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from db.engine import make_engine
from ingest.importing.pipeline import ImportSummary, import_paths

DEFAULT_REALDATA = Path("/work/shared/realdata")
DEFAULT_LINES = 10_000
#: Where the generated session starts; one second per line after that.
SESSION_START = datetime(2026, 1, 1, tzinfo=UTC)
SESSION_ID = "00000000-0000-4000-8000-00000000beef"
REIMPORT_TARGET = 20.0
APPEND_TARGET_SECONDS = 1.0


def trace_files(root: Path) -> list[Path]:
    """Every trace file under ``root`` (``.json`` and ``.jsonl``), in a stable order."""
    return sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())


def timed_import(url: str, paths: list[Path]) -> tuple[float, float, ImportSummary]:
    """Wall and CPU seconds one ``import_paths`` of ``paths`` into ``url`` takes, and its
    summary."""
    engine = make_engine(url)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        summary = import_paths(engine, paths)
        return time.perf_counter() - started, time.process_time() - cpu, summary
    finally:
        engine.dispose()


def timed_import_fresh(url: str, paths: list[Path]) -> tuple[float, float, ImportSummary]:
    """:func:`timed_import` in a freshly started interpreter."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(timed_import, url, paths).result()


def _fresh(value: Any, rep: int) -> Any:
    """``value`` with every uuid and tool id made unique to repetition ``rep``."""
    if isinstance(value, list):
        return [_fresh(v, rep) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in ("uuid", "parentUuid", "leafUuid") and isinstance(item, str):
            out[key] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{item}/{rep}"))
        elif isinstance(item, str) and (
            key == "tool_use_id" or (key == "id" and value.get("type") == "tool_use")
        ):
            out[key] = f"{item}_{rep}"
        else:
            out[key] = _fresh(item, rep)
    return out


def session_lines(realdata: Path, count: int) -> Iterator[bytes]:
    """``count`` Claude Code lines: the real sessions' conversation lines, repeated with fresh
    uuids and tool ids, one session id, and timestamps one second apart."""
    source = [
        orjson.loads(line)
        for path in trace_files(realdata / "claude-code")
        for line in path.read_bytes().splitlines()
        if line.strip() and b'"type":"summary"' not in line
    ]
    for n in range(count):
        rep, line = divmod(n, len(source))
        value = _fresh(source[line], rep)
        value["sessionId"] = SESSION_ID
        value["timestamp"] = (SESSION_START + timedelta(seconds=n)).isoformat()
        yield orjson.dumps(value)


def bench_realdata(realdata: Path, scratch: Path) -> float:
    """Print the first and the unchanged re-import of the real-data set; the speed-up."""
    files = trace_files(realdata)
    url = f"sqlite:///{scratch / 'realdata.db'}"
    first, first_cpu, summary = timed_import(url, files)
    again, again_cpu, resummary = timed_import(url, files)
    speedup = first / again
    print(f"real data: {len(files)} files, {summary.records} records, {summary.traces} traces")
    print(f"  first import      {first:8.3f} s ({first_cpu:.3f} s CPU)   {summary.line()}")
    print(f"  re-import         {again:8.3f} s ({again_cpu:.3f} s CPU)   {resummary.line()}")
    print(f"  re-import is {speedup:.1f}x faster (target >= {REIMPORT_TARGET:.0f}x)")
    return speedup


def bench_append(realdata: Path, scratch: Path, lines: int, appends: int = 3) -> float:
    """Print the first import of a generated session and each re-import after one line was
    appended (``appends`` times, each in a fresh process); the median seconds of those."""
    path = scratch / "session.jsonl"
    generated = list(session_lines(realdata, lines + appends))
    path.write_bytes(b"".join(line + b"\n" for line in generated[:lines]))
    url = f"sqlite:///{scratch / 'session.db'}"
    first, first_cpu, summary = timed_import(url, [path])
    size = path.stat().st_size / 1e6
    print(f"claude code session: {lines:,} lines ({size:.1f} MB), one line appended at a time")
    print(f"  first import      {first:8.3f} s ({first_cpu:.3f} s CPU)   {summary.line()}")
    seconds = []
    for n in range(appends):
        with open(path, "ab") as out:
            out.write(generated[lines + n] + b"\n")
        again, again_cpu, resummary = timed_import_fresh(url, [path])
        seconds.append(again)
        print(f"  re-import         {again:8.3f} s ({again_cpu:.3f} s CPU)   {resummary.line()}")
    median = statistics.median(seconds)
    print(
        f"  one appended line re-imports in {median:.3f} s, the median "
        f"(target < {APPEND_TARGET_SECONDS} s)"
    )
    return median


def main() -> None:
    """Run both benchmarks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("TOOLLENS_REALDATA") or DEFAULT_REALDATA)
    parser.add_argument("--realdata", type=Path, default=default)
    parser.add_argument("--lines", type=int, default=DEFAULT_LINES)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toollens-reimport-") as tmp:
        bench_realdata(args.realdata, Path(tmp))
        bench_append(args.realdata, Path(tmp), args.lines)


if __name__ == "__main__":
    main()
