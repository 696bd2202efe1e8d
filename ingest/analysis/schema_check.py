"""Check tool calls against the tools a trace declares (name and JSON Schema of the arguments).

Only traces that declare tools (``trace.tools``) are checked; without declarations nothing can be
said. For each call:

* a name no declared tool has → ``unknown_tool``;
* parsed arguments that violate the tool's ``parameters`` schema → ``arguments_schema_violation``
  (an error) with a detail naming each problem (at most three, then ``(+N more)``):
  ``missing required parameter 'city'``, ``unexpected parameter 'x'`` (the schema sets
  ``additionalProperties: false``), ``parameter 'days' should be integer, got string``,
  ``parameter 'unit' should be one of 'c', 'f', got 'k'``, else the validator's own message;
* a top-level argument an *open* schema does not declare → ``undeclared_parameter`` (a warning:
  the schema allows it, but the model invented it), detail ``undeclared parameter 'page'``.
  Open means the schema says nothing about extra properties (no ``additionalProperties``, no
  ``unevaluatedProperties``) but lists its ``properties``; an explicit ``additionalProperties:
  true`` or schema declares extras welcome, and a schema that reaches properties through
  ``$ref`` is not second-guessed. Most OpenAI and MCP tool schemas are open, so without this an
  invented parameter would pass unseen. A call can have both findings (a missing required
  parameter and an invented one); the issue's ``kind`` is then the violation.

Schemas are validated with the draft their ``$schema`` names, Draft 2020-12 when they name none
(draft-07 and older schemas, common in OpenAI/MCP tool definitions, keep their own semantics).
A schema that is itself invalid, or whose ``$ref`` cannot be resolved, is treated as *no schema*:
a bad declaration is the tool author's problem, and must never stop an import. Calls whose
arguments did not parse are not schema-checked (``unparsed_arguments`` already covers them).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from ingest.model import ToolDef

T = TypeVar("T")

#: How many schema problems a detail names before summarising the rest.
MAX_PROBLEMS = 3

_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is a subclass of int
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
    (type(None), "null"),
)
# Problems a user most needs to see first: missing, extra, then mistyped parameters.
_PRIORITY = {"required": 0, "additionalProperties": 1, "type": 2, "enum": 3}


@dataclass(slots=True, frozen=True)
class SchemaIssue:
    """One call's schema problem: ``unknown_tool``, ``arguments_schema_violation`` or
    ``undeclared_parameter`` (the most serious when there are several), and the top-level
    parameters an open schema does not declare."""

    kind: str
    detail: str
    undeclared: tuple[str, ...] = ()

    @property
    def findings(self) -> list[str]:
        """The finding kinds of the call: ``kind``, and ``undeclared_parameter`` when the
        arguments also name undeclared parameters.

        >>> SchemaIssue("arguments_schema_violation", "…", ("page",)).findings
        ['arguments_schema_violation', 'undeclared_parameter']
        """
        if self.undeclared and self.kind != "undeclared_parameter":
            return [self.kind, "undeclared_parameter"]
        return [self.kind]


def json_type(value: Any) -> str:
    """The JSON Schema type name of a Python value parsed from JSON.

    >>> json_type(True), json_type(3), json_type("3")
    ('boolean', 'integer', 'string')
    """
    for python_type, name in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def compile_schema(parameters: Any) -> Validator | None:
    """A validator for a declared ``parameters`` schema, or ``None`` when there is nothing
    usable to check against (no schema, not an object, invalid schema)."""
    if isinstance(parameters, str | bytes):
        # Some sources (OpenInference ``tool.json_schema``) carry the schema as a JSON string.
        try:
            parameters = orjson.loads(parameters)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(parameters, dict) or not parameters:
        return None
    try:
        key = orjson.dumps(parameters, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return _compile(parameters)
    return _compile_cached(key)


#: Distinct schemas kept compiled. Real traces declare the same few tools in every run, and
#: compiling (``check_schema`` + validator construction) cost 70% of an import's CPU time.
SCHEMA_CACHE_SIZE = 1024


@functools.lru_cache(maxsize=SCHEMA_CACHE_SIZE)
def _compile_cached(key: bytes) -> Validator | None:
    # Validators are immutable, so one per distinct schema can be shared by every trace.
    return _compile(orjson.loads(key))


def _compile(parameters: dict[str, Any]) -> Validator | None:
    try:
        validator_class = validator_for(parameters, default=Draft202012Validator)
        validator_class.check_schema(parameters)
    except SchemaError:
        return None
    validator: Validator = validator_class(parameters)
    return validator


def compile_tools(tools: Iterable[ToolDef]) -> dict[str, Validator | None]:
    """Validators of the declared tools by name (``None``: declared without a usable schema).

    A name declared twice keeps its first declaration, as providers reject duplicates anyway.
    """
    compiled: dict[str, Validator | None] = {}
    for tool in tools:
        if tool.name not in compiled:
            compiled[tool.name] = compile_schema(tool.parameters)
    return compiled


def _path(error: ValidationError, leaf: str | None = None) -> str:
    text = ""
    for part in [*error.absolute_path, *([leaf] if leaf is not None else [])]:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _describe(error: ValidationError) -> list[str]:
    """Sentences naming the parameters one validation error is about."""
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        missing = [name for name in error.validator_value if name not in instance]
        return [f"missing required parameter '{_path(error, name)}'" for name in missing]
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        declared = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [
            name
            for name in instance
            if name not in declared and not any(_matches(p, name) for p in patterns)
        ]
        if extras:
            return [f"unexpected parameter '{_path(error, name)}'" for name in extras]
    where = f"parameter '{_path(error)}'" if error.absolute_path else "arguments"
    if error.validator == "type":
        expected = error.validator_value
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return [f"{where} should be {wanted}, got {json_type(instance)}"]
    if error.validator == "enum" and isinstance(error.validator_value, list):
        options = ", ".join(repr(option) for option in error.validator_value)
        return [f"{where} should be one of {options}, got {instance!r}"]
    return [f"{where}: {error.message}"]


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def violations(validator: Validator, arguments: Any) -> list[str]:
    """Every problem of ``arguments`` against the schema, most important first (may be empty).

    Resolution failures (an unresolvable ``$ref``) count as no problems: see the module docstring.
    """
    if _plainly_valid(validator, arguments):
        return []
    try:
        errors = list(validator.iter_errors(arguments))
    except Exception:  # jsonschema/referencing raise many types for broken $refs; never crash
        return []
    errors.sort(key=lambda e: (_PRIORITY.get(str(e.validator), 9), list(map(str, e.path))))
    problems: list[str] = []
    for error in errors:
        for problem in _describe(error):
            if problem not in problems:
                problems.append(problem)
    return problems


#: Keys a schema (and each of its properties) may use for the fast check below.
_SIMPLE_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "$schema"})
_SIMPLE_PROPERTY_KEYS = frozenset({"type", "enum"})
_NOTES = frozenset({"description", "title", "examples", "default"})
_MODERN_DRAFTS = ("draft-06", "draft-07", "2019-09", "2020-12")
_TYPE_TESTS: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


@dataclass(slots=True, frozen=True)
class _Plan:
    """A flat object schema, checked without jsonschema."""

    required: tuple[str, ...]
    #: Property name -> (allowed type names or None for any, allowed strings or None).
    properties: dict[str, tuple[tuple[str, ...] | None, frozenset[str] | None]]
    closed: bool


#: Fast-check plans by validator id; the validator is kept in the entry so the id stays its own.
_PLANS: dict[int, tuple[Validator, _Plan | None]] = {}


def _per_validator(
    cache: dict[int, tuple[Validator, T]], validator: Validator, derive: Callable[[Any], T]
) -> T:
    """``derive(validator.schema)``, kept in ``cache`` by validator id (the validator kept in
    the entry so the id stays its own; the cache emptied once it holds four times
    ``SCHEMA_CACHE_SIZE`` entries)."""
    entry = cache.get(id(validator))
    if entry is None or entry[0] is not validator:
        if len(cache) >= 4 * SCHEMA_CACHE_SIZE:
            cache.clear()
        entry = (validator, derive(validator.schema))
        cache[id(validator)] = entry
    return entry[1]


def _plainly_valid(validator: Validator, arguments: Any) -> bool:
    """Whether ``arguments`` certainly satisfy a flat object schema (types, required, enums of
    strings, closed properties). ``False`` means "ask jsonschema", which gives the exact
    problems: most calls are valid, and jsonschema's generic walk is most of the check's cost.
    """
    plan = _per_validator(_PLANS, validator, _plan)
    if plan is None or not isinstance(arguments, dict):
        return False
    for name in plan.required:
        if name not in arguments:
            return False
    properties = plan.properties
    for name, value in arguments.items():
        rule = properties.get(name)
        if rule is None:
            if plan.closed:
                return False
            continue
        types, choices = rule
        if types is not None and not any(_TYPE_TESTS[t](value) for t in types):
            return False
        if choices is not None and not (isinstance(value, str) and value in choices):
            return False
    return True


def _plan(schema: Any) -> _Plan | None:
    """The fast-check plan of a flat object schema; ``None`` for anything else."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    if any(key not in _SIMPLE_KEYS and key not in _NOTES for key in schema):
        return None
    draft = schema.get("$schema")
    if draft is not None and not (
        isinstance(draft, str) and any(d in draft for d in _MODERN_DRAFTS)
    ):
        return None
    required = schema.get("required", [])
    declared = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    if not isinstance(declared, dict) or not isinstance(extra, bool):
        return None
    properties: dict[str, tuple[tuple[str, ...] | None, frozenset[str] | None]] = {}
    for name, prop in declared.items():
        rule = _property_rule(prop)
        if rule is None:
            return None
        properties[name] = rule
    return _Plan(tuple(required), properties, closed=not extra)


def _property_rule(
    prop: Any,
) -> tuple[tuple[str, ...] | None, frozenset[str] | None] | None:
    if not isinstance(prop, dict):
        return None
    if any(key not in _SIMPLE_PROPERTY_KEYS and key not in _NOTES for key in prop):
        return None
    kind = prop.get("type")
    types = (kind,) if isinstance(kind, str) else kind
    if types is not None and not (
        isinstance(types, list | tuple) and types and all(t in _TYPE_TESTS for t in types)
    ):
        return None
    choices = prop.get("enum")
    if choices is not None:
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            return None
        choices = frozenset(choices)
    return (tuple(types) if types is not None else None), choices


#: Keywords whose subschemas may declare more properties of the same object.
_COMBINATORS = ("allOf", "anyOf", "oneOf", "then", "else")
#: Keywords that settle what an extra property means: the schema author decided, not us.
_EXTRAS_DECIDED = ("additionalProperties", "unevaluatedProperties")


@dataclass(slots=True, frozen=True)
class _Declared:
    """The top-level parameter names an open schema declares."""

    names: frozenset[str]
    patterns: tuple[str, ...]


#: Declared names by validator id (the validator kept in the entry, as in ``_PLANS``).
_DECLARED: dict[int, tuple[Validator, _Declared | None]] = {}


def _declared(schema: Any) -> _Declared | None:
    """What an open object schema declares; ``None`` when the schema is closed, welcomes
    extras, lists no properties, or reaches properties through ``$ref``."""
    if not isinstance(schema, dict) or any(key in schema for key in _EXTRAS_DECIDED):
        return None
    names: set[str] = set()
    patterns: list[str] = []
    listed = False
    pending: list[Any] = [schema]
    while pending:
        part = pending.pop()
        if not isinstance(part, dict):
            continue
        if "$ref" in part or "$dynamicRef" in part:
            return None
        properties = part.get("properties")
        if isinstance(properties, dict):
            listed = True
            names.update(properties)
        pattern_properties = part.get("patternProperties")
        if isinstance(pattern_properties, dict):
            listed = True
            patterns.extend(pattern_properties)
        for keyword in _COMBINATORS:
            value = part.get(keyword)
            pending.extend(value if isinstance(value, list) else [value])
        dependent = part.get("dependentSchemas")
        if isinstance(dependent, dict):
            pending.extend(dependent.values())
    return _Declared(frozenset(names), tuple(patterns)) if listed else None


def undeclared_parameters(validator: Validator, arguments: Any) -> tuple[str, ...]:
    """Top-level arguments an open schema does not declare, in argument order (see the module
    docstring for what counts as open).

    >>> v = compile_schema({"type": "object", "properties": {"q": {"type": "string"}}})
    >>> undeclared_parameters(v, {"q": "x", "page": 2})
    ('page',)
    """
    if not isinstance(arguments, dict) or not arguments:
        return ()
    declared = _per_validator(_DECLARED, validator, _declared)
    if declared is None:
        return ()
    return tuple(
        name
        for name in arguments
        if name not in declared.names and not any(_matches(p, name) for p in declared.patterns)
    )


def check_call(
    name: str, arguments: Any, args_valid: bool, tools: Mapping[str, Validator | None]
) -> SchemaIssue | None:
    """The schema problem of one call, given the trace's compiled tools (``compile_tools``).

    Returns ``None`` when no tools are declared, when the call is fine, when the tool has no
    usable schema, or when the arguments did not parse.
    """
    if not tools:
        return None
    if name not in tools:
        return SchemaIssue("unknown_tool", f"tool '{name}' is not declared in the trace")
    validator = tools[name]
    if validator is None or not args_valid:
        return None
    undeclared = undeclared_parameters(validator, arguments)
    problems = violations(validator, arguments)
    problems += [f"undeclared parameter '{p}'" for p in undeclared]
    if not problems:
        return None
    detail = "; ".join(problems[:MAX_PROBLEMS])
    if len(problems) > MAX_PROBLEMS:
        detail += f" (+{len(problems) - MAX_PROBLEMS} more)"
    violated = len(problems) > len(undeclared)
    kind = "arguments_schema_violation" if violated else "undeclared_parameter"
    return SchemaIssue(kind, detail, undeclared)
