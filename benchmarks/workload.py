"""A deterministic, realistic import workload: OpenAI Chat JSONL, one conversation per line.

Each line is ``{"id", "model", "tools", "messages": [...]}`` with system, user, assistant (text or
``tool_calls``) and ``role: "tool"`` messages. Sizes follow what real agent logs show: a long
system prompt shared by many runs, most tool results 50-500 characters with a long tail up to
100k (lognormal body, Pareto tail), some ``Error: …`` results, tracebacks, protocol JSON and
retries of a failed call. Tool results carry about a fifth of all characters.

The same ``(messages, seed)`` always gives the same bytes, so runs are comparable and a cached
file can be reused (:func:`ensure_workload`).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import orjson

#: Bump when the generator's output changes, so cached workload files are rebuilt.
WORKLOAD_VERSION = 3
DEFAULT_MESSAGES = 200_000
DEFAULT_SEED = 515
#: Seed of the text corpora the conversations are cut from (constant across workloads).
CORPUS_SEED = 1

#: Median messages per conversation (lognormal), and the clamp applied to it.
TRACE_MEDIAN_MESSAGES = 22
TRACE_MIN_MESSAGES, TRACE_MAX_MESSAGES = 4, 160
#: Share of tool results drawn from the Pareto tail (2k-100k characters) instead of the body.
RESULT_TAIL_SHARE = 0.03
RESULT_TAIL_MIN, RESULT_TAIL_MAX = 2_000, 100_000
#: Share of tool calls whose arguments string is cut in half (not valid JSON).
INVALID_ARGUMENTS_SHARE = 0.005
#: Share of tool results that are errors (plain text, traceback, JSON or protocol).
ERROR_SHARE = 0.08

_WORD_TEXT = (
    "the of and to in is that for it as with was on be by this are from or have an they which "
    "one you were her all she there would their we him been has when who will more no if out so "
    "said what up its about into than them can only other new some could time these two may then "
    "do first any my now such like our over man me even most made after also did many before "
    "must through back years where much your way well down should because each just those people "
    "flight booking reservation passenger baggage cabin economy business refund cancel modify "
    "payment certificate gift card user order status shipped delivered invoice customer account "
    "address city country weather forecast temperature query result record table column index "
    "error timeout retry request response server client token budget model agent tool call "
    "function argument parameter value string number list object field schema valid invalid "
    "file path directory line code test build deploy version release commit branch merge review"
)
_WORDS: tuple[str, ...] = tuple(_WORD_TEXT.split())

_SYSTEM_HEAD = (
    "# {domain} Agent Policy\n\nThe current time is 2024-05-15 15:00:00 EST.\n\n"
    "As a {domain} agent, you help users with their requests using the tools provided. "
    "Before taking any action that updates the database, list the details and obtain explicit "
    "user confirmation (yes) to proceed.\n\n"
)
_DOMAINS = ("airline", "retail", "support", "devops", "analytics", "travel")


@dataclass(frozen=True, slots=True)
class WorkloadStats:
    """What a generated workload holds (also stored next to the file as ``.meta.json``)."""

    messages: int
    seed: int
    invalid_arguments: float
    version: int
    traces: int
    tool_messages: int
    error_results: int
    chars: int
    tool_chars: int
    bytes: int

    @property
    def tool_char_share(self) -> float:
        """Fraction of all message characters that are in tool results."""
        return self.tool_chars / self.chars if self.chars else 0.0


def _tool(name: str, description: str, **params: str) -> dict[str, Any]:
    properties = {p: {"type": kind} for p, kind in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(params)},
        },
    }


TOOLS: tuple[dict[str, Any], ...] = (
    _tool("get_user_details", "Get the details of a user.", user_id="string"),
    _tool("search_flights", "Search direct flights.", origin="string", destination="string",
          date="string"),
    _tool("read_file", "Read a file of the repository.", path="string"),
    _tool("run_sql", "Run a read-only SQL query.", query="string"),
    _tool("web_search", "Search the web.", query="string"),
    _tool("get_weather", "Current weather of a city.", city="string"),
    _tool("send_email", "Send an email.", to="string", subject="string", body="string"),
    _tool("http_get", "Fetch a URL.", url="string"),
    _tool("calculate", "Evaluate an arithmetic expression.", expression="string"),
    _tool("list_directory", "List a directory.", path="string"),
)  # fmt: skip
_TOOL_NAMES = tuple(t["function"]["name"] for t in TOOLS)
#: Tools whose results are JSON documents (the others answer in text).
_JSON_TOOLS = frozenset({"get_user_details", "search_flights", "run_sql", "web_search"})


@dataclass(frozen=True, slots=True)
class _Corpora:
    prose: str
    code: str
    systems: tuple[str, ...]


@cache
def _corpora() -> _Corpora:
    # Slicing a pre-built corpus is ~50x faster than drawing every word, and the text still
    # tokenizes like prose. The corpora are constants (their own fixed seed), built once per
    # process; the workload seed only steers the conversations.
    rng = random.Random(CORPUS_SEED)
    prose = " ".join(rng.choice(_WORDS) for _ in range(250_000))
    lines = [
        f"{' ' * 4 * rng.randrange(3)}{rng.choice(('def', 'return', 'if', 'for'))} "
        f"{rng.choice(_WORDS)}_{rng.randrange(100)}({rng.choice(_WORDS)}, {rng.randrange(999)})"
        for _ in range(20_000)
    ]
    systems = tuple(
        _SYSTEM_HEAD.format(domain=d)
        + prose[i * 20_000 : i * 20_000 + rng.randrange(3_000, 16_000)]
        for i, d in enumerate(_DOMAINS)
    )
    return _Corpora(prose=prose, code="\n".join(lines), systems=systems)


class _TraceMaker:
    """Builds conversations from one seeded random stream (the only source of variation)."""

    def __init__(self, seed: int, invalid_arguments: float) -> None:
        self.rng = random.Random(seed)
        self.invalid_arguments = invalid_arguments
        corpora = _corpora()
        self.prose, self.code, self.systems = corpora.prose, corpora.code, corpora.systems

    def text(self, n: int, corpus: str | None = None) -> str:
        """``n`` characters of prose (or of ``corpus``) from a random place."""
        src = corpus if corpus is not None else self.prose
        n = min(n, len(src) - 1)
        start = self.rng.randrange(len(src) - n)
        return src[start : start + n]

    def result_size(self) -> int:
        rng = self.rng
        if rng.random() < RESULT_TAIL_SHARE:
            return min(int(RESULT_TAIL_MIN * rng.paretovariate(1.1)), RESULT_TAIL_MAX)
        return max(20, min(int(rng.lognormvariate(math.log(170), 0.6)), 2_000))

    def arguments(self, tool: str) -> dict[str, Any]:
        rng = self.rng
        word = rng.choice(_WORDS)
        by_tool: dict[str, dict[str, Any]] = {
            "get_user_details": {"user_id": f"{word}_{rng.randrange(10_000)}"},
            "search_flights": {"origin": "JFK", "destination": rng.choice(("SEA", "LAX", "ORD")),
                               "date": f"2024-05-{rng.randrange(10, 31)}"},
            "read_file": {"path": f"src/{word}/{rng.choice(_WORDS)}.py"},
            "run_sql": {"query": f"SELECT * FROM {word} WHERE id > {rng.randrange(1000)}"},
            "web_search": {"query": self.text(rng.randrange(20, 80)).strip()},
            "get_weather": {"city": rng.choice(("Paris", "Tokyo", "Austin", "Berlin"))},
            "send_email": {"to": f"{word}@example.com", "subject": self.text(30),
                           "body": self.text(rng.randrange(100, 600))},
            "http_get": {"url": f"https://example.com/{word}/{rng.randrange(10_000)}"},
            "calculate": {"expression": f"{rng.randrange(999)} * {rng.randrange(99)}"},
            "list_directory": {"path": f"src/{word}"},
        }  # fmt: skip
        return by_tool[tool]

    def success(self, tool: str, size: int) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.02:
            return rng.choice(("success", "ok", "done"))
        if roll < 0.07:
            doc = {"status": "success", "summary": self.text(60), "data": self.text(size)}
            return orjson.dumps(doc).decode()
        if tool in _JSON_TOOLS:
            rows: list[dict[str, Any]] = []
            used = 2
            while used < size:
                name = self.text(rng.randrange(8, 30))
                note = self.text(rng.randrange(20, 120))
                rows.append(
                    {"id": rng.randrange(1 << 30), "name": name, "value": rng.randrange(10_000),
                     "note": note}
                )  # fmt: skip
                used += 60 + len(name) + len(note)
            return orjson.dumps({"results": rows, "count": len(rows)}).decode()
        if tool in ("read_file", "list_directory"):
            return self.text(size, self.code)
        if tool == "calculate":
            return str(rng.randrange(100_000))
        return self.text(size)

    def error(self, tool: str) -> str:
        rng = self.rng
        word = rng.choice(_WORDS)
        kind = rng.randrange(7)
        if kind == 0:
            return f"Error: rate limit exceeded (429). Retry after {rng.randrange(2, 30)}s."
        if kind == 1:
            return f"Error: {word} '{word}_{rng.randrange(10_000)}' not found"
        if kind == 2:
            return f"Error: missing required parameter '{word}'"
        if kind == 3:
            frames = "".join(
                f'  File "/app/tools/{tool}.py", line {rng.randrange(10, 400)}, in {w}\n'
                f"    {self.text(40, self.code).strip()}\n"
                for w in rng.sample(_WORDS, rng.randrange(2, 8))
            )
            return f"Traceback (most recent call last):\n{frames}KeyError: '{word}'"
        if kind == 4:
            return "HTTP 503 Service Unavailable: upstream connect error"
        if kind == 5:
            return orjson.dumps({"error": f"timeout after {rng.randrange(5, 60)}s"}).decode()
        doc = {"status": "error", "error_type": "not_found", "summary": f"No {word} matches.",
               "suggestion": f"use {rng.choice(_TOOL_NAMES)} instead"}  # fmt: skip
        return orjson.dumps(doc).decode()

    def assistant_text(self) -> str:
        rng = self.rng
        return self.text(int(rng.lognormvariate(math.log(600), 0.8)) + 10).strip()

    def trace(self, index: int, seed: int, length: int) -> dict[str, Any]:
        """One conversation of exactly ``length`` messages (cut mid-turn when the turn is long)."""
        rng = self.rng
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": rng.choice(self.systems)},
            {"role": "user", "content": self.text(rng.randrange(40, 600)).strip()},
        ]
        ids = (f"call_{seed}_{index}_{n}" for n in itertools.count(1))
        while len(messages) < length:
            if rng.random() < 0.3:
                messages.append({"role": "assistant", "content": self.assistant_text()})
                messages.append({"role": "user", "content": self.text(rng.randrange(20, 400))})
            else:
                self.tool_turn(messages, ids, length)
        return {
            "id": f"bench-{seed}-{index:07d}",
            "model": rng.choice(("gpt-4o-2024-08-06", "gpt-4.1", "o3-mini")),
            "tools": list(TOOLS),
            "messages": messages[:length],
        }

    def tool_turn(self, messages: list[dict[str, Any]], ids: Iterator[str], length: int) -> None:
        """Append 1-3 parallel calls with their results, then retries of the failed ones."""
        rng = self.rng
        calls: list[tuple[str, str]] = []
        for _ in range(rng.choices((1, 2, 3), (80, 15, 5))[0]):
            tool = rng.choice(_TOOL_NAMES)
            args = orjson.dumps(self.arguments(tool)).decode()
            if rng.random() < self.invalid_arguments:
                args = args[: len(args) // 2]  # a truncated, unparseable argument string
            calls.append((tool, args))
        for attempt in range(4):
            if not calls or len(messages) >= length:
                return
            call_ids = [next(ids) for _ in calls]
            messages.append(
                {
                    "role": "assistant",
                    "content": self.assistant_text() if rng.random() < 0.2 else None,
                    "tool_calls": [
                        {"id": cid, "type": "function", "function": {"name": t, "arguments": a}}
                        for cid, (t, a) in zip(call_ids, calls, strict=True)
                    ],
                }
            )
            failed = []
            for cid, (tool, args) in zip(call_ids, calls, strict=True):
                if rng.random() < ERROR_SHARE:
                    content = self.error(tool)
                    failed.append((tool, args))
                else:
                    content = self.success(tool, self.result_size())
                messages.append({"role": "tool", "tool_call_id": cid, "content": content})
            # Agents often repeat a failed call unchanged (new id, same arguments): the loops
            # and retries-after-error the analysis has to find.
            calls = failed if attempt < 3 and rng.random() < 0.5 else []


def generate_traces(
    messages: int, seed: int = DEFAULT_SEED, invalid_arguments: float = INVALID_ARGUMENTS_SHARE
) -> Iterator[dict[str, Any]]:
    """Conversations holding exactly ``messages`` messages in total, the same for the same seed.

    ``invalid_arguments``: share of calls whose arguments string is not valid JSON.

    >>> sum(len(t["messages"]) for t in generate_traces(50, seed=1))
    50
    """
    maker = _TraceMaker(seed, invalid_arguments)
    rng = maker.rng
    remaining, index = messages, 0
    while remaining > 0:
        drawn = int(rng.lognormvariate(math.log(TRACE_MEDIAN_MESSAGES), 0.6))
        length = min(max(drawn, TRACE_MIN_MESSAGES), TRACE_MAX_MESSAGES, remaining)
        yield maker.trace(index, seed, length)
        remaining -= length
        index += 1


def write_workload(
    path: Path,
    messages: int,
    seed: int = DEFAULT_SEED,
    invalid_arguments: float = INVALID_ARGUMENTS_SHARE,
) -> WorkloadStats:
    """Write the workload as JSONL to ``path`` and return what it holds."""
    traces = tool_messages = errors = chars = tool_chars = size = 0
    with path.open("wb") as out:
        for trace in generate_traces(messages, seed, invalid_arguments):
            line = orjson.dumps(trace) + b"\n"
            out.write(line)
            size += len(line)
            traces += 1
            for m in trace["messages"]:
                n = len(m["content"] or "")
                chars += n
                if m["role"] == "tool":
                    tool_messages += 1
                    tool_chars += n
                    errors += _looks_like_error(m["content"])
    return WorkloadStats(
        messages=messages,
        seed=seed,
        invalid_arguments=invalid_arguments,
        version=WORKLOAD_VERSION,
        traces=traces,
        tool_messages=tool_messages,
        error_results=errors,
        chars=chars,
        tool_chars=tool_chars,
        bytes=size,
    )


def _looks_like_error(content: str) -> bool:
    return content.startswith(("Error:", "Traceback", "HTTP 5", '{"error"', '{"status":"error"'))


def ensure_workload(
    directory: Path,
    messages: int = DEFAULT_MESSAGES,
    seed: int = DEFAULT_SEED,
    invalid_arguments: float = INVALID_ARGUMENTS_SHARE,
) -> tuple[Path, WorkloadStats]:
    """The workload file in ``directory``, generated unless a complete one with the same
    parameters is already there (its ``.meta.json`` is written last, so a partial file is
    never reused)."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"openai-chat-{messages}-seed{seed}-inv{invalid_arguments:g}-v{WORKLOAD_VERSION}"
    path = directory / f"{name}.jsonl"
    meta = path.with_suffix(".meta.json")
    if path.is_file() and meta.is_file():
        stored = orjson.loads(meta.read_bytes())
        if set(stored) == set(WorkloadStats.__dataclass_fields__):
            cached = WorkloadStats(**stored)
            if cached.bytes == path.stat().st_size:
                return path, cached
    partial = path.with_suffix(".partial")
    stats = write_workload(partial, messages, seed, invalid_arguments)
    partial.replace(path)
    meta.write_bytes(orjson.dumps(asdict(stats)))
    return path, stats
