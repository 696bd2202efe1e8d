"""The ``otlp`` format: spans grouped by trace across lines, failures, and the trace identity
the receiver relies on (the same trace, assembled again with more spans, keeps its key)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from formats_helpers import parse, recs
from otlp_agent import OPENINFERENCE_PAIRS, stored_pairs
from typer.testing import CliRunner

from db.engine import make_engine
from ingest.cli import app
from ingest.formats.otlp import trace_of
from ingest.input.otlp_spans import OtlpSpan, SpanEvent
from ingest.model import Rejected, Trace

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _span(span_id: str, name: str, attrs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "traceId": extra.pop("trace", TRACE),
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(1_767_607_200_000_000_000 + int(span_id, 16) * 10**6),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
        **extra,
    }


def _export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


TOOL = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "search",
    "gen_ai.tool.call.id": "c1",
    "gen_ai.tool.call.arguments": '{"q": "x"}',
}


def test_spans_of_one_trace_on_several_lines_make_one_trace_and_a_repeated_span_counts_once() -> (
    None
):
    tool = _span("0000000000000002", "execute_tool search", TOOL)
    other = _span("0000000000000003", "execute_tool search", TOOL, trace="ab" * 16)
    items = parse(
        "otlp",
        recs(_export(tool), _export(tool, other), _export(_span("0000000000000001", "root", {}))),
    )
    traces = [i for i in items if isinstance(i, Trace)]
    assert [(t.external_id, t.metadata["span_count"], t.record_count) for t in traces] == [
        (TRACE, 2, 3),
        ("ab" * 16, 1, 0),
    ]
    assert [(t.source_line, t.agent) for t in traces] == [(1, "root"), (2, "execute_tool search")]
    assert sum(t.record_count for t in traces) == 3


def test_a_line_that_is_not_an_export_or_has_no_usable_span_is_rejected() -> None:
    items = parse("otlp", recs([1], _export(_span("00", "bad", {}))))
    assert [(i.line, i.reason, i.message) for i in items if isinstance(i, Rejected)] == [
        (1, "wrong_shape", 'expected an OTLP export object {"resourceSpans": [...]}'),
        (2, "wrong_shape", "no span with valid ids (span 'bad': invalid span id)"),
    ]


def _tool_span(**fields: Any) -> OtlpSpan:
    base: dict[str, Any] = {
        "trace_id": TRACE,
        "span_id": "0000000000000002",
        "parent_span_id": None,
        "name": "execute_tool search",
        "kind": 1,
        "start_unix_nano": 1_767_607_200_000_000_000,
        "end_unix_nano": 1_767_607_201_000_000_000,
        "attributes": TOOL,
    }
    return OtlpSpan(**{**base, **fields})


def test_an_exception_event_is_an_explicit_error_whose_message_is_the_result() -> None:
    span = _tool_span(
        events=[SpanEvent("exception", 1, {"exception.type": "KeyError", "exception.message": "q"})]
    )
    result = trace_of([span], source_file="f").messages[1]
    assert result.content == "KeyError: q"
    assert result.tool_result is not None
    assert (result.tool_result.explicit_error, result.tool_result.explicit_source) == (
        True,
        "exception",
    )


def test_status_error_wins_over_the_exception_event_as_the_source() -> None:
    span = _tool_span(
        status_code=2,
        status_message="search backend down",
        events=[SpanEvent("exception", 1, {"exception.message": "boom"})],
    )
    result = trace_of([span], source_file="f").messages[1]
    assert result.content == "search backend down"
    assert result.tool_result is not None
    assert result.tool_result.explicit_source == "status"


def test_a_trace_assembled_again_with_more_spans_keeps_its_identity_and_grows() -> None:
    first = trace_of([_tool_span()], source_file="otlp-receiver")
    grown = trace_of(
        [
            _tool_span(),
            _tool_span(
                span_id="0000000000000003", attributes={**TOOL, "gen_ai.tool.call.id": "c2"}
            ),
        ],
        source_file="otlp-receiver",
    )
    assert first.dedupe_key() == grown.dedupe_key() == f"otlp:id:{TRACE}"
    assert (len(first.messages), len(grown.messages)) == (2, 4)


def test_toollens_import_sniffs_a_collector_file_as_otlp_and_stores_its_pairs(
    db_url: str,
) -> None:
    path = Path(__file__).parent / "golden" / "otlp" / "openinference_sdk" / "input.jsonl"
    result = CliRunner().invoke(app, ["import", "--db", db_url, str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "1 file, 1 trace imported, 0 updated, 0 unchanged, 0 rejected in "
    )
    engine = make_engine(db_url)
    assert stored_pairs(engine) == {"000000000000000000000000000000a2": OPENINFERENCE_PAIRS}
    engine.dispose()
