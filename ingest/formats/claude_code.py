"""Claude Code session JSONL (``~/.claude/projects/<dir>/<sessionId>.jsonl``).

A file is one session and becomes ONE trace holding all its lines (``record_count`` counts
them all). ``external_id`` and ``session_id`` are the ``sessionId`` of the first line that has
one; ``agent`` is ``claude-code``; ``model`` is the first assistant message's; ``started_at``
the first timestamp.

* ``user`` / ``assistant`` lines carry an Anthropic ``message``. Claude Code writes one API
  message over several lines (one content block per line) sharing ``message.id``: each line stays
  its own canonical message (blocks in order, split as in ``_anthropic_blocks``), but
  ``call_index`` counts the ``tool_use`` blocks across the lines of one ``message.id``, and the
  ``usage`` repeated on every such line is kept on the first line's message only, so sums
  stay right. Its value is the one of the LAST line: Claude Code writes each line while the
  response still streams, and only ``output_tokens`` changes between them, growing (in the
  real sessions, first-line values sum to 65,818 output tokens, last-line values to 138,636).
  ``Message.raw`` is the whole line: ``isSidechain`` (sub-agent lines), ``toolUseResult``,
  ``uuid``/``parentUuid`` stay with the message.
* Sidechain lines (``isSidechain: true``, a sub-agent run by the Task tool) are part of the
  trace, and their messages carry ``Message.branch``: the line's ``agentId`` when it has one
  (newer versions), else the ``uuid`` of the sidechain's first line, found by following
  ``parentUuid`` (parallel sub-agents interleave their lines; the parent chain tells them
  apart). Main-conversation messages have no branch.
* ``system`` lines (runtime notices such as "Claude Opus 4 limit reached, now using Sonnet 4")
  become system messages where they occurred: they have a time and a place in the session.
* ``summary`` lines (session titles written for the resume menu, not part of the conversation)
  go to ``metadata["summaries"]``; lines of any other ``type`` (newer versions add some) are
  counted in ``metadata["other_line_types"]`` and kept nowhere else, when they carry a field
  every Claude Code line type has (``sessionId``, ``uuid``, ``parentUuid``, ``leafUuid``,
  ``messageId``). A line with neither a known ``type`` nor such a field is not a Claude Code
  line (another format's record, read with ``--format claude_code``): it is rejected
  ``not_this_format``, never silently counted.

``cwd``, ``version`` and ``gitBranch`` of the first line that has them go to the metadata. A
file of summary lines only is still one trace, with no messages.

A session that grew is not parsed again whole: ``extend`` rebuilds the parser's state from the
stored trace (call numbering and usage holders from the messages' ``source_id``, sidechain
branches from their lines' ``uuid``, the environment, summaries and counts from the metadata)
and reads only the appended lines. Where the stored trace cannot tell the state exactly (an id
cut to fit its column; an appended sidechain line without ``agentId`` whose parent line made no
message) it raises ``CannotExtend`` and the file is read whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from db.contract.widths import column_width
from ingest.formats import _anthropic_blocks
from ingest.formats._common import (
    ShapeError,
    expect_object,
    json_type,
    make_trace,
    parse_timestamp,
    text_of,
    unknown_fields,
)
from ingest.formats._shapes import (
    PLAIN,
    SIGN,
    Fit,
    Misfit,
    is_cut,
)
from ingest.formats.base import CannotExtend, RawMembers, TraceFormat
from ingest.input.records import Record
from ingest.model import Message, Rejected, Trace

NAME = "claude_code"

AGENT = "claude-code"
SYNTHETIC_MODEL = "<synthetic>"
#: Branch of a sidechain line that has neither ``agentId`` nor ``uuid`` to name it by.
SIDECHAIN = "sidechain"

#: Line types this parser reads; any other type is a newer one, counted (see the docstring).
_KNOWN_TYPES = frozenset({"user", "assistant", "system", "summary"})
#: Fields that mark a line of an unknown ``type`` as Claude Code's own.
_SESSION_FIELDS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId")

#: Line fields read here or known to be Claude Code's bookkeeping; another field of a
#: conversation line carrying content is counted as an unknown field ``line.<name>`` (on the
#: line's first message; its value stays in the raw line).
KNOWN_LINE_FIELDS = frozenset(
    {
        "type", "message", "content", "uuid", "parentUuid", "leafUuid", "sessionId", "timestamp",
        "isSidechain", "userType", "cwd", "version", "gitBranch", "requestId", "toolUseResult",
        "isMeta", "isCompactSummary", "level", "agentId", "isApiErrorMessage", "summary",
        "messageId", "slug", "thinkingMetadata", "todos", "logicalParentUuid",
        "compactMetadata", "subtype", "toolUseID", "sourceToolUseID", "isVisibleInTranscriptOnly",
    }
)  # fmt: skip

#: Line fields describing the session's environment, kept from the first line that has them.
_ENVIRONMENT_FIELDS = ("cwd", "version", "gitBranch")


def parse(records: Iterable[Record | Rejected], source_file: str) -> Iterator[Trace | Rejected]:
    """One trace per session file; only a user/assistant line without a usable ``message``
    (or a line that is not an object) is rejected."""
    return _read(_Session(source_file), records)


def extend(
    stored: Trace, appended: Iterable[Record | Rejected], source_file: str, members: RawMembers
) -> Iterator[Trace | Rejected]:
    """The session ``stored`` (the trace of the file's first part, rebuilt from the store)
    with the ``appended`` lines read (see ``ingest.formats.base.Extend``)."""
    return _read(_Session.resume(stored, source_file, members), appended)


def _read(session: _Session, records: Iterable[Record | Rejected]) -> Iterator[Trace | Rejected]:
    for record in records:
        if isinstance(record, Rejected):
            yield record
            continue
        if not _is_session_line(record.value):
            yield record.reject(
                "not_this_format",
                'not a Claude Code line (no known "type" and none of '
                f"{', '.join(_SESSION_FIELDS)}); if the file is another format, "
                "let it be sniffed or pass --format NAME",
            )
            continue
        try:
            session.add(record)
        except ShapeError as exc:
            yield record.reject("wrong_shape", str(exc))
    if session.record_count:
        yield session.trace()


def _is_session_line(line: Any) -> bool:
    """Whether ``line`` is a Claude Code line (non-objects are left to ``add`` to reject)."""
    if not isinstance(line, dict):
        return True
    kind = line.get("type")
    return (isinstance(kind, str) and kind in _KNOWN_TYPES) or any(
        key in line for key in _SESSION_FIELDS
    )


class _Session:
    """The state of one session file while its lines are read."""

    def __init__(self, source_file: str) -> None:
        self.source_file = source_file
        self.messages: list[Message] = []
        self.record_count = 0
        self.first_line: int | None = None
        self.session_id: str | None = None
        self.model: str | None = None
        self.environment: dict[str, str] = {}
        self.summaries: list[str] = []
        self.other_line_types: dict[str, int] = {}
        #: ``tool_use`` blocks seen so far per ``message.id`` (call numbering across lines).
        self.calls_by_message_id: dict[str, int] = {}
        #: Per ``message.id``, the message that holds the usage of that API message.
        self.usage_holder: dict[str, Message] = {}
        #: The branch of every sidechain line read so far, by ``uuid``.
        self.branch_of_uuid: dict[str, str] = {}
        #: False when resumed from a stored trace some of whose lines made no message (their
        #: ``uuid`` is unknown): a sidechain parent that is no line seen may be one of those.
        self.uuids_complete = True
        #: When not complete: the ``uuid`` of every line seen (stored messages' and read).
        self.seen_uuids: set[str] = set()
        #: Unknown items of the stored part (its opaque messages come back as plain ones).
        self.stored_unknown: dict[str, int] = {}

    @classmethod
    def resume(cls, stored: Trace, source_file: str, members: RawMembers) -> _Session:
        """The state after reading the lines that made ``stored`` (``members`` reads the
        ``uuid`` of stored lines: of the sidechain ones, and of all when some line made no
        message)."""
        known = {*_ENVIRONMENT_FIELDS, "summaries", "other_line_types", "unknown_items"}
        metadata = stored.metadata
        if not set(metadata) <= known:
            raise CannotExtend(f"metadata keys {sorted(set(metadata) - known)}")
        session = cls(source_file)
        session.messages = list(stored.messages)
        session.record_count = stored.record_count
        session.first_line = stored.source_line
        session.session_id = stored.external_id
        session.model = stored.model
        session.environment = {k: metadata[k] for k in _ENVIRONMENT_FIELDS if k in metadata}
        session.summaries = list(metadata.get("summaries", []))
        session.other_line_types = dict(metadata.get("other_line_types", {}))
        session.stored_unknown = dict(metadata.get("unknown_items", {}))
        id_max, branch_max = (
            column_width("messages", "source_id"),
            column_width("messages", "branch"),
        )
        lines = {message.source_line for message in session.messages}
        session.uuids_complete = len(lines) == stored.record_count
        for message in session.messages:
            msg_id = message.source_id
            if msg_id is not None:
                if len(msg_id) >= id_max:
                    raise CannotExtend("a message id was cut to fit its column")
                seen = session.calls_by_message_id.get(msg_id, 0)
                session.calls_by_message_id[msg_id] = seen + len(message.tool_calls)
                if message.usage is not None and msg_id not in session.usage_holder:
                    session.usage_holder[msg_id] = message
            if message.branch is not None and len(message.branch) >= branch_max:
                raise CannotExtend("a branch was cut to fit its column")
        # A sidechain line's uuid names its branch for the lines under it; every line's is
        # needed only when some line made no message (see ``_branch``).
        wanted = [
            index
            for index, message in enumerate(session.messages)
            if message.branch is not None or not session.uuids_complete
        ]
        uuids = members("uuid", wanted) if wanted else {}
        for index, uuid in uuids.items():
            branch = session.messages[index].branch
            if branch is not None:
                session.branch_of_uuid[uuid] = branch
            if not session.uuids_complete:
                session.seen_uuids.add(uuid)
        return session

    def add(self, record: Record) -> None:
        line = record.value
        if not isinstance(line, dict):
            raise ShapeError(f"expected a JSON object, got {json_type(line)}")
        kind = line.get("type")
        branch = self._branch(line)
        if kind in ("user", "assistant"):
            converted = self._api_messages(line, record.line)
            for message in converted:
                message.branch = branch
            fields = unknown_fields(line, KNOWN_LINE_FIELDS, "line")
            if fields and converted:
                converted[0].unknown_fields = [*fields, *converted[0].unknown_fields]
            self.messages.extend(converted)
        elif kind == "system":
            self.messages.append(
                Message(
                    seq=0,
                    role="system",
                    content=text_of(line.get("content")),
                    timestamp=parse_timestamp(line.get("timestamp")),
                    source_line=record.line,
                    branch=branch,
                    raw=line,
                )
            )
        elif kind == "summary":
            if isinstance(line.get("summary"), str):
                self.summaries.append(line["summary"])
        else:
            name = kind if isinstance(kind, str) else json_type(kind)
            self.other_line_types[name] = self.other_line_types.get(name, 0) + 1
        if branch is not None and isinstance(line.get("uuid"), str):
            self.branch_of_uuid[line["uuid"]] = branch
        if not self.uuids_complete and isinstance(line.get("uuid"), str):
            self.seen_uuids.add(line["uuid"])
        self.record_count += 1
        if self.first_line is None:
            self.first_line = record.line
        if self.session_id is None and isinstance(line.get("sessionId"), str):
            self.session_id = line["sessionId"]
        for key in _ENVIRONMENT_FIELDS:
            if key not in self.environment and isinstance(line.get(key), str):
                self.environment[key] = line[key]

    def _branch(self, line: dict[str, Any]) -> str | None:
        if line.get("isSidechain") is not True:
            return None
        if isinstance(line.get("agentId"), str):
            return str(line["agentId"])
        parent = line.get("parentUuid")
        if isinstance(parent, str) and parent in self.branch_of_uuid:
            return self.branch_of_uuid[parent]
        if isinstance(parent, str) and not self.uuids_complete and parent not in self.seen_uuids:
            raise CannotExtend("a sidechain line's parent may be a stored line without message")
        own = line.get("uuid")
        return own if isinstance(own, str) else SIDECHAIN

    def _api_messages(self, line: dict[str, Any], line_number: int) -> list[Message]:
        msg = expect_object(line.get("message"), "message")
        msg_id = msg.get("id") if isinstance(msg.get("id"), str) else None
        holder = self.usage_holder.get(msg_id) if msg_id else None
        messages = _anthropic_blocks.convert_message(
            msg,
            "message",
            line_number,
            wrap=lambda part: line if part is msg else {**line, "message": part},
            first_call_index=self.calls_by_message_id.get(msg_id, 0) if msg_id else 0,
            timestamp=parse_timestamp(line.get("timestamp")),
            keep_usage=holder is None,
        )
        # Counters move only once the line converted: a rejected line must not shift them.
        if msg_id is not None:
            seen = self.calls_by_message_id.get(msg_id, 0)
            self.calls_by_message_id[msg_id] = seen + _anthropic_blocks.tool_use_count(msg)
            usage = msg.get("usage")
            if holder is not None and isinstance(usage, dict):
                holder.usage = usage  # a later line of the stream: the more complete count
            elif holder is None:
                first = next((m for m in messages if m.usage is not None), None)
                if first is not None:
                    self.usage_holder[msg_id] = first
        model = msg.get("model")
        # "<synthetic>" marks messages Claude Code wrote itself (API errors), not a model.
        if self.model is None and isinstance(model, str) and model != SYNTHETIC_MODEL:
            self.model = model
        return messages

    def trace(self) -> Trace:
        metadata: dict[str, Any] = dict(self.environment)
        if self.summaries:
            metadata["summaries"] = self.summaries
        if self.other_line_types:
            metadata["other_line_types"] = self.other_line_types
        trace = make_trace(
            self.messages,
            format=NAME,
            source_file=self.source_file,
            source_line=self.first_line,
            external_id=self.session_id,
            session_id=self.session_id,
            agent=AGENT,
            model=self.model,
            metadata=metadata,
            record_count=self.record_count,
        )
        if self.stored_unknown:
            counts = dict(self.stored_unknown)
            for kind, n in trace.metadata.get("unknown_items", {}).items():
                counts[kind] = counts.get(kind, 0) + n
            trace.metadata["unknown_items"] = dict(sorted(counts.items()))
        return trace


def shape(record: Any) -> Fit:
    """A Claude Code line: an object with a string ``type`` and ``parentUuid`` (conversation
    lines) or ``leafUuid`` (summaries), else one of the fields every line type has."""
    if not isinstance(record, dict):
        return Misfit(f"a record is a JSON {json_type(record)}, not an object")
    if "parentUuid" in record or "leafUuid" in record:
        return SIGN if isinstance(record.get("type"), str) or is_cut(record) else PLAIN
    if any(key in record for key in _SESSION_FIELDS):
        return PLAIN
    return Misfit("no parentUuid, leafUuid, sessionId or uuid")


#: How ToolLens recognizes and reads this format (see ``ingest.formats.base``).
FORMAT = TraceFormat(
    name=NAME,
    description="Claude Code session JSONL (one session per file, lines sharing message.id)",
    shape=shape,
    embeds=frozenset({"anthropic"}),
    parse=parse,
    extend=extend,
)

__all__ = ["AGENT", "FORMAT", "NAME", "SIDECHAIN", "SYNTHETIC_MODEL"]
