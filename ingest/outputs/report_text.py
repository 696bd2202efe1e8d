"""Plain-text rendering of ``toollens summary`` for a terminal."""

from __future__ import annotations

from typing import Any

from db.contract.vocabulary import counted


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def summary_text(data: dict[str, Any]) -> str:
    """The summary dict as a few aligned lines.

    >>> print(summary_text({"traces": 1, "messages": 2, "tool_calls": 1, "tool_results": 1,
    ...   "pair_states": {"paired": 1}, "name_mismatch": 0, "reused_id": 0,
    ...   "status": {"success": 1}, "error_types": {}, "tokens": {"encoding": "o200k_base",
    ...   "tool_result_total": 5, "p50": 5, "p95": 5, "max": 5}, "loops": {"k": 3,
    ...   "signatures": 0, "calls": 0}, "suggestions": {"with_suggestion": 0, "followed": 0,
    ...   "ignored": 0, "follow_rate": None}, "findings": {}}).splitlines()[0])
    traces       1   messages 2   tool calls 1   tool results 1
    """
    s = data["suggestions"]
    rate = s.get("follow_rate")
    rate_text = f"{rate:.0%}" if rate is not None else "n/a"
    t = data["tokens"]
    loops = data["loops"]
    return "\n".join(
        [
            f"traces       {data['traces']}   messages {data['messages']}   "
            f"tool calls {data['tool_calls']}   tool results {data['tool_results']}",
            f"pairing      {_counts(data['pair_states'])}; name mismatch "
            f"{data['name_mismatch']}, reused id {data['reused_id']}",
            f"status       {_counts(data['status'])}",
            f"error types  {_counts(data['error_types'])}",
            f"tokens       {t['encoding']}: tool results {t['tool_result_total']}, "
            f"p50 {t['p50']}, p95 {t['p95']}, max {t['max']}",
            f"loops        k={loops['k']}: {loops['signatures']} signatures, "
            f"{counted(loops['calls'], 'call')}",
            f"suggestions  {s['with_suggestion']} with a suggestion; followed {s['followed']}, "
            f"ignored {s['ignored']} (follow rate {rate_text})",
            f"findings     {_counts(data['findings'])}",
            f"corrections  {counted(data.get('corrections', 0), 'result')} corrected by reviewers",
        ]
    )
