"""Queries behind the Trace page (one conversation rebuilt) and the shared filter choices.

A trace is read in windows of messages (a Claude Code session can hold thousands), with the
calls made in the window and every Tool Message that answers them, wherever it lies. Message
content is cut at :data:`CONTENT_CHARS` in SQL so that one giant message never travels whole.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import (
    ColumnElement,
    Engine,
    and_,
    case,
    exists,
    func,
    literal,
    or_,
    select,
    union_all,
)
from sqlalchemy import null as sa_null

from db.contract.vocabulary import DEFAULT_LOOP_K, FINDING_KINDS
from db.queries.common import (
    effective_error_type,
    effective_verdict,
    labelled,
    result_message,
    to_frame,
)
from db.queries.filters import NO_FILTERS, Filters, restrict_traces
from db.rollups import upkeep as rollups
from db.rollups.upkeep import Dim
from db.schema import (
    FindingRow,
    ImportRun,
    MessageRow,
    RollupCallRow,
    RollupTraceRow,
    ToolCallRow,
    ToolResultRow,
    TraceRow,
)

#: Characters of one message's content read back (the UI says how long the whole content is).
CONTENT_CHARS = 200_000
#: Most distinct agents / models / tools offered as filter choices.
CHOICES_LIMIT = 500

TRACE_LIST_COLUMNS: tuple[str, ...] = (
    "trace", "title", "id", "agent", "model", "format", "started_at", "messages", "tool_calls",
    "errors", "problems",
)  # fmt: skip
_PAIR_RE = re.compile(r"^(?:(?P<seq>\d+):(?P<index>\d+)|r(?P<result>\d+))$")


@dataclass(frozen=True, slots=True)
class PairRef:
    """A parsed ``pair`` URL parameter: a call (``seq:index``) or a lone result (``r<seq>``)."""

    seq: int
    call_index: int | None = None

    @property
    def is_call(self) -> bool:
        """True for a call's address, False for a Tool Message's."""
        return self.call_index is not None


def parse_pair(value: str | None) -> PairRef | None:
    """Parse the ``pair`` URL parameter; ``None`` when absent or malformed.

    >>> parse_pair("12:0")
    PairRef(seq=12, call_index=0)
    >>> parse_pair("r7")
    PairRef(seq=7, call_index=None)
    """
    match = _PAIR_RE.match((value or "").strip())
    if match is None:
        return None
    if match["result"] is not None:
        return PairRef(seq=int(match["result"]))
    return PairRef(seq=int(match["seq"]), call_index=int(match["index"]))


@dataclass(slots=True)
class TraceWindow:
    """Part of one trace: messages, the calls among them, and the Tool Messages answering them.

    ``calls`` has the ``tool_calls`` columns; ``results`` has the ``tool_results`` columns with
    effective ``error_type``/``verdict`` (derived ones as ``derived_error_type`` /
    ``derived_verdict``) plus the message's ``content``.
    """

    messages: pd.DataFrame
    calls: pd.DataFrame
    results: pd.DataFrame
    page: int = 0
    pages: int = 1


def _content() -> ColumnElement[str]:
    return func.substr(MessageRow.content, 1, CONTENT_CHARS).label("content")


def _matching_traces(
    stmt: Any,
    filters: Filters,
    text: str | None,
    tool: str | None,
    error_type: str | None,
) -> Any:
    """``stmt`` over ``traces`` narrowed to the picker's search (see :func:`search_traces`)."""
    stmt = restrict_traces(stmt, filters)
    if text:
        needle = text.strip()
        stmt = stmt.where(
            or_(
                TraceRow.display_id.icontains(needle, autoescape=True),
                TraceRow.title.icontains(needle, autoescape=True),
            )
        )
    if tool:
        stmt = stmt.where(
            exists().where(ToolCallRow.trace_id == TraceRow.id, ToolCallRow.tool_name == tool)
        )
    if error_type:
        stmt = stmt.where(
            exists().where(
                ToolResultRow.trace_id == TraceRow.id,
                ToolResultRow.status == "error",
                effective_error_type == error_type,
            )
        )
    return stmt


def search_traces(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    *,
    text: str | None = None,
    tool: str | None = None,
    error_type: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> pd.DataFrame:
    """Traces for the picker, most problems first (columns: :data:`TRACE_LIST_COLUMNS`),
    ``limit`` from ``offset`` (:func:`count_traces` says how many there are).

    ``text`` matches part of the display id or of the title (any case); ``tool``: traces
    calling that tool; ``error_type``: traces with an error result of that (effective) type.
    """
    stmt = select(
        TraceRow.display_id.label("trace"),
        *labelled(
            TraceRow.title,
            TraceRow.id,
            TraceRow.agent,
            TraceRow.model,
            TraceRow.format,
            TraceRow.started_at,
        ),
        TraceRow.message_count.label("messages"),
        TraceRow.tool_call_count.label("tool_calls"),
        TraceRow.error_count.label("errors"),
        TraceRow.problem_count.label("problems"),
    )
    stmt = _matching_traces(stmt, filters, text, tool, error_type)
    stmt = stmt.order_by(TraceRow.problem_count.desc(), TraceRow.id.desc())
    with engine.connect() as conn:
        return to_frame(conn, stmt.limit(limit).offset(offset))


def count_traces(
    engine: Engine,
    filters: Filters = NO_FILTERS,
    *,
    text: str | None = None,
    tool: str | None = None,
    error_type: str | None = None,
) -> int:
    """How many traces :func:`search_traces` pages through with the same arguments."""
    stmt = _matching_traces(select(func.count(TraceRow.id)), filters, text, tool, error_type)
    with engine.connect() as conn:
        return int(conn.execute(stmt).scalar_one())


def find_trace(engine: Engine, display_id: str) -> dict[str, Any] | None:
    """The trace with this display id, with ``max_message_tokens`` and ``same_display_id``.

    Display ids are not unique across sources; the first imported trace wins and
    ``same_display_id`` says how many share the id.
    """
    with engine.connect() as conn:
        row = (
            conn.execute(
                select(TraceRow.__table__)
                .where(TraceRow.display_id == display_id)
                .order_by(TraceRow.id)
                .limit(1)
            )
            .mappings()
            .first()
        )
        if row is None:
            return None
        trace = dict(row)
        trace["max_message_tokens"] = int(
            conn.execute(
                select(func.coalesce(func.max(MessageRow.tokens), 0)).where(
                    MessageRow.trace_id == trace["id"]
                )
            ).scalar_one()
        )
        trace["same_display_id"] = int(
            conn.execute(select(func.count()).where(TraceRow.display_id == display_id)).scalar_one()
        )
    return trace


def _results_stmt(trace_id: int, where: ColumnElement[bool]) -> Any:
    return (
        select(
            *(c for c in ToolResultRow.__table__.c if c.name not in ("error_type", "verdict")),
            effective_error_type.label("error_type"),
            ToolResultRow.error_type.label("derived_error_type"),
            effective_verdict.label("verdict"),
            ToolResultRow.verdict.label("derived_verdict"),
            _content(),
        )
        .join(MessageRow, result_message())
        .where(ToolResultRow.trace_id == trace_id, where)
        .order_by(ToolResultRow.message_seq)
    )


def _calls_stmt(trace_id: int, where: ColumnElement[bool]) -> Any:
    return (
        select(ToolCallRow.__table__)
        .where(ToolCallRow.trace_id == trace_id, where)
        .order_by(ToolCallRow.message_seq, ToolCallRow.call_index)
    )


def trace_window(engine: Engine, trace_id: int, *, page: int = 0, size: int = 100) -> TraceWindow:
    """Messages ``page * size`` … of a trace (in seq order), their calls and the answers.

    ``results`` holds the Tool Messages in the window *and* those answering a call in the
    window wherever they lie (so a call is always shown beside its result).
    """
    with engine.connect() as conn:
        total = int(
            conn.execute(select(func.count()).where(MessageRow.trace_id == trace_id)).scalar_one()
        )
        pages = max(1, -(-total // size))
        page = min(max(0, page), pages - 1)
        messages = to_frame(
            conn,
            select(
                MessageRow.seq,
                MessageRow.role,
                _content(),
                MessageRow.timestamp,
                MessageRow.tokens,
                MessageRow.chars,
            )
            .where(MessageRow.trace_id == trace_id)
            .order_by(MessageRow.seq)
            .limit(size)
            .offset(page * size),
        )
        if messages.empty:
            first, last = 0, -1
        else:
            first, last = int(messages["seq"].iloc[0]), int(messages["seq"].iloc[-1])
        calls = to_frame(conn, _calls_stmt(trace_id, ToolCallRow.message_seq.between(first, last)))
        results = to_frame(
            conn,
            _results_stmt(
                trace_id,
                or_(
                    ToolResultRow.message_seq.between(first, last),
                    ToolResultRow.call_seq.between(first, last),
                    ToolResultRow.message_seq.in_(
                        [int(s) for s in calls["result_seq"].dropna()] or [-1]
                    ),
                ),
            ),
        )
    return TraceWindow(messages=messages, calls=calls, results=results, page=page, pages=pages)


#: Most characters of one message read whole (:func:`message_text`): what the Trace page shows
#: folded when it is JSON.
WHOLE_CHARS = 2_000_000


def message_text(engine: Engine, trace_id: int, seq: int, *, limit: int = WHOLE_CHARS) -> str:
    """The content of the message at ``seq`` of a trace, its first ``limit`` characters (past
    :data:`CONTENT_CHARS`, which the windows read); empty when there is no such message."""
    with engine.connect() as conn:
        text = conn.execute(
            select(func.substr(MessageRow.content, 1, limit)).where(
                MessageRow.trace_id == trace_id, MessageRow.seq == seq
            )
        ).scalar()
    return str(text or "")


def page_of_seq(engine: Engine, trace_id: int, seq: int, *, size: int = 100) -> int:
    """The window page (see :func:`trace_window`) that shows the message at ``seq``."""
    with engine.connect() as conn:
        before = conn.execute(
            select(func.count()).where(MessageRow.trace_id == trace_id, MessageRow.seq < seq)
        ).scalar_one()
    return int(before) // size


def pair_detail(engine: Engine, trace_id: int, pair: PairRef) -> TraceWindow:
    """One pair: the call and every Tool Message answering it, or a lone Tool Message (with
    the call it answers again, for a duplicate). ``messages`` is empty."""
    with engine.connect() as conn:
        if pair.is_call:
            calls = to_frame(
                conn,
                _calls_stmt(
                    trace_id,
                    and_(
                        ToolCallRow.message_seq == pair.seq,
                        ToolCallRow.call_index == pair.call_index,
                    ),
                ),
            )
            answered = [int(s) for s in calls["result_seq"].dropna()] or [-1]
            results = to_frame(
                conn,
                _results_stmt(
                    trace_id,
                    or_(
                        ToolResultRow.message_seq.in_(answered),
                        and_(
                            ToolResultRow.call_seq == pair.seq,
                            ToolResultRow.call_index == pair.call_index,
                        ),
                    ),
                ),
            )
        else:
            results = to_frame(conn, _results_stmt(trace_id, ToolResultRow.message_seq == pair.seq))
            calls = to_frame(conn, _calls_stmt(trace_id, ToolCallRow.id < 0))
            if not results.empty and pd.notna(results["call_seq"].iloc[0]):
                calls = to_frame(
                    conn,
                    _calls_stmt(
                        trace_id,
                        and_(
                            ToolCallRow.message_seq == int(results["call_seq"].iloc[0]),
                            ToolCallRow.call_index == int(results["call_index"].iloc[0]),
                        ),
                    ),
                )
    return TraceWindow(messages=pd.DataFrame(), calls=calls, results=results)


def trace_findings(engine: Engine, trace_id: int) -> pd.DataFrame:
    """The findings of one trace in message order: ``name``, ``tool``, ``message_seq``,
    ``call_index`` (where the finding was recorded: a call, or a Tool Message with no index)
    and ``pair``, the Trace page's ``pair`` value that shows it: the call itself, the call a
    Tool Message answers, or ``"r<seq>"`` for a Tool Message no call shows as its answer."""
    f, r = FindingRow, ToolResultRow
    # A finding on a Tool Message opens the call it answers (a duplicate stays a lone result).
    # The join's condition holds equalities only (all ClickHouse 18.16 joins on).
    answered = and_(
        f.call_index.is_(None), r.call_seq.is_not(None), r.pair_state != "duplicate_result"
    )
    stmt = (
        select(
            f.name,
            f.tool,
            f.message_seq,
            f.call_index,
            case((answered, r.call_seq)).label("call_seq"),
            case((answered, r.call_index)).label("answered_index"),
        )
        .select_from(f)
        .outerjoin(
            r,
            and_(r.trace_id == f.trace_id, r.message_seq == f.message_seq),
        )
        .where(f.trace_id == trace_id)
        .order_by(f.message_seq, f.call_index, f.name)
    )
    with engine.connect() as conn:
        df = to_frame(conn, stmt)
    df["call_index"] = df["call_index"].astype("Int64")
    df["pair"] = [
        f"{seq}:{index}"
        if pd.notna(index)
        else (f"{int(cs)}:{int(ai)}" if pd.notna(cs) else f"r{seq}")
        for seq, index, cs, ai in zip(
            df["message_seq"], df["call_index"], df["call_seq"], df["answered_index"], strict=True
        )
    ]
    return df.drop(columns=["call_seq", "answered_index"])


def import_choices(engine: Engine, *, limit: int = 200) -> pd.DataFrame:
    """Recent imports for the import filter: ``id``, ``started_at``, ``origin``, ``paths``
    (the files imported), ``traces_imported``, ``state``, ``encoding``; newest first."""
    stmt = (
        select(
            ImportRun.id,
            ImportRun.started_at,
            ImportRun.origin,
            ImportRun.paths,
            ImportRun.traces_imported,
            ImportRun.state,
            ImportRun.encoding,
        )
        .order_by(ImportRun.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        return to_frame(conn, stmt)


def _grain(row: Any, grain: int) -> list[Any]:
    """The rows of one grain of a rollup (``row``: its row class): one range of its keys
    (``db.rollups.grain_range``), so the database reads that range instead of the table."""
    first, end = rollups.grain_range(grain)
    return [row.key >= first, row.key < end, row.grain == grain]


def filter_choices(engine: Engine, *, limit: int = CHOICES_LIMIT) -> dict[str, list[str]]:
    """Distinct ``agent``, ``model`` and ``tool`` values for the shared filters, sorted."""
    queries = {
        "agent": select(TraceRow.agent).where(TraceRow.agent.is_not(None)),
        "model": select(TraceRow.model).where(TraceRow.model.is_not(None)),
        "tool": select(ToolCallRow.tool_name),
    }
    out: dict[str, list[str]] = {}
    with engine.connect() as conn:
        if rollups.complete(conn):
            # The rollups' one-dimension grains hold every value: a few hundred rows to read,
            # one range of keys each (the grain's).
            tr, cr = RollupTraceRow, RollupCallRow
            queries = {
                "agent": select(tr.agent).where(
                    *_grain(tr, int(Dim.AGENT)), tr.tool.is_(None), tr.agent.is_not(None)
                ),
                "model": select(tr.model).where(
                    *_grain(tr, int(Dim.MODEL)), tr.tool.is_(None), tr.model.is_not(None)
                ),
                "tool": select(cr.tool).where(*_grain(cr, 0)),
            }
        for name, stmt in queries.items():
            column = stmt.selected_columns[0]
            out[name] = [
                str(v)
                for v in conn.execute(stmt.distinct().order_by(column).limit(limit)).scalars()
            ]
    return out


def trace_count(engine: Engine) -> int:
    """How many traces the store holds (the dashboard's "is there any data" check): the sum of
    the traces rollup's rows of no dimension that count every trace (one range of keys), else
    a count of ``traces``."""
    with engine.connect() as conn:
        if rollups.complete(conn):
            tr = RollupTraceRow
            first, end = rollups.value_range(0, (None, None, None, None), None)
            counted = conn.execute(
                select(func.sum(tr.n)).where(
                    tr.key >= first, tr.key < end, tr.grain == 0, tr.tool.is_(None)
                )
            ).scalar()
            return int(counted or 0)
        return int(conn.execute(select(func.count(TraceRow.id))).scalar_one())


#: Kinds of place the trace outline marks, most severe first: a pair takes the first that
#: applies. Every kind but ``call`` is a problem ("previous / next problem" stop there).
MARKER_KINDS: tuple[str, ...] = (
    "error", "missing_result", "late_result", "lone_result", "loop", "ignored_advice", "finding",
    "call",
)  # fmt: skip
#: Columns of :func:`trace_markers`.
MARKER_COLUMNS: tuple[str, ...] = ("seq", "call_index", "pair", "tool", "kind", "problem")
_FINDING_ORDER: dict[str, int] = {str(kind): n for n, kind in enumerate(FINDING_KINDS)}


def pair_problems(
    status: str | None,
    pair_state: str,
    occurrence: int,
    verdict: str | None,
    findings: Iterable[str],
    loop_k: int,
) -> tuple[str, ...]:
    """Every problem of one pair (:data:`vocabulary.PAIR_PROBLEMS` and the finding kinds),
    most severe first, each once: its answer's status error, its pairing state when it is not
    ``paired``, a loop (the call's signature seen ``loop_k`` times or more so far), advice
    ignored (the effective verdict), then its findings and its answer's. The one definition
    of a problem on the Trace page: a pair with none is not one.

    >>> pair_problems("error", "paired", 3, "ignored", ["bare_status", "oversized"], 3)
    ('error', 'loop', 'ignored_advice', 'bare_status', 'oversized')
    >>> pair_problems(None, "missing_result", 1, None, ["missing_result"], 3)
    ('missing_result',)
    >>> pair_problems("success", "paired", 2, "followed", [], 3)
    ()
    """
    found: list[str] = []
    if status == "error":
        found.append("error")
    if pair_state != "paired":
        found.append(pair_state)
    if occurrence >= loop_k:
        found.append("loop")
    if verdict == "ignored":
        found.append("ignored_advice")
    for kind in sorted(
        set(findings), key=lambda k: (_FINDING_ORDER.get(k, len(_FINDING_ORDER)), k)
    ):
        if kind not in found:
            found.append(kind)
    return tuple(found)


def _marker_kind(problems: tuple[str, ...]) -> str:
    """The outline kind of a pair: its most severe problem's (:data:`MARKER_KINDS`)."""
    if not problems:
        return "call"
    if "error" in problems:
        return "error"
    for state in ("missing_result", "late_result"):
        if state in problems:
            return state
    if any(p in problems for p in ("orphan_result", "duplicate_result", "result_before_call")):
        return "lone_result"
    if "loop" in problems:
        return "loop"
    return "ignored_advice" if "ignored_advice" in problems else "finding"


def trace_markers(engine: Engine, trace_id: int, *, loop_k: int = DEFAULT_LOOP_K) -> pd.DataFrame:
    """Every pair of a trace as one marker, in message order (columns :data:`MARKER_COLUMNS`
    and ``problems``, the pair's :func:`pair_problems`).

    A call is marked at its own message (``seq``, ``call_index``; ``pair`` is the Trace page's
    ``pair`` value ``"seq:index"``) with the kind of its worst problem (:data:`MARKER_KINDS`).
    A Tool Message that no call shows as its answer (orphan, duplicate, before its call) is
    marked at its own message (``"r<seq>"``). Two statements whatever the trace's length: the
    pairs, and the trace's findings.
    """
    c, r, f = ToolCallRow, ToolResultRow, FindingRow
    answer = r.__table__.alias("answer")
    calls = (
        select(
            c.message_seq.label("seq"),
            c.call_index.label("call_index"),
            c.tool_name.label("tool"),
            *labelled(answer.c.status, c.pair_state, c.occurrence),
            func.coalesce(answer.c.verdict_corrected, answer.c.verdict).label("verdict"),
            c.result_seq.label("result_seq"),
        )
        .select_from(c)
        .outerjoin(
            answer,
            and_(answer.c.trace_id == c.trace_id, answer.c.message_seq == c.result_seq),
        )
        .where(c.trace_id == trace_id)
    )
    lone = select(
        r.message_seq.label("seq"),
        sa_null().label("call_index"),
        func.coalesce(r.tool, r.provided_name).label("tool"),
        *labelled(r.status, r.pair_state),
        literal(0).label("occurrence"),
        effective_verdict.label("verdict"),
        r.message_seq.label("result_seq"),
    ).where(
        r.trace_id == trace_id,
        or_(r.call_seq.is_(None), r.pair_state == "duplicate_result"),
    )
    both = union_all(calls, lone).subquery()
    stmt = select(both).order_by(both.c.seq, both.c.call_index)
    kinds_at: dict[tuple[int, int | None], list[str]] = defaultdict(list)
    with engine.connect() as conn:
        rows = conn.execute(stmt).all()
        found = conn.execute(
            select(f.message_seq, f.call_index, f.name).where(f.trace_id == trace_id)
        ).all()
    for seq, index, kind in found:
        kinds_at[(int(seq), None if index is None else int(index))].append(str(kind))
    out = []
    for seq, index, tool, status, pair_state, occurrence, verdict, result_seq in rows:
        findings = [] if index is None else list(kinds_at.get((int(seq), int(index)), ()))
        if result_seq is not None:
            findings += kinds_at.get((int(result_seq), None), ())
        problems = pair_problems(
            status, str(pair_state), int(occurrence), verdict, findings, loop_k
        )
        pair = f"r{seq}" if index is None else f"{seq}:{index}"
        out.append((int(seq), index, pair, tool, _marker_kind(problems), bool(problems), problems))
    df = pd.DataFrame(out, columns=[*MARKER_COLUMNS, "problems"])
    df["call_index"] = df["call_index"].astype("Int64")
    df["problem"] = df["problem"].astype(bool)
    return df
