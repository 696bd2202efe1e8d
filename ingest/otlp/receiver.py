"""The OTLP/HTTP trace receiver (``toollens receive``): ``POST /v1/traces``.

It speaks what the OpenTelemetry exporters send (OTLP/HTTP spec): bodies in
``application/x-protobuf`` or ``application/json``, optionally ``Content-Encoding: gzip``,
answered in the request's content type with an ``ExportTraceServiceResponse``:

* ``200`` once the spans are durable in the :class:`~ingest.otlp.spool.Spool` (redacted
  first: the spool is a store too), with
  ``partial_success`` (``rejected_spans``, ``error_message``) when some spans could not be used
  (no valid trace or span id);
* ``400`` for a body that is not an OTLP export (or not valid gzip), ``415`` for another
  content type, ``413`` when the body, *decompressed*, exceeds the limit: gzip is inflated
  incrementally with a bounded output, so a gzip bomb is refused after ``limit`` bytes, never
  inflated whole;
* ``503`` with ``Retry-After`` while the spans waiting to be stored exceed the high-water mark
  (the exporter retries later, its spans are not lost);
* ``401`` without the bearer token, when one is set;
* ``408`` when the body has not arrived in full within ``body_timeout_seconds`` (a client
  sending it slowly, or stalling, holds no connection and no memory longer than that).

Every error answer's body is a ``google.rpc.Status`` (``code``: the matching gRPC code,
``message``: what went wrong), as the OTLP/HTTP spec asks: JSON for a JSON request, protobuf
otherwise (an unsupported content type included).

Spans are then grouped into traces by :class:`~ingest.otlp.assembler.TraceAssembler` (which
holds only where they are in the spool) and stored by a :class:`~ingest.otlp.store.SpanStore`
(worker processes beside the receiver, reading the spans back from the spool).
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import ipaddress
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from db.door import round_seconds
from ingest.input.otlp_spans import DecodedExport, OtlpDecodeError, decode_json, decode_protobuf
from ingest.otlp.assembler import (
    DEFAULT_MAX_WAIT_SECONDS,
    DEFAULT_QUIET_SECONDS,
    StoreFn,
    TraceAssembler,
)
from ingest.otlp.spool import Spool
from ingest.otlp.store import SpanStore
from ingest.redaction.traces import RedactionSettings, redact_span

DEFAULT_HOST = "127.0.0.1"
#: The OTLP/HTTP default port.
DEFAULT_PORT = 4318
DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024
#: Backlog (spool bytes not yet stored) above which exports are refused with 503.
DEFAULT_HIGH_WATER_BYTES = 256 * 1024 * 1024
RETRY_AFTER_SECONDS = 5
#: Seconds a client has to send its whole body once the headers are in.
DEFAULT_BODY_TIMEOUT_SECONDS = 30.0
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_CHUNK = 64 * 1024


class BodyTooLarge(Exception):
    """The (decompressed) body exceeds the receiver's limit."""


class ReceiverConfigError(ValueError):
    """The receiver was asked to start in a way that is not safe (e.g. open without a token)."""


@dataclass(slots=True)
class ReceiverSettings:
    """How the receiver runs (the options of ``toollens receive``)."""

    spool_dir: Path
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    high_water_bytes: int = DEFAULT_HIGH_WATER_BYTES
    quiet_seconds: float = DEFAULT_QUIET_SECONDS
    max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS
    #: Processes building and storing traces (``None``: one for SQLite, else one per core).
    store_workers: int | None = None
    #: Secrets are redacted before spans reach the spool (and so before the store).
    redaction: RedactionSettings = field(default_factory=RedactionSettings.from_env)
    #: Seconds the whole body may take to arrive (``408`` after that).
    body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT_SECONDS
    #: The least time between two rounds of writes (``None``: the store's own,
    #: :func:`db.door.round_seconds`: one a second on ClickHouse, none elsewhere).
    round_seconds: float | None = None


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token (anyone could write traces).

    >>> check_bind("127.0.0.1", None)
    >>> check_bind("0.0.0.0", "s3cret")  # with a token any address will do
    """
    if token:
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise ReceiverConfigError(
            f"refusing to listen on {host} without a token: set --token or "
            "TOOLLENS_OTLP_TOKEN, or bind to 127.0.0.1"
        )


def inflate_gzip(body: bytes, limit: int) -> bytes:
    """``body`` gunzipped; :class:`BodyTooLarge` as soon as the output would pass ``limit``
    (never more than ``limit + 1`` bytes are produced), ``zlib.error`` if it is not gzip."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    data = body
    while True:
        out += inflater.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise BodyTooLarge(f"decompressed body exceeds {limit} bytes")
        data = inflater.unconsumed_tail
        if not data:
            break
    out += inflater.flush()
    if len(out) > limit:
        raise BodyTooLarge(f"decompressed body exceeds {limit} bytes")
    if not inflater.eof:
        raise zlib.error("truncated gzip stream")
    return bytes(out)


async def _read_body(request: Request, limit: int) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(f"body exceeds {limit} bytes")
    return bytes(body)


def _answer(export: DecodedExport | None, content_type: str) -> Response:
    reply = ExportTraceServiceResponse()
    if export is not None and export.rejected:
        reply.partial_success.rejected_spans = export.rejected
        reply.partial_success.error_message = "; ".join(export.errors[:10])
    if content_type == JSON:
        return Response(json_format.MessageToJson(reply, indent=None), media_type=JSON)
    return Response(reply.SerializeToString(), media_type=PROTOBUF)


#: The gRPC code each HTTP error status stands for in the ``Status`` body.
_GRPC_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    408: code_pb2.DEADLINE_EXCEEDED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    503: code_pb2.UNAVAILABLE,
}


def _error(status: int, message: str, content_type: str, **headers: str) -> Response:
    """An OTLP/HTTP error answer: HTTP ``status`` with a ``google.rpc.Status`` body carrying
    ``message`` (what exporters log), in JSON for a JSON request and protobuf otherwise."""
    reply = status_pb2.Status(code=_GRPC_CODES.get(status, code_pb2.UNKNOWN), message=message)
    if content_type == JSON:
        body = json_format.MessageToJson(reply, indent=None)
        return Response(body, status_code=status, media_type=JSON, headers=headers)
    return Response(
        reply.SerializeToString(), status_code=status, media_type=PROTOBUF, headers=headers
    )


def create_app(settings: ReceiverSettings, store: StoreFn) -> Starlette:
    """The receiver's ASGI app; ``store`` builds and writes traces from their spans (see
    :func:`store_into`; a :class:`SpanStore` is started and closed with the app)."""
    spool = Spool(settings.spool_dir)
    rounds = settings.round_seconds
    if rounds is None:
        rounds = round_seconds(store.engine) if isinstance(store, SpanStore) else 0.0
    assembler = TraceAssembler(
        store,
        spool.path,
        quiet_seconds=settings.quiet_seconds,
        max_wait_seconds=settings.max_wait_seconds,
        round_seconds=rounds,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from ingest.analysis.tokens import count_tokens

        # Load the tokenizer now (seconds, once) rather than when the first trace is stored;
        # the store's worker, forked next (from this thread, which lives as long as the
        # server: the worker is bound to it), inherits it.
        count_tokens("warm up")
        if isinstance(store, SpanStore):
            store.start()
        spool.open()
        # Everything acknowledged before the last stop (or crash) is assembled again; traces
        # stored already are recognized as such by the store.
        assembler.add(ref for _, ref in spool.replay())
        assembler.flush(everything=True)
        # Modules, the tokenizer and the app live as long as the receiver: the cyclic GC,
        # set off over and over by the objects each request decodes, need not rescan them.
        gc.freeze()
        assembler.start()
        try:
            yield
        finally:
            assembler.stop()
            spool.close()
            if isinstance(store, SpanStore):
                store.close()

    async def export_traces(request: Request) -> Response:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if settings.token and not hmac.compare_digest(
            request.headers.get("authorization", "").encode(),
            f"Bearer {settings.token}".encode(),
        ):
            return _error(401, "missing or wrong bearer token", content_type)
        if content_type not in (PROTOBUF, JSON):
            return _error(415, f"unsupported content type {content_type!r}", content_type)
        if assembler.pending_bytes > settings.high_water_bytes:
            return _error(
                503,
                "receiver backlog over its high-water mark; retry later",
                content_type,
                **{"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        limit = settings.max_body_bytes
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        try:
            async with asyncio.timeout(settings.body_timeout_seconds):
                body = await _read_body(request, limit)
            if encoding == "gzip":
                body = inflate_gzip(body, limit)
            elif encoding not in ("identity", ""):
                return _error(400, f"unsupported content encoding {encoding!r}", content_type)
            export = decode_protobuf(body) if content_type == PROTOBUF else decode_json(body)
        except TimeoutError:
            seconds = settings.body_timeout_seconds
            message = f"body not received within {seconds:g} seconds"
            return _error(408, message, content_type, Connection="close")
        except BodyTooLarge as exc:
            return _error(413, str(exc), content_type)
        except zlib.error as exc:
            return _error(400, f"body is not valid gzip: {exc}", content_type)
        except OtlpDecodeError as exc:
            return _error(400, str(exc), content_type)
        redactor = settings.redaction.redactor()
        fresh = [redact_span(span, redactor) for span in assembler.fresh(export.spans)]
        refs = await run_in_threadpool(spool.append, fresh)
        assembler.add(refs)
        return _answer(export, content_type)

    app = Starlette(
        routes=[Route("/v1/traces", export_traces, methods=["POST"])], lifespan=lifespan
    )
    app.state.assembler = assembler
    return app


def store_into(
    engine: Engine, redaction: RedactionSettings | None = None, workers: int | None = None
) -> SpanStore:
    """A store building traces from spans and writing them through the import pipeline in
    ``workers`` worker processes, one import run per worker and round (``redaction``: as
    :func:`ingest.importing.pipeline.import_traces` takes it)."""
    return SpanStore(engine, redaction, workers=workers)


def serve(
    engine: Engine,
    settings: ReceiverSettings,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
) -> None:
    """Run the receiver until interrupted (the library form of ``toollens receive``)."""
    import uvicorn

    check_bind(host, settings.token)
    app = create_app(settings, store_into(engine, settings.redaction, settings.store_workers))
    uvicorn.run(app, host=host, port=port, log_level="warning")


__all__ = [
    "DEFAULT_BODY_TIMEOUT_SECONDS",
    "DEFAULT_HOST",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PORT",
    "BodyTooLarge",
    "ReceiverConfigError",
    "ReceiverSettings",
    "check_bind",
    "create_app",
    "inflate_gzip",
    "serve",
    "store_into",
]
