"""Schema checks of tool calls against the tools a trace declares."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from realdata_corpus import FOLDERS, traces_of

from ingest.analysis.schema_check import (
    SchemaIssue,
    _declared,
    check_call,
    compile_schema,
    compile_tools,
    json_type,
)
from ingest.analysis.trace import analyze_trace
from ingest.model import ToolDef

WEATHER = ToolDef(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "unit": {"enum": ["c", "f"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)
OPEN = ToolDef(
    name="search",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)
TOOLS = compile_tools([WEATHER, OPEN])


def check(name: str, arguments: Any, args_valid: bool = True) -> SchemaIssue | None:
    return check_call(name, arguments, args_valid, TOOLS)


def violation(detail: str) -> SchemaIssue:
    return SchemaIssue("arguments_schema_violation", detail)


def test_valid_arguments_have_no_issue() -> None:
    assert check("get_weather", {"city": "Paris", "days": 3, "unit": "c"}) is None


def test_a_call_to_an_undeclared_tool_is_unknown_tool() -> None:
    assert check("get_forecast", {}) == SchemaIssue(
        "unknown_tool", "tool 'get_forecast' is not declared in the trace"
    )


def test_a_missing_required_parameter_is_named() -> None:
    assert check("get_weather", {"days": 3}) == violation("missing required parameter 'city'")


def test_a_mistyped_parameter_names_expected_and_actual_types() -> None:
    assert check("get_weather", {"city": "Paris", "days": "3"}) == violation(
        "parameter 'days' should be integer, got string"
    )


def test_an_extra_parameter_is_a_violation_when_additional_properties_are_forbidden() -> None:
    issue = check("get_weather", {"city": "Paris", "country": "FR"})
    assert issue == violation("unexpected parameter 'country'")
    assert issue is not None and issue.findings == ["arguments_schema_violation"]


def test_an_extra_parameter_of_an_open_schema_is_an_undeclared_parameter_warning() -> None:
    issue = check("search", {"q": "x", "page": 2, "lang": "en"})
    assert issue == SchemaIssue(
        "undeclared_parameter",
        "undeclared parameter 'page'; undeclared parameter 'lang'",
        ("page", "lang"),
    )
    assert issue.findings == ["undeclared_parameter"]


def test_a_violation_and_an_undeclared_parameter_give_both_findings() -> None:
    issue = check("search", {"page": 2})
    assert issue == SchemaIssue(
        "arguments_schema_violation",
        "missing required parameter 'q'; undeclared parameter 'page'",
        ("page",),
    )
    assert issue.findings == ["arguments_schema_violation", "undeclared_parameter"]


def open_tool(parameters: dict[str, Any]) -> dict[str, Any]:
    return dict(compile_tools([ToolDef(name="t", parameters=parameters)]))


def test_a_schema_that_welcomes_extras_or_lists_no_properties_declares_nothing_undeclared() -> None:
    welcoming = [
        {"type": "object", "properties": {"q": {}}, "additionalProperties": True},
        {"type": "object", "properties": {"q": {}}, "additionalProperties": {"type": "string"}},
        {"type": "object"},
        {"$ref": "#/$defs/args", "$defs": {"args": {"type": "object", "properties": {"q": {}}}}},
    ]
    for parameters in welcoming:
        assert check_call("t", {"q": "x", "page": "2"}, True, open_tool(parameters)) is None


def test_properties_declared_in_combinators_and_patterns_are_declared() -> None:
    tools = open_tool(
        {
            "type": "object",
            "properties": {"q": {}},
            "patternProperties": {"^x-": {}},
            "anyOf": [{"properties": {"page": {}}}, {"properties": {"cursor": {}}}],
        }
    )
    declared = {"q": "a", "page": 1, "cursor": "c", "x-trace": "1"}
    assert check_call("t", declared, True, tools) is None
    assert check_call("t", {"q": "a", "limit": 5}, True, tools) == SchemaIssue(
        "undeclared_parameter", "undeclared parameter 'limit'", ("limit",)
    )


def test_an_enum_violation_lists_the_allowed_values() -> None:
    assert check("get_weather", {"city": "Paris", "unit": "k"}) == violation(
        "parameter 'unit' should be one of 'c', 'f', got 'k'"
    )


def test_several_problems_are_reported_missing_first_then_extra_then_types() -> None:
    assert check("get_weather", {"days": "3", "country": "FR"}) == violation(
        "missing required parameter 'city'; unexpected parameter 'country'; "
        "parameter 'days' should be integer, got string"
    )


def test_more_than_three_problems_are_summarised() -> None:
    issue = check("get_weather", {"days": "3", "unit": "k", "a": 1, "b": 2})
    assert issue == violation(
        "missing required parameter 'city'; unexpected parameter 'a'; "
        "unexpected parameter 'b' (+2 more)"
    )


def test_arguments_that_are_not_an_object_are_reported_as_such() -> None:
    assert check("get_weather", ["Paris"]) == violation("arguments should be object, got array")


def test_nested_problems_name_the_path_of_the_parameter() -> None:
    tools = compile_tools(
        [
            ToolDef(
                name="book",
                parameters={
                    "type": "object",
                    "properties": {
                        "passengers": {
                            "type": "array",
                            "items": {"type": "object", "required": ["dob"]},
                        }
                    },
                },
            )
        ]
    )
    assert check_call("book", {"passengers": [{"name": "Mia"}]}, True, tools) == violation(
        "missing required parameter 'passengers[0].dob'"
    )


def test_unparsed_arguments_are_not_schema_checked() -> None:
    assert check("get_weather", None, args_valid=False) is None


def test_nothing_is_checked_when_the_trace_declares_no_tools() -> None:
    assert check_call("anything", {"x": 1}, True, compile_tools([])) is None


def test_draft_07_schemas_are_validated_with_their_own_draft() -> None:
    validator = compile_schema(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"ids": {"type": "array", "items": [{"type": "integer"}]}},
        }
    )
    assert validator is not None
    assert type(validator).__name__ == "Draft7Validator"
    # Draft-07 tuple "items": the first element must be an integer.
    assert check_call("t", {"ids": ["x"]}, True, {"t": validator}) == violation(
        "parameter 'ids[0]' should be integer, got string"
    )


def test_a_schema_given_as_a_json_string_is_parsed() -> None:
    tools = compile_tools([ToolDef(name="q", parameters='{"type":"object","required":["sql"]}')])
    assert check_call("q", {}, True, tools) == violation("missing required parameter 'sql'")


def test_an_invalid_schema_means_no_check_instead_of_a_crash() -> None:
    tools = compile_tools(
        [
            ToolDef(name="bad_type", parameters={"type": "objekt"}),
            ToolDef(name="no_schema", parameters=None),
            ToolDef(name="broken_json", parameters="{not json"),
            ToolDef(
                name="dangling_ref",
                parameters={"type": "object", "properties": {"x": {"$ref": "#/$defs/gone"}}},
            ),
        ]
    )
    assert tools["bad_type"] is None
    assert tools["no_schema"] is None
    assert tools["broken_json"] is None
    assert check_call("bad_type", {"x": 1}, True, tools) is None
    assert check_call("dangling_ref", {"x": 1}, True, tools) is None


def test_json_type_names_python_values_the_json_schema_way() -> None:
    values: list[Any] = [True, 1, 1.5, "s", [], {}, None]
    assert [json_type(v) for v in values] == [
        "boolean",
        "integer",
        "number",
        "string",
        "array",
        "object",
        "null",
    ]


@pytest.mark.realdata
def test_real_calls_against_open_schemas_name_no_undeclared_parameter(realdata: Path) -> None:
    """Of the real calls whose trace declares its tools, 52 go to a tool with an open schema
    listing its properties; none of them passes a parameter it does not declare (the models
    behind these traces keep to the schemas), and analysing every real trace does not crash."""
    declared_calls = open_calls = 0
    findings: Counter[str] = Counter()
    for folder, _ in FOLDERS:
        for path in sorted((realdata / folder).iterdir()):
            for trace in traces_of(realdata, f"{folder}/{path.name}"):
                facts = analyze_trace(trace, [1] * len(trace.messages))
                findings.update(f for c in facts.calls for f in c.findings)
                if not trace.tools:
                    continue
                tools = compile_tools(trace.tools)
                for message in trace.messages:
                    for call in message.tool_calls:
                        declared_calls += 1
                        validator = tools.get(call.name)
                        schema = validator.schema if validator is not None else None
                        open_calls += _declared(schema) is not None
    assert (declared_calls, open_calls) == (61, 52)
    assert findings["undeclared_parameter"] == 0
    assert findings["arguments_schema_violation"] == 0
    assert findings["unknown_tool"] == 1
