"""The record loops formats share, and the :class:`TraceFormat` each builds from one.

A file of a conversation format holds conversations (one per record) or bare messages (that
together make one conversation). :func:`defer_message_records` walks the records once; a record
that makes a whole trace on its own can be left unparsed as a :class:`Deferred`, for a worker
process to finish with the format's ``parse_one`` (:func:`parse_independent`).
:func:`message_list_format` turns a :class:`MessageListFormat` into its ``TraceFormat``.

A file of an export format (Langfuse, ToolBench) holds one trace per record:
:func:`trace_per_record_format` builds its ``TraceFormat`` from the function reading one record.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, cast

from ingest.formats._common import (
    ShapeError,
    expect_list,
    expect_object,
    json_type,
    make_trace,
)
from ingest.formats._shapes import Shape
from ingest.formats.base import Deferred, TraceFormat
from ingest.input.records import Record
from ingest.model import Message, Rejected, Trace

D = TypeVar("D")


def no_model_hint(messages: list[Message]) -> str | None:
    """The model hint of formats whose messages never name their model (only a container or
    response object does)."""
    return None


def drafts_are_messages(drafts: list[Any]) -> list[Message]:
    """The assembly of formats whose items convert straight into canonical messages."""
    return drafts


@dataclass(frozen=True)
class MessageListFormat(Generic[D]):
    """How a format whose files hold conversations or bare messages is read.

    ``convert_item`` turns one source message (at ``path``, from input ``line``) into drafts
    (for most formats the canonical messages themselves); ``container_trace`` reads a record
    holding a whole conversation; ``assemble`` turns a conversation's drafts into canonical
    messages (by default they are the messages; the Responses format groups items into
    assistant turns); ``model_hint`` finds the model in the messages when the container does
    not name it (by default, they never do).
    """

    name: str
    is_message: Callable[[dict[str, Any]], bool]
    convert_item: Callable[[dict[str, Any], str, int | None], list[D]]
    container_trace: Callable[[Record], Trace]
    assemble: Callable[[list[D]], list[Message]] = drafts_are_messages
    model_hint: Callable[[list[Message]], str | None] = no_model_hint

    def convert_list(self, items: Any, path: str, line: int | None) -> list[Message]:
        """Canonical messages of one conversation's message list at ``path``."""
        drafts: list[D] = []
        for index, item in enumerate(expect_list(items, path)):
            item_path = f"{path}[{index}]"
            drafts.extend(self.convert_item(expect_object(item, item_path), item_path, line))
        return self.assemble(drafts)


def parse_message_records(
    fmt: MessageListFormat[D], records: Iterable[Record | Rejected], source_file: str
) -> Iterator[Trace | Rejected]:
    """The record loop of the conversation formats (see :func:`defer_message_records`)."""
    return cast(Iterator[Trace | Rejected], defer_message_records(fmt, records, source_file, False))


def defer_message_records(
    fmt: MessageListFormat[D],
    records: Iterable[Record | Rejected],
    source_file: str,
    defer: bool = True,
) -> Iterator[Trace | Rejected | Deferred]:
    """The record loop of the conversation formats.

    A record holding a conversation object (or an array of messages) becomes one trace; records
    that are single messages (the items of a top-level JSON array of messages, or JSONL with a
    message per line) together become ONE trace for the file, yielded at the end. Rejected
    records pass through; a record that does not fit is rejected alone. With ``defer``, the
    records that make a trace on their own are yielded as :class:`Deferred` instead.
    """
    drafts: list[D] = []
    first_line: int | None = None
    count = 0
    for index, record in enumerate(records):
        if isinstance(record, Rejected):
            yield record
            continue
        value = record.value
        if isinstance(value, dict) and fmt.is_message(value):
            try:
                drafts.extend(fmt.convert_item(value, f"[{index}]", record.line))
            except ShapeError as exc:
                yield record.reject("wrong_shape", str(exc))
                continue
            first_line = record.line if first_line is None else first_line
            count += 1
        elif defer:
            yield Deferred(fmt.name, source_file, record)
        else:
            yield parse_independent(fmt, record, source_file)
    if count:
        messages = fmt.assemble(drafts)
        yield make_trace(
            messages,
            format=fmt.name,
            source_file=source_file,
            source_line=first_line,
            model=fmt.model_hint(messages),
            record_count=count,
        )


def parse_independent(
    fmt: MessageListFormat[D], record: Record, source_file: str
) -> Trace | Rejected:
    """The trace of a record that is not a single message (a conversation or a message array)."""
    value = record.value
    try:
        if isinstance(value, list):
            messages = fmt.convert_list(value, "", record.line)
            return make_trace(
                messages,
                format=fmt.name,
                source_file=source_file,
                source_line=record.line,
                model=fmt.model_hint(messages),
            )
        if isinstance(value, dict):
            return fmt.container_trace(record)
        raise ShapeError(f"expected an object or an array, got {json_type(value)}")
    except ShapeError as exc:
        return record.reject("wrong_shape", str(exc))


def message_list_format(
    reader: MessageListFormat[D],
    *,
    description: str,
    shape: Shape,
    embeds: Collection[str] = (),
) -> TraceFormat:
    """The :class:`TraceFormat` of a conversation format read by ``reader``: its records go
    through :func:`defer_message_records`, deferred ones through :func:`parse_independent`."""
    return TraceFormat(
        name=reader.name,
        description=description,
        shape=shape,
        embeds=frozenset(embeds),
        parse=partial(parse_message_records, reader),
        split=partial(defer_message_records, reader),
        parse_one=partial(parse_independent, reader),
    )


def trace_per_record_format(
    name: str,
    read: Callable[[Record], Trace],
    *,
    description: str,
    shape: Shape,
    embeds: Collection[str] = (),
) -> TraceFormat:
    """The :class:`TraceFormat` of a format whose every record is one trace, made by ``read``
    (which raises ``ShapeError`` for a record that is not one: that record is rejected)."""

    def parse_one(record: Record, source_file: str) -> Trace | Rejected:
        try:
            return read(record)
        except ShapeError as exc:
            return record.reject("wrong_shape", str(exc))

    def parse(records: Iterable[Record | Rejected], source_file: str) -> Iterator[Trace | Rejected]:
        for record in records:
            yield record if isinstance(record, Rejected) else parse_one(record, source_file)

    def split(
        records: Iterable[Record | Rejected], source_file: str
    ) -> Iterator[Trace | Rejected | Deferred]:
        # Every record is a whole trace: all of them go to the workers.
        for record in records:
            yield record if isinstance(record, Rejected) else Deferred(name, source_file, record)

    return TraceFormat(
        name=name,
        description=description,
        shape=shape,
        embeds=frozenset(embeds),
        parse=parse,
        split=split,
        parse_one=parse_one,
        trace_per_record=True,
    )
