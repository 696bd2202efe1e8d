"""Images in Tool Messages: parts found in every dialect, sizes read from headers, each
provider's documented token rule, and base64 kept out of text token counts."""

from __future__ import annotations

import pytest
from image_samples import image_b64

from ingest.analysis.images import (
    HEAD_B64_CHARS,
    ImagePart,
    anthropic_tokens,
    count_image,
    countable_text,
    find_images,
    image_rule,
    image_size,
    message_images,
    openai_tokens,
)
from ingest.analysis.trace import analyze_trace
from ingest.model import Message, ToolCall, ToolResult, Trace


@pytest.mark.parametrize(
    ("kind", "width", "height"),
    [("PNG", 1024, 768), ("JPEG", 2000, 1000), ("GIF", 300, 200), ("WEBP", 64, 48)],
)
def test_the_size_is_read_from_the_header(kind: str, width: int, height: int) -> None:
    assert image_size(image_b64(kind, width, height)) == (kind.lower(), width, height)


def test_a_jpeg_whose_size_lies_past_the_decoded_head_is_decoded_whole() -> None:
    data = image_b64("JPEG", 40, 30, comment=b"x" * 60_000)
    assert len(data) > HEAD_B64_CHARS
    assert image_size(data) == ("jpeg", 40, 30)


@pytest.mark.parametrize("data", ["", "not base64 at all!", "aGVsbG8gd29ybGQ="])
def test_bytes_that_are_no_image_have_no_size(data: str) -> None:
    assert image_size(data) is None


def test_anthropic_rule_matches_the_documented_examples_and_scales_large_images() -> None:
    # Claude vision docs: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590 tokens.
    assert [anthropic_tokens(s, s) for s in (200, 1000, 1092)] == [54, 1334, 1590]
    # Long edge over 1568 px: scaled to 1568 x 784 first, then capped near 1,600 tokens.
    assert anthropic_tokens(3136, 1568) == 1600
    assert anthropic_tokens(1024, 768) == 1049


def test_openai_tile_rule_matches_the_documented_examples() -> None:
    # OpenAI vision guide: 1024x1024 high 765, 2048x4096 high 1105, any low 85.
    assert openai_tokens(1024, 1024, "high") == 765
    assert openai_tokens(2048, 4096, "high") == 1105
    assert openai_tokens(4096, 8192, "low") == 85
    assert openai_tokens(2000, 1000, "auto") == 85 + 170 * 6  # 1536 x 768: 3 x 2 tiles
    assert openai_tokens(512, 512, None) == 255  # small images are not scaled up
    assert openai_tokens(1024, 1024, "high", "o3") == 75 + 150 * 4
    assert openai_tokens(1024, 1024, "low", "gpt-4o-mini") == 2833


def test_every_dialect_of_image_part_is_found_and_the_envelope_copy_is_not() -> None:
    png = image_b64("PNG", 8, 4)
    raw = {
        "message": {
            "content": [
                {"type": "tool_result", "content": [
                    {"type": "text", "text": "shot"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": png}},
                    {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                ]},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}",
                                                   "detail": "low"}},
                {"type": "image_url", "image_url": "https://example.com/a.jpg"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{png}"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "image", "base64": png, "mime_type": "image/png"},
            ]
        },
        "toolUseResult": {"content": [{"type": "image", "data": png, "mimeType": "image/png"}]},
    }  # fmt: skip
    assert find_images(raw) == [
        ImagePart("anthropic", "image/png", png),
        ImagePart("anthropic", None, None),
        ImagePart("openai", "image/png", png, "low"),
        ImagePart("openai", None, None),
        ImagePart("openai", "image/png", png),
        ImagePart("mcp", "image/png", png),
        ImagePart("langchain", "image/png", png),
    ]


def test_the_rule_follows_the_model_then_the_format_then_the_part() -> None:
    assert image_rule("anthropic/claude-3-5-sonnet", "otlp", "openai") == "anthropic"
    assert image_rule("gpt-4.1", "claude_code", "anthropic") == "openai"
    assert image_rule("o3-2025-04-16", "langfuse", "mcp") == "openai"
    assert image_rule(None, "claude_code", "openai") == "anthropic"
    assert image_rule("gemini-2.5-pro", "langfuse", "openai") == "openai"
    assert image_rule("llama-3", "langchain", "mcp") == "anthropic"


def test_an_unknown_size_costs_the_rules_ceiling() -> None:
    url = ImagePart("openai", None, None)
    assert count_image(url, "anthropic", None).tokens == 1600
    assert count_image(url, "openai", "gpt-4o").tokens == 85 + 170 * 8
    low = ImagePart("openai", "image/png", None, "low")
    fact = count_image(low, "openai", "gpt-4o")
    assert (fact.media, fact.width, fact.height, fact.tokens) == ("png", None, None, 85)


def test_images_written_inside_json_text_are_found_and_not_counted_as_text() -> None:
    png = image_b64("PNG", 100, 100)
    text = '{"content": [{"type": "image", "data": "' + png + '", "mimeType": "image/png"}]}'
    facts = message_images(None, text, "claude-sonnet-4-5", "langfuse")
    assert [(f.media, f.width, f.height, f.rule, f.tokens) for f in facts] == [
        ("png", 100, 100, "anthropic", 14)
    ]
    assert (
        countable_text(text)
        == '{"content": [{"type": "image", "data": "", "mimeType": "image/png"}]}'
    )
    url = f"see data:image/png;base64,{png} here"
    assert countable_text(url) == "see data:image/png;base64, here"
    long_text = "image " + "A" * 400
    assert countable_text(long_text) is long_text


def _claude_trace(png: str) -> Trace:
    block = {"type": "tool_result", "tool_use_id": "t1", "content": [
        {"type": "text", "text": "Chart rendered."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
    ]}  # fmt: skip
    return Trace(
        format="anthropic",
        source_file="x.json",
        model="claude-sonnet-4-5",
        messages=[
            Message(seq=0, role="user", content="Show the chart"),
            Message(
                seq=1,
                role="assistant",
                tool_calls=[
                    ToolCall(call_index=0, tool_call_id="t1", name="screenshot", arguments={})
                ],
            ),
            Message(
                seq=2,
                role="tool",
                content="Chart rendered.",
                raw={"content": [block]},
                tool_result=ToolResult(tool_call_id="t1"),
            ),
            Message(seq=3, role="user", content="and?"),
            Message(seq=4, role="assistant", content="Thinking", usage={"output_tokens": 3}),
            Message(
                seq=5,
                role="assistant",
                content="Done.",
                usage={"input_tokens": 40, "cache_read_input_tokens": 1960},
            ),
            Message(seq=6, role="assistant", content="More.", usage={"input_tokens": 9}),
        ],
    )


def test_analysis_adds_image_tokens_and_finds_the_call_that_read_the_result() -> None:
    trace = _claude_trace(image_b64("PNG", 1024, 768))
    facts = analyze_trace(trace, [4, 0, 3, 2, 1, 2, 2])
    result = facts.results[0]
    assert (result.tokens, result.image_tokens) == (3 + 1049, 1049)
    assert result.images == [
        {"media": "png", "width": 1024, "height": 768, "rule": "anthropic", "tokens": 1049,
         "detail": None}
    ]  # fmt: skip
    # The user's message is read by the same call; the turn's first message has no input
    # count, so the next message of that turn gives it; seq 6 starts no new turn search.
    assert (result.read_by_seq, result.read_input_tokens) == (5, 2000)
    assert (facts.total_tokens, facts.tool_result_tokens) == (14 + 1049, 1052)
    assert facts.token_counts == "estimate"


def test_a_result_read_by_no_call_with_usage_has_no_reader() -> None:
    trace = _claude_trace(image_b64("PNG", 10, 10))
    trace.messages[4].usage = None  # the turn that read it reports no usage ...
    trace.messages[5] = Message(seq=5, role="user", content="next question")
    # ... and the later call with usage read the user's next question too: not counted.
    result = analyze_trace(trace, [1] * len(trace.messages)).results[0]
    assert (result.read_by_seq, result.read_input_tokens) == (None, None)


def test_a_sub_agent_call_does_not_read_the_main_conversations_result() -> None:
    trace = _claude_trace(image_b64("PNG", 10, 10))
    trace.messages[4].branch = "side"
    trace.messages[5].branch = "side"
    result = analyze_trace(trace, [1] * len(trace.messages)).results[0]
    assert (result.read_by_seq, result.read_input_tokens) == (6, 9)


def test_token_counts_are_exact_only_for_the_models_own_encoding() -> None:
    trace = Trace(format="openai_chat", source_file="x", model="gpt-4o-2024-08-06")
    assert analyze_trace(trace, []).token_counts == "exact"
    assert analyze_trace(trace, [], encoding="cl100k_base").token_counts == "estimate"
    trace.model = None
    assert analyze_trace(trace, []).token_counts == "estimate"
