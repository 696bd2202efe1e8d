"""The OTLP/HTTP receiver, started for real on a free loopback port, fed by the real
OpenTelemetry SDK exporter and by hand-made requests."""

from __future__ import annotations

import gzip
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
import uvicorn
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_agent import OPENINFERENCE_PAIRS, openinference_run, provider, stored_pairs
from typer.testing import CliRunner

from db.engine import make_engine
from db.schema import ImportRun, TraceRow
from ingest.cli import app as cli
from ingest.otlp.receiver import ReceiverSettings, create_app, store_into

TRACE = "000000000000000000000000000000a2"


@dataclass
class Running:
    url: str
    engine: sa.Engine
    app: object


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def settings(tmp_path: Path) -> ReceiverSettings:
    return ReceiverSettings(spool_dir=tmp_path / "spool", quiet_seconds=0.2)


@contextmanager
def running(settings: ReceiverSettings, db_url: str) -> Iterator[Running]:
    """The receiver served by uvicorn in a thread until the block ends (then stopped, which
    stores what it still holds)."""
    engine = make_engine(db_url)
    app = create_app(settings, store_into(engine))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield Running(f"http://127.0.0.1:{port}/v1/traces", engine, app)
    finally:
        server.should_exit = True
        thread.join(10)
        engine.dispose()


@pytest.fixture
def receiver(settings: ReceiverSettings, sqlite_url: str) -> Iterator[Running]:
    with running(settings, sqlite_url) as started:
        yield started


def post(url: str, body: bytes, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def status_of(headers: dict[str, str], reply: bytes) -> tuple[str, int, str]:
    """An error answer's content type and its ``google.rpc.Status`` (code, message), read in
    the encoding the content type names."""
    content_type = headers["content-type"]
    status = status_pb2.Status()
    if content_type == "application/json":
        json_format.Parse(reply, status)
    else:
        status.ParseFromString(reply)
    return content_type, status.code, status.message


def wait_for(check, seconds: float = 10.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def count(engine: sa.Engine, table: type) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def sdk_request() -> bytes:
    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter))
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


def test_spans_sent_by_the_sdk_exporter_become_a_stored_trace_with_paired_results(
    receiver: Running,
) -> None:
    exporter = OTLPSpanExporter(endpoint=receiver.url)
    # One export per ended span: the receiver assembles the trace across requests.
    openinference_run(provider(exporter))
    pairs = wait_for(lambda: stored_pairs(receiver.engine).get(TRACE))
    assert pairs == OPENINFERENCE_PAIRS
    with receiver.engine.connect() as conn:
        row = conn.execute(sa.select(TraceRow.format, TraceRow.source_file)).one()
    assert tuple(row) == ("otlp", "otlp-receiver")


def test_a_duplicate_delivery_changes_nothing(receiver: Running) -> None:
    body = sdk_request()
    status, _, _ = post(receiver.url, body, **{"Content-Type": "application/x-protobuf"})
    assert status == 200
    assert wait_for(lambda: stored_pairs(receiver.engine).get(TRACE)) == OPENINFERENCE_PAIRS
    runs = count(receiver.engine, ImportRun)
    status, _, _ = post(receiver.url, body, **{"Content-Type": "application/x-protobuf"})
    assert status == 200
    time.sleep(0.6)
    assert (count(receiver.engine, ImportRun), count(receiver.engine, TraceRow)) == (runs, 1)
    assert receiver.app.state.assembler.dirty_traces == 0  # type: ignore[attr-defined]


def test_a_trace_whose_spans_keep_arriving_is_updated_in_place(receiver: Running) -> None:
    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter))
    spans = list(exporter.get_finished_spans())
    # The SDK ends children first: the first LLM and tool spans arrive, then the rest of the run.
    first = encode_spans(spans[:2]).SerializeToString()
    rest = encode_spans(spans[2:]).SerializeToString()
    protobuf = {"Content-Type": "application/x-protobuf"}
    assert post(receiver.url, first, **protobuf)[0] == 200
    early = wait_for(lambda: stored_pairs(receiver.engine).get(TRACE))
    assert early and len(early) < len(OPENINFERENCE_PAIRS)  # shown while the run still grows
    with receiver.engine.connect() as conn:
        first_id = conn.execute(sa.select(TraceRow.id)).scalar_one()
    assert post(receiver.url, rest, **protobuf)[0] == 200
    assert wait_for(lambda: stored_pairs(receiver.engine).get(TRACE) == OPENINFERENCE_PAIRS)
    with receiver.engine.connect() as conn:
        rows = conn.execute(sa.select(TraceRow.id, TraceRow.version)).all()
    assert [tuple(r) for r in rows] == [(first_id, 2)]


def test_a_gzipped_json_export_is_accepted_and_answered_in_json(receiver: Running) -> None:
    from otlp_agent import otlp_json

    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter))
    body = gzip.compress(orjson.dumps(otlp_json(exporter.get_finished_spans())))
    status, headers, reply = post(
        receiver.url, body, **{"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    assert (status, headers["content-type"], reply) == (200, "application/json", b"{}")
    assert wait_for(lambda: stored_pairs(receiver.engine).get(TRACE)) == OPENINFERENCE_PAIRS


PARTIAL = orjson.dumps(
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {"traceId": "ab" * 16, "spanId": "0000000000000001", "name": "ok"},
                            {"traceId": "", "spanId": "0000000000000002", "name": "orphan"},
                        ]
                    }
                ]
            }
        ]
    }
)


def test_unusable_spans_are_reported_as_partial_success_in_json(receiver: Running) -> None:
    status, _, reply = post(receiver.url, PARTIAL, **{"Content-Type": "application/json"})
    assert status == 200
    assert orjson.loads(reply) == {
        "partialSuccess": {"rejectedSpans": "1", "errorMessage": "span 'orphan': invalid trace id"}
    }


def test_unusable_spans_are_reported_as_partial_success_in_protobuf(receiver: Running) -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    json_format.ParseDict(
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {"spans": [{"traceId": "", "spanId": "AAAAAAAAAAE=", "name": "orphan"}]}
                    ]
                }
            ]
        },
        request,
    )
    status, headers, reply = post(
        receiver.url, request.SerializeToString(), **{"Content-Type": "application/x-protobuf"}
    )
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(reply)
    assert (status, headers["content-type"]) == (200, "application/x-protobuf")
    assert (answer.partial_success.rejected_spans, answer.partial_success.error_message) == (
        1,
        "span 'orphan': invalid trace id",
    )


PROTOBUF_TYPE = {"Content-Type": "application/x-protobuf"}
JSON_TYPE = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("body", "headers", "status", "answer"),
    [
        (
            b"\xff\xff\xff\xff",
            PROTOBUF_TYPE,
            400,
            (
                "application/x-protobuf",
                code_pb2.INVALID_ARGUMENT,
                "not an OTLP protobuf ExportTraceServiceRequest: Error parsing message with type "
                "'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest': "
                "Wire format was corrupt",
            ),
        ),
        (
            b"[]",
            JSON_TYPE,
            400,
            (
                "application/json",
                code_pb2.INVALID_ARGUMENT,
                'expected an OTLP export object {"resourceSpans": [...]}',
            ),
        ),
        (
            b"not gzip",
            {**JSON_TYPE, "Content-Encoding": "gzip"},
            400,
            (
                "application/json",
                code_pb2.INVALID_ARGUMENT,
                "body is not valid gzip: Error -3 while decompressing data: incorrect header check",
            ),
        ),
        (
            b"{}",
            {**JSON_TYPE, "Content-Encoding": "br"},
            400,
            ("application/json", code_pb2.INVALID_ARGUMENT, "unsupported content encoding 'br'"),
        ),
        (
            b"{}",
            {"Content-Type": "text/plain"},
            415,
            (
                "application/x-protobuf",
                code_pb2.INVALID_ARGUMENT,
                "unsupported content type 'text/plain'",
            ),
        ),
    ],
)
def test_bodies_that_are_not_otlp_exports_are_refused_with_a_status_in_the_request_encoding(
    receiver: Running,
    body: bytes,
    headers: dict[str, str],
    status: int,
    answer: tuple[str, int, str],
) -> None:
    got, reply_headers, reply = post(receiver.url, body, **headers)
    assert got == status
    assert status_of(reply_headers, reply) == answer


def test_a_gzip_bomb_is_refused_with_413(receiver: Running) -> None:
    bomb = gzip.compress(b"\0" * (21 * 1024 * 1024))
    assert len(bomb) < 30_000
    status, headers, reply = post(
        receiver.url, bomb, **{"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    assert (status, status_of(headers, reply)) == (
        413,
        (
            "application/json",
            code_pb2.RESOURCE_EXHAUSTED,
            "decompressed body exceeds 20971520 bytes",
        ),
    )


def test_a_plain_body_over_the_limit_is_refused_with_413(tmp_path: Path, sqlite_url: str) -> None:
    small = ReceiverSettings(spool_dir=tmp_path / "spool", max_body_bytes=100)
    with running(small, sqlite_url) as receiver:
        protobuf = post(receiver.url, b"x" * 101, **PROTOBUF_TYPE)
        json = post(receiver.url, b"x" * 101, **JSON_TYPE)
    assert (protobuf[0], status_of(protobuf[1], protobuf[2])) == (
        413,
        ("application/x-protobuf", code_pb2.RESOURCE_EXHAUSTED, "body exceeds 100 bytes"),
    )
    assert (json[0], status_of(json[1], json[2])) == (
        413,
        ("application/json", code_pb2.RESOURCE_EXHAUSTED, "body exceeds 100 bytes"),
    )


def test_with_a_token_only_requests_bearing_it_are_accepted(
    tmp_path: Path, sqlite_url: str
) -> None:
    guarded = ReceiverSettings(spool_dir=tmp_path / "spool", token="s3cret")
    headers = {"Content-Type": "application/json"}
    with running(guarded, sqlite_url) as receiver:
        refused = post(receiver.url, PARTIAL, **headers)
        wrong = post(receiver.url, PARTIAL, **headers, Authorization="Bearer nope")
        accepted = post(receiver.url, PARTIAL, **headers, Authorization="Bearer s3cret")
    assert (refused[0], status_of(refused[1], refused[2])) == (
        401,
        ("application/json", code_pb2.UNAUTHENTICATED, "missing or wrong bearer token"),
    )
    assert (wrong[0], accepted[0]) == (401, 200)


def test_over_the_high_water_mark_exports_are_refused_with_retry_after(
    tmp_path: Path, sqlite_url: str
) -> None:
    # Nothing gets stored during the test (quiet for an hour): the backlog only grows.
    backlogged = ReceiverSettings(
        spool_dir=tmp_path / "spool", high_water_bytes=0, quiet_seconds=3600
    )
    headers = {"Content-Type": "application/x-protobuf"}
    with running(backlogged, sqlite_url) as receiver:
        first = post(receiver.url, sdk_request(), **headers)
        second = post(receiver.url, sdk_request(), **headers)
        assert stored_pairs(receiver.engine) == {}
    assert first[0] == 200
    assert (second[0], second[1]["retry-after"]) == (503, "5")
    assert status_of(second[1], second[2]) == (
        "application/x-protobuf",
        code_pb2.UNAVAILABLE,
        "receiver backlog over its high-water mark; retry later",
    )
    # Stopping the receiver stored what it held.
    engine = make_engine(sqlite_url)
    assert stored_pairs(engine) == {TRACE: OPENINFERENCE_PAIRS}
    engine.dispose()


def test_receive_refuses_to_listen_beyond_loopback_without_a_token(sqlite_url: str) -> None:
    result = CliRunner().invoke(cli, ["receive", "--db", sqlite_url, "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: refusing to listen on 0.0.0.0 without a token: set --token or "
        "TOOLLENS_OTLP_TOKEN, or bind to 127.0.0.1\n"
    )


def test_secrets_in_span_attributes_reach_neither_the_spool_nor_the_store(
    receiver: Running, settings: ReceiverSettings
) -> None:
    from otlp_agent import otlp_json

    openai = "sk-proj-Hq3vT9xLw2Rk7YbN4mZp8sJd1FgC6uEa0WiO5tQrVy"
    aws = "AKIAQ3EGT5NXK7LRPW2M"
    exporter = InMemorySpanExporter()
    openinference_run(provider(exporter))
    export = otlp_json(exporter.get_finished_spans())
    for resource in export["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span.setdefault("attributes", []).extend(
                    [
                        {"key": "note", "value": {"stringValue": f"deploy key {openai}"}},
                        {"key": "aws.key", "value": {"stringValue": f"id={aws}"}},
                    ]
                )
    status, _, _ = post(receiver.url, orjson.dumps(export), **{"Content-Type": "application/json"})
    assert status == 200
    assert wait_for(lambda: stored_pairs(receiver.engine).get(TRACE)) == OPENINFERENCE_PAIRS
    spool = (settings.spool_dir / "spans.jsonl").read_text()
    assert spool.count("deploy key [REDACTED:openai_key]") == len(exporter.get_finished_spans())
    assert openai[8:30] not in spool and aws not in spool
    with receiver.engine.connect() as conn:
        stored = " ".join(
            str(value)
            for table in ("traces", "messages", "tool_calls", "tool_results", "findings")
            for row in conn.execute(sa.text(f"SELECT * FROM {table}"))
            for value in row
        )
    assert openai[8:30] not in stored and aws not in stored


def raw_exchange(url: str, fields: str, chunks: list[bytes], pause: float) -> tuple[bytes, float]:
    """POST to the receiver at ``url`` on a plain socket: the request line and ``Host``, the
    header ``fields`` (each line ending in CRLF), then ``chunks`` one by one, ``pause`` seconds
    apart (as a slow client does); then read the answer until the server closes: the answer and
    the seconds from the first byte sent to the last byte read."""
    port = int(url.split(":")[2].split("/")[0])
    head = f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n{fields}\r\n".encode()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        for chunk in chunks:
            time.sleep(pause)
            try:
                sock.sendall(chunk)
            except OSError:  # the server answered and closed: the rest is not wanted
                break
        answer = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
    return answer, time.monotonic() - started


def parse_http(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}, body


@pytest.mark.parametrize(
    ("content_type", "chunks"),
    [
        # Sends 10 of the 1000 bytes it announced, then stalls.
        ("application/x-protobuf", [b"0123456789"]),
        # Keeps sending, one byte every 0.2 s: alive, but too slow to finish in time.
        ("application/json", [b"{"] * 30),
    ],
    ids=["stalled", "dripping"],
)
def test_a_client_sending_its_body_slowly_is_answered_408_and_cut_off(
    tmp_path: Path, sqlite_url: str, content_type: str, chunks: list[bytes]
) -> None:
    settings = ReceiverSettings(spool_dir=tmp_path / "spool", body_timeout_seconds=1.0)
    with running(settings, sqlite_url) as receiver:
        fields = f"Content-Type: {content_type}\r\nContent-Length: 1000\r\n"
        answer, seconds = raw_exchange(receiver.url, fields, chunks, pause=0.2)
    status, headers, body = parse_http(answer)
    assert status == 408
    assert headers["connection"] == "close"
    assert status_of(headers, body) == (
        content_type,
        code_pb2.DEADLINE_EXCEEDED,
        "body not received within 1 seconds",
    )
    assert 1.0 <= seconds < 3.0
    assert count(receiver.engine, TraceRow) == 0


def test_a_body_that_arrives_within_the_timeout_is_accepted_on_a_raw_socket(
    tmp_path: Path, sqlite_url: str
) -> None:
    settings = ReceiverSettings(spool_dir=tmp_path / "spool", body_timeout_seconds=2.0)
    body = sdk_request()
    with running(settings, sqlite_url) as receiver:
        fields = (
            "Connection: close\r\n"
            f"Content-Type: application/x-protobuf\r\nContent-Length: {len(body)}\r\n"
        )
        half = len(body) // 2
        answer, _ = raw_exchange(receiver.url, fields, [body[:half], body[half:]], pause=0.3)
    status, headers, _ = parse_http(answer)
    assert (status, headers["content-type"]) == (200, "application/x-protobuf")
