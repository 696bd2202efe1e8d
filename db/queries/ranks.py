"""Nearest-rank percentiles of counted values, per group, in one vectorized pass.

The rollups keep values with their counts (a Tool Message size and how many results have it,
an execution time and how many calls took it): the nearest-rank ``q`` percentile of a group is
the smallest value whose running count reaches ``ceil(q × n)``. Over tens of thousands of
(group, value) rows a Python loop cost more than the query that read them; here one cumulative
sum serves every group and each percentile is one ``searchsorted`` per group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class GroupRanks:
    """Per group, in the order of the groups' first rows: where it starts, how many it counts,
    each wanted percentile and the maximum."""

    starts: npt.NDArray[np.intp]
    totals: npt.NDArray[np.int64]
    percentiles: list[npt.NDArray[np.generic]]
    maxima: npt.NDArray[np.generic]


def group_ranks(
    groups: Sequence[Any] | npt.ArrayLike,
    values: npt.ArrayLike,
    counts: npt.ArrayLike,
    fractions: Sequence[tuple[int, int]],
) -> GroupRanks:
    """Nearest-rank percentiles ``num / den`` for each ``(num, den)`` of ``fractions``.

    ``groups`` labels each row (rows of a group together), ``values`` ascend within a group and
    ``counts`` (> 0) say how many times each value occurs.

    >>> r = group_ranks(["a", "a", "a", "b"], [1, 5, 9, 2], [1, 4, 1, 3], [(1, 2), (19, 20)])
    >>> [p.tolist() for p in r.percentiles], r.maxima.tolist(), r.totals.tolist()
    ([[5, 2], [9, 2]], [9, 2], [6, 3])
    """
    # numpy is imported here: ``toollens summary`` imports this package and builds no array.
    import numpy as np

    labels = np.asarray(groups, dtype=object)
    vals = np.asarray(values)
    n = np.asarray(counts, dtype=np.int64)
    if len(n) == 0:
        empty = np.zeros(0, dtype=np.intp)
        return GroupRanks(empty, np.zeros(0, np.int64), [vals[:0] for _ in fractions], vals[:0])
    starts = group_starts(labels)
    ends = np.concatenate((starts[1:], [len(n)])) - 1
    running = np.cumsum(n)
    before = running[starts] - n[starts]
    totals = running[ends] - before
    percentiles = []
    for num, den in fractions:
        rank = np.maximum(1, -(-totals * num // den))
        percentiles.append(vals[np.searchsorted(running, before + rank, side="left")])
    return GroupRanks(starts, totals, percentiles, vals[ends])


def group_starts(labels: npt.NDArray[np.object_]) -> npt.NDArray[np.intp]:
    """Where each run of equal ``labels`` begins (``labels`` not empty).

    >>> import numpy as np
    >>> group_starts(np.array(["a", "a", None, "b", "b"], dtype=object)).tolist()
    [0, 2, 3]
    """
    import numpy as np

    return np.flatnonzero(np.concatenate(([True], labels[1:] != labels[:-1])))


def group_sums(values: npt.ArrayLike, starts: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """Sums of ``values`` per group of rows beginning at ``starts`` (:attr:`GroupRanks.starts`).

    >>> import numpy as np
    >>> group_sums([1, 2, 3, 4], np.array([0, 2])).tolist()
    [3, 7]
    """
    import numpy as np

    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.add.reduceat(np.asarray(values, dtype=np.int64), starts)


def summed_counts(
    groups: Sequence[Any], values: Sequence[Any], counts: Sequence[int]
) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Rollup rows ``(group, value, count)`` in any order, a (group, value) pair possibly on
    several rows (one per day, agent …), as ``(groups, values, counts)`` summed per pair and
    ordered by group (code point order, as SQLite's and PostgreSQL's C collation; a NULL group
    last) and value: the input of :func:`group_ranks`, without a GROUP BY's sort in the database.

    >>> summed_counts(["b", None, "b", None], [2, 9, 2, 1], [1, 1, 3, 1])
    (array(['b', None, None], dtype=object), array([2, 1, 9]), array([4, 1, 1]))
    """
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(
        np.asarray(groups, dtype=object), sort=True, use_na_sentinel=False
    )
    names = np.asarray(uniques, dtype=object)
    names[pd.isna(names)] = None  # a NULL group (last) stays None, not NaN
    sized = np.asarray(values, dtype=np.int64)
    counted = np.asarray(counts, dtype=np.int64)
    order = np.lexsort((sized, codes))
    codes, sized, counted = codes[order], sized[order], counted[order]
    if not len(codes):
        return names[codes], sized, counted
    new = np.concatenate(([True], (codes[1:] != codes[:-1]) | (sized[1:] != sized[:-1])))
    starts = np.flatnonzero(new)
    labels = names[codes[starts]]
    return labels, sized[starts], np.add.reduceat(counted, starts)
