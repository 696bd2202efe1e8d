"""Format registry: one declared format per module in ``ingest/formats``; detection by the
structure of a file's first records, and the precedence where two formats fit."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ingest import formats
from ingest.formats._shapes import SIGN, Fit, Misfit, chat_message, message_list
from ingest.formats._sniffing import Sniffing
from ingest.formats.base import TraceFormat
from ingest.input.records import Record
from ingest.model import Rejected, Trace

FORMATS_DIR = Path(formats.__file__).parent
GOLDEN = Path(__file__).parent / "golden"
#: Modules of ``ingest/formats`` that hold no format: the interface every format declares.
NOT_FORMATS = {"base"}

# ---------------------------------------------------------------------------------------------
# The registry


def format_modules() -> list[str]:
    return sorted(
        p.stem
        for p in FORMATS_DIR.glob("*.py")
        if not p.stem.startswith("_") and p.stem not in NOT_FORMATS
    )


def test_the_registry_holds_the_format_of_every_module_in_the_folder_once() -> None:
    declared = [importlib.import_module(f"ingest.formats.{m}").FORMAT for m in format_modules()]
    assert all(isinstance(fmt, TraceFormat) for fmt in declared)
    assert [fmt.name for fmt in declared] == format_modules()  # a module is named after its format
    assert sorted(formats.REGISTRY, key=lambda f: f.name) == declared
    assert sorted(formats.FORMATS, key=lambda f: f.name) == declared
    assert formats.format_names() == [fmt.name for fmt in formats.FORMATS]


def test_every_registered_format_has_a_golden_folder_with_a_case() -> None:
    for name in formats.format_names():
        cases = [c for c in (GOLDEN / name).glob("*/input.json*")]
        assert cases, f"tests/golden/{name}/<case>/input.json(l) is missing"


def test_detection_tries_every_container_before_the_formats_it_embeds() -> None:
    position = {name: i for i, name in enumerate(formats.format_names())}
    pairs = [(fmt.name, inner) for fmt in formats.FORMATS for inner in fmt.embeds]
    assert ("claude_code", "anthropic") in pairs and ("langfuse", "langchain") in pairs
    assert all(position[outer] < position[inner] for outer, inner in pairs)


def test_get_format_returns_the_declared_format_by_name() -> None:
    assert formats.get_format("toolbench") is formats.toolbench.FORMAT


def test_get_format_names_the_valid_formats_for_an_unknown_name() -> None:
    with pytest.raises(KeyError) as excinfo:
        formats.get_format("otel")
    valid = ", ".join(formats.format_names())
    assert excinfo.value.args[0] == f"unknown format 'otel' (valid formats: {valid})"


# ---------------------------------------------------------------------------------------------
# What a format declares, and what detection derives from it


def no_traces(records: object, source_file: str) -> Iterator[Trace | Rejected]:
    return iter(())


def cohere_shape(record: Any) -> Fit:
    """Cohere chat: messages whose assistant turns carry a ``tool_plan``."""
    fit = message_list(record, "messages", chat_message)
    if isinstance(fit, Misfit):
        return fit
    plans = [m for m in record["messages"] if isinstance(m, dict) and "tool_plan" in m]
    return SIGN if plans else fit


def export_shape(record: Any) -> Fit:
    return (
        SIGN
        if isinstance(record, dict) and isinstance(record.get("spans"), list)
        else (Misfit('no "spans" array'))
    )


def declared(name: str, shape: Any, embeds: frozenset[str] = frozenset()) -> TraceFormat:
    return TraceFormat(
        name=name, description=f"{name} files", shape=shape, parse=no_traces, embeds=embeds
    )


COHERE = declared("cohere", cohere_shape)
COHERE_HEAD = b'{"messages": [{"role": "chatbot", "tool_plan": "look it up"}]}'


def test_a_new_format_is_detected_from_its_own_shape_ahead_of_the_generic_format() -> None:
    sniffing = Sniffing.of([*formats.REGISTRY, COHERE], "openai_chat")
    assert sniffing.decide(COHERE_HEAD) is COHERE
    assert [f.name for f in sniffing.fitting(COHERE_HEAD)] == ["cohere"]
    # Without its sign the record is a plain chat message list: the generic format's.
    assert sniffing.decide(b'{"messages": [{"role": "chatbot"}]}') is formats.get_format(
        "openai_chat"
    )


def test_where_two_formats_show_their_sign_the_one_listed_first_reads_the_file() -> None:
    export = declared("export", export_shape, frozenset({"cohere"}))
    both = b'{"spans": [], "messages": [{"role": "chatbot", "tool_plan": "p"}]}'
    sniffing = Sniffing.of([export, COHERE])
    assert [f.name for f in sniffing.fitting(both)] == ["export", "cohere"]
    assert sniffing.decide(both) is export
    assert sniffing.decide(COHERE_HEAD) is COHERE


def test_a_key_of_another_format_inside_a_nested_object_does_not_count() -> None:
    export = declared("export", export_shape, frozenset({"cohere"}))
    nested = b'{"metadata": {"spans": []}, "messages": [{"role": "chatbot", "tool_plan": "p"}]}'
    assert Sniffing.of([export, COHERE]).decide(nested) is COHERE


@pytest.mark.parametrize(
    ("registered", "generic", "message"),
    [
        ([COHERE, COHERE], None, "formats registered twice: cohere"),
        (
            [declared("outer", export_shape, frozenset({"cohere", "otlp"}))],
            None,
            "format outer embeds unknown formats: cohere, otlp",
        ),
        (
            [COHERE, declared("export", export_shape, frozenset({"cohere"}))],
            None,
            "format export embeds cohere, listed before it: a container must come first",
        ),
        ([COHERE], "openai_chat", "the generic format openai_chat is not registered"),
    ],
    ids=["duplicate", "unknown embeds", "container after what it embeds", "unknown generic"],
)
def test_a_registry_that_cannot_be_detected_from_is_refused(
    registered: list[TraceFormat], generic: str | None, message: str
) -> None:
    with pytest.raises(ValueError) as excinfo:
        Sniffing.of(registered, generic)
    assert str(excinfo.value) == message


def never_called(record: Record, source_file: str) -> Trace | Rejected:
    raise AssertionError("never called")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"parse_one": never_called}, "format x: split and parse_one come together"),
        ({"description": "two\nlines"}, "format x: the description must be one non-empty line"),
        ({"name": "X-1"}, "format name 'X-1' is not a lowercase identifier"),
        ({"embeds": frozenset({"x"})}, "format x cannot embed itself"),
    ],
    ids=["parse_one without split", "two lines", "bad name", "embeds itself"],
)
def test_a_format_declaration_is_checked_when_it_is_made(
    fields: dict[str, object], message: str
) -> None:
    base: dict[str, object] = {"name": "x", "description": "x", "shape": export_shape}
    with pytest.raises(ValueError) as excinfo:
        TraceFormat(parse=no_traces, **{**base, **fields})  # type: ignore[arg-type]
    assert str(excinfo.value) == message


# ---------------------------------------------------------------------------------------------
# Detecting the registered formats


SNIFFED: list[tuple[str, bytes, str | None]] = [
    ("empty head", b"", None),
    ("unknown JSON", b'{"hello": "world"}', None),
    (
        "a Langfuse export embeds chat messages and is taken by langfuse",
        b'{"trace": {}, "observations": [{"input": [{"role": "tool", "tool_call_id": 1}]}]}',
        "langfuse",
    ),
    (
        "a Langfuse export whose trace input pushes the observations out of the head",
        b'{"trace": {"id": "t", "projectId": "p", "input": "' + b"x" * 70000,
        "langfuse",
    ),
    (
        "an OTLP export is taken by otlp alone (not by langfuse)",
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"parentObservationId": null, '
        b'"attributes": [{"key": "gen_ai.input.messages", "value": {"stringValue": '
        b'"[{\\"role\\": \\"tool\\"}]"}}]}]}]}]}',
        "otlp",
    ),
    (
        "a key quoted inside a string does not count",
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
        "an Anthropic system prompt",
        b'{"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}',
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
    (
        "a bare array of tau2 simulations",
        b'[{"id": "s1", "task_id": "3", "trial": 0, "termination_reason": "user_stop", '
        b'"messages": [{"role": "assistant", "content": "hi"}]}]',
        "tau2",
    ),
    (
        "tau2 simulations beside summary keys",
        b'{"summary": {"avg_reward": 0.5}, "simulations": [{"id": "s1", "messages": []}]}',
        "tau2",
    ),
    (
        "a chat conversation whose metadata holds tau2 fields",
        b'{"id": "c1", "metadata": {"task_id": "3", "termination_reason": "user_stop", '
        b'"simulations": null}, "messages": [{"role": "tool", "tool_call_id": "c", '
        b'"content": "ok"}]}',
        "openai_chat",
    ),
]


#: Heads no format shows its sign in that detection still decides: (case, head, read with).
DECIDED: list[tuple[str, bytes, str]] = [
    (
        "plain chat messages go to the generic format",
        b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]',
        "openai_chat",
    ),
    (
        "LangChain-style roles without LangChain's message shape go to the generic format",
        b'{"messages": [{"role": "human", "content": "hi"}]}',
        "openai_chat",
    ),
    (
        "a system message",
        b'{"messages": [{"role": "system", "content": "Be brief."}]}',
        "openai_chat",
    ),
]


@pytest.mark.parametrize(
    ("head", "expected"), [(h, e) for _, h, e in DECIDED], ids=[c for c, _, _ in DECIDED]
)
def test_plain_messages_no_format_shows_its_sign_in_go_to_the_generic_format(
    head: bytes, expected: str
) -> None:
    assert formats.fitting(head) == []
    fmt = formats.sniff_format(head)
    assert fmt is not None and fmt.name == expected


@pytest.mark.parametrize(
    ("head", "expected"), [(h, e) for _, h, e in SNIFFED], ids=[c for c, _, _ in SNIFFED]
)
def test_detection_reads_each_head_with_the_first_format_showing_its_sign(
    head: bytes, expected: str | None
) -> None:
    fmt = formats.sniff_format(head)
    assert (fmt.name if fmt else None) == expected
    assert [f.name for f in formats.fitting(head)][:1] == ([expected] if expected else [])


def test_the_precedence_is_the_registry_order_with_containers_first() -> None:
    assert formats.format_names() == [
        "otlp",
        "langfuse",
        "langsmith",
        "tau2",
        "claude_code",
        "toolbench",
        "langchain",
        "gemini",
        "request_log",
        "openai_responses",
        "anthropic",
        "openai_chat",
    ]
    assert formats.GENERIC == "openai_chat"
