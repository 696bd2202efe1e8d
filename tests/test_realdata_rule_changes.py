"""The error rules of the second analysis pass, over every real Tool Message: what changed, exactly.

``BEFORE`` is the (status, error_type) distribution over all 2,306 Tool Messages of
``../shared/realdata`` with the rules as they were before the second pass (connection, timeout
duration, exit code, build failure, retry prompt and validation phrase rules; commit 408e1b2).
``CHANGED`` lists every result whose status or error type the new rules changed, each checked by
eye against its trace. The test recomputes both: any other flip, however small, fails it.
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
# locator -> (before, after). All are Bash results with is_error: true whose text is a C build
# failing on the code ("conflicting types", "incompatible types", "implicit declaration"); they
# were typed not_found only because CMake's informational "-- Could NOT find Doxygen" precedes
# the compiler output. 401 also misses an include, among other compile errors, so the build as a
# whole is still a compile failure rather than one missing file.
CHANGED: dict[tuple[str, int, int], tuple[tuple[str, str | None], tuple[str, str | None]]] = {
    (f"{_CC}5f8cbb78-38d3-47e9-9504-baa93bb166c9.jsonl", 0, 107): (
        ("error", "not_found"),
        ("error", "other"),
    ),
    (f"{_CC}9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl", 0, 401): (
        ("error", "not_found"),
        ("error", "other"),
    ),
    (f"{_CC}9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl", 0, 452): (
        ("error", "not_found"),
        ("error", "other"),
    ),
    (f"{_CC}9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl", 0, 485): (
        ("error", "not_found"),
        ("error", "other"),
    ),
    (f"{_CC}d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl", 0, 9): (
        ("error", "not_found"),
        ("error", "other"),
    ),
    (f"{_CC}d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl", 0, 105): (
        ("error", "not_found"),
        ("error", "other"),
    ),
    (f"{_CC}d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl", 0, 198): (
        ("error", "not_found"),
        ("error", "other"),
    ),
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
