"""What Tool Messages cost, in words: the Trace page and the incident report say it alike.

The figures are ``ingest.analysis.costs``'s: the later model calls that read a Tool Message,
the tokens of the reads after the first (re-read, of them cached), and every read priced; ``~``
marks an estimate (no usage reported by the calls after it), ``tokens only`` a model without a
price.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from db.contract.vocabulary import counted


def usd_text(value: float) -> str:
    """Dollars to the millionth, half up from the decimal value (the nanodollars stored), not
    from the nearest binary fraction.

    >>> usd_text(0.0000975), usd_text(1234.5)
    ('$0.000098', '$1,234.500000')
    """
    return f"${Decimal(str(value)).quantize(Decimal('0.000001'), ROUND_HALF_UP):,}"


def message_cost_text(
    later_calls: int | None,
    reread_tokens: int | None,
    reread_cached: int | None,
    measured: bool,
    cost_usd: float | None,
) -> str | None:
    """One Tool Message's figures: ``read by N later calls · M re-read (K cached) · $C``;
    ``None`` when it has none (stored before they were derived, until ``toollens reanalyze``).

    >>> message_cost_text(6, 4960, 4956, True, 0.0052188)
    'read by 6 later calls · 4,960 re-read (4,956 cached) · $0.005219'
    >>> message_cost_text(3, 200, None, False, None)
    'read by ~3 later calls · ~200 re-read · tokens only'
    """
    if later_calls is None:
        return None
    mark = "" if measured else "~"
    text = f"read by {mark}{counted(later_calls, 'later call', thousands=True)}"
    text += f" · {mark}{reread_tokens or 0:,} re-read"
    if reread_cached is not None and measured:
        text += f" ({reread_cached:,} cached)"
    return text + (" · tokens only" if cost_usd is None else f" · {usd_text(cost_usd)}")


def total_cost_text(cost: Mapping[str, Any]) -> str:
    """Several Tool Messages' figures (``db.queries.summary.tool_cost``'s shape): tokens added,
    re-read and cached, the cost of those with a price, and how many are estimates.

    >>> total_cost_text({"tokens_added": 2910, "later_calls": 14, "reread_tokens": 3510,
    ...   "reread_cached": 2700, "cost_usd": 0.00947, "priced_results": 6,
    ...   "measured_results": 4, "estimated_results": 3})
    '2,910 tokens added, 3,510 re-read (2,700 cached) by 14 later calls; $0.009470 for 6 of 7 Tool Messages (the others: tokens only); 3 estimated'
    >>> total_cost_text({"tokens_added": 70, "later_calls": 2, "reread_tokens": 70,
    ...   "reread_cached": 0, "cost_usd": None, "priced_results": 0,
    ...   "measured_results": 0, "estimated_results": 1})
    '70 tokens added, 70 re-read by 2 later calls; tokens only (no price for the model); 1 estimated'
    """  # noqa: E501
    n = int(cost["measured_results"]) + int(cost["estimated_results"])
    priced = int(cost["priced_results"])
    cached = int(cost["reread_cached"])
    text = f"{cost['tokens_added']:,} tokens added, {cost['reread_tokens']:,} re-read"
    text += f" ({cached:,} cached)" if cached else ""
    text += f" by {counted(int(cost['later_calls']), 'later call', thousands=True)}; "
    if cost["cost_usd"] is None:
        text += "tokens only (no price for the model)"
    elif priced < n:
        text += f"{usd_text(cost['cost_usd'])} for {priced:,} of {n:,} Tool Messages (the others: "
        text += "tokens only)"
    else:
        text += usd_text(cost["cost_usd"])
    estimated = int(cost["estimated_results"])
    return text + (f"; {estimated:,} estimated" if estimated else "")
