"""Value buckets (``db.rollups.value_buckets``): every value lies in its bucket's bounds, the
buckets tile the values without gaps, and the token-size bins' edges each start a bucket."""

from __future__ import annotations

import random

from db.queries.histograms import TOKEN_EDGES
from db.rollups.value_buckets import TOP, WIDTH, bucket_bounds, bucket_of


def test_buckets_by_two_significant_digits() -> None:
    cases = {
        0: 0, 0.4: 0, 1: 1, 99.99: 99, 100: 100, 109: 100, 110: 101, 999: 189,
        1000: 190, 1099.5: 190, 1100: 191, 25_000: 295, 10**12 - 1: 999, 10**12: TOP,
        10**18: TOP, -5: 0,
    }  # fmt: skip
    assert {value: bucket_of(value) for value in cases} == cases
    assert [bucket_bounds(b) for b in (0, 1, 99, 100, 189, 190, 295, 999, TOP)] == [
        (None, 1), (1, 2), (99, 100), (100, 110), (990, 1000), (1000, 1100),
        (25_000, 26_000), (990_000_000_000, 10**12), (10**12, None),
    ]  # fmt: skip
    assert TOP < 2 ** (8 * WIDTH)


def test_every_value_lies_in_its_buckets_bounds_and_the_buckets_tile() -> None:
    rng = random.Random(7)
    values = [rng.randrange(0, 10 ** rng.randrange(1, 14)) for _ in range(20_000)]
    values += [rng.random() * 10 ** rng.randrange(0, 8) for _ in range(5_000)]
    for value in values:
        low, high = bucket_bounds(bucket_of(value))
        assert (low is None or low <= value) and (high is None or value < high), value
    for bucket in range(TOP):
        assert bucket_bounds(bucket)[1] == bucket_bounds(bucket + 1)[0]
        low = bucket_bounds(bucket)[0]
        assert low is None or bucket_of(low) == bucket


def test_the_size_bins_edges_each_start_a_bucket() -> None:
    """So a bin's count is a sum of whole buckets: no bucket is read exactly for a bin."""
    assert TOKEN_EDGES[0] == 0 and bucket_bounds(bucket_of(0)) == (None, 1)
    for edge in TOKEN_EDGES[1:]:
        assert bucket_bounds(bucket_of(edge))[0] == edge
