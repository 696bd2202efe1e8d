"""Redaction of whole canonical traces and rejected records, the seam where imports redact.

Pure: a :class:`~ingest.model.Trace` or :class:`~ingest.model.Rejected` in, a redacted copy out
(the same object when nothing was found). :mod:`ingest.importing.batches` calls :func:`redact_trace`
after the token counts (counts are those of the original text) and before analysis, rows and the
content hash, so nothing downstream ever sees a secret and re-importing a file gives the same
identity. Every string and JSON-like field a parser fills is covered: message content and raw
payload, tool-call arguments (raw, parsed, parse error), usage, trace metadata (keys too), tags,
tool definitions, and the ids and names stored as columns (trace id, file name, agent, model,
call ids, tool names, message ids).

A :class:`RedactionSettings` is what crosses into worker processes (a :class:`Redactor` holds a
compiled automaton that does not pickle); each process builds its redactor once.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ingest.input.otlp_spans import OtlpSpan
from ingest.model import Message, Rejected, ToolCall, ToolDef, Trace
from ingest.redaction.rules import MODES
from ingest.redaction.secrets import Redactor

#: The mode imports use unless told otherwise: redaction is on by default.
DEFAULT_REDACT_MODE = "default"
#: Environment variables the CLI, the dashboard and the demo read.
REDACT_ENV = "TOOLLENS_REDACT"
REDACT_RULES_ENV = "TOOLLENS_REDACT_RULES"

_M = TypeVar("_M", bound=BaseModel)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RedactionSettings:
    """How an import redacts: a mode (off | default | strict) and an optional team rules file."""

    mode: str = DEFAULT_REDACT_MODE
    rules_file: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"redaction mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    @classmethod
    def from_env(cls) -> RedactionSettings:
        """Settings from ``TOOLLENS_REDACT`` / ``TOOLLENS_REDACT_RULES`` (default mode if unset)."""
        return cls(
            os.environ.get(REDACT_ENV) or DEFAULT_REDACT_MODE,
            os.environ.get(REDACT_RULES_ENV) or None,
        )

    def redactor(self) -> Redactor:
        """This process's redactor for these settings (built once, counts shared)."""
        return _redactor(self.mode, self.rules_file)


@lru_cache(maxsize=4)
def _redactor(mode: str, rules_file: str | None) -> Redactor:
    return Redactor(mode, Path(rules_file) if rules_file else None)


def format_counts(counts: dict[str, int]) -> str:
    """The summary's phrase for redaction counts, kinds by count then name.

    >>> format_counts({"jwt": 9, "openai_key": 3})
    '12 secrets redacted (jwt 9, openai_key 3)'
    >>> format_counts({})
    ''
    """
    total = sum(counts.values())
    if not total:
        return ""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    noun = "secret" if total == 1 else "secrets"
    return f"{total} {noun} redacted ({kinds})"


def redact_trace(trace: Trace, redactor: Redactor) -> Trace:
    """``trace`` with every secret replaced; the same object when there was none.

    Ids and file names (``external_id``, ``source_file``, call ids, message ids) are redacted
    with :meth:`Redactor.redact_name`, which keeps two of them differing only in a secret
    apart; names (agent, model, tool names) and metadata keys with their secrets replaced.
    """
    if redactor.mode == "off":
        return trace
    return _updated(
        trace,
        {
            "messages": _same_items(
                [_redact_message(m, redactor) for m in trace.messages], trace.messages
            ),
            "tools": _same_items([_redact_tool(t, redactor) for t in trace.tools], trace.tools),
            "metadata": redactor.redact_repeated(trace.metadata),
            "tags": redactor.redact_repeated(trace.tags),
            "external_id": redactor.redact_name(trace.external_id),
            "source_file": redactor.redact_name(trace.source_file),
            "agent": _text(redactor, trace.agent),
            "model": _text(redactor, trace.model),
        },
    )


def _updated(model: _M, update: dict[str, Any]) -> _M:
    """``model`` itself when every value of ``update`` is the very object it holds (nothing
    redacted there), else its copy with ``update``."""
    if all(value is getattr(model, name) for name, value in update.items()):
        return model
    return model.model_copy(update=update)


def _same_items(redacted: list[_T], items: list[_T]) -> list[_T]:
    """``items`` when ``redacted`` holds the very same objects (none redacted), else
    ``redacted``."""
    return items if all(a is b for a, b in zip(redacted, items, strict=True)) else redacted


def _text(redactor: Redactor, text: str | None) -> str | None:
    return None if text is None else redactor.redact_text(text)


def _redact_message(message: Message, redactor: Redactor) -> Message:
    result = message.tool_result
    if result is not None:
        result = _updated(
            result,
            {
                "tool_call_id": redactor.redact_name(result.tool_call_id),
                "name": _text(redactor, result.name),
            },
        )
    return _updated(
        message,
        {
            "content": redactor.redact_text(message.content),
            "raw": redactor.redact_value(message.raw),
            "usage": redactor.redact_value(message.usage),
            "tool_calls": _same_items(
                [_redact_call(c, redactor) for c in message.tool_calls], message.tool_calls
            ),
            "source_id": redactor.redact_name(message.source_id),
            "tool_result": result,
        },
    )


def _redact_call(call: ToolCall, redactor: Redactor) -> ToolCall:
    return _updated(
        call,
        {
            "arguments_raw": redactor.redact_value(call.arguments_raw),
            "arguments": redactor.redact_value(call.arguments),
            "args_error": redactor.redact_value(call.args_error),
            "tool_call_id": redactor.redact_name(call.tool_call_id),
            "name": redactor.redact_text(call.name),
        },
    )


def _redact_tool(tool: ToolDef, redactor: Redactor) -> ToolDef:
    # A trace declares its tools again and again (every record of a chat export).
    return _updated(
        tool,
        {
            "description": redactor.redact_value(tool.description),
            "parameters": redactor.redact_repeated(tool.parameters),
            "name": redactor.redact_text(tool.name),
        },
    )


def redact_rejected(rejected: Rejected, redactor: Redactor) -> Rejected:
    """A rejection with secrets replaced in its message and its raw bytes.

    Raw bytes that are not UTF-8 (an ``invalid_utf8`` rejection) are read as Latin-1, which maps
    every byte to one character and back: secrets are ASCII, so they are found all the same and
    the other bytes come back unchanged.
    """
    if redactor.mode == "off":
        return rejected
    message = redactor.redact_text(rejected.message)
    try:
        text, codec = rejected.raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, codec = rejected.raw.decode("latin-1"), "latin-1"
    red_text = redactor.redact_text(text)
    if message is rejected.message and red_text is text:
        return rejected
    raw = rejected.raw if red_text is text else red_text.encode(codec, errors="replace")
    return rejected.model_copy(update={"message": message, "raw": raw})


def redact_span(span: OtlpSpan, redactor: Redactor) -> OtlpSpan:
    """An OTLP span with secrets replaced in its attributes, events, status and resource.

    The receiver spools spans to disk before it acknowledges them, so it redacts them first:
    the spool is a store too.
    """
    if redactor.mode == "off":
        return span
    red = redactor.redact_value
    events = [
        e if (a := red(e.attributes)) is e.attributes else replace(e, attributes=a)
        for e in span.events
    ]
    attributes, resource = red(span.attributes), red(span.resource)
    status = redactor.redact_text(span.status_message)
    if (
        attributes is span.attributes
        and resource is span.resource
        and status is span.status_message
        and all(a is b for a, b in zip(events, span.events, strict=True))
    ):
        return span
    return replace(
        span, attributes=attributes, resource=resource, status_message=status, events=events
    )


def add_counts(total: dict[str, int], more: Counter[str] | dict[str, int]) -> None:
    """Add redaction counts ``more`` into ``total`` (kinds with a zero count are not kept)."""
    for kind, n in more.items():
        if n:
            total[kind] = total.get(kind, 0) + n
