"""Value buckets of the exact histograms: a token size or duration to two significant digits.

The size and duration rollups count Tool Messages per *exact* value, so that every nearest-rank
percentile they give is a value that occurred. Over a range of many days those rows are many (a
row per day, tool and value). Their buckets are few: every whole value below 100 is its own
bucket, and above, the values that share their first two digits (100–109, …, 990–999,
1000–1099, …). A bucket's counts tell which bucket holds a figure (a rank, the maximum, a
budget's edge), and only the exact rows of those buckets are needed
(``db.rollups.wide_histograms``).

The bucket bounds are round numbers, so the token-size bins' edges (100, 250, 500, 1000, 2000,
5000 …) each start a bucket: a bin never splits one.

>>> [bucket_of(v) for v in (0, 7.5, 99, 100, 109, 110, 250, 999, 1000, 1099)]
[0, 7, 99, 100, 100, 101, 115, 189, 190, 190]
>>> bucket_bounds(115), bucket_bounds(190), bucket_bounds(0)
((250, 260), (1000, 1100), (None, 1))
"""

from __future__ import annotations

#: Values of this many integer digits or more share the last bucket.
_TOP_DIGITS = 13
#: The last bucket: every value from 10**12 up.
TOP = 100 + (_TOP_DIGITS - 3) * 90
#: Bytes of a bucket in a rollup key (``db.rollups.row_key``).
WIDTH = 2


def bucket_of(value: float) -> int:
    """The bucket of a value ≥ 0 (a negative one falls in the first bucket, below 1).

    >>> bucket_of(10**12), bucket_of(10**15) == TOP, bucket_of(-3)
    (1000, True, 0)
    """
    whole = int(value) if value >= 0 else 0
    if whole < 100:
        return whole
    digits = len(str(whole))
    if digits >= _TOP_DIGITS:
        return TOP
    lead = whole // 10 ** (digits - 2)
    return 100 + (digits - 3) * 90 + (lead - 10)


def bucket_bounds(bucket: int) -> tuple[int | None, int | None]:
    """``(low, high)`` of a bucket: its values ``v`` have ``low <= v < high`` (``None``: no
    bound; the first bucket holds the negative values too, the last every value from 10**12).

    >>> bucket_bounds(99), bucket_bounds(TOP)
    ((99, 100), (1000000000000, None))
    """
    if bucket == 0:
        return None, 1
    if bucket < 100:
        return bucket, bucket + 1
    if bucket >= TOP:
        return 10 ** (_TOP_DIGITS - 1), None
    digits, lead = 3 + (bucket - 100) // 90, 10 + (bucket - 100) % 90
    step = 10 ** (digits - 2)
    return lead * step, (lead + 1) * step


__all__ = ["TOP", "WIDTH", "bucket_bounds", "bucket_of"]
