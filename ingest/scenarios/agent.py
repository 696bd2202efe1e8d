"""The simulated agent: its tools, what they return, and a builder for its conversations.

A scenario is written once, format-neutral, as a :class:`Conversation` of events (system, user,
assistant with tool calls, tool result). Every tool result carries its *expected* facts
(:class:`Outcome`: status, error type, whether it holds a suggestion; plus the expected pair state
and follow-through verdict), so the ground truth is stated where the situation is built, not
re-derived by the code under test. Writers (``ingest.scenarios.writers``) render a conversation in
one trace format; ``ingest.scenarios.truth`` turns the expectations into the ground truth.

Call ids are abstract labels (``c1``, ``c2`` …) until :meth:`Conversation.assign_ids` gives them
the id style of the chosen format; two calls sharing a label share an id (the reused-id case).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from db.contract.vocabulary import Role

FORMATS: tuple[str, ...] = ("openai_chat", "anthropic", "langchain")
#: Formats that declare the tools (so schema checks apply) and that give results a tool name.
DECLARES_TOOLS: frozenset[str] = frozenset({"openai_chat", "anthropic"})
NAMES_RESULTS: frozenset[str] = frozenset({"openai_chat", "langchain"})

#: How an error is signalled: only by its text, by an explicit flag *and* its text, only by the
#: explicit flag (text alone reads as success), or by the structured Tool Message protocol.
Channel = Literal["text", "flagged", "explicit_only", "protocol"]
#: States a result linked to a call can have (the call gets the same state).
LINKED_STATES: frozenset[str] = frozenset({"paired", "late_result", "result_before_call"})


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_TEXT = {"type": "string"}
#: The agent's six tools: name -> (description, JSON Schema of the arguments).
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "get_weather": (
        "Current weather for a city.",
        _schema({"city": {**_TEXT, "description": "City name, e.g. Paris"}}, ["city"]),
    ),
    "search_flights": (
        "Search flights between two airports on a date.",
        _schema(
            {
                "origin": {**_TEXT, "description": "IATA code of the departure airport"},
                "destination": {**_TEXT, "description": "IATA code of the arrival airport"},
                "date": {**_TEXT, "description": "Departure date, YYYY-MM-DD"},
            },
            ["origin", "destination", "date"],
        ),
    ),
    "get_user": ("Look up a customer profile.", _schema({"user_id": _TEXT}, ["user_id"])),
    "book_flight": (
        "Book a seat on a flight for a customer.",
        _schema({"flight_id": _TEXT, "user_id": _TEXT}, ["flight_id", "user_id"]),
    ),
    "read_file": ("Read a text file from the workspace.", _schema({"path": _TEXT}, ["path"])),
    "run_sql": ("Run a read-only SQL query.", _schema({"query": _TEXT}, ["query"])),
}


@dataclass(frozen=True, slots=True)
class Outcome:
    """A tool result's content and the facts ToolLens must derive from it."""

    content: str
    status: str
    error_type: str | None = None
    channel: Channel = "text"
    #: The content gives the model advice for its next step (protocol ``suggestion`` or a hint).
    suggestion: bool = False
    #: The content is far above the 2,000-token budget.
    oversized: bool = False


def ok(content: str, *, oversized: bool = False) -> Outcome:
    """A successful result."""
    return Outcome(content, "success", oversized=oversized)


def text_error(content: str, error_type: str, *, suggestion: bool = False) -> Outcome:
    """An error only the text says (``Error: …``, HTTP codes, tracebacks)."""
    return Outcome(content, "error", error_type, "text", suggestion)


def flagged_error(content: str, error_type: str, *, explicit_only: bool = False) -> Outcome:
    """An error marked by the format's explicit flag (Anthropic ``is_error``, LangChain
    ``status``); with ``explicit_only`` the text alone would read as a success."""
    return Outcome(content, "error", error_type, "explicit_only" if explicit_only else "flagged")


def protocol(
    status: str,
    summary: str,
    *,
    error_type: str | None = None,
    suggestion: str | None = None,
    data: Any = None,
) -> Outcome:
    """A result in the structured Tool Message protocol (JSON with ``status`` …)."""
    body: dict[str, Any] = {"status": status}
    if error_type is not None:
        body["error_type"] = error_type
    body["summary"] = summary
    if suggestion is not None:
        body["suggestion"] = suggestion
    if data is not None:
        body["data"] = data
    content = orjson.dumps(body).decode()
    return Outcome(content, status, error_type, "protocol", suggestion is not None)


@dataclass(slots=True)
class Call:
    """One tool call; ``args is None`` means ``raw_args`` did not parse."""

    tool: str
    args: dict[str, Any] | None
    label: str
    raw_args: str | None = None
    call_id: str | None = None

    def arguments_text(self) -> str:
        """The arguments as a JSON string (the raw text when they do not parse)."""
        if self.raw_args is not None:
            return self.raw_args
        return orjson.dumps(self.args).decode()


@dataclass(slots=True)
class Result:
    """One Tool Message and what ToolLens must conclude about it."""

    outcome: Outcome
    label: str
    name: str | None
    state: str
    #: The call this result answers (``None`` for orphan and duplicate results).
    answers: Call | None
    verdict: str | None
    result_id: str | None = None


@dataclass(slots=True)
class Event:
    """One message of a conversation, ``at`` seconds after the conversation started."""

    role: Role
    at: int
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    result: Result | None = None


class Conversation:
    """Builder of one scenario: call the methods in conversation order."""

    def __init__(
        self, name: str, category: str, rng: random.Random, formats: tuple[str, ...] = FORMATS
    ) -> None:
        self.name = name
        self.category = category
        #: Balancing key when formats are assigned (a category, or a finer part of one).
        self.group = category
        self.rng = rng
        self.events: list[Event] = []
        self._formats = formats
        self._labels = 0
        self._now = 0
        self._pending_wait: int | None = None

    def _add(self, event_role: Role, **fields: Any) -> Event:
        if self.events:
            gap = self._pending_wait if self._pending_wait is not None else self.rng.randint(1, 4)
            self._now += gap
        self._pending_wait = None
        event = Event(role=event_role, at=self._now, **fields)
        self.events.append(event)
        return event

    def wait(self, seconds: int) -> None:
        """Make the next message come exactly ``seconds`` after the previous one."""
        self._pending_wait = seconds

    def system(self, text: str) -> None:
        """The system prompt."""
        self._add("system", text=text)

    def user(self, text: str) -> None:
        """A user message."""
        self._add("user", text=text)

    def say(self, text: str) -> None:
        """An assistant message without tool calls."""
        self._add("assistant", text=text)

    def new_call(
        self,
        tool: str,
        args: dict[str, Any] | None,
        *,
        label: str | None = None,
        raw_args: str | None = None,
    ) -> Call:
        """A call not yet emitted (see :meth:`emit`); ``label`` reuses another call's id."""
        if label is None:
            self._labels += 1
            label = f"c{self._labels}"
        return Call(tool=tool, args=args, label=label, raw_args=raw_args)

    def emit(self, calls: list[Call], text: str = "") -> None:
        """An assistant message carrying ``calls`` (parallel when more than one)."""
        self._add("assistant", text=text, calls=calls)

    def call(self, tool: str, args: dict[str, Any], *, text: str = "") -> Call:
        """An assistant message with one tool call."""
        made = self.new_call(tool, args)
        self.emit([made], text)
        return made

    def calls(self, *specs: tuple[str, dict[str, Any]], text: str = "") -> list[Call]:
        """An assistant message with parallel tool calls."""
        made = [self.new_call(tool, args) for tool, args in specs]
        self.emit(made, text)
        return made

    def result(
        self,
        call: Call,
        outcome: Outcome,
        *,
        state: str = "paired",
        verdict: str | None = None,
        name: str | None = None,
    ) -> None:
        """The Tool Message answering ``call`` (``state="duplicate_result"``: answering again).

        ``verdict`` is the expected follow-through verdict, required exactly when the outcome
        holds a suggestion; ``name`` overrides the tool name the result gives (name mismatch).
        """
        if (verdict is None) == outcome.suggestion:
            raise ValueError(f"{self.name}: a verdict goes with, and only with, a suggestion")
        if state not in LINKED_STATES and state != "duplicate_result":
            raise ValueError(f"{self.name}: use orphan() for an orphan result")
        linked = call if state in LINKED_STATES else None
        self._add(
            "tool",
            result=Result(outcome, call.label, name or call.tool, state, linked, verdict),
        )

    def orphan(self, tool: str, outcome: Outcome) -> None:
        """A Tool Message whose id no call in the conversation has."""
        self._add("tool", result=Result(outcome, "orphan", tool, "orphan_result", None, None))

    def answer(self, call: Call) -> None:
        """The successful result the simulated tool gives for ``call``."""
        self.result(call, ok(simulate(call, self.rng)))

    def allowed_formats(self) -> tuple[str, ...]:
        """Formats that can express every event of this conversation faithfully."""
        allowed = set(self._formats)
        for event in self.events:
            if any(c.raw_args is not None for c in event.calls):
                allowed &= {"openai_chat"}  # only OpenAI carries arguments as a string
            if event.result is None:
                continue
            result, outcome = event.result, event.result.outcome
            if outcome.channel == "explicit_only":
                allowed &= {"anthropic", "langchain"}
            if outcome.channel == "protocol" and outcome.status != "success":
                # LangChain's ToolMessage always states a status; it would contradict this one.
                allowed &= {"openai_chat", "anthropic"}
            if result.answers is not None and result.name != result.answers.tool:
                allowed &= NAMES_RESULTS
        return tuple(f for f in FORMATS if f in allowed)

    def assign_ids(self, fmt: str, rng: random.Random) -> None:
        """Give every call and result the concrete id its label maps to, in ``fmt``'s style."""
        ids: dict[str, str] = {}

        def concrete(label: str) -> str:
            if label not in ids:
                ids[label] = make_id(fmt, rng)
            return ids[label]

        for event in self.events:
            for made in event.calls:
                made.call_id = concrete(made.label)
            if event.result is not None:
                event.result.result_id = concrete(event.result.label)


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def make_id(fmt: str, rng: random.Random) -> str:
    """A tool call id in the style of ``fmt`` (``toolu_01…`` for Anthropic, ``call_…`` else)."""
    if fmt == "anthropic":
        return "toolu_01" + "".join(rng.choice(_ALNUM) for _ in range(22))
    return "call_" + "".join(rng.choice(_ALNUM) for _ in range(24))


_CONDITIONS = ("clear sky", "light rain", "overcast", "snow showers", "sunny intervals", "fog")
_NAMES = ("Mia Li", "Omar Haddad", "Lena Vogel", "Ravi Menon", "Ana Souza", "Kenji Ito")


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def flight_list(origin: str, destination: str, date: str, rng: random.Random) -> list[Any]:
    """Flights a search returns. Prices stay within 120-399 so that no HTTP-error-like number
    (4xx/5xx) appears in a successful result."""
    return [
        {
            "flight_id": f"{rng.choice(('AF', 'LH', 'BA', 'KL'))}{rng.randint(1000, 9899)}",
            "origin": origin,
            "destination": destination,
            "departs": f"{date}T{rng.randint(6, 21):02d}:{rng.choice((0, 15, 30, 45)):02d}",
            "price_eur": rng.randint(120, 399),
        }
        for _ in range(rng.randint(1, 3))
    ]


def simulate(call: Call, rng: random.Random) -> str:
    """What the simulated tool returns on success for ``call``."""
    args = call.args or {}
    if call.tool == "get_weather":
        return _dumps(
            {
                "city": args.get("city"),
                "temperature_c": rng.randint(-5, 32),
                "conditions": rng.choice(_CONDITIONS),
            }
        )
    if call.tool == "search_flights":
        return _dumps(flight_list(args["origin"], args["destination"], args["date"], rng))
    if call.tool == "get_user":
        return _dumps({"user_id": args.get("user_id"), "name": rng.choice(_NAMES), "tier": "gold"})
    if call.tool == "book_flight":
        code = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(6))
        seat = f"{rng.randint(3, 38)}{rng.choice('ABCDEF')}"
        return _dumps({"booking_id": code, "flight_id": args.get("flight_id"), "seat": seat})
    if call.tool == "read_file":
        return f"# {args.get('path')}\n\nPacking list: passport, charger, rain jacket.\n"
    if call.tool == "run_sql":
        return _dumps(
            [{"city": c, "bookings": rng.randint(1, 99)} for c in ("Paris", "Oslo", "Lima")]
        )
    raise ValueError(f"the simulated agent has no tool {call.tool!r}")


# A word list kept as one string: as a list literal it would take fifty lines.
_GUIDE_WORDS = (  # noqa: SIM905
    "the city river museum quiet morning train station harbor garden bridge market coffee street "
    "old town walk north south view hill bakery square festival evening local fresh bread lantern "
    "window island ferry tram palace library park summer winter spring autumn stone tower canal "
    "path meadow village light shadow table breakfast"
).split()


def guide_dump(rng: random.Random, words: int = 10800) -> str:
    """A long Markdown travel guide (about 12k tokens): the oversized-result case. Only plain
    words and small section numbers, so nothing in it looks like an error."""
    lines: list[str] = []
    for index in range(words // 12):
        if index % 25 == 0:
            lines.append(f"\n## Section {index // 25 + 1}\n")
        lines.append(" ".join(rng.choice(_GUIDE_WORDS) for _ in range(12)) + ".")
    return "\n".join(lines) + "\n"
