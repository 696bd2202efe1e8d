"""The Tool Message protocol: a small JSON shape that makes a tool result easy for a model to use.

ToolLens reads a Tool Message whose content is a JSON object with a valid ``status`` as
*structured* and recommends this shape to tool authors::

    {"status": "error", "error_type": "rate_limit",
     "summary": "Flight search is rate limited.", "suggestion": "Retry after 6s."}

``status`` (``success`` | ``error`` | ``partial``) is the only required key; ``summary`` is one
line for the model, ``data`` carries the details, ``error_type`` names the failure (the ToolLens
taxonomy is recommended, any string is kept verbatim) and ``suggestion`` is advice for the
model's next step, not for the user. Unknown keys are accepted and ignored, so existing JSON
results that already carry a ``status`` stay readable.

Tool authors can produce conforming results directly::

    >>> ToolMessage.error("not_found", "No flight HAT030 on 2024-05-13.").to_content()
    '{"status":"error","summary":"No flight HAT030 on 2024-05-13.","error_type":"not_found"}'

The JSON Schema in ``docs/tool-message-protocol.schema.json`` is generated from this model
(``python -m ingest.protocol``) and a test keeps the two equal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from db.contract.vocabulary import PROTOCOL_STATUSES, ProtocolStatus

#: Where the published schema lives, relative to the repository root.
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "docs" / "tool-message-protocol.schema.json"
SCHEMA_ID = "https://github.com/toollens/toollens/blob/main/docs/tool-message-protocol.schema.json"


class ToolMessage(BaseModel):
    """A structured Tool Message: what happened, in a shape a model can act on."""

    # Extra keys are ignored rather than forbidden: many tools already return JSON with a
    # ``status`` plus their own fields, and those should still be read as structured.
    model_config = ConfigDict(extra="ignore", title="ToolMessage")

    status: ProtocolStatus = Field(description="Outcome of the tool call.")
    summary: str | None = Field(None, description="One line for the model saying what happened.")
    data: Any = Field(None, description="Details of the result (any JSON value).")
    error_type: str | None = Field(
        None,
        description=(
            "Kind of failure, e.g. rate_limit, timeout, unavailable, auth, not_found, "
            "invalid_params, invalid_arguments_json, unknown_tool, tool_exception, conflict, "
            "quota, content_filter, other."
        ),
    )
    suggestion: str | None = Field(None, description="Advice for the model's next step.")

    @classmethod
    def success(cls, summary: str, data: Any = None) -> ToolMessage:
        """A successful result with a one-line summary and optional details.

        >>> ToolMessage.success("3 flights found.", data=[1, 2, 3]).to_content()
        '{"status":"success","summary":"3 flights found.","data":[1,2,3]}'
        """
        return cls(status="success", summary=summary, data=data)

    @classmethod
    def error(cls, error_type: str, summary: str, suggestion: str | None = None) -> ToolMessage:
        """A failed result: what kind of failure, what happened, and what to do next.

        >>> ToolMessage.error("rate_limit", "Too many searches.", "Retry after 6s.").suggestion
        'Retry after 6s.'
        """
        return cls(status="error", error_type=error_type, summary=summary, suggestion=suggestion)

    def to_content(self) -> str:
        """Compact JSON for the Tool Message content, leaving out fields that are ``None``.

        Only top-level ``None`` fields are dropped; ``None`` values inside ``data`` are data.
        """
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        payload = {name: value for name, value in fields.items() if value is not None}
        return orjson.dumps(payload).decode()


def protocol_from_object(value: Any) -> ToolMessage | None:
    """The protocol message in an already-parsed JSON value, or ``None`` when it is not one.

    A value is a protocol message when it is an object whose ``status`` is one of
    ``vocabulary.PROTOCOL_STATUSES`` (case-sensitive: the protocol is a contract, ``"OK"`` is
    not a status) and whose known fields have the right types.

    >>> protocol_from_object({"status": "partial", "data": [1]}).status
    'partial'
    >>> protocol_from_object({"status": "ok"}) is None
    True
    """
    if not isinstance(value, dict) or value.get("status") not in PROTOCOL_STATUSES:
        return None
    try:
        return ToolMessage.model_validate(value, strict=True)
    except ValidationError:
        return None


def parse_protocol(content: str) -> ToolMessage | None:
    """The protocol message in a Tool Message's text, or ``None`` unless it is one.

    >>> parse_protocol('{"status": "error", "error_type": "timeout"}').error_type
    'timeout'
    >>> parse_protocol("Error: timeout") is None
    True
    """
    if not content.lstrip().startswith("{"):
        return None
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    return protocol_from_object(value)


def protocol_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the Tool Message protocol, generated from the model."""
    schema = ToolMessage.model_json_schema()
    # The class docstring is written for Python readers; the schema gets its own sentence.
    schema["description"] = (
        "A structured Tool Message: the content of a tool result as a JSON object. Only "
        "`status` is required; unknown keys are allowed and ignored."
    )
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def schema_file_text() -> str:
    """The exact text of ``docs/tool-message-protocol.schema.json`` (indented, in field order)."""
    return orjson.dumps(protocol_json_schema(), option=orjson.OPT_INDENT_2).decode() + "\n"


def write_json_schema(path: Path = SCHEMA_PATH) -> None:
    """Write the protocol's JSON Schema to ``path`` (the docs file by default)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema_file_text(), encoding="utf-8")


if __name__ == "__main__":
    write_json_schema(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH)
