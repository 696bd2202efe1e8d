"""The error rules of the second analysis pass, over every real Tool Message: what changed, exactly.

``BEFORE`` is the (status, error_type) distribution over all 2,306 Tool Messages of
``../shared/realdata`` with the rules as they were before the second pass (connection, timeout
duration, exit code, build failure, retry prompt, validation phrase, compiler error, stale read,
ambiguous edit target and ToolBench response rules; commit 408e1b2).
``CHANGES`` lists every result whose status or error type the new rules changed, grouped by the
rule that changed it, each checked by eye against its trace. The test recomputes both: any
other flip, however small, fails it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from realdata_corpus import real_results

BEFORE: Counter[tuple[str, str | None]] = Counter(
    {
        ("success", None): 2075,
        ("partial", None): 3,
        ("error", "auth"): 14,
        ("error", "conflict"): 26,
        ("error", "invalid_params"): 31,
        ("error", "not_found"): 69,
        ("error", "other"): 82,
        ("error", "timeout"): 3,
        ("error", "tool_exception"): 3,
    }
)

_CC = "claude-code/"
_TB = "openai-legacy/toolbench-"
_S1 = f"{_CC}5f8cbb78-38d3-47e9-9504-baa93bb166c9.jsonl"
_S2 = f"{_CC}9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl"
_S3 = f"{_CC}d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl"
_S4 = f"{_CC}f67ab274-e83b-41ac-ac85-77488d6b5c28.jsonl"
_G2_119 = f"{_TB}G2-119_ChatGPT_DFS_woFilter_w2.json"
_G2_127 = f"{_TB}G2-127_ChatGPT_DFS_woFilter_w2.json"
_G3_13 = f"{_TB}G3-13_ChatGPT_DFS_woFilter_w2.json"
_G3_15 = f"{_TB}G3-15_ChatGPT_DFS_woFilter_w2.json"

Fact = tuple[str, str | None]
# (why, before, after, the results (file, trace index, message seq)), each read by eye.
CHANGES: list[tuple[str, Fact, Fact, list[tuple[str, int, int]]]] = [
    (
        # Bash results (is_error) of C builds failing on their code ("conflicting types",
        # "incompatible types", "multiple definition"); typed not_found only because CMake's
        # informational "-- Could NOT find Doxygen" came first. S2:401 also misses an include
        # among other compile errors: the build as a whole still failed on its code.
        "compiler_error",
        ("error", "not_found"),
        ("error", "other"),
        [
            (_S1, 0, 107),
            (_S2, 0, 401),
            (_S2, 0, 452),
            (_S2, 0, 485),
            (_S3, 0, 9),
            (_S3, 0, 105),
            (_S3, 0, 198),
        ],
    ),
    (
        # Claude Code's "File has not been read yet. Read it first before writing to it.".
        "stale_read",
        ("error", "other"),
        ("error", "conflict"),
        [
            (_S1, 0, 68),
            (_S1, 0, 113),
            (_S1, 0, 138),
            (_S1, 0, 153),
            (_S1, 0, 228),
            (_S2, 0, 366),
            (_S3, 0, 168),
            (_S3, 0, 170),
            (_S4, 0, 111),
            (_S4, 0, 137),
        ],
    ),
    (
        # Claude Code's "Found N matches of the string to replace, but replace_all is false".
        "ambiguous_edit_target",
        ("error", "other"),
        ("error", "invalid_params"),
        [
            (_S1, 0, 147),
            (_S1, 0, 171),
            (_S2, 0, 350),
            (_S2, 0, 355),
            (_S2, 0, 358),
            (_S2, 0, 438),
            (_S3, 0, 62),
            (_S3, 0, 66),
            (_S4, 0, 486),
        ],
    ),
    (
        # ToolBench responses with an empty "error": RFC 7807 "Bad Request" documents (status
        # 400), "genre must be an integer: Thriller", "unknown service prime_video".
        "json_response_error",
        ("success", None),
        ("error", "invalid_params"),
        [(_G2_119, 0, 3), (_G2_127, 0, 3), (_G2_127, 0, 6), (_G3_13, 0, 3), (_G3_15, 0, 5)],
    ),
    (
        # {'message': 'unrecognized genre: 20'}: an error no type rule names.
        "json_response_error",
        ("success", None),
        ("error", "other"),
        [(_G3_13, 0, 5)],
    ),
    (
        # {'message': "Endpoint '/search/people' does not exist"} and '/search/shows'.
        "json_response_error",
        ("success", None),
        ("error", "not_found"),
        [(_G3_13, 0, 7), (_G3_13, 0, 10), (_G3_15, 0, 3)],
    ),
]
CHANGED: dict[tuple[str, int, int], tuple[Fact, Fact]] = {
    locator: (before, after) for _, before, after, locators in CHANGES for locator in locators
}


@pytest.mark.realdata
def test_the_new_error_rules_change_exactly_the_listed_real_results(realdata: Path) -> None:
    now: dict[tuple[str, int, int], tuple[str, str | None]] = {
        r.locator: (r.facts.content.status, r.facts.content.error_type)
        for r in real_results(realdata)
    }
    assert {locator: now[locator] for locator in CHANGED} == {
        locator: after for locator, (_, after) in CHANGED.items()
    }
    expected = BEFORE.copy()
    expected.subtract(before for before, _ in CHANGED.values())
    expected.update(after for _, after in CHANGED.values())
    assert Counter(now.values()) == +expected
