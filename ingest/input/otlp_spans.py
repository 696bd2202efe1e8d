"""OTLP trace exports (protobuf or JSON) -> plain span objects.

An OTLP export (``ExportTraceServiceRequest``) nests spans as ``resourceSpans[].scopeSpans[].
spans[]``; attribute values are typed unions (``stringValue``, ``intValue`` …, ``arrayValue``,
``kvlistValue``). :func:`decode_protobuf` and :func:`decode_json` flatten that into
:class:`OtlpSpan` objects whose attributes are plain Python values, each span carrying its
resource's attributes and its instrumentation scope.

The JSON form follows the OTLP "JSON Protobuf Encoding": ids are hex (where proto3 JSON would
say base64; ids that some exporters send as base64 are read as such), int64 values are
strings, enums are integers. It is read with ``google.protobuf.json_format`` after the ids are
turned into the base64 proto3 JSON expects, so both forms are decoded by the same message type.

A span whose trace id or span id is missing, all zero or of the wrong length cannot be placed
in any trace: it is counted in :attr:`DecodedExport.rejected` (what the receiver reports as
``partial_success``), the other spans of the export are kept.

Example::

    >>> export = decode_json(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{'
    ...     b'"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", '
    ...     b'"name": "chat", "attributes": [{"key": "n", "value": {"intValue": "47"}}]}]}]}]}')
    >>> span = export.spans[0]
    >>> span.trace_id, span.span_id, span.attributes
    ('5b8efff798038103d269b633813fc60c', 'eee19b7ec3c1b174', {'n': 47})
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

#: OTel status codes (``Status.code``).
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
_TRACE_ID_BYTES, _SPAN_ID_BYTES = 16, 8


class OtlpDecodeError(ValueError):
    """The body is not an OTLP trace export (not protobuf / JSON of the right message)."""


@dataclass(slots=True)
class SpanEvent:
    """A span event (``exception``, ``gen_ai.choice`` …) with its attributes."""

    name: str
    time_unix_nano: int
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class OtlpSpan:
    """One span, its ids as lowercase hex, its attributes as plain Python values."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    #: ``Span.SpanKind`` (1 INTERNAL, 2 SERVER, 3 CLIENT, 4 PRODUCER, 5 CONSUMER).
    kind: int
    start_unix_nano: int
    end_unix_nano: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    #: ``Status.code`` (0 unset, 1 OK, 2 ERROR) and its message.
    status_code: int = STATUS_UNSET
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""

    def to_json(self) -> bytes:
        """The span as one line of JSON (the spool's record); :meth:`from_json` reads it."""
        # orjson writes dataclasses itself, ten times faster than ``asdict`` (which deep-copies
        # every attribute value first).
        return orjson.dumps(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> OtlpSpan:
        """The span :meth:`to_json` wrote."""
        value = orjson.loads(data)
        value["events"] = [SpanEvent(**event) for event in value["events"]]
        return cls(**value)


@dataclass(slots=True)
class DecodedExport:
    """The usable spans of one export, and how many could not be used and why."""

    spans: list[OtlpSpan]
    rejected: int = 0
    errors: list[str] = field(default_factory=list)


def decode_protobuf(body: bytes) -> DecodedExport:
    """The spans of a binary ``ExportTraceServiceRequest``; :class:`OtlpDecodeError` if it
    is not one."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RuntimeWarning) as exc:
        raise OtlpDecodeError(f"not an OTLP protobuf ExportTraceServiceRequest: {exc}") from exc
    return _spans(request)


def decode_json(body: bytes | str) -> DecodedExport:
    """The spans of an OTLP JSON export (``{"resourceSpans": …}``)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise OtlpDecodeError(f"not JSON: {exc}") from exc
    return decode_json_value(value)


def decode_json_value(value: Any) -> DecodedExport:
    """:func:`decode_json` of an already parsed JSON value."""
    if not isinstance(value, dict) or not isinstance(value.get("resourceSpans", []), list):
        raise OtlpDecodeError('expected an OTLP export object {"resourceSpans": [...]}')
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(_base64_ids(value), request, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError) as exc:
        raise OtlpDecodeError(f"not an OTLP JSON export: {exc}") from exc
    return _spans(request)


def _id_base64(value: Any, size: int) -> Any:
    """An id as proto3 JSON wants it (base64): hex of the right length is converted, base64
    of the right length kept, anything else made empty (the span is then rejected, not the
    whole export)."""
    if not isinstance(value, str) or not value:
        return value
    if len(value) == 2 * size:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            pass
    try:
        if len(base64.b64decode(value, validate=True)) == size:
            return value
    except (binascii.Error, ValueError):
        pass
    return ""


def _base64_ids(export: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``export`` (only the parts holding ids are copied) with base64 ids."""
    resource_spans = []
    for resource in export.get("resourceSpans") or []:
        if not isinstance(resource, dict):
            resource_spans.append(resource)
            continue
        scopes = []
        for scope in resource.get("scopeSpans") or []:
            if isinstance(scope, dict) and isinstance(scope.get("spans"), list):
                scope = {**scope, "spans": [_span_ids(s) for s in scope["spans"]]}
            scopes.append(scope)
        resource_spans.append({**resource, "scopeSpans": scopes})
    return {**export, "resourceSpans": resource_spans}


def _span_ids(span: Any) -> Any:
    if not isinstance(span, dict):
        return span
    span = dict(span)
    for key, size in (
        ("traceId", _TRACE_ID_BYTES),
        ("spanId", _SPAN_ID_BYTES),
        ("parentSpanId", _SPAN_ID_BYTES),
    ):
        if key in span:
            span[key] = _id_base64(span[key], size)
    links = span.get("links")
    if isinstance(links, list):
        span["links"] = [
            {
                **link,
                "traceId": _id_base64(link.get("traceId"), _TRACE_ID_BYTES),
                "spanId": _id_base64(link.get("spanId"), _SPAN_ID_BYTES),
            }
            if isinstance(link, dict)
            else link
            for link in links
        ]
    return span


def any_value(value: AnyValue) -> Any:
    """An ``AnyValue`` as a plain Python value (bytes as base64 text, so spans stay JSON)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    """Repeated ``KeyValue`` as a dict (a repeated key: the last one wins)."""
    found: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        found[pair.key] = any_value(pair.value)
    return found


def _spans(request: ExportTraceServiceRequest) -> DecodedExport:
    export = DecodedExport(spans=[])
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            for span in scope_spans.spans:
                trace_id, span_id = span.trace_id, span.span_id
                if len(trace_id) != _TRACE_ID_BYTES or not any(trace_id):
                    export.rejected += 1
                    export.errors.append(f"span {span.name!r}: invalid trace id")
                    continue
                if len(span_id) != _SPAN_ID_BYTES or not any(span_id):
                    export.rejected += 1
                    export.errors.append(f"span {span.name!r}: invalid span id")
                    continue
                parent = span.parent_span_id
                export.spans.append(
                    OtlpSpan(
                        trace_id=trace_id.hex(),
                        span_id=span_id.hex(),
                        parent_span_id=parent.hex() if any(parent) else None,
                        name=span.name,
                        kind=span.kind,
                        start_unix_nano=span.start_time_unix_nano,
                        end_unix_nano=span.end_time_unix_nano,
                        attributes=attributes(span.attributes),
                        events=[
                            SpanEvent(e.name, e.time_unix_nano, attributes(e.attributes))
                            for e in span.events
                        ],
                        status_code=span.status.code,
                        status_message=span.status.message,
                        resource=resource,
                        scope_name=scope.name,
                        scope_version=scope.version,
                    )
                )
    return export


__all__ = [
    "STATUS_ERROR",
    "DecodedExport",
    "OtlpDecodeError",
    "OtlpSpan",
    "SpanEvent",
    "any_value",
    "attributes",
    "decode_json",
    "decode_json_value",
    "decode_protobuf",
]
