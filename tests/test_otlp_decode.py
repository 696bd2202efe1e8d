"""OTLP decoding (protobuf, JSON with hex or base64 ids), gzip inflation and the span spool."""

from __future__ import annotations

import base64
import gzip
import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_agent import FORECAST_ARGS, FORECAST_ERROR, openinference_run, otlp_json, provider

from ingest.input.otlp_spans import (
    OtlpDecodeError,
    OtlpSpan,
    SpanEvent,
    decode_json,
    decode_protobuf,
)
from ingest.otlp.receiver import BodyTooLarge, inflate_gzip
from ingest.otlp.spool import Spool, read_spans, scan_trace

TRACE = "000000000000000000000000000000a2"


@pytest.fixture(scope="module")
def sdk_spans():  # type: ignore[no-untyped-def]
    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter))
    return exporter.get_finished_spans()


def test_a_protobuf_export_of_the_sdk_decodes_to_plain_spans(sdk_spans) -> None:  # type: ignore[no-untyped-def]
    export = decode_protobuf(encode_spans(sdk_spans).SerializeToString())
    assert (export.rejected, export.errors) == (0, [])
    assert [s.name for s in export.spans] == [
        "llm.chat",
        "tool.get_weather",
        "llm.chat",
        "tool.get_forecast",
        "llm.chat",
        "agent.run",
    ]
    failed = export.spans[3]
    assert failed == OtlpSpan(
        trace_id=TRACE,
        span_id="0000000000000005",
        parent_span_id="0000000000000001",
        name="tool.get_forecast",
        kind=1,
        start_unix_nano=1_767_607_201_410_000_000,
        end_unix_nano=1_767_607_201_900_000_000,
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "get_forecast",
            "tool.id": "call_forecast_2",
            "input.value": FORECAST_ARGS,
        },
        events=[
            SpanEvent(
                "exception",
                1_767_607_201_900_000_000,
                {"exception.type": "TimeoutError", "exception.message": FORECAST_ERROR},
            )
        ],
        status_code=2,
        status_message=FORECAST_ERROR,
        resource=failed.resource,
        scope_name="openinference.instrumentation.openai",
        scope_version="0.1.0",
    )
    assert failed.resource["service.name"] == "weather-agent"
    assert export.spans[5].parent_span_id is None
    assert export.spans[0].attributes["llm.token_count.prompt"] == 200


def test_json_with_hex_ids_and_json_with_base64_ids_decode_like_protobuf(sdk_spans) -> None:  # type: ignore[no-untyped-def]
    request = encode_spans(sdk_spans)
    from_protobuf = decode_protobuf(request.SerializeToString()).spans
    hex_json = orjson.dumps(otlp_json(sdk_spans))
    assert b'"traceId":"000000000000000000000000000000a2"' in hex_json
    base64_json = json_format.MessageToJson(request, use_integers_for_enums=True)
    assert '"traceId": "AAAAAAAAAAAAAAAAAAAAog=="' in base64_json
    assert decode_json(hex_json).spans == from_protobuf
    assert decode_json(base64_json).spans == from_protobuf


def _export(*spans: dict[str, object]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def test_every_any_value_kind_becomes_a_plain_python_value() -> None:
    value = {
        "traceId": TRACE,
        "spanId": "00000000000000ff",
        "name": "s",
        "kind": 3,
        "startTimeUnixNano": "1767607200000000000",
        "attributes": [
            {"key": "s", "value": {"stringValue": "x"}},
            {"key": "i", "value": {"intValue": "9007199254740993"}},
            {"key": "d", "value": {"doubleValue": 0.5}},
            {"key": "b", "value": {"boolValue": True}},
            {"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "stop"}, {}]}}},
            {
                "key": "kv",
                "value": {"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "1"}}]}},
            },
            {"key": "bytes", "value": {"bytesValue": base64.b64encode(b"\x00\x01").decode()}},
        ],
        "events": [{"name": "e", "timeUnixNano": "5", "attributes": []}],
        "status": {"code": 1},
    }
    (span,) = decode_json(_export(value)).spans
    assert span.attributes == {
        "s": "x",
        "i": 9_007_199_254_740_993,
        "d": 0.5,
        "b": True,
        "a": ["stop", None],
        "kv": {"k": 1},
        "bytes": "AAE=",
    }
    assert (span.kind, span.start_unix_nano, span.end_unix_nano) == (3, 1_767_607_200 * 10**9, 0)
    assert (span.events, span.status_code, span.parent_span_id) == ([SpanEvent("e", 5)], 1, None)


def test_spans_without_valid_ids_are_counted_as_rejected_and_the_others_kept() -> None:
    good = {"traceId": TRACE, "spanId": "0000000000000001", "name": "good"}
    export = decode_json(
        _export(
            good,
            {"traceId": "", "spanId": "0000000000000002", "name": "no trace"},
            {"traceId": "00" * 16, "spanId": "0000000000000003", "name": "zero trace"},
            {"traceId": TRACE, "spanId": "not-an-id", "name": "bad span"},
        )
    )
    assert [s.name for s in export.spans] == ["good"]
    assert export.rejected == 3
    assert export.errors == [
        "span 'no trace': invalid trace id",
        "span 'zero trace': invalid trace id",
        "span 'bad span': invalid span id",
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not JSON: invalid literal, expected 'null': line 1 column 1 (char 0)"),
        (b"[1, 2]", 'expected an OTLP export object {"resourceSpans": [...]}'),
        (b'{"resourceSpans": 3}', 'expected an OTLP export object {"resourceSpans": [...]}'),
    ],
)
def test_a_json_body_that_is_not_an_export_is_refused(body: bytes, message: str) -> None:
    with pytest.raises(OtlpDecodeError) as excinfo:
        decode_json(body)
    assert str(excinfo.value) == message


def test_a_json_export_with_a_wrongly_typed_field_is_refused() -> None:
    with pytest.raises(OtlpDecodeError) as excinfo:
        decode_json(
            _export({"traceId": TRACE, "spanId": "00000000000000ff", "startTimeUnixNano": "soon"})
        )
    assert str(excinfo.value).startswith("not an OTLP JSON export: ")


def test_bytes_that_are_not_protobuf_are_refused() -> None:
    with pytest.raises(OtlpDecodeError) as excinfo:
        decode_protobuf(b"\xff\xff\xff\xff")
    assert str(excinfo.value).startswith("not an OTLP protobuf ExportTraceServiceRequest: ")


def test_gzip_inflates_up_to_the_limit_and_a_bomb_is_refused_without_inflating_it() -> None:
    assert inflate_gzip(gzip.compress(b"x" * 1000), 1000) == b"x" * 1000
    bomb = gzip.compress(b"\0" * (21 * 1024 * 1024))
    assert len(bomb) < 30_000
    with pytest.raises(BodyTooLarge):
        inflate_gzip(bomb, 20 * 1024 * 1024)
    with pytest.raises(BodyTooLarge):
        inflate_gzip(gzip.compress(b"x" * 1001), 1000)
    with pytest.raises(zlib.error):
        inflate_gzip(gzip.compress(b"x" * 1000)[:-12], 1000)
    with pytest.raises(zlib.error):
        inflate_gzip(b"plain text", 1000)


def test_the_spool_gives_back_what_it_was_given_and_cuts_a_torn_last_line(
    sdk_spans,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    spans = decode_protobuf(encode_spans(sdk_spans).SerializeToString()).spans
    spool = Spool(tmp_path / "spool")
    spool.open()
    refs = spool.append(spans[:4])
    spool.close()
    assert sum(r.length for r in refs) == (tmp_path / "spool" / "spans.jsonl").stat().st_size
    with open(tmp_path / "spool" / "spans.jsonl", "ab") as stream:
        stream.write(spans[4].to_json()[:40])  # a crash in the middle of an append
    spool = Spool(tmp_path / "spool")
    spool.open()
    refs += spool.append(spans[4:])
    spool.close()
    assert list(spool.replay()) == list(zip(spans, refs, strict=True))
    assert refs[4].offset == refs[3].offset + refs[3].length  # the torn line is gone
    assert read_spans(spool.path, refs[::-1]) == spans[::-1]


def test_appends_made_while_an_fsync_runs_share_the_next_one(
    sdk_spans,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    spans = decode_protobuf(encode_spans(sdk_spans).SerializeToString()).spans
    spool = Spool(tmp_path / "spool")
    spool.open()
    everything = sum(len(s.to_json()) + 1 for s in spans)
    synced: list[int] = []  # the file's size when each fsync began
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if not synced:  # the first fsync lasts until every other append has written
            deadline = time.monotonic() + 30
            while spool._size < everything and time.monotonic() < deadline:
                time.sleep(0.01)
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with ThreadPoolExecutor(len(spans)) as pool:
        refs = [ref for part in pool.map(spool.append, [[s] for s in spans]) for ref in part]
    spool.close()
    # At most one fsync for the first append and one for all the others (written meanwhile),
    # or one for all when every append had written before the first fsync began; one each
    # would be one per span.
    assert len(spans) > 2
    assert len(synced) in (1, 2) and synced[-1] == everything and spool.syncs == len(synced)
    assert sorted(read_spans(spool.path, refs), key=spans.index) == spans
    assert sorted(r.offset + r.length for r in refs)[-1] == everything


def test_a_trace_is_found_again_by_scanning_the_spool(sdk_spans, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spans = decode_protobuf(encode_spans(sdk_spans).SerializeToString()).spans
    other = [replace(s, trace_id="0" * 31 + "1") for s in spans]
    spool = Spool(tmp_path / "spool")
    spool.open()
    for mine, theirs in zip(spans, other, strict=True):  # interleaved with another trace
        spool.append([theirs, mine])
    spool.append([replace(spans[0], name="delivered again")])  # a duplicate: the first wins
    spool.close()
    with open(spool.path, "ab") as stream:
        stream.write(spans[1].to_json()[:40])  # a torn last line of the same trace
    assert scan_trace(spool.path, spans[0].trace_id) == spans
    assert scan_trace(spool.path, other[0].trace_id) == other
    assert scan_trace(spool.path, "f" * 32) == []
