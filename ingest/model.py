"""The canonical trace model every format parser produces.

Parsers turn trace files into :class:`Trace` objects; the pipeline counts tokens, runs the
analysis and writes rows. What a source *provided* is kept apart from what ToolLens *derives*:
these classes hold only provided facts (plus the raw payload); derived facts live in
``ingest.analysis.trace`` results.

Example::

    Trace(format="openai_chat", source_file="run.jsonl", source_line=1, messages=[
        Message(seq=0, role="assistant", tool_calls=[
            ToolCall(call_index=0, tool_call_id="call_1", name="get_weather",
                     arguments_raw='{"city":"Paris"}', arguments={"city": "Paris"}),
        ]),
        Message(seq=1, role="tool", content="rainy",
                tool_result=ToolResult(tool_call_id="call_1", name="get_weather")),
    ])
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from db.contract import exact_json
from db.contract.vocabulary import CallKind, Role


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class ToolDef(_Model):
    """A tool the trace declares to the model (OpenAI ``tools``, Anthropic ``tools`` …)."""

    name: str
    description: str | None = None
    #: JSON Schema of the arguments, as declared (``parameters`` / ``input_schema``).
    parameters: Any = None


class ToolCall(_Model):
    """One tool call requested by an assistant message."""

    call_index: int
    #: The id the source gave the call; may be missing and may be reused within a trace.
    tool_call_id: str | None = None
    name: str
    #: Arguments exactly as provided: the JSON string, or the JSON dump of an object.
    arguments_raw: str | None = None
    #: Parsed arguments (``None`` when they did not parse; see ``args_valid``).
    arguments: Any = None
    args_valid: bool = True
    #: Parse error message when ``args_valid`` is false.
    args_error: str | None = None
    #: Who runs the call: the agent (``client``), the provider's API (``server``) or an MCP
    #: server the provider calls (``mcp``); see ``db.contract.vocabulary.CallKind``.
    kind: CallKind = "client"

    @model_serializer(mode="wrap")
    def _omit_client_kind(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Nearly every call is a client call: dumps leave the default out, so the dumps (and
        # golden files) of formats without server or MCP tools read as they always did.
        data: dict[str, Any] = handler(self)
        if data.get("kind") == "client":
            del data["kind"]
        return data


class ToolResult(_Model):
    """The provided facts of a Tool Message (the message's ``content`` is the result text)."""

    tool_call_id: str | None = None
    name: str | None = None
    #: Explicit error flag given by the source (Anthropic ``is_error``, LangChain
    #: ``status == "error"``, tau2 ``error``); ``None`` when the source says nothing.
    explicit_error: bool | None = None
    #: Where the explicit flag came from, e.g. ``"is_error"`` or ``"status"``.
    explicit_source: str | None = None
    #: Execution time the source measured, in milliseconds: the tool span's end − start (OTLP,
    #: Langfuse). ``None`` when the source records no span; then ToolLens derives the time from
    #: the call's and the result's message timestamps (``ingest.analysis.durations``).
    duration_ms: float | None = None


class Message(_Model):
    """One message of a trace; ``seq`` is its position, the only always-available order."""

    seq: int
    role: Role
    #: Text content as the model sees it (text parts joined with newlines).
    content: str = ""
    timestamp: datetime | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    #: Set when ``role == "tool"``: every Tool Message is its own canonical message
    #: (an Anthropic user message with three ``tool_result`` blocks becomes three).
    tool_result: ToolResult | None = None
    #: Provider-reported usage, verbatim (never summed by us without de-duplication).
    usage: dict[str, Any] | None = None
    #: Id the source gave this message (``msg_…``, LangChain ``id``), if any.
    source_id: str | None = None
    #: 1-based line of the input file this message came from, when known.
    source_line: int | None = None
    #: Sub-agent thread the message belongs to (Claude Code ``isSidechain`` lines carry the
    #: sidechain's id); ``None`` is the main conversation. A sub-agent speaking is not the main
    #: model speaking again, so late results are judged within a branch.
    branch: str | None = None
    #: The thread ``branch`` nests in, where the source records how spans nest (OTLP, Langfuse:
    #: the sub-agent's span lies under a span of that thread's agent); ``None``: it nests in
    #: the main conversation, or the source does not say. Left out of dumps when ``None``.
    branch_parent: str | None = None
    #: The raw payload this message was built from, so analysis can be re-run.
    raw: Any = None
    #: Fields of the source item that carry content but that no parser reads, as
    #: ``<where>.<name>`` (``message.reasoning_content``, ``text.citations_v2``): their values
    #: stay in ``raw``; they are counted as unknown items ``field:<where>.<name>``
    #: (``ingest.formats._common.unknown_fields`` says which fields carry content). Not part of
    #: a dump: the trace's ``metadata["unknown_items"]`` keeps the counts.
    unknown_fields: list[str] = Field(default_factory=list, exclude=True)

    @model_serializer(mode="wrap")
    def _omit_no_branch_parent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Only span sources nest threads: the dumps (and golden files) of the other formats
        # read as they always did.
        data: dict[str, Any] = handler(self)
        if data.get("branch_parent", "") is None:
            del data["branch_parent"]
        return data


class OpaqueMessage(Message):
    """The stand-in for an item or block of a type the parser does not know (a newer API's):
    kept, never dropped. Its content is the type and the item's JSON, its raw the item."""

    #: The item's or block's type, as the source named it.
    unknown_type: str


class Trace(_Model):
    """One agent run / conversation."""

    format: str
    source_file: str
    #: 1-based line where the trace's first record starts.
    source_line: int | None = None
    #: The source's own id for the run (``id``, ``sessionId`` …) when there is one.
    external_id: str | None = None
    agent: str | None = None
    model: str | None = None
    started_at: datetime | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tools: list[ToolDef] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    #: The session or conversation thread the source says the run belongs to (OTLP
    #: ``session.id`` / ``gen_ai.conversation.id``, Claude Code's ``sessionId``, Langfuse's
    #: ``sessionId``, a LangSmith thread): the traces sharing it are one session.
    session_id: str | None = None
    #: How many input records (lines / array items) this trace was built from.
    record_count: int = 1
    #: 0 for the first trace of its file starting at ``source_line``, 1 for the next …: traces
    #: sharing a line (the items of a one-line JSON array) are still told apart by position.
    #: Set by the importer, which sees a file's traces in order; not part of a dump (the
    #: parsed trace is the same whatever the importer numbered it).
    line_position: int = Field(default=0, exclude=True)

    @model_serializer(mode="wrap")
    def _omit_no_session(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Most formats name no session: dumps leave ``None`` out, so theirs (and their golden
        # files) read as they did before traces had one.
        data: dict[str, Any] = handler(self)
        if data.get("session_id") is None:
            data.pop("session_id", None)
        return data

    def dedupe_key(self) -> str:
        """Identity: the format plus the external id when present, else what the source says
        the trace is (its file, the line of its first record and, when several traces start on
        that line, which of them it is), else its content hash.

        The same trace imported again has the same identity whatever its content; whether it
        changed is the business of :func:`content_hash`. The file is hashed so that a long path
        fits the column.

        >>> Trace(format="x", source_file="a", external_id="run-1").dedupe_key()
        'x:id:run-1'
        >>> Trace(format="x", source_file="a.jsonl", source_line=3).dedupe_key()
        'x:at:8d6a6f2da8cffa60896c7bef:3'
        """
        if self.external_id:
            return f"{self.format}:id:{self.external_id}"
        if self.source_line is not None:
            at = f"{self.format}:at:{_short_hash(self.source_file)}:{self.source_line}"
            return f"{at}.{self.line_position}" if self.line_position else at
        return f"{self.format}:sha256:{content_hash(self)}"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


#: How :func:`content_hash` serializes: canonical JSON (sorted keys, compact), as the JSON
#: columns are stored (``db.dialect.json_dumps``).
_HASH_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _canonical(value: Any) -> bytes:
    return exact_json.dumps_bytes(value, _HASH_OPTIONS)


def content_hash(trace: Trace) -> str:
    """SHA-256 of the canonical content: messages, tool definitions and metadata.

    Independent of the file name and line, so the same trace read from another path (or another
    position) has the same hash; any change to a message, a declared tool or the metadata
    changes it.
    """
    payload: list[Any] = [trace.metadata, [[m.role, m.content, m.raw] for m in trace.messages]]
    if trace.tools:  # appended only when declared: hashes of traces without tools stay as they were
        payload.append([[t.name, t.description, t.parameters] for t in trace.tools])
    return hashlib.sha256(_canonical(payload)).hexdigest()


#: One message's share of what :func:`content_hash` hashes, ``[role,content,raw]``, in two
#: pieces: ``[role,content,`` and the raw payload's canonical JSON (the closing ``]`` implied).
HashPart = tuple[bytes, bytes]


def message_hash_part(role: str, content: str, raw_json: bytes) -> HashPart:
    """One message's :data:`HashPart`, its raw payload given as canonical JSON (``raw_json``:
    what :func:`canonical_json` makes of it)."""
    return _canonical([role, content])[:-1] + b",", raw_json


def canonical_json(value: Any) -> bytes:
    """``value`` as :func:`content_hash` serializes it (``message_hash_part``'s ``raw_json``)."""
    return _canonical(value)


class SplicedHash:
    """:func:`content_hash` of the versions of a trace that share their first messages, each
    shared message serialized once (its :data:`HashPart`): ``content_hash`` dumps
    ``[metadata,[part,part,…](,tools)]``, and orjson writes a list as its items' dumps joined
    by commas, without spaces. ``tests/test_spliced_hash.py`` holds the two equal.
    """

    def __init__(self, parts: Sequence[HashPart]) -> None:
        self.parts = parts
        #: The hash state after ``[metadata,[`` and the shared parts, by canonical metadata.
        self._shared: dict[bytes, Any] = {}

    def digest(
        self, metadata: dict[str, Any], more: Sequence[HashPart] = (), tools: Sequence[ToolDef] = ()
    ) -> str:
        """The content hash of the version with ``metadata``, the shared messages followed by
        the messages of the parts ``more``, and ``tools``."""
        head = _canonical(metadata)
        shared = self._shared.get(head)
        if shared is None:
            shared = hashlib.sha256(b"[" + head + b",[")
            _feed(shared, self.parts, first=True)
            self._shared[head] = shared
        h = shared.copy()
        _feed(h, more, first=not self.parts)
        h.update(b"]")
        if tools:
            h.update(b"," + _canonical([[t.name, t.description, t.parameters] for t in tools]))
        h.update(b"]")
        return h.hexdigest()


def _feed(h: Any, parts: Sequence[HashPart], *, first: bool) -> None:
    """Hash ``parts`` as list items (a comma before each but the list's first)."""
    update = h.update
    for head, raw in parts:
        if first:
            first = False
        else:
            update(b",")
        update(head)
        update(raw)
        update(b"]")


def display_id(trace: Trace, digest: str | None = None) -> str:
    """What users call a trace: its external id, else the first 12 hex digits of its content
    hash (``digest`` when the caller has it already)."""
    if trace.external_id:
        return trace.external_id
    return (digest or content_hash(trace))[:12]


def count_unknown(messages: Iterable[Message]) -> dict[str, int]:
    """How many opaque messages of each unknown type ``messages`` hold, and how many unknown
    fields carrying content of each name (``field:<where>.<name>``), sorted by name.

    >>> count_unknown([
    ...     OpaqueMessage(seq=0, role="user", unknown_type=kind) for kind in ("b", "a", "b")
    ... ])
    {'a': 1, 'b': 2}
    """
    counts: dict[str, int] = {}
    for message in messages:
        if isinstance(message, OpaqueMessage):
            counts[message.unknown_type] = counts.get(message.unknown_type, 0) + 1
        for name in message.unknown_fields:
            counts[f"field:{name}"] = counts.get(f"field:{name}", 0) + 1
    return dict(sorted(counts.items()))


class Rejected(_Model):
    """An input record that could not become (part of) a trace: kept, never dropped."""

    source_file: str
    line: int
    byte_offset: int
    #: Short, stable code, e.g. ``malformed_json``, ``invalid_utf8``, ``wrong_shape``.
    reason: str
    #: Human-readable detail naming the field, e.g. ``messages[2].role: unknown role 'bot'``.
    message: str
    raw: bytes = b""

    def location(self) -> str:
        """``file:line`` as users see it in error messages."""
        return f"{self.source_file}:{self.line}"
