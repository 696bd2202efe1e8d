"""Suggestion extraction: every named pattern on an example and a near-miss, order, sentences."""

from __future__ import annotations

from typing import Any

import pytest

from db.contract.vocabulary import SUGGESTION_KINDS
from ingest.analysis.error_detection import SCAN_EDGE
from ingest.analysis.suggestions import (
    MAX_SENTENCE,
    PATTERNS,
    Suggestion,
    extract_suggestion,
    find_suggestion,
)

# pattern name -> (text, expected sentence, kind, detail, near-miss with no suggestion at all)
EXAMPLES: dict[str, tuple[str, str, str, dict[str, Any], str]] = {
    "retry_after_header": (
        "HTTP 429 Too Many Requests\nRetry-After: 6",
        "Retry-After: 6",
        "retry_after",
        {"seconds": 6.0},
        "X-RateLimit-Remaining: 0",
    ),
    "retry_after_text": (
        "Rate limit reached. Please try again in 6.5s. Thanks.",
        "Please try again in 6.5s.",
        "retry_after",
        {"seconds": 6.5},
        "The retry counter is at 3 attempts",
    ),
    "missing_positional_argument": (
        "TypeError: get_weather() missing 1 required positional argument: 'city'",
        "TypeError: get_weather() missing 1 required positional argument: 'city'",
        "missing_param",
        {"param": "city"},
        "TypeError: get_weather() takes 1 positional argument but 2 were given",
    ),
    "missing_required_parameter": (
        "Error: missing required parameter city.",
        "Error: missing required parameter city.",
        "missing_param",
        {"param": "city"},
        "Error: the parameters are out of order",
    ),
    "required_property": (
        "Validation failed: 'city' is a required property",
        "Validation failed: 'city' is a required property",
        "missing_param",
        {"param": "city"},
        "Validation failed: city has the wrong type",
    ),
    "pydantic_field_required": (
        "1 validation error for SearchArgs\ncity\n  Field required [type=missing]",
        "city\n  Field required [type=missing]",
        "missing_param",
        {"param": "city"},
        "1 validation error for SearchArgs\ncity\n  Input should be a valid string",
    ),
    "pydantic_missing_loc": (
        '1 validation errors: [\n  {\n    "type": "missing",\n    "loc": [\n      "city"\n'
        '    ],\n    "msg": "Field required"\n  }\n]',
        '"type": "missing", "loc": [ "city"',
        "missing_param",
        {"param": "city"},
        '1 validation errors: [\n  {\n    "type": "string_type",\n    "loc": [\n      "city"',
    ),
    "provide_param": (
        "Error: please provide the date parameter.",
        "Error: please provide the date parameter.",
        "missing_param",
        {"param": "date"},
        "Error: the provider is down",
    ),
    "alternatives": (
        "Found 2 matches of the string to replace, but replace_all is false. To replace all "
        "occurrences, set replace_all to true. To replace only one occurrence, please provide "
        "more context to uniquely identify the instance.",
        "To replace all occurrences, set replace_all to true. To replace only one occurrence, "
        "please provide more context to uniquely identify the instance.",
        "other",
        {},
        "Found 2 files. To be precise, both are logs. To keep them, the job reads them once.",
    ),
    "set_param": (
        "Found 4 matches. To replace all occurrences, set replace_all to true.",
        "To replace all occurrences, set replace_all to true.",
        "missing_param",
        {"param": "replace_all"},
        "Found 4 matches in the result set",
    ),
    "use_instead": (
        "Error: get_flights is deprecated. Use `search_flights` instead.",
        "Use `search_flights` instead.",
        "use_instead",
        {"tool": "search_flights"},
        "Error: the tool is in use by another session",
    ),
    "did_you_mean": (
        "Error: Unknown tool get_usr. Did you mean get_user?",
        "Did you mean get_user?",
        "use_instead",
        {"tool": "get_user"},
        "Error: what you mean is unclear",
    ),
    "call_first": (
        "Error: not authenticated. Call login first.",
        "Call login first.",
        "use_instead",
        {"tool": "login"},
        "Error: the first call failed",
    ),
    "ask_user": (
        "Error: several accounts match. Ask the user for their email.",
        "Ask the user for their email.",
        "ask_user",
        {},
        "Error: the user account is locked",
    ),
    "hint_line": (
        "error: failed to push some refs\nhint: Updates were rejected because the tip is behind.",
        "Updates were rejected because the tip is behind.",
        "other",
        {},
        "error: failed to push some refs\nthe hint text was empty",
    ),
    "try_sentence": (
        "Error: no flights on that date. Try a later date.",
        "Try a later date.",
        "other",
        {},
        "Error: the try block raised",
    ),
    "do_first": (
        "File has not been read yet. Read it first before writing to it.",
        "Read it first before writing to it.",
        "other",
        {},
        "File has not been read yet. The first line is empty.",
    ),
    "fix_and_retry": (
        "No customer named Smith; give the full name.\n\nFix the errors and try again.",
        "Fix the errors and try again.",
        "other",
        {},
        "Fixed the errors in 3 files; tests pass again.",
    ),
    "please_do": (
        "Found 2 matches. To replace only one, please provide more context.",
        "To replace only one, please provide more context.",
        "other",
        {},
        "Found 2 matches. Pleased to help.",
    ),
}


def test_every_pattern_has_an_example_and_a_known_kind() -> None:
    assert sorted(EXAMPLES) == sorted(spec.name for spec in PATTERNS)
    kinds = set(SUGGESTION_KINDS)
    assert {spec.kind for spec in PATTERNS} == kinds


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_pattern_finds_its_example(name: str) -> None:
    text, sentence, kind, detail, _ = EXAMPLES[name]
    assert find_suggestion(text) == Suggestion(sentence, kind, detail, name)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_near_miss_has_no_suggestion(name: str) -> None:
    assert find_suggestion(EXAMPLES[name][4]) is None


def test_extract_suggestion_returns_sentence_kind_and_detail() -> None:
    assert extract_suggestion("Retry after 6s") == ("Retry after 6s", "retry_after", {"seconds": 6})
    assert extract_suggestion("No advice here.") is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("retry after 6s", 6.0),
        ("Please wait 2 minutes.", 120.0),
        ("try again in 30 seconds", 30.0),
        ("retry in 500ms", 0.5),
        ("Wait for 1 hour", 3600.0),
        ("retry after 1.5 secs", 1.5),
    ],
)
def test_retry_durations_are_converted_to_seconds(text: str, seconds: float) -> None:
    found = extract_suggestion(text)
    assert found is not None
    assert found[1:] == ("retry_after", {"seconds": seconds})


def test_more_checkable_kinds_win_over_generic_hints() -> None:
    text = "Hint: slow down.\nRate limited: retry after 6s."
    assert find_suggestion(text) == Suggestion(
        "Rate limited: retry after 6s.", "retry_after", {"seconds": 6.0}, "retry_after_text"
    )
    text = "Suggestion: check the spelling. Did you mean get_user?"
    assert find_suggestion(text) == Suggestion(
        "Did you mean get_user?", "use_instead", {"tool": "get_user"}, "did_you_mean"
    )


def test_compiler_did_you_mean_is_not_advice_about_tools() -> None:
    text = (
        "src/kron.c:283:9: warning: implicit declaration of function 'vsla_cpu_fill'; "
        "did you mean 'vsla_cpu_min'? [-Wimplicit-function-declaration]"
    )
    assert find_suggestion(text) is None


def test_a_sentence_stops_at_line_ends_and_sentence_ends() -> None:
    text = "first line\nError: bad date. Please use the ISO format. Thanks!\nlast"
    assert find_suggestion(text) == Suggestion(
        "Please use the ISO format.", "other", {}, "please_do"
    )


def test_a_long_sentence_is_cut_with_an_ellipsis() -> None:
    text = "Try " + "a" * 1000 + "."
    assert find_suggestion(text) is None  # "Try a…" without a following word is no advice
    text = "Try a " + "b" * 1000 + "."
    found = find_suggestion(text)
    assert found is not None
    assert len(found.sentence) == MAX_SENTENCE
    assert found.sentence.endswith("…")


def test_advice_in_the_middle_of_a_long_text_is_not_scanned() -> None:
    filler = "x" * SCAN_EDGE + "\n"
    assert extract_suggestion(filler + "retry after 6s\n" + filler) is None
    assert extract_suggestion(filler + filler + "retry after 6s") == (
        "retry after 6s",
        "retry_after",
        {"seconds": 6.0},
    )


def test_every_pattern_keyword_is_lowercase() -> None:
    for spec in PATTERNS:
        assert spec.keywords == tuple(keyword.lower() for keyword in spec.keywords), spec.name
        for text, *_ in (EXAMPLES[spec.name],):
            assert any(keyword in text.lower() for keyword in spec.keywords), spec.name
