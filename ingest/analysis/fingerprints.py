"""Error fingerprints: the group key of "the same error" (pure).

Used by ``ingest.importing.rows`` (the stored ``tool_results.fingerprint``) and
``ingest.analysis.streaks`` (a streak is consecutive calls of one tool ending in one fingerprint).
"""

from __future__ import annotations

import re

# Variable parts of error messages that would split one error into many fingerprints.
_FINGERPRINT_SUBS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(['\"`]).*?\1"), "'…'"),
    (re.compile(r"\b[0-9a-f]{8,}\b|\b[\w-]*\d[\w-]*\b", re.IGNORECASE), "#"),
    (re.compile(r"\s+"), " "),
)
FINGERPRINT_MAX = 200


def error_fingerprint(tool: str, text: str) -> str:
    """Group key for "the same error": tool + the message with ids, numbers and quotes masked.

    >>> error_fingerprint("get_user", "Error: user 'mia_li_3668' not found (code 404)")
    "get_user: Error: user '…' not found (code #)"
    """
    first = text.strip().splitlines()[0] if text.strip() else ""
    for pattern, repl in _FINGERPRINT_SUBS:
        first = pattern.sub(repl, first)
    return f"{tool}: {first.strip()}"[:FINGERPRINT_MAX]
