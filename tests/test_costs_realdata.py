"""What each Tool Message costs, on real traces (``../shared/realdata``), on SQLite and PostgreSQL.

A Claude Code session (Claude Sonnet 4, usage on every model call, Anthropic prompt caching) is
measured; tau-bench's GPT-4o runs carry no usage and name no model: their figures are estimates,
in tokens only. The worked example is the session's WebSearch result at seq 12 (992 tokens),
read by the six model calls after it, whose inputs (fresh + cache write + cache read) are
20,014 (4 + 1,283 + 18,727), 21,132, 21,912, 21,977, 22,767 and 24,068: no compaction. It ends
where the first of them ends its input, so it spans [19,022, 20,014): in that call 988 of its
tokens lie in the cache write [18,727, 20,010) and 4 are fresh; in the next, 988 in the cached
prefix of 20,010 and 4 in the cache write; in the four others all 992 are cached. At $3 input,
$3.75 cache write and $0.30 cache read per million: 988 × 3.75 + 4 × 3 + 988 × 0.30 + 4 × 3.75
+ 4 × 992 × 0.30 = 5,218.8 millionths of a dollar ($0.0052188), where 992 tokens read fresh six
times would be $0.017856.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from db.queries.summary import summarize
from ingest.analysis.prices import PRICES_ENV
from ingest.importing.pipeline import import_paths

SESSION = "claude-code/2cba43de-c8d2-4a69-add8-9fae3ad93900.jsonl"
TAU_BENCH = "openai-chat/tau-bench-gpt-4o-airline.json"


@pytest.mark.realdata
def test_real_traces_costs_measured_from_claude_code_usage_and_estimated_for_tau_bench(
    engine: sa.Engine, realdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PRICES_ENV, raising=False)
    import_paths(engine, [realdata / SESSION, realdata / TAU_BENCH], workers=0)
    with engine.connect() as conn:
        websearch = conn.execute(
            sa.text(
                "SELECT r.tool, r.tokens, r.later_calls, r.reread_tokens, r.reread_cached,"
                " r.reread_measured, r.cost_nano_usd FROM tool_results r"
                " JOIN traces t ON t.id = r.trace_id"
                " WHERE t.format = 'claude_code' AND r.message_seq = 12"
            )
        ).one()
        per_format = {
            fmt: tuple(int(v) if v is not None else None for v in rest)
            for fmt, *rest in conn.execute(
                sa.text(
                    "SELECT t.format, count(*), sum(r.tokens), sum(r.later_calls),"
                    " sum(r.reread_tokens), sum(r.reread_cached), sum(r.cost_nano_usd),"
                    " count(*) FILTER (WHERE r.reread_measured)"
                    " FROM tool_results r JOIN traces t ON t.id = r.trace_id GROUP BY t.format"
                )
            )
        }
    assert (*websearch[:5], bool(websearch[5]), websearch[6]) == (
        "WebSearch",
        992,
        6,
        4960,
        4956,
        True,
        5_218_800,
    )
    assert per_format == {
        "claude_code": (7, 3302, 34, 9699, 9676, 15_352_050, 7),
        "openai_chat": (1164, 270_137, 9134, 2_058_286, None, None, 0),
    }
    assert summarize(engine)["tool_cost"] == {
        "tokens_added": 3302 + 270_137,
        "later_calls": 34 + 9134,
        "reread_tokens": 9699 + 2_058_286,
        "reread_cached": 9676,
        "cost_usd": 0.01535205,
        "priced_results": 7,
        "measured_results": 7,
        "estimated_results": 1164,
    }
