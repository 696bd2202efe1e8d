"""Logged model requests grouped into conversations (pure: canonical messages in and out).

A proxy or an SDK wrapper logs each model *request*, and every request repeats the whole
history so far. :func:`conversations` turns such requests back into conversations in which
every message, call and result occurs once:

* **Same conversation.** Requests sharing an explicit conversation id (a session, trace or
  conversation id that at least two requests carry: an id on one request only says nothing)
  are one conversation. A request without one joins the conversation holding an earlier
  request whose prompt is a *proper prefix* of its own prompt (it sends that history and
  more); of several, the one sharing the longest path with it, the later one on a tie. Anything
  else starts a conversation. So a retry sending exactly the same prompt, or another run
  starting with the same system prompt and task, is a conversation of its own.
* **Chained requests** (Responses ``previous_response_id``): a request naming the response of
  an earlier logged request sends only the new messages; its prompt is that request's prompt
  and answer followed by its own (its own leading system messages are left out when they repeat
  the conversation's). Requests continuing the same response that was not logged are one
  conversation (the id of that response is their conversation id).
* **One tree per conversation.** Messages are compared by their content as the model reads it
  (:func:`fingerprint`: role, text, calls with their arguments, the id a result answers).
  Each request's prompt and then its answer is a path from the root; the first copy of a
  message is kept (usually the response's own, which carries the id and usage). Where a
  request goes on differently from what the conversation already holds (two answers to the
  same prompt, a history edited before resending), its new messages form a **branch**, named
  after the request (``Message.branch``); the first continuation stays in the branch it
  continues (the main conversation is ``None``).
* **Order and times.** Messages are in the order the requests revealed them; a message without
  a timestamp gets its request's start time (prompt) or end time (answer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from db.contract import exact_json
from ingest.model import Message

#: What tells two copies of a message apart (see :func:`fingerprint`).
Fingerprint = tuple[Any, ...]


def fingerprint(message: Message) -> Fingerprint:
    """A message's identity across requests: role, text (outer whitespace ignored), its calls
    (id, name, arguments with keys sorted) and the call id a result answers.

    >>> from ingest.model import ToolCall
    >>> call = ToolCall(call_index=0, tool_call_id="c1", name="f", arguments={"b": 1, "a": 2})
    >>> fingerprint(Message(seq=0, role="assistant", content=" ok ", tool_calls=[call]))
    ('assistant', 'ok', (('c1', 'f', '{"a":2,"b":1}'),), None)
    """
    calls = tuple(
        (call.tool_call_id, call.name, _arguments_key(call.arguments_raw, call.arguments))
        for call in message.tool_calls
    )
    answered = message.tool_result.tool_call_id if message.tool_result is not None else None
    return (message.role, message.content.strip(), calls, answered)


def _arguments_key(raw: str | None, parsed: Any) -> str | None:
    """Arguments as compact JSON with sorted keys (the raw text when it is not JSON)."""
    if raw is not None:
        return _sorted_json_text(raw)
    if parsed is None:
        return None
    return exact_json.dumps_bytes(parsed, _SORTED).decode()


#: Canonical JSON text: sorted keys, keys that are not strings written as strings.
_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


@lru_cache(maxsize=65536)
def _sorted_json_text(raw: str) -> str:
    # Cached: every request resends the calls before it.
    try:
        return exact_json.dumps_bytes(exact_json.loads(raw), _SORTED).decode()
    except orjson.JSONDecodeError:
        return raw


@dataclass(slots=True)
class Request:
    """One logged request: what it sent and, when the log has it, what came back."""

    #: Position in the log (requests are taken in this order).
    index: int
    prompt: list[Message]
    answer: list[Message] = field(default_factory=list)
    #: The log's explicit conversation id (session, trace, conversation), if any.
    conversation_id: str | None = None
    #: The response's own id and the one it continues (Responses ``previous_response_id``).
    response_id: str | None = None
    previous_response_id: str | None = None
    #: Names a branch this request opens (its id, else its line).
    label: str = ""
    started: datetime | None = None
    ended: datetime | None = None
    #: The input line the request was read from (the ``source_line`` of a message copied from
    #: another conversation's, see :class:`Interner`).
    source_line: int | None = None


@dataclass(slots=True)
class Conversation:
    """The requests of one conversation and its messages, once each, in order."""

    requests: list[Request]
    messages: list[Message]
    #: The explicit id the conversation was grouped by, if any.
    conversation_id: str | None
    #: How many branches its requests opened.
    branches: int


@dataclass(slots=True)
class _Node:
    message: Message | None
    branch: str | None
    children: dict[Fingerprint, _Node] = field(default_factory=dict)
    #: A request's prompt ends here (a later request extending it continues the conversation).
    prompt_end: bool = False


@dataclass(slots=True)
class _Tree:
    conversation_id: str | None
    #: Its place among the conversations (ties go to the later one).
    position: int
    root: _Node = field(default_factory=lambda: _Node(None, None))
    requests: list[Request] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    branches: int = 0


class Interner:
    """Replaces each message of a request's prompt by the copy an earlier request sent or got
    at the same place (the same messages before it), so that a log repeating its history holds
    each message once in memory, not once per request (and the records' parsed JSON of the
    copies is freed). Answers are never replaced: each keeps its own id and usage.

    >>> interner = Interner()
    >>> first = Request(0, [Message(seq=0, role="user", content="hi")])
    >>> again = Request(1, [Message(seq=0, role="user", content="hi")])
    >>> interner.intern(first); interner.intern(again)
    >>> again.prompt[0] is first.prompt[0]
    True
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Fingerprint, Message]] = {}

    def intern(self, request: Request) -> None:
        """Swap ``request``'s messages for earlier copies, in place."""
        running = 0
        prompt = request.prompt
        for index, message in enumerate(prompt + request.answer):
            key = fingerprint(message)
            running = hash((running, key))
            seen = self._seen.get(running)
            if seen is None:
                self._seen[running] = (key, message)
            elif seen[0] == key and index < len(prompt):
                prompt[index] = seen[1]


def conversations(requests: Sequence[Request]) -> list[Conversation]:
    """The conversations of ``requests`` (see the module docstring), in order of their first
    request."""
    _chain(requests)
    counts = Counter(r.conversation_id for r in requests if r.conversation_id is not None)
    trees: list[_Tree] = []
    by_id: dict[str, _Tree] = {}
    ends = _PromptEnds()
    placed: dict[int, bool] = {}
    for request in requests:
        key = request.conversation_id
        keys = [fingerprint(m) for m in request.prompt]
        tree: _Tree | None
        if key is not None and counts[key] > 1:
            tree = by_id.get(key)
            if tree is None:
                tree = by_id[key] = _Tree(key, len(trees))
                trees.append(tree)
        else:
            tree = _extended(ends.candidates(keys), keys)
            if tree is None:
                tree = _Tree(None, len(trees))
                trees.append(tree)
        _insert(tree, request, keys, placed)
        ends.add(keys, tree)
    return [Conversation(t.requests, t.messages, t.conversation_id, t.branches) for t in trees]


def _chain(requests: Sequence[Request]) -> None:
    """Give each request continuing a logged response that response's history (in place)."""
    by_response: dict[str, Request] = {}
    for request in requests:
        parent = by_response.get(request.previous_response_id or "")
        if parent is not None:
            history = parent.prompt + parent.answer
            own = request.prompt
            leading = 0
            while leading < len(own) and own[leading].role == "system":
                leading += 1
            repeated = [fingerprint(m) for m in own[:leading]] == [
                fingerprint(m) for m in history[:leading]
            ]
            request.prompt = history + (own[leading:] if repeated else own)
            if request.conversation_id is None:
                request.conversation_id = parent.conversation_id
        elif request.previous_response_id is not None and request.conversation_id is None:
            # It continues a response the log does not hold: those continuing it are together.
            request.conversation_id = request.previous_response_id
        if request.response_id is not None:
            by_response[request.response_id] = request


class _PromptEnds:
    """Which conversations hold a prompt, by a hash of the prompt's fingerprints: the
    conversations a new prompt may extend are found without walking every conversation."""

    def __init__(self) -> None:
        self._trees: dict[int, list[_Tree]] = {}

    @staticmethod
    def _prefix_hashes(keys: list[Fingerprint]) -> list[int]:
        hashes, running = [], 0
        for key in keys:
            running = hash((running, key))
            hashes.append(running)
        return hashes

    def add(self, keys: list[Fingerprint], tree: _Tree) -> None:
        if keys:
            listed = self._trees.setdefault(self._prefix_hashes(keys)[-1], [])
            if tree not in listed:
                listed.append(tree)

    def candidates(self, keys: list[Fingerprint]) -> list[_Tree]:
        """Conversations holding a prompt that may be a proper prefix of ``keys`` (a hash match:
        :func:`_extended` checks it on the tree)."""
        found: dict[int, _Tree] = {}
        for running in self._prefix_hashes(keys)[:-1]:
            for tree in self._trees.get(running, ()):
                found[tree.position] = tree
        return [found[position] for position in sorted(found)]


def _extended(trees: list[_Tree], keys: list[Fingerprint]) -> _Tree | None:
    """Of ``trees``, the conversation holding an earlier prompt that the prompt ``keys``
    extends (see the module docstring), or ``None``."""
    best: tuple[int, int] | None = None
    chosen: _Tree | None = None
    for tree in trees:
        position = tree.position
        node, depth, extends = tree.root, 0, False
        for key in keys:
            child = node.children.get(key)
            if child is None:
                break
            node, depth = child, depth + 1
            if node.prompt_end and depth < len(keys):
                extends = True
        if extends and (best is None or (depth, position) >= best):
            best, chosen = (depth, position), tree
    return chosen


def _insert(
    tree: _Tree, request: Request, prompt_keys: list[Fingerprint], placed: dict[int, bool]
) -> None:
    """Walk ``request``'s prompt (whose fingerprints are ``prompt_keys``) and answer down
    ``tree``, adding what it does not hold. A message another conversation holds already (the
    :class:`Interner` shares copies) is copied: each trace owns its messages (``placed``: the
    ids of the messages in any conversation, and whether their timestamp was given here)."""
    tree.requests.append(request)
    node = tree.root
    path = [(m, request.started) for m in request.prompt]
    path += [(m, request.ended) for m in request.answer]
    keys = prompt_keys + [fingerprint(m) for m in request.answer]
    for index, (message, time) in enumerate(path):
        key = keys[index]
        child = node.children.get(key)
        if child is None:
            # A request leaves the tree once: every later message of it is new too.
            branch = node.branch
            if node.children:
                tree.branches += 1
                branch = request.label
            if id(message) in placed:
                stamped_here = placed[id(message)]
                message = message.model_copy(deep=True)
                if stamped_here:
                    message.timestamp = None
                if request.source_line is not None:
                    message.source_line = request.source_line
            placed[id(message)] = message.timestamp is None
            message.branch = branch
            if message.timestamp is None:
                message.timestamp = time
            child = node.children[key] = _Node(message, branch)
            tree.messages.append(message)
        node = child
        if index == len(request.prompt) - 1:
            node.prompt_end = True


__all__ = ["Conversation", "Fingerprint", "Interner", "Request", "conversations", "fingerprint"]
