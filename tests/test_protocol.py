"""The Tool Message protocol model, its parser and its published JSON Schema."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import orjson
import pytest

from ingest.protocol import (
    SCHEMA_PATH,
    ToolMessage,
    parse_protocol,
    protocol_from_object,
    protocol_json_schema,
    schema_file_text,
    write_json_schema,
)


def test_success_helper_writes_compact_json_without_none_fields() -> None:
    content = ToolMessage.success("3 flights found.", data=[{"id": "HAT030"}]).to_content()
    assert content == '{"status":"success","summary":"3 flights found.","data":[{"id":"HAT030"}]}'


def test_error_helper_writes_type_summary_and_suggestion_in_field_order() -> None:
    message = ToolMessage.error("rate_limit", "Too many searches.", "Retry after 6s.")
    assert message.to_content() == (
        '{"status":"error","summary":"Too many searches.","error_type":"rate_limit",'
        '"suggestion":"Retry after 6s."}'
    )


def test_error_helper_without_suggestion_leaves_it_out() -> None:
    content = ToolMessage.error("not_found", "No such flight.").to_content()
    assert content == '{"status":"error","summary":"No such flight.","error_type":"not_found"}'


def test_none_values_inside_data_are_kept_because_they_are_data() -> None:
    content = ToolMessage.success("Seat map.", data={"12A": None}).to_content()
    assert content == '{"status":"success","summary":"Seat map.","data":{"12A":null}}'


def test_content_written_by_the_helpers_parses_back_to_an_equal_message() -> None:
    message = ToolMessage.error("timeout", "Search timed out.", "Retry after 6s.")
    assert parse_protocol(message.to_content()) == message


@pytest.mark.parametrize("status", ["success", "error", "partial"])
def test_an_object_with_a_valid_status_is_a_protocol_message(status: str) -> None:
    parsed = parse_protocol(orjson.dumps({"status": status}).decode())
    assert parsed == ToolMessage(status=status)


def test_extra_keys_are_accepted_and_ignored() -> None:
    parsed = parse_protocol('{"status": "error", "message": "boom", "code": 7}')
    assert parsed == ToolMessage(status="error")


def test_leading_whitespace_before_the_object_is_allowed() -> None:
    parsed = parse_protocol('\n  {"status": "partial", "data": [1, 2]}')
    assert parsed == ToolMessage(status="partial", data=[1, 2])


@pytest.mark.parametrize(
    "content",
    [
        "Error: timeout",
        "",
        '[{"status": "error"}]',
        '"success"',
        '{"status": "OK"}',
        '{"status": "Error"}',
        '{"state": "error"}',
        '{"status": 500}',
        '{"status": "error", "summary": 42}',
        '{"status": "error", "error_type": ["timeout"]}',
        '{"status": "error", "summary": "cut off',
    ],
)
def test_content_that_is_not_a_json_object_with_a_valid_status_is_not_protocol(
    content: str,
) -> None:
    assert parse_protocol(content) is None


def test_protocol_from_object_reads_an_already_parsed_value() -> None:
    assert protocol_from_object({"status": "success", "summary": "ok"}) == ToolMessage(
        status="success", summary="ok"
    )
    assert protocol_from_object(["status", "success"]) is None
    assert protocol_from_object(None) is None


def test_schema_requires_only_status_and_lists_the_three_statuses() -> None:
    schema = protocol_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["status"]
    assert schema["properties"]["status"]["enum"] == ["success", "error", "partial"]
    assert sorted(schema["properties"]) == ["data", "error_type", "status", "suggestion", "summary"]
    assert "additionalProperties" not in schema


def test_docs_schema_file_equals_the_schema_generated_from_the_model() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    assert docs / "tool-message-protocol.schema.json" == SCHEMA_PATH
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_file_text()
    assert orjson.loads(SCHEMA_PATH.read_bytes()) == protocol_json_schema()


def test_schema_accepts_what_the_helpers_write_and_rejects_an_unknown_status() -> None:
    validator = jsonschema.Draft202012Validator(protocol_json_schema())
    for message in (
        ToolMessage.success("3 flights found.", data=[1, 2, 3]),
        ToolMessage.error("quota", "Credits exhausted.", "Ask the user to top up."),
        ToolMessage(status="partial", summary="First 50 of 200.", data={"next": 50}),
    ):
        assert list(validator.iter_errors(orjson.loads(message.to_content()))) == []
    errors = list(validator.iter_errors({"status": "ok"}))
    assert [error.validator for error in errors] == ["enum"]
    missing = [error.validator for error in validator.iter_errors({"summary": "no status"})]
    assert missing == ["required"]


def test_write_json_schema_writes_the_docs_text_to_a_given_path(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "schema.json"
    write_json_schema(target)
    assert target.read_text(encoding="utf-8") == schema_file_text()
