"""Images, exact-or-estimate counts and the share of the reading call's input, imported through
the real pipeline and read back by the Tokens and Trace page queries, on SQLite and PostgreSQL.

Two traces, figures worked out by hand:

* ``run-img`` (Anthropic format, ``claude-sonnet-4-5``: counts are estimates): the result of
  ``snap`` is "Chart rendered." (3 tokens) and a 1024 x 768 PNG (Claude's rule:
  ceil(1024 * 768 / 750) = 1049), 1052 tokens, read by the call at seq 3 whose usage says
  40 + 1960 cached = 2000 input tokens: 526 per mille, bin 500–1000. A second result, "fine"
  (1 token), is read by no call with usage.
* ``chat-img`` (OpenAI chat, ``gpt-4o``: exact): the result is "ok" (1 token) and a 2000 x 1000
  JPEG at detail high (1536 x 768 after scaling: 6 tiles, 85 + 6 * 170 = 1105), 1106 tokens,
  read by a call with ``prompt_tokens`` 50,000: 22 per mille, bin 20–50.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import sqlalchemy as sa
from image_samples import image_b64

from db.queries import tokens, traces
from db.queries.filters import Filters
from db.rollups import upkeep as rollups
from ingest.importing.pipeline import import_paths


def _write(tmp_path: Path) -> list[Path]:
    png = image_b64("PNG", 1024, 768)
    jpeg = image_b64("JPEG", 2000, 1000)
    claude = {
        "id": "run-img",
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": "Show the chart"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "snap", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "Chart rendered."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": png}}]}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t2", "name": "check", "input": {}}],
             "usage": {"input_tokens": 40, "cache_read_input_tokens": 1960, "output_tokens": 9}},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": "fine"}]},
            {"role": "assistant", "content": "Done."},
        ],
    }  # fmt: skip
    chat = {
        "id": "chat-img",
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "Look"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "snap", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [
                {"type": "text", "text": "ok"},
                {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{jpeg}",
                                                   "detail": "high"}}]},
            {"role": "assistant", "content": "Seen.",
             "usage": {"prompt_tokens": 50_000, "completion_tokens": 3}},
        ],
    }  # fmt: skip
    paths = [tmp_path / "claude.json", tmp_path / "chat.json"]
    paths[0].write_bytes(orjson.dumps(claude))
    paths[1].write_bytes(orjson.dumps(chat))
    return paths


def _results(engine: sa.Engine, display_id: str) -> list[tuple[object, ...]]:
    trace = traces.find_trace(engine, display_id)
    assert trace is not None
    df = traces.trace_window(engine, int(trace["id"])).results
    return [
        (
            int(r.message_seq),
            int(r.tokens),
            int(r.image_tokens),
            r.images,
            None if r.read_by_seq is None or r.read_by_seq != r.read_by_seq else int(r.read_by_seq),
            None
            if r.read_input_tokens is None or r.read_input_tokens != r.read_input_tokens
            else int(r.read_input_tokens),
        )
        for r in df.itertuples()
    ]


def test_images_usage_and_exactness_are_stored_and_read_back(
    engine: sa.Engine, tmp_path: Path
) -> None:
    summary = import_paths(engine, _write(tmp_path), workers=0)
    assert summary.traces == 2
    assert _results(engine, "run-img") == [
        (2, 1052, 1049, [{"media": "png", "width": 1024, "height": 768, "rule": "anthropic",
                          "tokens": 1049, "detail": None}], 3, 2000),
        (4, 1, 0, None, None, None),
    ]  # fmt: skip
    assert _results(engine, "chat-img") == [
        (2, 1106, 1105, [{"media": "jpeg", "width": 2000, "height": 1000, "rule": "openai",
                          "tokens": 1105, "detail": "high"}], 3, 50_000),
    ]  # fmt: skip
    with engine.connect() as conn:
        stored = dict(conn.execute(sa.text("SELECT display_id, token_counts FROM traces")).all())
        # The base64 bytes are not text: the Tool Messages' own counts are their text's.
        message_tokens = sorted(
            conn.execute(sa.text("SELECT tokens FROM messages WHERE role = 'tool'")).scalars()
        )
    assert stored == {"run-img": "estimate", "chat-img": "exact"}
    assert message_tokens == [1, 1, 3]


def test_the_tokens_page_counts_exactness_images_and_input_shares(
    engine: sa.Engine, tmp_path: Path
) -> None:
    import_paths(engine, _write(tmp_path), workers=0)
    assert tokens.token_count_kinds(engine) == {"exact": 1, "estimate": 1}
    assert tokens.image_totals(engine) == {"results": 2, "image_tokens": 1049 + 1105}
    shares = tokens.input_share_histogram(engine)
    assert list(shares["results"]) == [0, 0, 1, 0, 0, 0, 1, 0]
    assert list(shares["share_from"])[2:4] == [0.02, 0.05]
    assert pd.isna(shares["share_to"].iloc[-1]) and shares["share_from"].iloc[-1] == 1.0
    only_claude = Filters(model="claude-sonnet-4-5")
    assert tokens.token_count_kinds(engine, only_claude) == {"exact": 0, "estimate": 1}
    assert tokens.image_totals(engine, only_claude) == {"results": 1, "image_tokens": 1049}
    assert list(tokens.input_share_histogram(engine, only_claude)["results"]) == [
        0, 0, 0, 0, 0, 0, 1, 0,
    ]  # fmt: skip


def test_reanalyze_derives_the_facts_of_traces_stored_before_them(
    engine: sa.Engine, tmp_path: Path
) -> None:
    from ingest.importing.reanalyze import reanalyze

    import_paths(engine, _write(tmp_path), workers=0)
    before = {d: _results(engine, d) for d in ("run-img", "chat-img")}
    with engine.begin() as conn:  # what migration 0013 leaves on a stored trace
        conn.execute(sa.text("UPDATE traces SET token_counts = 'estimate'"))
        conn.execute(
            sa.text(
                "UPDATE tool_results SET image_tokens = 0, images = NULL, tokens = 1,"
                " read_by_seq = NULL, read_input_tokens = NULL"
            )
        )
    rollups.rebuild(engine)  # as migration 0017 counts such a store
    assert reanalyze(engine) == 2
    assert {d: _results(engine, d) for d in ("run-img", "chat-img")} == before
    assert tokens.token_count_kinds(engine) == {"exact": 1, "estimate": 1}


def test_counts_taken_with_another_encoding_than_the_models_are_estimates(
    engine: sa.Engine, tmp_path: Path
) -> None:
    import_paths(engine, _write(tmp_path), workers=0, encoding="cl100k_base")
    assert tokens.token_count_kinds(engine) == {"exact": 0, "estimate": 2}
