"""Format evidence in the first bytes of a file, and which format may claim a head.

Markers are JSON *keys* (or a key with a telling value) matched on the raw bytes: inside a JSON
string every quote is escaped, so a marker never matches text that merely mentions it (a tool
result quoting ``"tool_use"`` reads ``\\"tool_use\\"``). This works on a head cut anywhere,
where a JSON parser would fail.

Formats nest: LangChain messages carry OpenAI ``tool_calls`` and Anthropic blocks, Claude Code
lines carry Anthropic messages, ToolBench files carry OpenAI legacy messages. A format claims a
head when its own markers are present and no marker of a format that *contains* it (or that it
cannot be told apart from) is; everything else is ambiguous or unknown and nobody claims it.
"""

from __future__ import annotations

import re

#: Exports of tracing tools embed messages of every format inside spans and observations;
#: parsing them as the embedded format would only reject them, so a head showing one is claimed
#: by no message format. OTLP exports are claimed by ``otlp`` alone, Langfuse exports by
#: ``langfuse`` (``projectId`` comes first in an export, before a large trace input can push
#: ``observations`` out of the head).
SPAN_EXPORT = "otlp"

_MARKERS: dict[str, tuple[bytes, ...]] = {
    SPAN_EXPORT: (rb'"resourceSpans"\s*:', rb'"scopeSpans"\s*:'),
    "langfuse": (rb'"observations"\s*:', rb'"parentObservationId"\s*:', rb'"projectId"\s*:'),
    "claude_code": (rb'"parentUuid"\s*:', rb'"leafUuid"\s*:'),
    "toolbench": (
        rb'"answer_generation"\s*:',
        rb'"train_messages"\s*:',
        rb'"observation_code"\s*:',
    ),
    "langchain": (
        rb'"lc"\s*:\s*1\b',
        rb'"type"\s*:\s*"constructor"',
        rb'"additional_kwargs"\s*:',
        rb'"response_metadata"\s*:',
        rb'"usage_metadata"\s*:',
        rb'"invalid_tool_calls"\s*:',
        rb'"tool_call_chunks"\s*:',
        rb'"type"\s*:\s*"(?:human|ai)"',
    ),
    "anthropic": (
        rb'"tool_use_id"\s*:',
        rb'"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking)"',
        rb'"input_schema"\s*:',
        rb'"stop_reason"\s*:',
    ),
    "openai_responses": (
        rb'"call_id"\s*:',
        rb'"type"\s*:\s*"(?:function_call|function_call_output|custom_tool_call'
        rb'|custom_tool_call_output|input_text|output_text|reasoning)"',
        rb'"object"\s*:\s*"response"',
    ),
    "openai_chat": (
        rb'"tool_call_id"\s*:',
        rb'"tool_call_ids"\s*:',
        rb'"tool_calls"\s*:',
        rb'"function_call"\s*:',
        rb'"role"\s*:\s*"(?:tool|function|system|developer)"',
        rb'"content"\s*:\s*null',
    ),
}

_PATTERNS = {name: re.compile(b"|".join(markers)) for name, markers in _MARKERS.items()}

#: Formats whose markers, when also present, stop a format from claiming a head: the ones
#: that embed it, and the ones that are equally specific (Anthropic vs. Responses).
_OUTRANKED_BY: dict[str, frozenset[str]] = {
    SPAN_EXPORT: frozenset(),
    "langfuse": frozenset(),
    "claude_code": frozenset({"langfuse"}),
    "toolbench": frozenset({"langfuse", "claude_code"}),
    "langchain": frozenset({"langfuse", "claude_code", "toolbench"}),
    "openai_responses": frozenset(
        {"langfuse", "claude_code", "toolbench", "langchain", "anthropic"}
    ),
    "anthropic": frozenset(
        {"langfuse", "claude_code", "toolbench", "langchain", "openai_responses"}
    ),
    "openai_chat": frozenset(
        {"langfuse", "claude_code", "toolbench", "langchain", "anthropic", "openai_responses"}
    ),
}


def evidence(head: bytes) -> set[str]:
    """Names of the formats whose markers occur in ``head``.

    >>> sorted(evidence(b'[{"role": "tool", "tool_call_id": "call_1", "content": "ok"}]'))
    ['openai_chat']
    """
    return {name for name, pattern in _PATTERNS.items() if pattern.search(head)}


def claims(head: bytes, name: str) -> bool:
    """Whether format ``name`` may claim ``head``: its markers and none that outrank it.

    >>> claims(b'{"type":"assistant","parentUuid":null,"message":{"content":'
    ...        b'[{"type":"tool_use"}]}}', "anthropic")
    False
    """
    found = evidence(head)
    return name in found and not found & (_OUTRANKED_BY[name] | ({SPAN_EXPORT} - {name}))
