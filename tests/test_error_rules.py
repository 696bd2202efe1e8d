"""Text rules: every named rule on a positive example and a near-miss, and the rule order."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from db.contract.vocabulary import ERROR_TYPES
from ingest.analysis.content import analyze_content
from ingest.analysis.error_detection import (
    DETECTION_RULES,
    JSON_DETECTION_RULES,
    NOT_JSON,
    SCAN_EDGE,
    _region,
    detect_error,
    edge_lines,
    first_line,
    parse_json,
    scan_window,
)
from ingest.analysis.error_rules import RULES, classify_error, is_exception_text

# rule name -> (error type, positive example, near-miss that this rule must not type)
TYPE_EXAMPLES: dict[str, tuple[str, str, str]] = {
    "unknown_tool_text": (
        "unknown_tool",
        "Error: Tool 'get_wether' not found",
        "Error: the tool returned no flights",
    ),
    "args_json_text": (
        "invalid_arguments_json",
        "Error: Failed to parse tool call arguments for 'book'",
        "JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    ),
    "validation_text": (
        "invalid_params",
        "search() got an unexpected keyword argument 'query'",
        "Error: the expected argument order changed",
    ),
    "invalid_arguments_prompt": (
        "invalid_params",
        "The arguments you sent were invalid: departure: no airport named XYZ. Please fix the "
        "above errors and retry.",
        "Results 1-10 of 50; call the tool again with page=2 for more",
    ),
    "db_client_auth": (
        "auth",
        'psql: error: connection to server at "db" (10.0.0.5), port 5432 failed: FATAL:  '
        'password authentication failed for user "app"',
        'psql: error: connection to server at "db" (10.0.0.5), port 5432 failed: Connection '
        "refused",
    ),
    "ambiguous_edit_target": (
        "invalid_params",
        "Found 3 matches of the string to replace, but replace_all is false.",
        "Found 3 matches for the search string",
    ),
    "stale_read": (
        "conflict",
        "File has been modified since read, either by the user or by a linter.",
        "Error: the file has not been uploaded yet",
    ),
    "compiler_error": (
        "other",
        "error[E0425]: cannot find value `y` in this scope\n --> src/main.rs:3:20",
        "main.c:2:10: fatal error: cuda.h: No such file or directory",
    ),
    "content_filter_text": (
        "content_filter",
        "The response was filtered due to the prompt triggering the content management policy.",
        "Error: filter content by date first",
    ),
    "quota_text": (
        "quota",
        "You exceeded your current quota, please check your plan and billing details.",
        "Error: quota field is missing from the project",
    ),
    "http_429": ("rate_limit", "HTTP 429 returned by upstream", "Error: found 429 results"),
    "rate_limit_text": (
        "rate_limit",
        "Error: rate limit exceeded for this key",
        "Error: accurate limit order could not be placed",
    ),
    "dependency_conflict": (
        "conflict",
        "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
        "Error: unable to resolve host api.example.com",
    ),
    "http_408_504": ("timeout", "504 Gateway Timeout", "Error: flight 504 is full"),
    "timeout_text": (
        "timeout",
        "HTTPConnectionPool(host='x', port=80): Read timed out. (read timeout=30)",
        "Error: timeout must be a number",
    ),
    "http_5xx": ("unavailable", "status_code=503", "Error: 503 seats remain"),
    "connection_error": (
        "unavailable",
        "connect ECONNREFUSED 127.0.0.1:5432",
        "Error: connection established but the query returned nothing",
    ),
    "user_rejected": (
        "auth",
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        "Error: the user record is incomplete",
    ),
    "http_401_403": ("auth", "Request failed: 403 Forbidden", "Error: room 403 is taken"),
    "permission_text": (
        "auth",
        "Error: permission denied for table bookings",
        "Error: the permissions report is empty",
    ),
    "http_404": ("not_found", "gh: Not Found (HTTP 404)", "Error: 404 is not a valid seat"),
    "not_found_text": (
        "not_found",
        "Error: payment method certificate_7504069 not found",
        "Error: the search is unfinished",
    ),
    "http_409": ("conflict", "HTTP 409: version changed", "Error: order 409 shipped"),
    "conflict_text": (
        "conflict",
        "Error: not enough seats on flight HAT290",
        "error: conflicting types for 'vsla_conv'",
    ),
    "http_400_422": (
        "invalid_params",
        "{'statusCode': 400, 'error': 'Bad Request'}",
        "Error: 400 miles is too far",
    ),
    "invalid_value_text": (
        "invalid_params",
        "Error: payment amount does not add up, total price is 375, but paid 299",
        "Error: the validator crashed",
    ),
    "retry_prompt": (
        "invalid_params",
        "Validation feedback:\nThe answer must cite a source.\n\nFix the errors and try again.",
        "Error: fix the tests and try the build again",
    ),
    "traceback": (
        "tool_exception",
        'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n'
        "KeyError: 'seat'",
        "Error: see the traceback viewer",
    ),
    "crash_text": (
        "tool_exception",
        "/bin/bash: line 1: 47003 Segmentation fault      (core dumped) ./tests/run",
        "Error: the fault report is empty",
    ),
}


def test_every_type_rule_has_an_example_and_a_taxonomy_type() -> None:
    assert sorted(TYPE_EXAMPLES) == sorted(rule.name for rule in RULES)
    assert len({rule.name for rule in RULES}) == len(RULES)
    assert {rule.error_type for rule in RULES} <= set(ERROR_TYPES)
    for rule in RULES:
        assert rule.keywords == tuple(keyword.lower() for keyword in rule.keywords), rule.name


@pytest.mark.parametrize("name", sorted(TYPE_EXAMPLES))
def test_type_rule_matches_its_example(name: str) -> None:
    error_type, positive, _ = TYPE_EXAMPLES[name]
    assert classify_error(positive) == (error_type, name)


@pytest.mark.parametrize("name", sorted(TYPE_EXAMPLES))
def test_type_rule_leaves_its_near_miss_alone(name: str) -> None:
    _, _, near_miss = TYPE_EXAMPLES[name]
    assert classify_error(near_miss)[1] != name


def test_an_error_no_rule_types_is_other() -> None:
    assert classify_error("Error: something odd happened") == ("other", "unclassified")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # unknown_tool before not_found: the missing thing is the tool.
        ("Error: Tool 'foo' not found", ("unknown_tool", "unknown_tool_text")),
        ('{"error": "No such function name: login"}', ("unknown_tool", "unknown_tool_text")),
        # quota before rate_limit: providers send exhausted quotas as 429 too.
        ("429: insufficient_quota", ("quota", "quota_text")),
        # timeout before unavailable: a gateway timeout is a 5xx that is a timeout.
        ("HTTP 504 Gateway Timeout", ("timeout", "http_408_504")),
        ("Max retries exceeded: Read timed out.", ("timeout", "timeout_text")),
        # auth before not_found: GitHub hides missing scopes behind 404.
        (
            'gh: Not Found (HTTP 404)\nThis API operation needs the "user" scope.',
            ("auth", "permission_text"),
        ),
        # A traceback is typed by its cause when a rule knows it …
        (
            'Traceback (most recent call last):\n  File "c.py", line 9, in get\n'
            "requests.exceptions.ReadTimeout: Read timed out.",
            ("timeout", "timeout_text"),
        ),
        # … and is a tool exception otherwise.
        (
            "Traceback (most recent call last):\n  File \"c.py\", line 9, in get\nKeyError: 'seat'",
            ("tool_exception", "traceback"),
        ),
        # JSONDecodeError counts as bad arguments only when arguments are mentioned.
        (
            "json.decoder.JSONDecodeError: Expecting value\nwhile parsing the tool arguments",
            ("invalid_arguments_json", "args_json_text"),
        ),
        (
            'Traceback (most recent call last):\n  File "api.py", line 4, in fetch\n'
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
            ("tool_exception", "traceback"),
        ),
        ("TimeoutError: [Errno 110] Connection timed out", ("timeout", "timeout_text")),
        (
            'Exception in thread "main" java.lang.IllegalStateException\n\tat '
            "com.acme.App.main(App.java:10)",
            ("tool_exception", "traceback"),
        ),
        (
            "TypeError: x is undefined\n    at run (/app/tool.js:10:5)",
            ("tool_exception", "traceback"),
        ),
    ],
)
def test_rule_order_prefers_the_more_specific_type(text: str, expected: tuple[str, str]) -> None:
    assert classify_error(text) == expected


# rule name -> (text that reads as an error by this rule, near-miss that is not an error)
DETECTION_EXAMPLES: dict[str, tuple[str, str]] = {
    "bare_error_word": ("  failed. ", "failed attempts: 0"),
    "error_prefix": ("Error: flight HAT030 not available", "Error rate: 0.2% last week"),
    "traceback": (
        'output\nTraceback (most recent call last):\n  File "x.py", line 1\nValueError: bad',
        'log excerpt\nline 2\nline 3\nTraceback (most recent call last):\n  File "x.py"\n'
        "KeyError: 'a'\nline 7\nline 8\nline 9\nline 10",
    ),
    "crash_text": (
        "running tests\n/bin/bash: line 1: 47003 Segmentation fault (core dumped) ./t",
        "notes\nline 2\nline 3\n- the backend test has a segmentation fault\nline 5\nline 6\n"
        "line 7",
    ),
    "http_error_status": ("Request failed with status code 500", "HTTP 200 OK, 404 rows"),
    "failure_phrase": ("gh: failed to fetch the repository", "The job that failed to run: 0"),
    "shell_error": (
        "/bin/bash: line 1: nvcc: command not found",
        "Files:\n/bin/bash: line 1: nvcc: command not found",
    ),
    "exception_text": (
        "An unexpected exception occurred in the tool",
        "Flights found:\nno exceptions apply to this fare",
    ),
    "timeout_duration": (
        "Timeout of 2000ms exceeded.",
        "Settings saved: timeout of 30 s for uploads",
    ),
    "connection_error": (
        "ECONNREFUSED 127.0.0.1:5432",
        "Retried after ECONNREFUSED; the second attempt returned 3 rows\nrow 1",
    ),
    "exit_code": (
        "Exit code 1\nFAILED tests/test_api.py::test_get - assert 404 == 200",
        "Exit code 0\n3 passed in 0.12s",
    ),
    "build_failure": (
        "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
        "Build finished: 0 errors, 2 warnings",
    ),
    "cli_failure": (
        "docker: Error response from daemon: No such container: web.",
        "Summary: Error rates fell to 2% after the deploy",
    ),
    "cli_failure_line": (
        "To github.com:acme/api.git\n ! [rejected]        main -> main (fetch first)\n"
        "error: failed to push some refs to 'github.com:acme/api.git'",
        "config.yaml:\nretries: 3\nerror: false",
    ),
    "retry_prompt": (
        "Validation feedback:\nThe answer must cite a source.\n\nFix the errors and try again.",
        "Notes: the linter says to fix the errors before release",
    ),
    "validation_phrase": (
        "missing required parameter 'city'",
        "Docs: city is the only parameter; country is optional",
    ),
}


def test_every_detection_rule_has_an_example() -> None:
    assert sorted(DETECTION_EXAMPLES) == sorted(rule.name for rule in DETECTION_RULES)


@pytest.mark.parametrize("name", sorted(DETECTION_EXAMPLES))
def test_detection_rule_reads_its_example_as_an_error(name: str) -> None:
    assert detect_error(DETECTION_EXAMPLES[name][0]) == name


@pytest.mark.parametrize("name", sorted(DETECTION_EXAMPLES))
def test_detection_rule_near_miss_is_not_an_error(name: str) -> None:
    assert detect_error(DETECTION_EXAMPLES[name][1]) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"error": "No such function name: login", "response": ""}', "json_error_field"),
        ('{"error": {"code": 429, "message": "slow down"}}', "json_error_field"),
        ('{"error": true}', "json_error_field"),
        ('{"status": "error", "message": "boom"}', "json_status_error"),
        ('{"status": "FAILED"}', "json_status_error"),
        ('{"statusCode": 404, "body": ""}', "json_status_error"),
        ('{"ok": false, "error_code": "channel_not_found"}', "json_success_false"),
        ('{"success": false}', "json_success_false"),
        # ToolBench's "response" holds the API's own error when "error" is empty.
        (
            '{"error": "", "response": "{\'message\': \'unknown service x\'}"}',
            "json_response_error",
        ),
        (
            '{"error": "", "response": "{\'type\': \'https://tools.ietf.org/html/rfc7231\','
            " 'title': 'Bad Request', 'status': 400}\"}",
            "json_response_error",
        ),
        ('{"error": "", "response": "{\'error\': \'Invalid key\'}"}', "json_response_error"),
        # ToolBench observations are cut mid-object; the leading error field still counts.
        ('{"error": "Message error...", "response": "{\'result\': [', "json_error_field"),
    ],
)
def test_json_rules_read_top_level_keys(content: str, expected: str) -> None:
    assert expected in JSON_DETECTION_RULES
    assert detect_error(content) == expected


@pytest.mark.parametrize(
    "content",
    [
        '{"error": "", "response": "[{\\"id\\": 1}]"}',
        # A message beside data, and a status of an item further in, are data.
        '{"error": "", "response": "{\'message\': \'ok\', \'items\': [1, 2]}"}',
        '{"error": "", "response": "{\'items\': [' + "{'id': 1}, " * 40 + "{'status': 404}]}\"}",
        '{"error": null, "data": []}',
        '{"error": "   "}',
        '{"error": false}',
        '{"status": "active", "ok": true}',
        '{"status": 200}',
        '{"status": true}',
        '[{"flight": "HAT030", "status": "error in fare rules"}, {"note": "Error: none"}]',
        '{"flights": [{"id": "HAT030", "remarks": "Traceback (most recent call last):"}]}',
        '"All good"',
    ],
)
def test_json_that_only_mentions_errors_inside_its_data_is_not_an_error(content: str) -> None:
    assert detect_error(content) is None


@pytest.mark.parametrize(
    "content",
    [
        "Flight HAT030: departs 08:00, status on time, error margin 2 minutes",
        "Errors: 0\nWarnings: 2",
        "Error handling guide\n1. Retry",
        "Found 404 matching rows",
        "The previous call failed to find flights, so here are alternatives: HAT031",
        "Summary of exceptions\nnone",
        "",
        "[]",
    ],
)
def test_successful_text_that_mentions_error_words_is_not_an_error(content: str) -> None:
    assert detect_error(content) is None


def test_a_json_encoded_string_is_judged_by_the_text_it_encodes() -> None:
    assert detect_error('"Error: seat 12A is taken"') == "error_prefix"
    assert detect_error('"Seat 12A booked"') is None


def test_detect_error_can_reuse_an_already_parsed_value() -> None:
    content = '{"error": "boom"}'
    assert detect_error(content, parse_json(content)) == "json_error_field"
    # The given value is what gets judged; the text is not parsed again.
    assert detect_error(content, {"error": ""}) is None
    assert detect_error("Error: boom", NOT_JSON) == "error_prefix"


def test_parse_json_returns_not_json_for_text_and_broken_json() -> None:
    assert parse_json(' {"a": [1]}') == {"a": [1]}
    assert parse_json("[1, 2]") == [1, 2]
    assert parse_json("Error: x") is NOT_JSON
    assert parse_json('{"a": ') is NOT_JSON
    assert parse_json("12") is NOT_JSON


def test_scan_window_keeps_short_text_and_both_ends_of_long_text() -> None:
    assert scan_window("short") == "short"
    text = "A" * SCAN_EDGE + "M" * 10 + "Z" * SCAN_EDGE
    window = scan_window(text)
    assert window == "A" * SCAN_EDGE + "\n" + "Z" * SCAN_EDGE
    assert scan_window(window) == window


def test_a_type_phrase_in_the_middle_of_a_long_text_is_not_scanned() -> None:
    middle = "x" * SCAN_EDGE + " rate limit exceeded " + "x" * SCAN_EDGE
    assert classify_error("Error: " + middle) == ("other", "unclassified")
    assert classify_error("Error: " + middle + " rate limit exceeded") == (
        "rate_limit",
        "rate_limit_text",
    )


def test_first_line_skips_blank_lines_and_is_capped() -> None:
    assert first_line("\n\n   Error: boom  \nnext") == "Error: boom"
    assert first_line("y" * 2000) == "y" * 500


def test_edge_lines_keep_the_first_and_last_non_blank_lines() -> None:
    text = "\n".join(f"line {number}" for number in range(1, 101))
    assert edge_lines(text) == "line 1\nline 2\nline 3\nline 98\nline 99\nline 100"
    assert edge_lines("a\n\n b \n") == "a\n b "


def test_exception_text_is_found_anywhere_in_the_window() -> None:
    assert is_exception_text("ran\nValueError: bad seat\nmore output") is True
    assert is_exception_text("thread 'main' panicked at src/main.rs:2:5") is True
    assert is_exception_text("Error: seat taken") is False


def _corpus(realdata: Path) -> list[str]:
    texts: list[str] = []
    runs = orjson.loads((realdata / "openai-chat" / "tau-bench-gpt-4o-airline.json").read_bytes())
    texts += [m["content"] or "" for run in runs for m in run["traj"] if m.get("role") == "tool"]
    for path in sorted((realdata / "claude-code").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            message = orjson.loads(line).get("message")
            if isinstance(message, dict) and isinstance(message.get("content"), list):
                texts += [
                    block["content"]
                    for block in message["content"]
                    if block.get("type") == "tool_result" and isinstance(block.get("content"), str)
                ]
    return texts


@pytest.mark.realdata
def test_keyword_prefilter_never_hides_a_regex_match(realdata: Path) -> None:
    texts = _corpus(realdata) + [
        example for _, pos, near in TYPE_EXAMPLES.values() for example in (pos, near)
    ]
    texts += [text for text, _ in SECOND_PASS] + [text for text, _ in PROSE] + PROSE_SUCCESS
    checked = 0
    for text in texts:
        # The first 2 KB of each result keep this exhaustive check quick.
        window = text[:2048]
        lowered = window.lower()
        for rule in RULES:
            if any(keyword in lowered for keyword in rule.keywords):
                checked += 1
            else:
                # Only texts without a keyword can expose a keyword list that is too short.
                assert rule.pattern.search(window) is None, (rule.name, text)
    # Keywords do occur in the corpus, so the prefilter is really exercised.
    assert checked > 3000


@pytest.mark.realdata
def test_detection_keywords_never_hide_a_regex_match(realdata: Path) -> None:
    texts = _corpus(realdata) + [text for pair in DETECTION_EXAMPLES.values() for text in pair]
    texts += [example for _, pos, near in TYPE_EXAMPLES.values() for example in (pos, near)]
    texts += [text for text, _ in SECOND_PASS] + [text for text, _ in PROSE] + PROSE_SUCCESS
    guarded = [rule for rule in DETECTION_RULES if rule.keywords]
    assert [rule.name for rule in guarded] == [
        "traceback", "crash_text", "http_error_status", "failure_phrase", "shell_error",
        "exception_text", "timeout_duration", "connection_error", "exit_code", "build_failure",
        "cli_failure", "cli_failure_line", "retry_prompt", "validation_phrase",
    ]  # fmt: skip
    checked = 0
    for text in texts:
        for rule in guarded:
            region = _region(text[:2048], rule.region)
            if any(keyword in region.lower() for keyword in rule.keywords):
                checked += 1
            else:
                assert rule.pattern.search(region) is None, (rule.name, text)
    # Keywords occur in hundreds of texts, so the guard is really exercised.
    assert checked > 500


# --- the second pass: failures the first rules read as success or as other ------------------
# Real-looking texts: how Claude Code's Bash tool, Node, requests, pip, npm, cargo, tsc, gcc and
# pydantic-ai write them. (status, error type, rule, suggestion kind, suggestion detail).
PYDANTIC_AI_ARGS = (
    '1 validation errors: [\n  {\n    "type": "missing",\n    "loc": [\n      "city"\n'
    '    ],\n    "msg": "Field required",\n    "input": {}\n  }\n]\n\n'
    "Fix the errors and try again."
)
SECOND_PASS: list[tuple[str, tuple[str, str, str, str | None, dict[str, str | float]]]] = [
    ("Error: timeout after 30s", ("error", "timeout", "timeout_text", None, {})),
    ("Error: Timeout of 2000ms exceeded.", ("error", "timeout", "timeout_text", None, {})),
    (
        "ECONNREFUSED 127.0.0.1:5432",
        ("error", "unavailable", "connection_error", None, {}),
    ),
    (
        "Error: connect ECONNREFUSED 127.0.0.1:3000\n    at TCPConnectWrap.afterConnect "
        "[as oncomplete] (node:net:1555:16)",
        ("error", "unavailable", "connection_error", None, {}),
    ),
    ("read ECONNRESET", ("error", "unavailable", "connection_error", None, {})),
    (
        "getaddrinfo ENOTFOUND api.openweathermap.org",
        ("error", "unavailable", "connection_error", None, {}),
    ),
    (
        "HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded with url: "
        "/v1 (Caused by NameResolutionError(\"Failed to resolve 'api.example.com' ([Errno -2] "
        'Name or service not known)"))',
        ("error", "unavailable", "connection_error", None, {}),
    ),
    (
        "Exit code 1\n============ 1 failed, 3 passed in 0.12s ============",
        ("error", "other", "exit_code", None, {}),
    ),
    (
        "Exit code 2\nls: cannot access 'build': No such file or directory",
        ("error", "not_found", "not_found_text", None, {}),
    ),
    ("Process exited with code 2", ("error", "other", "exit_code", None, {})),
    (
        "Exit code 1\nnpm ERR! code E404\nnpm ERR! 404 Not Found - GET "
        "https://registry.npmjs.org/lodahs - Not found",
        ("error", "not_found", "http_404", None, {}),
    ),
    (
        "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
        "npm ERR! Found: react@18.2.0",
        ("error", "conflict", "dependency_conflict", None, {}),
    ),
    (
        "Collecting torch==9.9\nERROR: Could not find a version that satisfies the requirement "
        "torch==9.9 (from versions: 2.0.0, 2.1.0)\nERROR: No matching distribution found for "
        "torch==9.9",
        ("error", "not_found", "not_found_text", None, {}),
    ),
    (
        "   Compiling demo v0.1.0 (/tmp/demo)\nerror[E0425]: cannot find value `y` in this scope\n"
        ' --> src/main.rs:3:20\n  |\n3 |     println!("{}", y);\n  |                    ^ not '
        'found in this scope\n\nerror: could not compile `demo` (bin "demo") due to 1 previous '
        "error",
        ("error", "other", "build_failure", None, {}),
    ),
    (
        "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n\n"
        "Found 1 error in src/index.ts:3",
        ("error", "other", "build_failure", None, {}),
    ),
    (
        "main.c: In function 'main':\nmain.c:4:5: error: expected ';' before 'return'\n"
        "    4 |     return 0;\n      |     ^~~~~~",
        ("error", "other", "build_failure", None, {}),
    ),
    (
        PYDANTIC_AI_ARGS,
        ("error", "invalid_params", "validation_text", "missing_param", {"param": "city"}),
    ),
    (
        "Validation feedback:\n[{'type': 'missing', 'loc': ('city',), 'msg': 'Field required'}]"
        "\n\nFix the errors and try again.",
        ("error", "invalid_params", "validation_text", "missing_param", {"param": "city"}),
    ),
    (
        "No customer named Smith; give the full name.\n\nFix the errors and try again.",
        ("error", "invalid_params", "retry_prompt", "other", {}),
    ),
    (
        "1 validation error for get_weather\ncity\n  Field required [type=missing, "
        "input_value={'town': 'Paris'}, input_type=dict]",
        ("error", "invalid_params", "validation_text", "missing_param", {"param": "city"}),
    ),
    (
        "missing required parameter 'city'",
        ("error", "invalid_params", "validation_text", "missing_param", {"param": "city"}),
    ),
]

#: Errors written as prose: validators' and frameworks' retry prompts, command-line clients'
#: failures (database clients, git, curl, ssh, package managers, docker, kubectl), each with
#: (status, error type, rule).
PROSE = [
    (
        "Validation failed: field 'email' is required. Please correct the input and call the "
        "tool again",
        ("error", "invalid_params", "validation_text"),
    ),
    (
        "The arguments you sent were invalid: date: no flights found on 2024-13-01. Please fix "
        "the above errors and retry",
        ("error", "invalid_params", "invalid_arguments_prompt"),
    ),
    (
        "The arguments provided to the tool are invalid: expected string, received number",
        ("error", "invalid_params", "invalid_arguments_prompt"),
    ),
    ("Error: ENOENT\n Please fix your mistakes.", ("error", "not_found", "not_found_text")),
    (
        "Error: Model incorrectly returned multiple structured responses (A, B) when only one "
        "is expected.\n Please fix your mistakes.",
        ("error", "invalid_params", "retry_prompt"),
    ),
    (
        'psql: error: connection to server at "localhost" (127.0.0.1), port 5432 failed: FATAL:'
        '  password authentication failed for user "postgres"',
        ("error", "auth", "db_client_auth"),
    ),
    (
        'psql: error: connection to server on socket "/var/run/postgresql/.s.PGSQL.5432" failed:'
        " No such file or directory\n\tIs the server running locally and accepting connections "
        "on that socket?",
        ("error", "unavailable", "connection_error"),
    ),
    (
        'psql: error: connection to server at "localhost" (::1), port 5432 failed: FATAL:  '
        'database "shop" does not exist',
        ("error", "not_found", "not_found_text"),
    ),
    (
        "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
        ("error", "auth", "db_client_auth"),
    ),
    (
        "ERROR 2002 (HY000): Can't connect to local MySQL server through socket "
        "'/var/run/mysqld/mysqld.sock' (2)",
        ("error", "unavailable", "connection_error"),
    ),
    (
        "Username for 'https://github.com': ann\nPassword for 'https://ann@github.com':\n"
        "remote: Invalid username or password.\nfatal: Authentication failed for "
        "'https://github.com/ann/site.git/'",
        ("error", "auth", "permission_text"),
    ),
    (
        "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote "
        "repository.\n\nPlease make sure you have the correct access rights\nand the "
        "repository exists.",
        ("error", "auth", "permission_text"),
    ),
    (
        "To github.com:ann/site.git\n ! [rejected]        main -> main (fetch first)\n"
        "error: failed to push some refs to 'github.com:ann/site.git'",
        ("error", "conflict", "conflict_text"),
    ),
    (
        "curl: (7) Failed to connect to localhost port 8080 after 0 ms: Connection refused",
        ("error", "unavailable", "connection_error"),
    ),
    ("curl: (22) The requested URL returned error: 404", ("error", "not_found", "http_404")),
    (
        "ssh: connect to host 10.0.0.7 port 22: Connection refused",
        ("error", "unavailable", "connection_error"),
    ),
    ("Host key verification failed.", ("error", "auth", "permission_text")),
    ("E: Unable to locate package ripgrepp", ("error", "not_found", "not_found_text")),
    (
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker "
        "daemon running?",
        ("error", "unavailable", "connection_error"),
    ),
    (
        "The connection to the server localhost:8080 was refused - did you specify the right "
        "host or port?",
        ("error", "unavailable", "connection_error"),
    ),
    (
        "Command failed with exit code 128: git clone https://example.com/x.git",
        ("error", "other", "exit_code"),
    ),
]
#: Successful outputs of the same clients that mention failure words: they stay success.
PROSE_SUCCESS = [
    "Results 1-10 of 50. Call the tool again with page=2 for more.",
    'psql (16.2)\nType "help" for help.\n\nCREATE TABLE',
    "Everything up-to-date",
    "error_count | 0\n(1 row)",
    "Validation passed: 3 fields checked, 0 errors.",
    "Enumerating objects: 5, done.\nTo github.com:ann/site.git\n   1a2b3c4..5d6e7f8  main -> main",
    "E2E suite: 40 passed, 0 failed (error: none)",
]


@pytest.mark.parametrize(("text", "expected"), PROSE)
def test_errors_written_as_prose_are_errors_with_their_type(
    text: str, expected: tuple[str, str, str]
) -> None:
    facts = analyze_content(text)
    assert (facts.status, facts.error_type, facts.rule) == expected


@pytest.mark.parametrize("text", PROSE_SUCCESS)
def test_successful_client_output_that_mentions_failure_words_stays_success(text: str) -> None:
    assert analyze_content(text).status == "success"


@pytest.mark.parametrize(("text", "expected"), SECOND_PASS)
def test_second_pass_families_are_errors_with_their_type_and_advice(
    text: str, expected: tuple[str, str, str, str | None, dict[str, str | float]]
) -> None:
    facts = analyze_content(text)
    assert (
        facts.status,
        facts.error_type,
        facts.rule,
        facts.suggestion_kind,
        facts.suggestion_detail,
    ) == expected


def test_a_non_zero_exit_is_other_and_not_a_tool_exception() -> None:
    # The tool ran the command and reported its outcome; only a crashed tool is tool_exception.
    assert (analyze_content("Exit code 1").error_type, analyze_content("Exit code 0").status) == (
        "other",
        "success",
    )


def test_a_retry_prompt_naming_a_missing_field_advises_that_field() -> None:
    facts = analyze_content(PYDANTIC_AI_ARGS)
    assert facts.suggestion == '"type": "missing", "loc": [ "city"'
