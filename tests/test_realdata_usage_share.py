"""Images, exactness and input shares on the real traces (``../shared/realdata``), on SQLite
and PostgreSQL: exact figures, read from the pages' queries after a real import.

Claude Code sessions carry usage on their assistant messages: 1,088 of their 1,091 Tool
Messages are read by a model call with usage (the other 3 end a session, interrupted). Their
images are in user messages (pasted screenshots), not in Tool Messages, so no Tool Message
gains image tokens, and the token totals are those counted before images were (961,514 in
Tool Messages). Only the Langfuse traces of OpenAI models counted with ``o200k_base`` (11) are
exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from db.queries import tokens
from ingest.importing.pipeline import import_paths


@pytest.mark.realdata
def test_real_traces_share_of_the_reading_calls_input(engine: sa.Engine, realdata: Path) -> None:
    files = sorted(
        p
        for folder in ("claude-code", "langfuse-export", "openai-chat", "openai-legacy")
        for p in (realdata / folder).rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".gz")
    )
    import_paths(engine, files, workers=0)
    with engine.connect() as conn:
        readers = dict(
            conn.execute(
                sa.text(
                    "SELECT t.format, count(r.read_input_tokens) FROM tool_results r"
                    " JOIN traces t ON t.id = r.trace_id GROUP BY t.format"
                )
            ).all()
        )
        results = dict(
            conn.execute(
                sa.text(
                    "SELECT t.format, count(*) FROM tool_results r"
                    " JOIN traces t ON t.id = r.trace_id GROUP BY t.format"
                )
            ).all()
        )
        tool_tokens = conn.execute(sa.text("SELECT sum(tool_result_tokens) FROM traces")).scalar()
    assert readers == {"claude_code": 1088, "langfuse": 10, "openai_chat": 0, "toolbench": 0}
    assert results["claude_code"] == 1091
    assert int(tool_tokens) == 961_514
    assert tokens.token_count_kinds(engine) == {"exact": 11, "estimate": 234}
    assert tokens.image_totals(engine) == {"results": 0, "image_tokens": 0}
    assert list(tokens.input_share_histogram(engine)["results"]) == [824, 79, 112, 47, 22, 14, 0, 0]
