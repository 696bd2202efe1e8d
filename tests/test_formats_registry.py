"""Format registry: one declared format per module in ``ingest/formats``; sniffing by the head."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest import formats
from ingest.formats._sniffing import Sniffing
from ingest.formats.base import TraceFormat
from ingest.model import Rejected, Trace
from ingest.records import Record

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


def test_sniffing_tries_every_container_before_the_formats_it_embeds() -> None:
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
# What a format declares, and what sniffing derives from it


def no_traces(records: object, source_file: str) -> Iterator[Trace | Rejected]:
    return iter(())


def declared(name: str, marker: bytes, embeds: frozenset[str] = frozenset()) -> TraceFormat:
    return TraceFormat(
        name=name, description=f"{name} files", markers=(marker,), parse=no_traces, embeds=embeds
    )


COHERE = declared("cohere", rb'"tool_plan"\s*:')
COHERE_HEAD = b'{"messages": [{"role": "chatbot", "tool_plan": "look it up"}]}'


def test_a_new_format_is_sniffed_from_its_own_markers_alone() -> None:
    sniffing = Sniffing.of([*formats.REGISTRY, COHERE])
    assert sniffing.claimants(COHERE_HEAD) == [COHERE]
    assert [f.name for f in sniffing.order][-1] == "cohere"  # no format embeds it


def test_a_container_takes_a_head_showing_an_embedded_format_and_goes_first() -> None:
    export = declared("export", rb'"spans"\s*:', frozenset({"cohere"}))
    sniffing = Sniffing.of([COHERE, export])
    assert [f.name for f in sniffing.order] == ["export", "cohere"]
    assert sniffing.claimants(b'{"spans": [' + COHERE_HEAD + b"]}") == [export]
    assert sniffing.claimants(COHERE_HEAD) == [COHERE]


def test_formats_that_do_not_embed_each_other_leave_a_head_showing_both_to_nobody() -> None:
    other = declared("other", rb'"other"\s*:')
    sniffing = Sniffing.of([COHERE, other])
    assert sniffing.claimants(b'{"other": 1, "x": ' + COHERE_HEAD + b"}") == []


def test_a_format_embedded_through_another_never_claims_the_outer_head() -> None:
    middle = declared("middle", rb'"middle"\s*:', frozenset({"cohere"}))
    outer = declared("outer", rb'"outer"\s*:', frozenset({"middle"}))
    sniffing = Sniffing.of([COHERE, middle, outer])
    assert [f.name for f in sniffing.order] == ["outer", "middle", "cohere"]
    assert sniffing.claimants(b'{"outer": 1, "x": ' + COHERE_HEAD + b"}") == [outer]


@pytest.mark.parametrize(
    ("registered", "message"),
    [
        ([COHERE, COHERE], "formats registered twice: cohere"),
        (
            [declared("outer", rb'"o"', frozenset({"cohere", "otlp"}))],
            "format outer embeds unknown formats: cohere, otlp",
        ),
        (
            [declared("a", rb'"a"', frozenset({"b"})), declared("b", rb'"b"', frozenset({"a"}))],
            "formats embed each other in a cycle among: a, b",
        ),
    ],
    ids=["duplicate", "unknown embeds", "cycle"],
)
def test_a_registry_that_cannot_be_sniffed_is_refused(
    registered: list[TraceFormat], message: str
) -> None:
    with pytest.raises(ValueError) as excinfo:
        Sniffing.of(registered)
    assert str(excinfo.value) == message


def never_called(record: Record, source_file: str) -> Trace | Rejected:
    raise AssertionError("never called")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"parse_one": never_called}, "format x: split and parse_one come together"),
        ({"markers": ()}, "format x: no markers, so it could never be sniffed"),
        ({"description": "two\nlines"}, "format x: the description must be one non-empty line"),
        ({"name": "X-1"}, "format name 'X-1' is not a lowercase identifier"),
        ({"embeds": frozenset({"x"})}, "format x cannot embed itself"),
    ],
    ids=["parse_one without split", "no markers", "two lines", "bad name", "embeds itself"],
)
def test_a_format_declaration_is_checked_when_it_is_made(
    fields: dict[str, object], message: str
) -> None:
    base: dict[str, object] = {"name": "x", "description": "x", "markers": (b"x",)}
    with pytest.raises(ValueError) as excinfo:
        TraceFormat(parse=no_traces, **{**base, **fields})  # type: ignore[arg-type]
    assert str(excinfo.value) == message


# ---------------------------------------------------------------------------------------------
# Sniffing the registered formats


SNIFFED: list[tuple[str, bytes, str | None]] = [
    ("empty head", b"", None),
    ("unknown JSON", b'{"hello": "world"}', None),
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


#: Heads no format claims that sniffing still decides: (case, head, format read with).
DECIDED: list[tuple[str, bytes, str]] = [
    (
        "plain chat messages go to the generic format",
        b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]',
        "openai_chat",
    ),
    (
        "LangChain-style roles without markers go to the generic format",
        b'{"messages": [{"role": "human", "content": "hi"}]}',
        "openai_chat",
    ),
    (
        "Anthropic and Responses markers together: the first in sniffing order",
        b'[{"type": "tool_use", "id": "t"}, {"type": "function_call", "call_id": "c"}]',
        "openai_responses",
    ),
]


@pytest.mark.parametrize(
    ("head", "expected"), [(h, e) for _, h, e in DECIDED], ids=[c for c, _, _ in DECIDED]
)
def test_sniffing_decides_heads_no_format_claims(head: bytes, expected: str) -> None:
    assert formats.claimants(head) == []
    fmt = formats.sniff_format(head)
    assert fmt is not None and fmt.name == expected


@pytest.mark.parametrize(
    ("head", "expected"), [(h, e) for _, h, e in SNIFFED], ids=[c for c, _, _ in SNIFFED]
)
def test_sniffing_claims_only_heads_that_one_format_explains(
    head: bytes, expected: str | None
) -> None:
    fmt = formats.sniff_format(head)
    assert (fmt.name if fmt else None) == expected
    assert [f.name for f in formats.claimants(head)] == ([expected] if expected else [])
