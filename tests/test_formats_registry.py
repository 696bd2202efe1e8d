"""Format registry: one module per format in ``ingest/formats``, and sniffing by the head."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import formats

FORMATS_DIR = Path(formats.__file__).parent

# ---------------------------------------------------------------------------------------------
# The registry and sniffing


def test_the_registry_lists_every_format_module_in_the_folder() -> None:
    in_folder = sorted(p.stem for p in FORMATS_DIR.glob("*.py") if not p.stem.startswith("_"))
    registered = sorted(module.__name__.rsplit(".", 1)[1] for module in formats.FORMATS)
    assert registered == in_folder
    assert [m.__name__.rsplit(".", 1)[1] for m in formats.FORMATS] == formats.format_names()


def test_every_format_exposes_a_name_a_one_line_description_sniff_and_parse() -> None:
    for module in formats.FORMATS:
        assert isinstance(module.NAME, str) and module.NAME
        assert isinstance(module.DESCRIPTION, str) and module.DESCRIPTION
        assert "\n" not in module.DESCRIPTION
        assert callable(module.sniff) and callable(module.parse)


def test_format_names_are_listed_most_specific_first() -> None:
    assert formats.format_names() == [
        "otlp",
        "langfuse",
        "claude_code",
        "toolbench",
        "openai_responses",
        "anthropic",
        "langchain",
        "openai_chat",
    ]


def test_get_format_returns_the_module_by_name() -> None:
    assert formats.get_format("toolbench") is formats.toolbench


def test_get_format_names_the_valid_formats_for_an_unknown_name() -> None:
    with pytest.raises(KeyError) as excinfo:
        formats.get_format("otel")
    assert excinfo.value.args[0] == (
        "unknown format 'otel' (valid formats: otlp, langfuse, claude_code, toolbench, "
        "openai_responses, anthropic, langchain, openai_chat)"
    )


SNIFFED: list[tuple[str, bytes, str | None]] = [
    ("empty head", b"", None),
    ("unknown JSON", b'{"hello": "world"}', None),
    (
        "plain chat messages are valid in several formats",
        b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]',
        None,
    ),
    (
        "Anthropic and Responses markers together",
        b'[{"type": "tool_use", "id": "t"}, {"type": "function_call", "call_id": "c"}]',
        None,
    ),
    (
        "a Langfuse export embeds chat messages and is claimed by langfuse",
        b'{"trace": {}, "observations": [{"input": [{"role": "tool", "tool_call_id": 1}]}]}',
        "langfuse",
    ),
    (
        "a Langfuse export whose trace input pushes the observations out of the head",
        b'{"trace": {"id": "t", "projectId": "p", "input": "' + b"x" * 70000,
        "langfuse",
    ),
    (
        "an OTLP export is claimed by otlp alone (not by langfuse)",
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"parentObservationId": null, '
        b'"attributes": [{"key": "gen_ai.input.messages", "value": {"stringValue": '
        b'"[{\\"role\\": \\"tool\\"}]"}}]}]}]}]}',
        "otlp",
    ),
    ("system role", b'{"messages": [{"role": "system", "content": "Be brief."}]}', "openai_chat"),
    (
        "a marker quoted inside a string does not count",
        b'[{"role": "tool", "tool_call_id": "c", "content": "{\\"tool_use_id\\": 1}"}]',
        "openai_chat",
    ),
    ("content null", b'{"messages":[{"role":"assistant","content":null}]}', "openai_chat"),
    (
        "LangChain messages carrying Anthropic blocks",
        b'[{"type": "ai", "content": [{"type": "tool_use", "id": "t"}], "tool_calls": []}]',
        "langchain",
    ),
    ("dumpd", b'{"lc": 1, "type": "constructor", "id": ["x"], "kwargs": {}}', "langchain"),
    ("Responses items", b'[{"type": "function_call_output", "call_id": "c"}]', "openai_responses"),
    (
        "Anthropic tools",
        b'{"tools": [{"name": "f", "input_schema": {}}], "messages": []}',
        "anthropic",
    ),
    (
        "a Claude Code head cut mid-line",
        b'{"parentUuid":null,"sessionId":"s","type":"assistant","message":{"content":[{"type":"tool_u',
        "claude_code",
    ),
    (
        "Claude Code summaries only",
        b'{"type":"summary","summary":"x","leafUuid":"l"}',
        "claude_code",
    ),
    (
        "a ToolBench tree filling the head",
        b'{"win": true, "tree": {"observation_code": null',
        "toolbench",
    ),
]


@pytest.mark.parametrize(
    ("head", "expected"), [(h, e) for _, h, e in SNIFFED], ids=[c for c, _, _ in SNIFFED]
)
def test_sniffing_claims_only_heads_that_one_format_explains(
    head: bytes, expected: str | None
) -> None:
    module = formats.sniff_format(head)
    assert (module.NAME if module else None) == expected
    assert [m.NAME for m in formats.FORMATS if m.sniff(head)] == ([expected] if expected else [])
