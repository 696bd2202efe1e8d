"""Secret redaction: share of planted secrets caught, false redactions, and throughput.

    python -m benchmarks.redaction_bench [--realdata DIR] [--show N]

(a) The seeded corpora of :mod:`benchmarks.redaction_corpus`: the share of planted secrets that
    no longer appear after ``default`` redaction (per kind), the same for PII in ``strict`` mode,
    and the redactions made in the clean corpus (false redactions) in both modes.
(b) Every string of the real traces (``../shared/realdata``, raw JSON / JSONL read directly, each
    record redacted as one value): redactions per kind, the distinct strings taken out, and the
    first ``--show`` hits of each kind in context, so a person can judge whether they are real.
(c) Throughput in MB of string content (UTF-8 bytes of every string walked) per CPU second,
    best of three runs, both modes.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchmarks.redaction_corpus import Sample, clean_corpus, pii_corpus, secret_corpus
from ingest.redaction.secrets import Redactor

REALDATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "realdata"
_REDACTED = "[REDACTED:"


@dataclass(frozen=True, slots=True)
class CatchResult:
    """Planted secrets caught (absent from the output), per kind, and the misses."""

    caught: Counter[str]
    planted: Counter[str]
    misses: list[tuple[str, str, str]]

    @property
    def rate(self) -> float:
        """Share of all planted secrets caught."""
        return sum(self.caught.values()) / max(1, sum(self.planted.values()))


def _dump(value: Any) -> str:
    # The secret may sit in a JSON string with escapes: compare against the raw form too.
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def catch_rate(redactor: Redactor, samples: Iterable[Sample]) -> CatchResult:
    """Redact each sample; a planted secret counts as caught when the output no longer holds it."""
    caught: Counter[str] = Counter()
    planted: Counter[str] = Counter()
    misses: list[tuple[str, str, str]] = []
    for sample in samples:
        out = redactor.redact_value(sample.value)
        text = _dump(out)
        raw = json.dumps(out)
        for secret in sample.secrets:
            planted[sample.kind] += 1
            if secret in text or json.dumps(secret)[1:-1] in raw:
                misses.append((sample.kind, sample.place, secret))
            else:
                caught[sample.kind] += 1
    return CatchResult(caught, planted, misses)


def false_redactions(redactor: Redactor, samples: Iterable[Sample]) -> list[tuple[str, str]]:
    """(place, output) of every clean sample that came out changed."""
    hits = []
    for sample in samples:
        out = redactor.redact_value(sample.value)
        if out != sample.value:
            hits.append((sample.place, _dump(out)))
    return hits


def realdata_records(root: Path) -> Iterator[tuple[str, Any]]:
    """(file name, record) of every raw JSON file (one record) and JSONL line under ``root``."""
    for path in sorted(root.rglob("*")):
        if path.suffix == ".json":
            yield path.name, orjson.loads(path.read_bytes())
        elif path.suffix == ".jsonl":
            for line in path.read_bytes().splitlines():
                if line.strip():
                    yield path.name, orjson.loads(line)


def string_bytes(value: Any) -> int:
    """UTF-8 bytes of every string (not key) in a JSON-like value."""
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, dict):
        return sum(string_bytes(v) for v in value.values())
    if isinstance(value, list):
        return sum(string_bytes(v) for v in value)
    return 0


def _hits_in(original: Any, redacted: Any, path: str = "") -> Iterator[tuple[str, str, str]]:
    """(json path, original string, redacted string) of every string that changed."""
    if isinstance(original, dict) and isinstance(redacted, dict):
        for key, value in original.items():
            if value is not redacted.get(key):
                yield from _hits_in(value, redacted.get(key), f"{path}.{key}")
    elif isinstance(original, list) and isinstance(redacted, list):
        for i, (a, b) in enumerate(zip(original, redacted, strict=True)):
            if a is not b:
                yield from _hits_in(a, b, f"{path}[{i}]")
    elif original != redacted:
        yield path, str(original), str(redacted)


def _context(before: str, after: str, width: int = 60) -> str:
    i = after.find(_REDACTED)
    return (
        repr(before[max(0, i - width) : i + width])
        + "  ->  "
        + repr(after[max(0, i - width) : i + width])
    )


def _removed(before: str, after: str) -> str:
    """What a redaction took out: ``before`` less the prefix and suffix it shares with ``after``."""
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    return before[head : len(before) - tail]


def run_realdata(
    root: Path, mode: str, show: int, repeat: int = 3
) -> tuple[Counter[str], float, float, float]:
    """Redaction counts per kind over the real traces, MB of strings, best CPU and wall seconds."""
    records = list(realdata_records(root))
    size = sum(string_bytes(r) for _, r in records)
    seconds = wall = float("inf")
    for _ in range(repeat):
        redactor = Redactor(mode)
        # CPU time, not wall time: the machine is shared, and waiting for a core is not ours.
        start, start_wall = time.process_time(), time.perf_counter()
        outputs = [redactor.redact_value(record) for _, record in records]
        seconds = min(seconds, time.process_time() - start)
        wall = min(wall, time.perf_counter() - start_wall)
    counts = redactor.counts.reset()
    distinct: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    for (name, record), out in zip(records, outputs, strict=True):
        if out is record:
            continue
        for path, before, after in _hits_in(record, out):
            kind = after[after.find(_REDACTED) + len(_REDACTED) :].split("]")[0]
            distinct[kind][_removed(before, after)[:70]] += 1
            if len(examples[kind]) < show:
                examples[kind].append(f"{name}{path}: {_context(before, after)}")
    for kind in sorted(distinct):
        print(f"  {mode} {kind}: {len(distinct[kind])} distinct strings changed; most frequent:")
        for text, n in distinct[kind].most_common(12):
            print(f"    {n:>4} x {text!r}")
        for line in examples[kind]:
            print(f"    e.g. {line}")
    return counts, size / 1e6, seconds, wall


def main(argv: list[str] | None = None) -> None:
    """Print the catch rates, false redactions, real-trace hits and throughput."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=REALDATA)
    parser.add_argument("--show", type=int, default=2, help="hits shown in context per kind")
    args = parser.parse_args(argv)

    default, strict = Redactor("default"), Redactor("strict")
    secrets = list(secret_corpus())
    result = catch_rate(default, secrets)
    print(
        f"(a) seeded secrets: {sum(result.caught.values())}/{sum(result.planted.values())} "
        f"caught = {result.rate:.2%} (default mode)"
    )
    for kind in sorted(result.planted):
        print(f"    {kind:<20} {result.caught[kind]:>4}/{result.planted[kind]}")
    for kind, place, secret in result.misses:
        print(f"    MISSED {kind} in {place}: {secret[:60]!r}")
    pii = list(pii_corpus())
    strict_pii = catch_rate(strict, pii)
    default_pii = catch_rate(Redactor("default"), pii)
    print(
        f"    PII (strict): {sum(strict_pii.caught.values())}/{sum(strict_pii.planted.values())} "
        f"caught = {strict_pii.rate:.2%}; default mode leaves "
        f"{len(default_pii.misses)}/{sum(default_pii.planted.values())} untouched"
    )
    clean = list(clean_corpus())
    for mode in ("default", "strict"):
        hits = false_redactions(Redactor(mode), clean)
        print(f"    clean corpus ({len(clean)} values), {mode}: {len(hits)} false redactions")
        for place, out in hits[:10]:
            print(f"      {place}: {out[:160]!r}")

    if not args.realdata.is_dir():
        print(f"(b) no real traces at {args.realdata}: skipped")
        return
    for mode in ("default", "strict"):
        counts, megabytes, seconds, wall = run_realdata(args.realdata, mode, args.show)
        total = sum(counts.values())
        print(
            f"(b) realdata {mode}: {total} redactions "
            + (", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "(none)")
        )
        print(
            f"(c) throughput {mode} (best of 3): {megabytes:.1f} MB of strings in {seconds:.2f} "
            f"CPU s = {megabytes / seconds:.1f} MB/s "
            f"(wall {wall:.2f} s = {megabytes / wall:.1f} MB/s)"
        )


if __name__ == "__main__":
    main()
