"""A small fixture store written row by row, and an AppTest opener for the dashboard tests.

Three traces cover what the dashboard shows: a retry loop with an oversized result and a
followed suggestion (``weather-1``), pairing problems, an ignored suggestion, a duplicate and
an orphan result, and untrusted markup in content (``orders-7``), a late result and a corrected
error type (``docs-3``, second import); plus one rejected record. The figures the tests assert
are worked out by hand in the comments of :func:`fixture_traces`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import orjson
import pytest
from sqlalchemy import Engine, MetaData, create_engine, select, text, update
from sqlalchemy.engine import make_url

from db.contract.rows import (
    FindingRecord,
    MessageRecord,
    ToolCallRecord,
    ToolResultRecord,
    TraceRecord,
)
from db.engine import make_engine
from db.rollups import upkeep as rollups
from db.schema import ToolResultRow, TraceRow
from db.writes.traces import (
    TraceRows,
    finish_import,
    start_import,
    write_rejected,
    write_traces,
)
from db.writes.transaction import writing

DASHBOARD_APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
#: Markup a trace could carry to trick a renderer (must only ever appear as plain text).
UNTRUSTED = "Where is order 7? [click](http://evil.example) <b>bold</b> :red[alarm]"
BIG_RESULT = '{"forecast": "' + "rain " * 2400 + '"}'
RATE_LIMITED = "Error: 429 Too Many Requests. Retry after 6s."
WEATHER = '{"temp": 12, "sky": "rain"}'
ORDER_ADVICE = "Error: order 7 not found. Use search_orders instead."
BAD_JSON = "Error: arguments are not valid JSON"


R = TypeVar("R", bound=tuple[Any, ...])


def _row(record: type[R], values: dict[str, Any]) -> R:
    """A row contract from the values given; the fields left out are NULL."""
    fields: tuple[str, ...] = record._fields  # type: ignore[attr-defined]
    unknown = set(values) - set(fields)
    assert not unknown, f"not fields of {record.__name__}: {unknown}"
    return cast(R, cast(Any, record)(*(values.get(f) for f in fields)))


def _signature(name: str, arguments: Any) -> str:
    canonical = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    return f"{name}:{hashlib.sha1(canonical).hexdigest()[:16]}"


def message(seq: int, role: str, content: str, tokens: int, ts: datetime | None) -> MessageRecord:
    """A ``messages`` row tuple."""
    return _row(
        MessageRecord,
        {
            "seq": seq,
            "role": role,
            "content": content,
            "timestamp": ts,
            "tokens": tokens,
            "chars": len(content),
            "bytes": len(content.encode()),
            "raw": {"role": role, "content": content},
        },
    )


def call(
    seq: int, index: int, name: str, arguments: Any, tool_call_id: str, **facts: Any
) -> ToolCallRecord:
    """A ``tool_calls`` row tuple; ``facts`` override the derived defaults (a paired call)."""
    values: dict[str, Any] = {
        "message_seq": seq,
        "call_index": index,
        "tool_call_id": tool_call_id,
        "tool_name": name,
        "arguments_raw": orjson.dumps(arguments).decode(),
        "arguments": arguments,
        "args_valid": True,
        "signature": _signature(name, arguments),
        "occurrence": 1,
        "run_length": 1,
        "retry_after_error": False,
        "ping_pong": False,
        "pair_state": "paired",
        "pairing_method": "id",
        "name_mismatch": False,
        "reused_id": False,
        "kind": "client",
        **facts,
    }
    return _row(ToolCallRecord, values)


def result(seq: int, tool: str, tokens: int, content: str, **facts: Any) -> ToolResultRecord:
    """A ``tool_results`` row tuple; ``facts`` override the defaults (a paired success)."""
    values: dict[str, Any] = {
        "message_seq": seq,
        "tokens": tokens,
        "chars": len(content),
        "bytes": len(content.encode()),
        "tool": tool,
        "status": "success",
        "status_source": "inferred",
        "is_protocol": False,
        "pair_state": "paired",
        "pairing_method": "id",
        "name_mismatch": False,
        "oversized": False,
        "image_tokens": 0,
        **facts,
    }
    return _row(ToolResultRecord, values)


#: What the ``traces`` table would default to, for the values a fixture trace leaves out.
_TRACE_DEFAULTS: dict[str, Any] = {
    "title": None, "tags": [], "metadata": {}, "tools": [], "record_count": 1, "message_count": 0,
    "tool_call_count": 0, "tool_result_count": 0, "error_count": 0, "problem_count": 0,
    "total_tokens": 0, "tool_result_tokens": 0, "wasted_tokens": 0, "max_occurrence": 0,
    "token_counts": "exact",
}  # fmt: skip


def trace_record(**values: Any) -> TraceRecord:
    """A ``traces`` row contract: ``values`` over the table's defaults."""
    return _row(TraceRecord, {**_TRACE_DEFAULTS, **values})


def _trace(display_id: str, **values: Any) -> TraceRecord:
    return trace_record(
        dedupe_key=f"fixture:{display_id}",
        external_id=display_id,
        display_id=display_id,
        source_file=f"{display_id}.jsonl",
        source_line=1,
        **values,
    )


def fixture_traces() -> tuple[list[TraceRows], list[TraceRows]]:
    """The traces of import 1 and import 2.

    Hand-worked totals: 3 traces, 24 messages, 8 calls, 9 results (4 errors: rate_limit 1,
    not_found 2, invalid_params 1 after correction), pairing problems: missing 1, late 1,
    orphan 1, duplicate 1; loops at k=3: 1 signature / 3 calls; suggestions 3 (followed 1,
    ignored 1, unclear 1); result tokens 1,2,6,8,9,12,14,15,3000 (p50 9, p95 3000, one over the
    2000 budget).
    """
    t = T0
    weather_args = {"city": "Paris"}
    weather = TraceRows(
        trace=_trace(
            "weather-1",
            format="openai_chat",
            agent="support-bot",
            model="gpt-4o",
            started_at=t,
            message_count=9,
            tool_call_count=3,
            tool_result_count=3,
            error_count=1,
            problem_count=4,
            total_tokens=3110,
            tool_result_tokens=3027,
            wasted_tokens=3012,
            max_occurrence=3,
        ),
        messages=[
            message(0, "system", "You are helpful.", 5, t),
            message(1, "user", "Weather in Paris?", 6, t),
            message(2, "assistant", "", 20, t + timedelta(seconds=1)),
            message(3, "tool", RATE_LIMITED, 15, t),
            message(4, "assistant", "", 20, t + timedelta(seconds=9)),
            message(5, "tool", WEATHER, 12, t + timedelta(seconds=10)),
            message(6, "assistant", "", 20, t + timedelta(seconds=11)),
            message(7, "tool", BIG_RESULT, 3000, t + timedelta(seconds=12)),
            message(8, "assistant", "It is 12°C and rainy in Paris.", 12, t),
        ],
        tool_calls=[
            call(2, 0, "get_weather", weather_args, "c1", result_seq=3, run_length=3),
            call(
                4,
                0,
                "get_weather",
                weather_args,
                "c2",
                result_seq=5,
                occurrence=2,
                run_length=3,
                retry_after_error=True,
            ),
            call(6, 0, "get_weather", weather_args, "c3", result_seq=7, occurrence=3, run_length=3),
        ],
        tool_results=[
            result(
                3,
                "get_weather",
                15,
                RATE_LIMITED,
                tool_call_id="c1",
                status="error",
                error_type="rate_limit",
                rule="http_429",
                fingerprint="get_weather: Error: # Too Many Requests. Retry after #.",
                suggestion="Retry after 6s",
                suggestion_kind="retry_after",
                suggestion_detail={"seconds": 6},
                call_seq=2,
                call_index=0,
                verdict="followed",
                verdict_reason="waited 8s (advised 6s) before retrying",
                next_call_succeeded=True,
            ),
            result(
                5,
                "get_weather",
                12,
                WEATHER,
                tool_call_id="c2",
                call_seq=4,
                call_index=0,
                is_protocol=False,
            ),
            result(
                7,
                "get_weather",
                3000,
                BIG_RESULT,
                tool_call_id="c3",
                call_seq=6,
                call_index=0,
                oversized=True,
            ),
        ],
        findings=[
            _row(FindingRecord, {"name": "oversized", "tool": "get_weather", "message_seq": 7})
        ],
    )
    t = T0 + timedelta(days=1, hours=-1)
    order_args = {"id": 7}
    not_found = "lookup_order: Error: order # not found."
    orders = TraceRows(
        trace=_trace(
            "orders-7",
            format="anthropic",
            agent="shop-bot",
            model="claude-sonnet",
            started_at=t,
            message_count=8,
            tool_call_count=3,
            tool_result_count=4,
            error_count=2,
            problem_count=5,
            total_tokens=104,
            tool_result_tokens=25,
            wasted_tokens=9,
            max_occurrence=2,
        ),
        messages=[
            message(0, "user", UNTRUSTED, 15, t),
            message(1, "assistant", "Let me check.", 30, t),
            message(2, "tool", ORDER_ADVICE, 14, t),
            message(3, "tool", "sent", 2, t),
            message(4, "assistant", "", 25, t),
            message(5, "tool", "Error: order 7 not found.", 8, t),
            message(6, "tool", "ok", 1, t),
            message(7, "assistant", "Order 7 could not be found.", 9, t),
        ],
        tool_calls=[
            call(1, 0, "lookup_order", order_args, "t1", result_seq=2),
            call(
                1,
                1,
                "send_email",
                {"to": "a@b.c"},
                "t2",
                pair_state="missing_result",
                pairing_method=None,
            ),
            call(
                4,
                0,
                "lookup_order",
                order_args,
                "t3",
                result_seq=5,
                occurrence=2,
                retry_after_error=True,
            ),
        ],
        tool_results=[
            result(
                2,
                "lookup_order",
                14,
                ORDER_ADVICE,
                tool_call_id="t1",
                explicit_error=True,
                explicit_source="is_error",
                status="error",
                status_source="explicit",
                error_type="not_found",
                rule="is_error",
                fingerprint=not_found,
                suggestion="Use search_orders instead",
                suggestion_kind="use_instead",
                suggestion_detail={"tool": "search_orders"},
                call_seq=1,
                call_index=0,
                verdict="ignored",
                verdict_reason="repeated the identical failing call",
                next_call_succeeded=False,
            ),
            result(
                3,
                "send_sms",
                2,
                "sent",
                tool_call_id="zz9",
                provided_name="send_sms",
                pair_state="orphan_result",
                pairing_method=None,
            ),
            result(
                5,
                "lookup_order",
                8,
                "Error: order 7 not found.",
                tool_call_id="t3",
                explicit_error=True,
                explicit_source="is_error",
                status="error",
                status_source="explicit",
                error_type="not_found",
                rule="is_error",
                fingerprint=not_found,
                call_seq=4,
                call_index=0,
            ),
            result(
                6,
                "lookup_order",
                1,
                "ok",
                tool_call_id="t3",
                rule="bare_status",
                pair_state="duplicate_result",
                call_seq=4,
                call_index=0,
            ),
        ],
        findings=[
            _row(FindingRecord, {"name": n, "tool": tool, "message_seq": s, "call_index": i})
            for n, tool, s, i in (
                ("missing_result", "send_email", 1, 1),
                ("orphan_result", "send_sms", 3, None),
                ("error_without_suggestion", "lookup_order", 5, None),
                ("bare_status", "lookup_order", 6, None),
                ("duplicate_result", "lookup_order", 6, None),
            )
        ],
    )
    t = T0 + timedelta(days=4, hours=2)
    docs = TraceRows(
        trace=_trace(
            "docs-3",
            format="openai_chat",
            agent="support-bot",
            model="gpt-4o",
            started_at=t,
            message_count=7,
            tool_call_count=2,
            tool_result_count=2,
            error_count=1,
            problem_count=2,
            total_tokens=60,
            tool_result_tokens=15,
            wasted_tokens=0,
            max_occurrence=1,
        ),
        messages=[
            message(0, "user", "How do refunds work?", 6, t),
            message(1, "assistant", "", 18, t),
            message(2, "assistant", "Still looking...", 4, t),
            message(3, "tool", "Refunds take 5 days.", 6, t),
            message(4, "assistant", "", 10, t),
            message(5, "tool", BAD_JSON, 9, t),
            message(6, "assistant", "Refunds take 5 days.", 7, t),
        ],
        tool_calls=[
            call(
                1, 0, "search_docs", {"q": "refund"}, "s1", result_seq=3, pair_state="late_result"
            ),
            call(
                4,
                0,
                "search_docs",
                None,
                "s2",
                result_seq=5,
                arguments_raw='{"q": "refund',
                args_valid=False,
                args_error="unterminated string at column 7",
                signature="search_docs:invalid",
            ),
        ],
        tool_results=[
            result(
                3,
                "search_docs",
                6,
                "Refunds take 5 days.",
                tool_call_id="s1",
                pair_state="late_result",
                call_seq=1,
                call_index=0,
            ),
            result(
                5,
                "search_docs",
                9,
                BAD_JSON,
                tool_call_id="s2",
                status="error",
                error_type="invalid_arguments_json",
                rule="args_invalid",
                fingerprint="search_docs: Error: arguments are not valid JSON",
                suggestion="Send the q parameter as valid JSON",
                suggestion_kind="text",
                call_seq=4,
                call_index=0,
                verdict="unclear",
                verdict_reason="no later call to compare",
            ),
        ],
        findings=[
            _row(
                FindingRecord,
                {"name": n, "tool": "search_docs", "message_seq": s, "call_index": 0},
            )
            for n, s in (("late_result", 1), ("unparsed_arguments", 4))
        ],
    )
    return [weather, orders], [docs]


def _apply_corrections(engine: Engine) -> None:
    # Corrections are not part of the row tuples (analysis never writes them); a reviewer
    # sets them later, so the fixture does too.
    with writing(engine) as conn:
        docs = select(TraceRow.id).where(TraceRow.display_id == "docs-3").scalar_subquery()
        conn.execute(
            update(ToolResultRow)
            .where(ToolResultRow.trace_id == docs, ToolResultRow.message_seq == 5)
            .values(error_type_corrected="invalid_params", corrected_by="reviewer")
        )
    # Written straight into the base rows, as no ToolLens path writes: recount the rollups.
    rollups.rebuild(engine)


#: The first fixture store this process built into a SQLite file, copied for the later ones.
_built_store: list[Path] = []


def fixture_store(url: str) -> str:
    """:func:`build_fixture` into the database at ``url``; the URL, for pages opened on it.

    Into a new SQLite file, the first store the process built is copied (its rows are the same
    each time, and a copy takes a millisecond where a build takes a fifth of a second).
    """
    target = Path(make_url(url).database or "") if url.startswith("sqlite:///") else None
    if target is not None and _built_store and not target.exists():
        shutil.copyfile(_built_store[0], target)
        return url
    engine = make_engine(url)
    build_fixture(engine)
    engine.dispose()
    # Closed by its last connection, the file holds everything (no write-ahead log left).
    if (
        target is not None
        and not _built_store
        and not target.with_name(target.name + "-wal").exists()
    ):
        kept = Path(tempfile.mkdtemp(prefix="toollens-fixture-")) / "toollens.db"
        shutil.copyfile(target, kept)
        _built_store.append(kept)
    return url


def _titled(batch: list[TraceRows]) -> list[TraceRows]:
    """``batch`` with each trace titled from its messages, as the import does."""
    from ingest.importing.rows import trace_title

    for rows in batch:
        rows.trace = rows.trace._replace(title=trace_title(rows.messages))
    return batch


def build_fixture(engine: Engine) -> tuple[int, int]:
    """Write the fixture store (two imports, three traces, one rejected record) into ``engine``.

    Returns the two import ids.
    """
    first, second = (_titled(rows) for rows in fixture_traces())
    import_1 = start_import(engine, origin="cli", paths=["runs.jsonl"], encoding="o200k_base")
    write_traces(engine, import_1, first)
    write_rejected(
        engine,
        import_1,
        [
            {
                "source_file": "runs.jsonl",
                "line": 3,
                "byte_offset": 120,
                "reason": "invalid_json",
                "message": "runs.jsonl:3: not valid JSON",
                "raw": b"{oops",
            }
        ],
    )
    finish_import(engine, import_1, files=1, records=3, traces_imported=2, rejected=1, state="done")
    import_2 = start_import(engine, origin="upload", paths=["docs.jsonl"], encoding="o200k_base")
    write_traces(engine, import_2, second)
    finish_import(engine, import_2, files=1, records=1, traces_imported=1, state="done")
    _apply_corrections(engine)
    return import_1, import_2


def fixture_engine(url: str) -> Engine:
    """A migrated engine on ``url`` holding the fixture store."""
    engine = make_engine(url)
    build_fixture(engine)
    return engine


def open_app(
    monkeypatch: pytest.MonkeyPatch,
    db_url: str,
    *,
    page: str | None = None,
    params: dict[str, str] | None = None,
) -> Any:
    """Run the dashboard in ``AppTest`` on ``db_url``, optionally on ``page`` (e.g.
    ``pages.TRACE.script``) with URL ``params``; caches are cleared first.

    The page files live in ``views/`` rather than ``pages/``: Streamlit treats an entry script
    beside a ``pages/`` folder as a legacy multipage app until ``st.navigation`` runs, so a
    shared link to a page would run that page without the entry script. The pages manager
    below still clears that flag the way ``st.navigation`` does, as ``AppTest`` resets it.
    """
    import streamlit as st
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    class NavigationPagesManager(PagesManager):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test_module, "PagesManager", NavigationPagesManager)
    monkeypatch.setenv("TOOLLENS_DB", db_url)
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(DASHBOARD_APP), default_timeout=30)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(page)
        # Again: the default page's run dropped the parameters it does not know, such as a
        # ``section`` only ``page`` has.
        for key, value in (params or {}).items():
            at.query_params[key] = value
        at.run()
    return at


class OpenPage(Protocol):
    """The ``open_page`` fixture: :func:`open_app` on ``db_url`` at ``page`` with URL
    ``params``, checked to have run without an exception."""

    def __call__(
        self, db_url: str, page: str | None = None, params: dict[str, str] | None = None
    ) -> Any: ...


class OpenStorePage(Protocol):
    """An :class:`OpenPage` bound to one store (the ``open_analysis_page`` fixture)."""

    def __call__(self, page: str | None = None, params: dict[str, str] | None = None) -> Any: ...


# --- Errors / Tokens / Loops / Suggestions / Imports pages (appended by the pages-2 engineer) ---
#
# A second, self-contained store for those pages: three traces in two imports, each derived
# fact written by hand so that every figure the tests assert can be recomputed on paper:
#   run-a  import 1, timestamps (2025-01-01 10:00): get_weather {"city":"Paris"} called 3x in a
#          row (a loop at k=3, run length 3); two rate_limit errors with "retry after 6s"
#          (ignored, then followed); then a 2,500-token result. Trace tokens 5,000, of which
#          tool results 2,520 (share 0.504); wasted 10 + 2,500.
#   run-b  import 1, timestamps (2025-01-02 09:00): search fails (not_found, corrected by a
#          reviewer to invalid_params) with "use lookup instead" (followed); lookup succeeds
#          (500 tokens); get_weather {"city":"Rome"} fails with run-a's rate-limit
#          fingerprint (inferred, http_429). Tokens 1,980, tool results 542 (share 0.274).
#   run-c  import 2, no timestamps: read_file / write_file A-B-A-B ping-pong over 5 calls;
#          read_file repeats 3x (a loop at k=3, wasted 100), write_file 2x (a loop at k=2,
#          wasted 40); two conflicts with advice (unclear corrected to ignored; no next
#          action); the last read_file is never answered and an orphan result arrives.
#          Tokens 295, tool results 285 (share 0.966).
# Result tokens: 10, 10, 2500 | 30, 500, 12 | 100, 40, 100, 40, 5 (11 results, 1 over 2,000).
# Import 2 (origin upload, encoding cl100k_base) also quarantined two rejected records, one
# 5,000 bytes long and not valid UTF-8.

PAGES2_LONG_RAW = b"\xff" + b"x" * 4999
PAGES2_CONFLICT = "Error: conflict, file changed. Missing required parameter mode"


def _pages2_error(
    seq: int, tool: str, tokens: int, content: str, call_seq: int, **facts: Any
) -> ToolResultRecord:
    return result(
        seq, tool, tokens, content, tool_call_id=f"call_{call_seq}", status="error",
        call_seq=call_seq, call_index=0, **facts,
    )  # fmt: skip


def _pages2_trace(key: str, import_rows: TraceRows, **values: Any) -> TraceRows:
    results = import_rows.tool_results
    import_rows.trace = trace_record(
        dedupe_key=f"pages2:{key}",
        external_id=key,
        display_id=key,
        format="openai_chat",
        source_file=f"{key}.jsonl",
        source_line=1,
        message_count=len(import_rows.messages),
        tool_call_count=len(import_rows.tool_calls),
        tool_result_count=len(results),
        error_count=sum(1 for r in results if r.status == "error"),
        total_tokens=sum(m.tokens for m in import_rows.messages),
        tool_result_tokens=sum(r.tokens for r in results),
        **values,
    )
    return import_rows


def _pages2_run_a() -> TraceRows:
    t, s = datetime(2025, 1, 1, 10, 0, tzinfo=UTC), timedelta(seconds=1)
    sig, args = "get_weather:paris0000000000000", {"city": "Paris"}
    limited = "Error: rate limited, retry after 6s"
    error = {"error_type": "rate_limit", "status_source": "explicit", "rule": "is_error",
             "explicit_error": True, "explicit_source": "is_error",
             "fingerprint": "get_weather: Error: rate limited",
             "suggestion": "retry after 6s", "suggestion_kind": "retry_after"}  # fmt: skip
    rows = TraceRows(trace_record())  # its trace row comes from _pages2_trace
    rows.messages = [
        message(0, "user", "Weather in Paris?", 1000, t),
        message(1, "assistant", "", 20, t + s),
        message(2, "tool", limited, 10, t + 2 * s),
        message(3, "assistant", "", 20, t + 3 * s),
        message(4, "tool", limited, 10, t + 10 * s),
        message(5, "assistant", "", 20, t + 11 * s),
        message(6, "tool", "sunny " * 500, 2500, t + 12 * s),
        message(7, "assistant", "It is sunny.", 1420, t + 13 * s),
    ]
    rows.tool_calls = [
        call(1, 0, "get_weather", args, "call_1", signature=sig, run_length=3, result_seq=2,
             timestamp=t + s),
        call(3, 0, "get_weather", args, "call_3", signature=sig, occurrence=2, run_length=3,
             retry_after_error=True, result_seq=4, timestamp=t + 3 * s),
        call(5, 0, "get_weather", args, "call_5", signature=sig, occurrence=3, run_length=3,
             retry_after_error=True, result_seq=6, timestamp=t + 11 * s),
    ]  # fmt: skip
    rows.tool_results = [
        _pages2_error(2, "get_weather", 10, limited, 1, timestamp=t + 2 * s, verdict="ignored",
                      verdict_reason="retried after 1 s, advised 6 s",
                      next_call_succeeded=False, **error),
        _pages2_error(4, "get_weather", 10, limited, 3, timestamp=t + 10 * s, verdict="followed",
                      verdict_reason="waited 7 s before retrying", next_call_succeeded=True,
                      **error),
        result(6, "get_weather", 2500, "sunny " * 500, tool_call_id="call_5", call_seq=5,
               call_index=0, timestamp=t + 12 * s, oversized=True),
    ]  # fmt: skip
    rows.findings = [FindingRecord("oversized", "get_weather", 6, None)]
    return _pages2_trace(
        "run-a", rows, agent="support", model="gpt-4o", started_at=t, wasted_tokens=2510,
        max_occurrence=3,
    )  # fmt: skip


def _pages2_run_b() -> TraceRows:
    t, s = datetime(2025, 1, 2, 9, 0, tzinfo=UTC), timedelta(seconds=1)
    no_match = "Error: no match for 'x'. Use lookup instead."
    rows = TraceRows(trace_record())  # its trace row comes from _pages2_trace
    rows.messages = [
        message(0, "user", "Find x, then the weather in Rome", 900, t),
        message(1, "assistant", "", 20, t + s),
        message(2, "tool", no_match, 30, t + 2 * s),
        message(3, "assistant", "", 20, t + 3 * s),
        message(4, "tool", '{"id": 1, "name": "x"} ' * 20, 500, t + 4 * s),
        message(5, "assistant", "", 20, t + 5 * s),
        message(6, "tool", "Error: rate limited", 12, t + 6 * s),
        message(7, "assistant", "Rome is unavailable.", 478, t + 7 * s),
    ]
    rows.tool_calls = [
        call(1, 0, "search", {"q": "x"}, "call_1", signature="search:x000000000000000",
             result_seq=2, timestamp=t + s),
        call(3, 0, "lookup", {"id": 1}, "call_3", signature="lookup:1000000000000000",
             result_seq=4, timestamp=t + 3 * s),
        call(5, 0, "get_weather", {"city": "Rome"}, "call_5",
             signature="get_weather:rome00000000000", result_seq=6, timestamp=t + 5 * s),
    ]  # fmt: skip
    rows.tool_results = [
        _pages2_error(2, "search", 30, no_match, 1, timestamp=t + 2 * s,
                      error_type="not_found", rule="not_found_text",
                      fingerprint="search: Error: no match for '…'. Use lookup instead.",
                      suggestion="use lookup instead", suggestion_kind="use_instead",
                      verdict="followed", verdict_reason="next call is the suggested tool lookup"),
        result(4, "lookup", 500, '{"id": 1, "name": "x"} ' * 20, tool_call_id="call_3",
               call_seq=3, call_index=0, timestamp=t + 4 * s),
        _pages2_error(6, "get_weather", 12, "Error: rate limited", 5, timestamp=t + 6 * s,
                      error_type="rate_limit", rule="http_429",
                      fingerprint="get_weather: Error: rate limited"),
    ]  # fmt: skip
    return _pages2_trace(
        "run-b", rows, agent="support", model="gpt-4o", started_at=t, wasted_tokens=0,
        max_occurrence=1,
    )  # fmt: skip


def _pages2_run_c() -> TraceRows:
    read, write, args = "read_file:a000000000000000", "write_file:a00000000000000", {"path": "a"}
    conflict = {"error_type": "conflict", "status_source": "explicit", "rule": "is_error",
                "explicit_error": True, "explicit_source": "is_error",
                "fingerprint": "write_file: conflict",
                "suggestion": "missing required parameter mode",
                "suggestion_kind": "missing_param"}  # fmt: skip
    results = {2: ("contents of a", 100), 4: (PAGES2_CONFLICT, 40), 6: ("contents of a", 100),
               8: (PAGES2_CONFLICT, 40), 10: ("stray result", 5)}  # fmt: skip
    rows = TraceRows(trace_record())  # its trace row comes from _pages2_trace
    rows.messages = [message(0, "user", "Fix the file", 10, None)]
    for seq in range(1, 11):
        text, tokens = results.get(seq, ("", 0))
        rows.messages.append(message(seq, "tool" if seq in results else "assistant", text,
                                     tokens, None))  # fmt: skip
    rows.tool_calls = [
        call(1, 0, "read_file", args, "call_1", signature=read, result_seq=2, ping_pong=True),
        call(3, 0, "write_file", args, "call_3", signature=write, result_seq=4, ping_pong=True),
        call(5, 0, "read_file", args, "call_5", signature=read, occurrence=2, result_seq=6,
             ping_pong=True),
        call(7, 0, "write_file", args, "call_7", signature=write, occurrence=2, result_seq=8,
             retry_after_error=True, ping_pong=True),
        call(9, 0, "read_file", args, "call_9", signature=read, occurrence=3, ping_pong=True,
             pair_state="missing_result", pairing_method=None),
    ]  # fmt: skip
    rows.tool_results = [
        result(2, "read_file", 100, "contents of a", tool_call_id="call_1", call_seq=1,
               call_index=0),
        _pages2_error(4, "write_file", 40, PAGES2_CONFLICT, 3, verdict="unclear",
                      verdict_reason="next call changed other arguments",
                      next_call_succeeded=False, **conflict),
        result(6, "read_file", 100, "contents of a", tool_call_id="call_5", call_seq=5,
               call_index=0),
        _pages2_error(8, "write_file", 40, PAGES2_CONFLICT, 7, verdict="no_next_action",
                      verdict_reason="no later write_file call", **conflict),
        result(10, "(unknown)", 5, "stray result", tool_call_id="call_lost",
               pair_state="orphan_result", pairing_method=None),
    ]  # fmt: skip
    rows.findings = [
        FindingRecord("missing_result", "read_file", 9, 0),
        FindingRecord("orphan_result", "(unknown)", 10, None),
    ]
    return _pages2_trace(
        "run-c", rows, agent="coder", model="claude", started_at=None, wasted_tokens=140,
        max_occurrence=3,
    )  # fmt: skip


def build_pages2_database(engine: Engine) -> tuple[int, int]:
    """Write the pages-2 store (see the comment above) into an empty ``engine``.

    A reviewer re-typed run-b's search error (``not_found`` -> ``invalid_params``) and corrected
    run-c's first conflict verdict (``unclear`` -> ``ignored``): figures must use the effective
    values. Returns the two import ids.
    """
    from sqlalchemy import update

    from db.schema import ToolResultRow
    from db.writes.transaction import writing

    first = start_import(engine, origin="cli", paths=["ab.jsonl"], encoding="o200k_base")
    write_traces(engine, first, [_pages2_run_a(), _pages2_run_b()])
    finish_import(engine, first, files=1, records=2, traces_imported=2, messages=16,
                  seconds=0.5, state="done")  # fmt: skip
    second = start_import(
        engine, origin="upload", paths=["c.jsonl", "bad.jsonl"], encoding="cl100k_base"
    )
    write_traces(engine, second, [_pages2_run_c()])
    write_rejected(
        engine,
        second,
        [
            {"source_file": "bad.jsonl", "line": 3, "byte_offset": 120, "reason": "invalid_json",
             "message": "bad.jsonl:3: not valid JSON", "raw": b'{"role": "tool",'},
            {"source_file": "bad.jsonl", "line": 7, "byte_offset": 400,
             "reason": "unknown_format", "message": "bad.jsonl:7: no format recognizes this",
             "raw": PAGES2_LONG_RAW},
        ],
    )  # fmt: skip
    finish_import(engine, second, files=2, records=3, traces_imported=1, rejected=2,
                  messages=11, seconds=0.25, state="done")  # fmt: skip
    with writing(engine) as conn:
        conn.execute(
            update(ToolResultRow)
            .where(ToolResultRow.fingerprint.like("search:%"))
            .values(error_type_corrected="invalid_params", corrected_by="reviewer")
        )
        conn.execute(
            update(ToolResultRow)
            .where(ToolResultRow.verdict == "unclear")
            .values(verdict_corrected="ignored", corrected_by="reviewer")
        )
    # Written straight into the base rows, as no ToolLens path writes: recount the rollups.
    rollups.rebuild(engine)
    return first, second


def stored_text(engine: Engine) -> str:
    """Every value of every column of every table, as text (bytes decoded, JSON serialized):
    what a search for a leaked secret has to look through."""
    parts: list[str] = []
    meta = MetaData()
    meta.reflect(engine)
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            for row in conn.execute(select(table)):
                for value in row:
                    if isinstance(value, bytes | memoryview):
                        parts.append(bytes(value).decode("utf-8", "replace"))
                    elif isinstance(value, dict | list):
                        parts.append(json.dumps(value))
                    else:
                        parts.append(str(value))
    return "\n".join(parts)


def stamp_newer_schema(url: str) -> None:
    """Create the store at ``url`` and stamp it with schema 0999, a revision this ToolLens
    does not know: the store of a newer ToolLens."""
    make_engine(url).dispose()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    engine.dispose()
