"""ToolBench DFS answer files (``answer_generation.train_messages``, legacy ``function_call``).

One JSON document per file, one trace per document. ``train_messages`` is a list of message
lists, growing prefixes of the one conversation the search settled on; the trace is the LAST
list (OpenAI legacy form: ``function_call`` without id, ``role: "function"`` results named by
tool, paired by order and name). ``query``, ``finish_type``, ``win`` and the other small fields
of the file go to the metadata; ``answer_generation.function`` gives the tool definitions. The
search ``tree`` and ``compare_candidates`` are left out: they are the search, not the run.

A file without ``train_messages`` (the search gave up before any train list was written) still
becomes a trace: its ``query`` as a single user message.
"""

from __future__ import annotations

from typing import Any

from ingest.formats._common import (
    ShapeError,
    expect_list,
    expect_object,
    json_type,
    make_trace,
    small_metadata,
    tool_defs,
)
from ingest.formats._openai_messages import convert_messages
from ingest.formats._record_loop import trace_per_record_format
from ingest.formats._shapes import (
    SIGN,
    CutDict,
    Fit,
    Misfit,
)
from ingest.input.records import Record
from ingest.model import Message, Trace

NAME = "toolbench"

_SEARCH_FIELDS = {"answer_generation", "tree", "compare_candidates"}
_ANSWER_FIELDS = {"train_messages", "function"}


def _answer_trace(record: Record) -> Trace:
    if not isinstance(record.value, dict):
        raise ShapeError(f"expected a ToolBench answer object, got {json_type(record.value)}")
    doc: dict[str, Any] = record.value
    if "answer_generation" not in doc:
        raise ShapeError('no "answer_generation" object (expected a ToolBench answer file)')
    answer = expect_object(doc["answer_generation"], "answer_generation")
    train = answer.get("train_messages")
    if train:
        lists = expect_list(train, "answer_generation.train_messages")
        path = f"answer_generation.train_messages[{len(lists) - 1}]"
        messages = convert_messages(lists[-1], path, record.line)
    else:
        messages = [_query_message(answer, record.line)]
    return make_trace(
        messages,
        format=NAME,
        source_file=record.source_file,
        source_line=record.line,
        tools=tool_defs(answer.get("function"), "answer_generation.function"),
        metadata=small_metadata({**doc, **answer}, _SEARCH_FIELDS | _ANSWER_FIELDS),
    )


def _query_message(answer: dict[str, Any], line: int) -> Message:
    query = answer.get("query")
    if not isinstance(query, str):
        raise ShapeError(
            'answer_generation: neither "train_messages" nor a "query" string to build a trace from'
        )
    return Message(seq=0, role="user", content=query, source_line=line, raw={"query": query})


def shape(record: Any) -> Fit:
    """A ToolBench answer file: an object holding an ``answer_generation`` object, or (its
    search tree filling the head) a ``tree`` object beside ``win``."""
    if isinstance(record, dict) and isinstance(record.get("answer_generation"), dict):
        return SIGN
    if isinstance(record, CutDict) and isinstance(record.get("tree"), dict) and "win" in record:
        return SIGN
    return Misfit('no "answer_generation" object')


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = trace_per_record_format(
    NAME,
    _answer_trace,
    description=(
        "ToolBench DFS answer files (answer_generation.train_messages, legacy function_call)"
    ),
    shape=shape,
    embeds=("openai_chat",),
)

__all__ = ["FORMAT", "NAME"]
