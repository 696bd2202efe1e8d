"""``python -m benchmarks.memory_bench``: peak memory of importing hostile inputs.

    python -m benchmarks.memory_bench [--db URL] [--upload] [--messages N ...]

Three inputs, generated in a temporary folder (nothing is kept):

* a **300 MB single record** (one JSONL line holding a 300 MB string), over the default
  256 MiB ``--max-record-mb``;
* a **4.7 MB .gz bomb**: one record of ~4.8 GB of one repeated byte, gzipped;
* a **10 MB .gz of 10 GiB of newlines**.

Each is imported in a fresh process (``toollens import``, or with ``--upload`` the dashboard's
upload path, :func:`dashboard.uploads.import_uploaded`) into a fresh SQLite file (or the
``--db`` PostgreSQL database); the figure is the peak resident set of that process and its
workers (``ru_maxrss``), the wall-clock seconds and the import's one-line summary. Target:
under 512 MB each.

With ``--messages N`` (repeatable) it measures instead whether an import's memory stays flat
as its input grows: the bench workload (:mod:`benchmarks.workload`, about 1 KB a message,
cached in ``.bench/``) of each size is imported the way ``toollens import`` does it (worker
processes for a large input) into a fresh store, and the figure is the highest sampled RSS of
the importing process and its workers together, every 50 ms.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from contextlib import ExitStack
from pathlib import Path

MB = 1024 * 1024
#: The dashboard's default upload limit (``dashboard.uploads``), MB.
UPLOAD_MAX_MB = 200
#: Bytes written per step while generating an input.
_STEP = 16 * MB


def single_record(path: Path, size: int = 300 * 1000 * 1000) -> None:
    """One JSONL line of ``size`` bytes: a chat message holding one long string."""
    head, tail = b'{"messages": [{"role": "user", "content": "', b'"}]}\n'
    body = size - len(head) - len(tail)
    with path.open("wb") as out:
        out.write(head)
        block = b"a" * _STEP
        while body > 0:
            out.write(block[: min(body, _STEP)])
            body -= _STEP
        out.write(tail)


def _gzip_repeated(path: Path, head: bytes, byte: bytes, count: int, tail: bytes) -> None:
    """``head``, ``count`` times ``byte``, ``tail``, gzipped at the best ratio (streamed)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = byte * _STEP
    with path.open("wb") as out:
        out.write(compressor.compress(head))
        while count > 0:
            out.write(compressor.compress(block[: min(count, _STEP)]))
            count -= _STEP
        out.write(compressor.compress(tail))
        out.write(compressor.flush())


def gz_bomb(path: Path) -> None:
    """~4.7 MB of gzip that decompress to one ~4.8 GB record."""
    head, tail = b'{"messages": [{"role": "user", "content": "', b'"}]}\n'
    _gzip_repeated(path, head, b"a", 4_800 * 1000 * 1000, tail)


#: A one-message chat record: what the newlines follow, so that the format is recognized and
#: the whole input read.
FIRST_RECORD = b'{"messages": [{"role": "user", "content": "hello"}]}\n'


def gz_newlines(path: Path) -> None:
    """~10 MB of gzip that decompress to one record and 10 GiB of newlines."""
    _gzip_repeated(path, FIRST_RECORD, b"\n", 10 * 1024**3, b"")


INPUTS = {
    "300 MB single record": ("record.jsonl", single_record),
    "4.7 MB .gz bomb": ("bomb.jsonl.gz", gz_bomb),
    "10 MB .gz of 10 GiB of newlines": ("newlines.jsonl.gz", gz_newlines),
}


def _child(db: str, path: str, upload: bool) -> None:
    """Run in the measured process: import ``path``, print the summary and the peak RSS."""
    from db.engine import make_engine
    from ingest.importing.pipeline import import_paths

    engine = make_engine(db)
    if upload:
        from dashboard.uploads import import_uploaded

        data = Path(path).read_bytes()
        summary = import_uploaded(engine, [(Path(path).name, data)], max_mb=UPLOAD_MAX_MB)
    else:
        summary = import_paths(engine, [Path(path)], incremental=False)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(summary.line())
    for r in summary.rejections[:3]:
        print(f"  rejected {r.reason}: {r.message} (kept {len(r.raw)} bytes)")
    print(f"PEAK_KB {max(own, workers)}")


def by_size(sizes: list[int], db: str | None) -> None:
    """Peak RSS (process and workers together) of importing the bench workload of each size."""
    from benchmarks.ingest_bench import BENCH_DIR, PeakMemory, pg_schema
    from benchmarks.workload import DEFAULT_SEED, ensure_workload

    for messages in sizes:
        workload, _ = ensure_workload(BENCH_DIR, messages, DEFAULT_SEED)
        with tempfile.TemporaryDirectory(prefix="toollens-memory-") as tmp, ExitStack() as stack:
            url = f"sqlite:///{tmp}/store.db"
            if db is not None:
                url = stack.enter_context(pg_schema(db))[2]
            command = [sys.executable, "-m", "benchmarks.memory_bench", "--child", url]
            started = time.perf_counter()
            with PeakMemory() as peak:
                done = subprocess.run(
                    [*command, str(workload)], capture_output=True, text=True, check=False
                )
            seconds = time.perf_counter() - started
        summary = done.stdout.strip().splitlines()[:1]
        print(
            f"{messages:,} messages, input {workload.stat().st_size / MB:,.0f} MB: "
            f"peak RSS {peak.peak / MB:,.0f} MB (process and workers), {seconds:.1f} s",
            flush=True,
        )
        for line in summary:
            print(f"  {line}", flush=True)
        if done.returncode:
            print(f"  failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", help="a PostgreSQL URL (default: a fresh SQLite file each)")
    parser.add_argument("--upload", action="store_true", help="through the upload path")
    parser.add_argument(
        "--messages", type=int, action="append", help="bench workload sizes to import instead"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.upload)
        return
    if args.messages:
        by_size(args.messages, args.db)
        return
    with tempfile.TemporaryDirectory(prefix="toollens-memory-") as tmp:
        for label, (name, make) in INPUTS.items():
            path = Path(tmp) / name
            make(path)
            if args.upload and path.stat().st_size > UPLOAD_MAX_MB * MB:
                print(f"{label}: over the {UPLOAD_MAX_MB} MB upload limit, refused unread")
                path.unlink()
                continue
            db = args.db or f"sqlite:///{tmp}/{name}.db"
            started = time.perf_counter()
            command = [sys.executable, "-m", "benchmarks.memory_bench", "--child", db, str(path)]
            done = subprocess.run(
                command + (["--upload"] if args.upload else []),
                capture_output=True, text=True, env=os.environ, check=False,
            )  # fmt: skip
            seconds = time.perf_counter() - started
            lines = done.stdout.strip().splitlines()
            peak = next((int(x.split()[1]) for x in lines if x.startswith("PEAK_KB")), 0)
            print(
                f"{label}: input {path.stat().st_size / MB:.1f} MB, "
                f"peak RSS {peak / 1024:.0f} MB, {seconds:.1f} s"
            )
            for line in lines:
                if not line.startswith("PEAK_KB"):
                    print(f"  {line}")
            if done.returncode:
                print(f"  failed: {done.stderr.strip().splitlines()[-1:]}")
            path.unlink()


if __name__ == "__main__":
    main()
