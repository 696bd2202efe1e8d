"""Deterministic demo and test data: a seeded simulated travel agent whose traces exercise every
situation ToolLens names, written in three formats with the ground truth beside them.

>>> truth = generate(Path(tmp), seed=7, traces=60)            # doctest: +SKIP
>>> sorted(p.name for p in Path(tmp).iterdir())                 # doctest: +SKIP
['anthropic.jsonl', 'ground_truth.json', 'langchain.json', 'openai_chat.jsonl']

Every scenario of the catalogue (clean runs, pairing edge cases, every error type through every
channel, suggestion follow-through, loops, content edge cases) appears once; the remaining traces
are clean runs. Each trace is written in one format; formats are spread evenly within every
category, so each format covers pairing, errors, loops and suggestions. The same seed always
gives byte-identical files.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from ingest.scenarios.agent import FORMATS, Conversation
from ingest.scenarios.cases_advice import ERRORS, SUGGESTIONS
from ingest.scenarios.cases_flow import CLEAN, FLOW, Builder
from ingest.scenarios.truth import GroundTruth, build_truth
from ingest.scenarios.writers import FILE_NAMES, Rendered, write_format

__all__ = ["CATALOGUE", "FORMATS", "GroundTruth", "generate"]

#: Every scenario that must appear, in a fixed order (the seed does not change which).
CATALOGUE: tuple[Builder, ...] = (*FLOW, *ERRORS, *SUGGESTIONS)
GROUND_TRUTH_FILE = "ground_truth.json"
#: First trace start; traces start 20 minutes apart (plus up to 10 minutes of seeded jitter).
EPOCH = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def _check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"formats must be a non-empty subset of {FORMATS}, got {tuple(formats)}")
    return tuple(f for f in FORMATS if f in formats)


def assign_formats(
    convs: Sequence[Conversation], formats: tuple[str, ...], rng: random.Random
) -> list[str]:
    """A format for each conversation: the most constrained ones first, each to the allowed
    format with the fewest traces of its group so far, then of its category, then overall."""
    allowed = [[f for f in conv.allowed_formats() if f in formats] for conv in convs]
    per_group: Counter[tuple[str, str]] = Counter()
    per_category: Counter[tuple[str, str]] = Counter()
    total: Counter[str] = Counter()
    chosen = [""] * len(convs)
    for index in sorted(range(len(convs)), key=lambda i: (len(allowed[i]), i)):
        group, category = convs[index].group, convs[index].category
        load: dict[str, tuple[int, int, int, float]] = {}
        for f in allowed[index]:
            if category == "clean":
                # Clean runs are the filler: they even out the files, not a category.
                load[f] = (total[f], 0, 0, rng.random())
            else:
                load[f] = (
                    per_group[(group, f)],
                    per_category[(category, f)],
                    total[f],
                    rng.random(),
                )
        fmt = min(allowed[index], key=load.__getitem__)
        chosen[index] = fmt
        per_group[(group, fmt)] += 1
        per_category[(category, fmt)] += 1
        total[fmt] += 1
    return chosen


def build_scenarios(seed: int, traces: int, formats: tuple[str, ...]) -> list[Conversation]:
    """The catalogue scenarios expressible in ``formats``, then clean fillers up to ``traces``."""
    convs = [build(random.Random(f"{seed}:scenario:{n}")) for n, build in enumerate(CATALOGUE)]
    convs = [c for c in convs if set(c.allowed_formats()) & set(formats)]
    if traces < len(convs):
        raise ValueError(f"traces must be at least {len(convs)} to hold every scenario once")
    picker = random.Random(f"{seed}:fillers")
    for n in range(traces - len(convs)):
        convs.append(picker.choice(CLEAN)(random.Random(f"{seed}:filler:{n}")))
    return convs


def generate(
    out_dir: Path,
    *,
    seed: int = 7,
    traces: int = 60,
    formats: Sequence[str] = FORMATS,
) -> GroundTruth:
    """Write the scenario traces and ``ground_truth.json`` to ``out_dir``; return the truth.

    Files: ``openai_chat.jsonl``, ``anthropic.jsonl``, ``langchain.json`` (only those of
    ``formats``) and ``ground_truth.json``. Raises ``ValueError`` when ``traces`` is smaller
    than the number of catalogue scenarios ``formats`` can express.
    """
    chosen_formats = _check_formats(formats)
    convs = build_scenarios(seed, traces, chosen_formats)
    rng = random.Random(f"{seed}:layout")
    placed = list(zip(convs, assign_formats(convs, chosen_formats, rng), strict=True))
    rng.shuffle(placed)
    items: list[Rendered] = []
    for index, (conv, fmt) in enumerate(placed):
        conv.assign_ids(fmt, random.Random(f"{seed}:ids:{index}"))
        started = EPOCH + timedelta(minutes=20 * index, seconds=rng.randint(0, 600))
        items.append(Rendered(f"demo-{index:03d}-{conv.name}", fmt, conv, started))
    out_dir.mkdir(parents=True, exist_ok=True)
    for fmt in chosen_formats:
        write_format(out_dir, fmt, [item for item in items if item.fmt == fmt])
    truth = build_truth(seed, items)
    (out_dir / GROUND_TRUTH_FILE).write_bytes(
        orjson.dumps(truth.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
    )
    return truth


def output_files(formats: Sequence[str] = FORMATS) -> list[str]:
    """Names of the files :func:`generate` writes for ``formats``."""
    return [FILE_NAMES[f] for f in _check_formats(formats)] + [GROUND_TRUTH_FILE]
