"""A large synthetic store for the dashboard benchmark, written straight through
``db.writes.traces``.

Running a million messages through the import pipeline takes minutes (tokenizing dominates);
the dashboard only reads stored rows, so this module builds the rows an import would have
stored — same tables, same derived facts, realistic proportions — and writes them with
:func:`db.writes.traces.write_traces` in large batches:

* 20 tools, each used by several of 4 agents; 5 models; 6 imports of 5 days each, trace starts
  spread over 30 days, message timestamps seconds apart;
* conversations of 4-160 messages (lognormal, median 22): system prompt, user turn, assistant
  turns with one or two tool calls and their Tool Messages, a final answer;
* about 10% of results are errors of 12 types, recognized explicitly, by the protocol or by
  text rules, from message templates with variable words (about 3,400 fingerprints on a
  million messages, computed by the importer's own :func:`ingest.importing.rows.error_fingerprint`);
* 45% of errors carry a suggestion with a verdict; result tokens lognormal with a Pareto tail
  (about 8% over the 2,000 budget); 6% of traces loop (one signature 3-8 times in a row), some
  ping-pong; a few unanswered calls, orphan results and unparsed arguments; findings to match.

Raw payloads are left out (``raw`` is nullable and no page reads it): they would double the
file without changing what the dashboard does. The same ``(messages, seed)`` always gives the
same rows; the store records both, so a cached file is reused only when they match.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, select

from db.contract import rows as contract
from db.contract.vocabulary import DEFAULT_ENCODING
from db.dialect import analyze
from db.engine import make_engine
from db.rollups import upkeep as rollups
from db.schema import ImportRun
from db.session import ANALYZED_TABLES
from db.writes.traces import TraceRows, finish_import, start_import, write_traces
from ingest.importing.rows import error_fingerprint, trace_title

#: Bump when the generated rows change, so cached stores are rebuilt.
STORE_VERSION = 3
DEFAULT_MESSAGES = 1_000_000
DEFAULT_SEED = 11
#: Traces per ``write_traces`` call (one transaction each).
BATCH_TRACES = 1_000
T0 = datetime(2026, 10, 1, tzinfo=UTC)
DAYS, IMPORTS = 30, 6
BUDGET = 2_000
CONTENT_MAX_CHARS = 8_000
AGENTS = ("support-bot", "travel-agent", "coder", "researcher")
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "claude-haiku-4", "gemini-2.5-pro")
MODEL_WEIGHTS = (30, 25, 20, 15, 10)
FORMATS = ("openai_chat", "anthropic", "claude_code", "langchain")
#: (tool, error rate, median result tokens)
TOOLS: tuple[tuple[str, float, int], ...] = (
    ("search_flights", 0.12, 400), ("book_flight", 0.15, 120), ("cancel_booking", 0.08, 80),
    ("get_user", 0.05, 150), ("update_user", 0.10, 60), ("get_weather", 0.09, 90),
    ("web_search", 0.11, 900), ("fetch_url", 0.18, 1500), ("read_file", 0.06, 700),
    ("write_file", 0.07, 40), ("run_tests", 0.20, 1200), ("run_sql", 0.13, 600),
    ("list_orders", 0.04, 350), ("get_order", 0.06, 200), ("refund_order", 0.09, 70),
    ("send_email", 0.05, 30), ("calendar_lookup", 0.07, 160), ("translate", 0.03, 140),
    ("calculate", 0.02, 20), ("lookup_docs", 0.08, 1000),
)  # fmt: skip
#: error type: (weight, message templates, rule, suggestion kind or None)
ERRORS: dict[str, tuple[int, tuple[str, ...], str, str | None]] = {
    "rate_limit": (14, ("Error: 429 Too Many Requests. Retry after {n}s.",
                        "Rate limit exceeded for key {id}; retry after {n} seconds"),
                   "http_429", "retry_after"),
    "timeout": (12, ("Error: request timed out after {n} s", "TimeoutError: read timed out"),
                "timeout_text", "retry_after"),
    "unavailable": (8, ("Error: 503 Service Unavailable", "ConnectionError: host {w} refused"),
                    "http_5xx", None),
    "auth": (6, ("Error: 403 Forbidden: token lacks scope {w}", "Error: 401 Unauthorized"),
             "http_401_403", "ask_user"),
    "not_found": (16, ("Error: {w} '{id}' not found", "No {w} with id {id} exists."),
                  "not_found_text", "use_instead"),
    "invalid_params": (14, ("Error: missing required parameter {w}",
                            "Validation error: field '{w}' must be a string"),
                       "validation_text", "missing_param"),
    "invalid_arguments_json": (3, ("Error: arguments are not valid JSON",), "arguments_json",
                               None),
    "unknown_tool": (2, ("Error: unknown tool '{w}'",), "unknown_tool_text", "use_instead"),
    "tool_exception": (10, ("Traceback (most recent call last):\n  File \"tool.py\", line {n}\n"
                            "KeyError: '{w}'",), "traceback", None),
    "conflict": (4, ("Error: conflict, {w} changed since it was read",), "conflict_text",
                 "missing_param"),
    "quota": (3, ("Error: monthly quota of {n} requests exceeded",), "quota_text", None),
    "other": (8, ("Error: something went wrong ({w})", "error"), "error_prefix", None),
}  # fmt: skip
SOURCES = (("explicit", 20), ("protocol", 15), ("inferred", 65))
VERDICTS = (("followed", 45), ("ignored", 30), ("unclear", 10))
_WORDS = [
    "flight", "booking", "passenger", "order", "user", "account", "city", "weather", "file",
    "path", "query", "table", "column", "result", "record", "status", "payment", "refund",
    "invoice", "token", "model", "agent", "tool", "request", "response", "value",
]  # fmt: skip


def _corpus(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(CONTENT_MAX_CHARS // 3)]
    return " ".join(words)


def marker(messages: int, seed: int) -> str:
    """What the store records about itself (the first path of its first import)."""
    return f"ui-bench v{STORE_VERSION} messages={messages} seed={seed}"


def store_marker(engine: Engine) -> str | None:
    """The marker of a store built here, ``None`` for any other store."""
    with engine.connect() as conn:
        paths = conn.execute(select(ImportRun.paths).order_by(ImportRun.id).limit(1)).scalar()
    return str(paths[0]) if paths and str(paths[0]).startswith("ui-bench ") else None


def _duration_ms(tokens: int) -> float:
    """A tool execution time derived from the result's size (no draw from the generator, so
    the store's other figures stay as they were): 20 ms to about 5 s."""
    return float(20 + tokens * 37 % 5000)


@dataclass
class _Trace:
    """One conversation being generated: its rows and running facts."""

    t: datetime
    messages: list[contract.MessageRecord] = field(default_factory=list)
    tool_results: list[contract.ToolResultRecord] = field(default_factory=list)
    findings: list[contract.FindingRecord] = field(default_factory=list)
    seq: int = 0
    #: Tool call rows, mutable until the trace is finished (result seq, pair state, run length).
    calls: list[list[Any]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    last_error: dict[str, bool] = field(default_factory=dict)
    errors: int = 0
    loop_signatures: set[str] = field(default_factory=set)


class StoreGenerator:
    """Deterministic rows of the synthetic store (see the module docstring)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.corpus = _corpus(self.rng)
        self.error_types = list(ERRORS)
        self.error_weights = [ERRORS[e][0] for e in self.error_types]
        suggestible = sum(w for w, _, _, kind in ERRORS.values() if kind is not None)
        #: Chance that an error of a type that can carry advice does (45% of all errors).
        self.suggestion_share = 0.45 * sum(self.error_weights) / suggestible
        tools = [t[0] for t in TOOLS]
        self.agent_tools = {
            agent: random.Random(f"{seed}:{agent}").sample(tools, 9) for agent in AGENTS
        }
        self.tool_facts = {name: (rate, median) for name, rate, median in TOOLS}

    def _text(self, chars: int) -> str:
        start = self.rng.randrange(0, max(1, len(self.corpus) - chars))
        return self.corpus[start : start + chars]

    def _weighted(self, pairs: tuple[tuple[str, int], ...]) -> str:
        return self.rng.choices([p[0] for p in pairs], [p[1] for p in pairs])[0]

    def _tokens(self, median: int) -> int:
        if self.rng.random() < 0.01:  # the Pareto tail of huge results
            return min(60_000, int(2_000 * self.rng.paretovariate(1.2)))
        return max(1, int(self.rng.lognormvariate(math.log(median), 1.0)))

    def _message(self, tr: _Trace, role: str, content: str, tokens: int) -> int:
        seq = tr.seq
        tr.messages.append(
            contract.MessageRecord(
                seq, role, content, tr.t, tokens, len(content), len(content), None, None, None,
                None, None, None,
            )
        )  # fmt: skip
        tr.seq += 1
        tr.t += timedelta(seconds=self.rng.randint(1, 9))
        return seq

    def trace(self, index: int, messages: int) -> tuple[int, TraceRows]:
        """The import (week) and rows of trace number ``index``, of about ``messages`` messages."""
        rng = self.rng
        start = T0 + timedelta(seconds=rng.uniform(0, DAYS * 86_400))
        agent = rng.choice(AGENTS)
        tr = _Trace(start)
        self._message(tr, "system", self._text(600), rng.randint(500, 1_500))
        self._message(tr, "user", self._text(rng.randint(40, 400)), rng.randint(10, 120))
        loop_at = rng.randrange(2, max(3, messages - 4)) if rng.random() < 0.06 else -1
        ping_pong = rng.random() < 0.01
        repeat: tuple[str, int, int] | None = None
        tools = self.agent_tools[agent]
        while tr.seq < messages - 1:
            if repeat is None and loop_at >= 0 and tr.seq >= loop_at:
                repeat, loop_at = (rng.choice(tools), rng.randrange(50), rng.randint(3, 8)), -1
            width = 2 if repeat is None and rng.random() < 0.1 else 1
            seq = self._message(tr, "assistant", "", rng.randint(15, 90))
            planned = []
            for index_in_turn in range(width):
                if repeat is not None:
                    tool, arg, left = repeat
                    repeat = (tool, arg, left - 1) if left > 1 else None
                elif ping_pong and 4 < tr.seq < 20:
                    tool, arg = tools[seq % 2], 0
                else:
                    tool, arg = rng.choice(tools), rng.randrange(400)
                alternating = ping_pong and arg == 0 and tool in tools[:2]
                planned.append(self._call(tr, seq, index_in_turn, tool, arg, alternating))
            for call in planned:
                self._result(tr, call)
        self._message(tr, "assistant", self._text(rng.randint(80, 800)), rng.randint(20, 200))
        self._orphan(tr)
        return self._finish(tr, index, agent)

    def _call(
        self, tr: _Trace, seq: int, index: int, tool: str, arg: int, ping_pong: bool
    ) -> list[Any]:
        signature = f"{tool}:{arg:016x}"
        tr.counts[signature] += 1
        valid = self.rng.random() >= 0.005
        arguments = {"id": arg, "query": f"{tool} {arg}"}
        raw = orjson.dumps(arguments).decode()
        call: list[Any] = [
            seq, index, f"call_{seq}_{index}_{self.rng.getrandbits(40):x}", tool,
            raw if valid else raw[:-3], arguments if valid else None, valid,
            None if valid else "Expecting ',' delimiter", tr.t, signature,
            tr.counts[signature], 1, tr.last_error.get(signature, False), ping_pong,
            "paired", "id", None, False, False, None, None,
        ]  # fmt: skip
        if not valid:
            tr.findings.append(contract.FindingRecord("unparsed_arguments", tool, seq, index))
        tr.calls.append(call)
        return call

    def _result(self, tr: _Trace, call: list[Any]) -> None:
        rng = self.rng
        seq, index, call_id, tool, signature = call[0], call[1], call[2], call[3], call[9]
        if rng.random() < 0.01:  # never answered
            call[14], call[15] = "missing_result", None
            tr.findings.append(contract.FindingRecord("missing_result", tool, seq, index))
            return
        rate, median = self.tool_facts[tool]
        looping = tr.counts[signature] > 1
        is_error = rng.random() < (0.45 if looping else rate)
        tr.last_error[signature] = is_error
        call[16] = tr.seq
        if is_error:
            self._error_result(tr, call, seq, index, call_id, tool)
            return
        tokens = self._tokens(median)
        bare = rng.random() < 0.02
        content = "success" if bare else self._text(min(CONTENT_MAX_CHARS, tokens * 4))
        protocol = not bare and rng.random() < 0.15
        result_seq = self._message(tr, "tool", content, tokens)
        oversized = tokens > BUDGET
        tr.tool_results.append(
            contract.ToolResultRecord(
             result_seq, call_id, tool, None, None, tr.t, tokens, len(content), len(content),
             tool, "success", "protocol" if protocol else "inferred", None,
             "protocol" if protocol else "no_error_signal", None, None, None, None, None,
             protocol, "paired", "id", seq, index, False, oversized, 0, None, None, None,
             None, None, None,
             _duration_ms(tokens), "timestamps", contract.one_line_preview(content))
        )  # fmt: skip
        for name, present in (("bare_status", bare), ("oversized", oversized)):
            if present:
                tr.findings.append(contract.FindingRecord(name, tool, result_seq, None))

    def _error_result(
        self, tr: _Trace, call: list[Any], seq: int, index: int, call_id: str, tool: str
    ) -> None:
        rng = self.rng
        error_type = rng.choices(self.error_types, self.error_weights)[0]
        _, templates, rule, kind = ERRORS[error_type]
        content = rng.choice(templates).format(
            n=rng.randint(2, 90), id=f"{rng.getrandbits(32):08x}", w=rng.choice(_WORDS)
        )
        source = self._weighted(SOURCES)
        tokens = max(5, len(content) // 4)
        suggestion = verdict = reason = succeeded = None
        if kind is not None and rng.random() < self.suggestion_share:
            suggestion = {"retry_after": "retry after 6s", "use_instead": "use lookup_docs "
                          "instead", "missing_param": "missing required parameter mode",
                          "ask_user": "ask the user to sign in again"}[kind]  # fmt: skip
            verdict = self._weighted(VERDICTS) if rng.random() < 0.93 else "no_next_action"
            reason = f"{verdict}: next action compared with the advice ({kind})"
            succeeded = None if verdict == "no_next_action" else rng.random() < 0.55
        elif rng.random() < 0.7:  # a later call of the same tool exists
            succeeded = rng.random() < 0.4
        result_seq = self._message(tr, "tool", content, tokens)
        tr.errors += 1
        tr.tool_results.append(
            contract.ToolResultRecord(
             result_seq, call_id, tool, source == "explicit",
             "is_error" if source == "explicit" else None, tr.t, tokens, len(content),
             len(content), tool, "error", source,
             error_type, "protocol" if source == "protocol" else rule,
             error_fingerprint(tool, content), content if source == "protocol" else None,
             suggestion, kind if suggestion else None, None, source == "protocol", "paired",
             "id", seq, index, False, False, 0, None, None, None, verdict, reason, succeeded,
             _duration_ms(tokens), "timestamps", contract.one_line_preview(content))
        )  # fmt: skip
        if suggestion is None:
            tr.findings.append(
                contract.FindingRecord("error_without_suggestion", tool, result_seq, None)
            )
        if error_type == "tool_exception":
            tr.findings.append(contract.FindingRecord("raw_exception", tool, result_seq, None))

    def _orphan(self, tr: _Trace) -> None:
        if self.rng.random() >= 0.005:
            return
        seq = self._message(tr, "tool", "stray result", 3)
        tr.tool_results.append(
            contract.ToolResultRecord(
             seq, "call_lost", None, None, None, tr.t, 3, 12, 12, "(unknown)", "success",
             "inferred", None, "no_error_signal", None, None, None, None, None, False,
             "orphan_result", None, None, None, False, False, 0, None, None, None, None, None,
             None, None, None, "stray result")
        )  # fmt: skip
        tr.findings.append(contract.FindingRecord("orphan_result", "(unknown)", seq, None))

    def _finish(self, tr: _Trace, index: int, agent: str) -> tuple[int, TraceRows]:
        calls = tr.calls
        # Run lengths: consecutive calls with one signature form a run.
        start = 0
        for i in range(1, len(calls) + 1):
            if i == len(calls) or calls[i][9] != calls[start][9]:
                for j in range(start, i):
                    calls[j][11] = i - start
                start = i
        tool_calls = [contract.ToolCallRecord(*c) for c in calls]
        looping = {sig for sig, n in tr.counts.items() if n >= 3}
        tokens_by_seq = {m.seq: m.tokens for m in tr.messages}
        wasted = sum(
            tokens_by_seq[c.result_seq] for c in tool_calls if c.occurrence > 1 and c.result_seq
        )
        pairing = sum(1 for c in tool_calls if c.pair_state != "paired")
        pairing += sum(1 for r in tr.tool_results if r.call_seq is None)
        ignored = sum(1 for r in tr.tool_results if r.verdict == "ignored")
        loop_calls = sum(1 for c in tool_calls if c.signature in looping)
        started = tr.messages[0].timestamp
        assert started is not None
        week = min(IMPORTS - 1, int((started - T0).total_seconds() // (DAYS * 86_400 / IMPORTS)))
        trace = contract.TraceRecord(
            dedupe_key=f"uibench:{index}", content_hash=f"{index:064x}",
            external_id=f"run-{index:06d}",
            display_id=f"run-{index:06d}", title=trace_title(tr.messages),
            format=FORMATS[index % len(FORMATS)],
            source_file=f"{agent}/week-{week}.jsonl", source_line=index + 1,
            agent=agent, model=self.rng.choices(MODELS, MODEL_WEIGHTS)[0],
            started_at=started, tags=[], metadata={}, tools=[], record_count=1,
            message_count=len(tr.messages), tool_call_count=len(tool_calls),
            tool_result_count=len(tr.tool_results), error_count=tr.errors,
            problem_count=tr.errors + pairing + loop_calls + ignored,
            total_tokens=sum(tokens_by_seq.values()),
            tool_result_tokens=sum(r.tokens for r in tr.tool_results),
            wasted_tokens=wasted, max_occurrence=max(tr.counts.values(), default=0),
            token_counts="estimate",
        )  # fmt: skip
        return week, TraceRows(trace, tr.messages, tool_calls, tr.tool_results, tr.findings)

    def traces(self, messages: int) -> Iterator[tuple[int, TraceRows]]:
        """Traces with their import (week) until ``messages`` messages have been generated."""
        made = index = 0
        while made < messages:
            size = int(self.rng.lognormvariate(math.log(22), 0.6))
            size = max(4, min(160, size, messages - made + 1))
            week, rows = self.trace(index, size)
            made += len(rows.messages)
            index += 1
            yield week, rows


def generate_into(engine: Engine, messages: int, seed: int, progress: bool = True) -> int:
    """Write the synthetic store of ``messages`` messages into the empty, migrated store
    ``engine`` (either database) through :func:`db.writes.traces.write_traces`; returns the messages
    written. The caller runs :func:`after_bulk_load`."""
    imports = [
        start_import(
            engine, origin="bench", encoding=DEFAULT_ENCODING,
            paths=[marker(messages, seed) if week == 0 else f"week-{week}.jsonl"],
        )
        for week in range(IMPORTS)
    ]  # fmt: skip
    batches: dict[int, list[TraceRows]] = {week: [] for week in range(IMPORTS)}
    counts, traces = Counter[int](), Counter[int]()
    written = 0
    for week, rows in StoreGenerator(seed).traces(messages):
        batches[week].append(rows)
        counts[week] += len(rows.messages)
        traces[week] += 1
        if len(batches[week]) >= BATCH_TRACES:
            written += write_traces(engine, imports[week], batches[week]).messages
            batches[week] = []
            if progress:
                print(f"\r  {written:,} of {messages:,} messages written", end="", flush=True)
    for week, rest in batches.items():
        written += write_traces(engine, imports[week], rest).messages
    for week, import_id in enumerate(imports):
        finish_import(
            engine, import_id, files=1, records=traces[week], traces_imported=traces[week],
            messages=counts[week], state="done",
        )  # fmt: skip
    if progress:
        print(f"\r  {written:,} messages written{' ' * 20}")
    return written


def after_bulk_load(engine: Engine) -> None:
    """What a store needs after rows were loaded in bulk, around ``db.writes.traces`` (generated
    here, or copied by SQL in :mod:`benchmarks.ui_scale`): the rollups recounted (rows copied by SQL
    bypass their maintenance; ``toollens rebuild-rollups``), then the planner's statistics, as
    ``toollens import`` leaves them after a large load. The single place for every such
    refresh."""
    rollups.rebuild(engine)
    with engine.begin() as conn:
        analyze(conn, ANALYZED_TABLES)


def build_store(path: Path, messages: int, seed: int, progress: bool = True) -> None:
    """Write the synthetic store to the SQLite file ``path`` (built beside it, renamed when
    complete)."""
    partial = path.with_name(path.name + ".partial")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{partial}")
    generate_into(engine, messages, seed, progress)
    after_bulk_load(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    partial.rename(path)
