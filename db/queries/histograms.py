"""The (tool, tokens) count histogram of the Tool Messages and the size figures derived from it.

One statement counts the filtered results per (tool, token size): token sizes repeat a lot, so
it has a few tens of thousands of rows for a million results, and it does not depend on the
token budget. Every size figure of the Overview and of ``toollens summary`` is derived from it
in Python, exactly: the size bins, the most oversized tools, each tool's results, results over
budget and nearest-rank p50/p95, and the overall count, total, maximum and p50/p95. The
dashboard caches the histogram once per filter set and derives the rest for any budget.

``toollens summary`` needs only :func:`token_counts` and :func:`token_figures`, which build no
frame: pandas and numpy are imported by the functions that do (importing pandas would be a
third of the command's run; ``tests/test_import_cost.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from db.catalogue import SIZE_HISTOGRAM
from db.distributions import histogram
from db.queries.filters import NO_FILTERS, Filters
from db.queries.ranks import group_ranks, group_sums

if TYPE_CHECKING:
    import pandas as pd

#: Lower edges of the token-size histogram; the budget is added as an edge of its own so that
#: every bar is either wholly within or wholly over budget.
TOKEN_EDGES: tuple[int, ...] = (0, 100, 250, 500, 1000, 2000, 5000, 10000, 20000)
#: Columns of :func:`tool_token_counts`.
COUNT_COLUMNS = ("tool", "tokens", "results")
#: The nearest ranks any page derives from the histogram: the Overview's p50 / p95 per tool and
#: overall, the Tokens page's quartiles (``db.queries.tokens.QUANTILES``).
RANKS: tuple[tuple[int, int], ...] = ((1, 4), (1, 2), (3, 4), (19, 20))


def tool_token_counts(
    engine: Engine, filters: Filters = NO_FILTERS, budget: int | None = None
) -> pd.DataFrame:
    """Tool Messages per (tool, tokens), ordered by tool and tokens.

    Columns: ``tool``, ``tokens``, ``results`` (how many of the tool's results have that size).
    The catalogue's size histogram (``db.distributions.histogram``): from the size rollup where
    it answers the filters, else unfiltered the grouping walks the (tool, tokens) index, and
    under a filter it sorts the filtered traces' entries once.

    Under a range of days the rollup is read through its value buckets: the rows are then exact
    where a figure of this module or of ``db.queries.tokens`` is decided — the :data:`RANKS`,
    each tool's minimum and maximum, the bins' round edges, the results over ``budget`` (pass
    the budget the figures are for) — and the counts and totals of every other bucket stand on
    one or two rows inside it.
    """
    edges = () if budget is None else (budget + 1,)
    with engine.connect() as conn:
        return _frame(*histogram(conn, SIZE_HISTOGRAM, filters, fractions=RANKS, edges=edges))


def _frame(tools: Any, tokens: Any, results: Any) -> pd.DataFrame:
    """The frame of :func:`tool_token_counts` from its three columns."""
    import pandas as pd

    return pd.DataFrame(
        {
            "tool": pd.Series(tools, dtype=object),
            "tokens": pd.Series(tokens, dtype="int64"),
            "results": pd.Series(results, dtype="int64"),
        }
    )


def token_counts(engine: Engine, filters: Filters = NO_FILTERS) -> list[tuple[int, int]]:
    """Tool Messages per token size, ordered by tokens: ``(tokens, results)`` pairs, the
    histogram of all tools together, fewer rows when only :func:`token_figures` are needed."""
    with engine.connect() as conn:
        sizes, counts = histogram(conn, SIZE_HISTOGRAM, filters, fractions=RANKS, by_tool=False)
    return [(int(tokens), int(results)) for tokens, results in zip(sizes, counts, strict=True)]


def token_figures(counts: Iterable[tuple[int, int]]) -> dict[str, int]:
    """Count, total, maximum and nearest-rank p50/p95 of the sizes (0 when there is none), from
    ``(tokens, results)`` pairs in any order, a size's pairs summed: :func:`token_counts`, or
    the ``tokens`` and ``results`` columns of :func:`tool_token_counts`.

    Keys: ``tool_results``, ``token_total``, ``token_max``, ``p50``, ``p95``.

    >>> token_figures([(300, 1), (10, 2), (300, 1)])
    {'tool_results': 4, 'token_total': 620, 'token_max': 300, 'p50': 10, 'p95': 300}
    """
    by_size: dict[int, int] = {}
    for tokens, results in counts:
        by_size[int(tokens)] = by_size.get(int(tokens), 0) + int(results)
    sizes = sorted(by_size.items())
    n = sum(results for _, results in sizes)
    if n == 0:
        return dict.fromkeys(("tool_results", "token_total", "token_max", "p50", "p95"), 0)

    def nearest_rank(num: int, den: int) -> int:
        # The smallest size whose running count reaches ceil(q * n), q = num / den.
        running = 0
        for tokens, results in sizes:
            running += results
            if running * den >= n * num:
                return tokens
        raise AssertionError("the running count reaches n")

    return {
        "tool_results": n,
        "token_total": sum(tokens * results for tokens, results in sizes),
        "token_max": sizes[-1][0],
        "p50": nearest_rank(1, 2),
        "p95": nearest_rank(19, 20),
    }


def tool_sizes(counts: pd.DataFrame, budget: int) -> pd.DataFrame:
    """Per tool with results: ``tool``, ``results``, ``over_budget`` (results with more than
    ``budget`` tokens), ``p50_tokens``, ``p95_tokens`` (nearest rank); ``counts`` ordered by
    tool and tokens, as :func:`tool_token_counts` returns them."""
    import numpy as np
    import pandas as pd

    tools = counts["tool"].to_numpy()
    tokens, results = counts["tokens"].to_numpy(), counts["results"].to_numpy()
    ranks = group_ranks(tools, tokens, results, ((1, 2), (19, 20)))
    over = np.where(tokens > budget, results, 0)
    return pd.DataFrame(
        {
            "tool": tools[ranks.starts],
            "results": ranks.totals,
            "over_budget": group_sums(over, ranks.starts),
            "p50_tokens": ranks.percentiles[0].astype("int64"),
            "p95_tokens": ranks.percentiles[1].astype("int64"),
        }
    )


def token_edges(budget: int) -> list[int]:
    """Histogram edges: :data:`TOKEN_EDGES` plus the budget.

    >>> token_edges(1500)
    [0, 100, 250, 500, 1000, 1500, 2000, 5000, 10000, 20000]
    """
    return sorted({*TOKEN_EDGES, max(1, budget)})


def size_bins(counts: pd.DataFrame, budget: int) -> pd.DataFrame:
    """Tool Messages per token-size bin (every bin present, empty ones with 0).

    Columns: ``bin`` (label such as ``"100–249"`` or ``"20000+"``), ``lower``, ``upper``
    (exclusive, ``None`` for the last bin), ``results``, ``over_budget`` (the bin lies above the
    budget, i.e. ``lower > budget``: a result *at* the budget is within it).
    """
    # Bins are [edge, next edge); the budget edge is shifted by one so that the bin starting
    # right after it holds exactly the results over budget (tokens > budget).
    import numpy as np
    import pandas as pd

    lowers = [e + 1 if e == budget else e for e in token_edges(budget)]
    index = np.searchsorted(np.asarray(lowers), counts["tokens"].to_numpy(), side="right") - 1
    per_bin = np.bincount(
        index.clip(0), weights=counts["results"].to_numpy(), minlength=len(lowers)
    )
    rows = []
    for i, low in enumerate(lowers):
        upper = lowers[i + 1] if i + 1 < len(lowers) else None
        label = f"{low}+" if upper is None else f"{low}–{upper - 1}"
        rows.append((label, low, upper, int(per_bin[i]), low > budget))
    return pd.DataFrame(rows, columns=["bin", "lower", "upper", "results", "over_budget"])


def oversized_tools(counts: pd.DataFrame, budget: int, *, limit: int = 5) -> pd.DataFrame:
    """Tools whose Tool Messages most often exceed ``budget`` tokens.

    Columns: ``tool``, ``results``, ``over_budget``, ``max_tokens``, ``tokens_over`` (tokens
    beyond the budget, summed over the oversized results). Tools without oversized results are
    left out; the most oversized first, then by tool. ``counts`` is ordered by tool and tokens,
    as :func:`tool_token_counts` returns them.
    """
    import numpy as np
    import pandas as pd

    tools = counts["tool"].to_numpy()
    tokens, results = counts["tokens"].to_numpy(), counts["results"].to_numpy()
    over = tokens > budget
    ranks = group_ranks(tools, tokens, results, ())
    per_tool = pd.DataFrame(
        {
            "tool": tools[ranks.starts],
            "results": ranks.totals,
            "over_budget": group_sums(np.where(over, results, 0), ranks.starts),
            # Tokens ascend within a tool: its last row is its largest.
            "max_tokens": ranks.maxima.astype("int64"),
            "tokens_over": group_sums(np.where(over, (tokens - budget) * results, 0), ranks.starts),
        }
    )
    top = per_tool[per_tool["over_budget"] > 0].sort_values(
        ["over_budget", "tool"], ascending=[False, True]
    )
    return top.head(limit).reset_index(drop=True)
