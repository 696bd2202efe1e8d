"""One color per value: every status, status source, pair state, verdict and error type.

Charts draw with the hex color, badges with the Streamlit badge color of the same hue (badges
take only a few named colors), so "timeout" is the same orange in every chart and badge of every
page and every store. Green means a good outcome (success, paired, followed) and no error type
is green. A value outside the vocabulary, such as a protocol-provided error type kept verbatim,
takes one of :data:`EXTRA` picked by a hash of its name: stable across runs, processes and
stores, and never a color of the vocabulary.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from db.contract.vocabulary import ErrorType, PairState, Status, StatusSource, Verdict

#: The colors Streamlit's ``:color-badge[…]`` directive accepts.
BadgeColor = Literal["red", "orange", "yellow", "green", "blue", "violet", "gray"]
#: The vocabularies that have colors.
Kind = Literal["status", "status_source", "pair_state", "verdict", "error_type"]
#: Meanings of badges that show no vocabulary value (a count over budget, a flag, a note label).
Tone = Literal["ok", "error", "warning", "info", "muted", "highlight"]


class Swatch(NamedTuple):
    """One value's color: ``hex`` for charts, ``badge`` (same hue) for Streamlit badges."""

    hex: str
    badge: BadgeColor


GREEN = Swatch("#54A24B", "green")
RED = Swatch("#E45756", "red")
GRAY = Swatch("#B8B8B8", "gray")

STATUS: dict[Status, Swatch] = {
    "success": GREEN,
    "error": RED,
    "partial": Swatch("#EDC948", "yellow"),
    "unknown": GRAY,
}
STATUS_SOURCE: dict[StatusSource, Swatch] = {
    "explicit": Swatch("#4C78A8", "blue"),
    "protocol": Swatch("#9467BD", "violet"),
    "inferred": Swatch("#F58518", "orange"),
}
PAIR_STATE: dict[PairState, Swatch] = {
    "paired": GREEN,
    "missing_result": RED,
    "orphan_result": Swatch("#F58518", "orange"),
    "duplicate_result": Swatch("#9467BD", "violet"),
    "result_before_call": Swatch("#4C78A8", "blue"),
    "late_result": Swatch("#EDC948", "yellow"),
}
VERDICT: dict[Verdict, Swatch] = {
    "followed": GREEN,
    "ignored": RED,
    "unclear": GRAY,
    "no_next_action": Swatch("#79706E", "gray"),
}
#: Tableau 20 hues: transient failures warm, caller mistakes blue, tool faults red, access
#: violet, "other" grey. No two types share a hex color.
ERROR_TYPE: dict[ErrorType, Swatch] = {
    "rate_limit": Swatch("#F28E2B", "orange"),
    "timeout": Swatch("#FFBE7D", "orange"),
    "unavailable": Swatch("#B6992D", "yellow"),
    "auth": Swatch("#B07AA1", "violet"),
    "not_found": Swatch("#4E79A7", "blue"),
    "invalid_params": Swatch("#A0CBE8", "blue"),
    "invalid_arguments_json": Swatch("#499894", "blue"),
    "unknown_tool": Swatch("#86BCB6", "blue"),
    "tool_exception": Swatch("#E15759", "red"),
    "conflict": Swatch("#FF9D9A", "red"),
    "quota": Swatch("#D4A6C8", "violet"),
    "content_filter": Swatch("#9D7660", "orange"),
    "other": Swatch("#BAB0AC", "gray"),
}
#: Colors for values outside the vocabulary, picked by a hash of the name; none is green and
#: none is a color of the tables above.
EXTRA: tuple[Swatch, ...] = (
    Swatch("#F1CE63", "yellow"),
    Swatch("#D37295", "red"),
    Swatch("#2F4B7C", "blue"),
    Swatch("#A05195", "violet"),
    Swatch("#FABFD2", "red"),
    Swatch("#D7B5A6", "orange"),
    Swatch("#665191", "violet"),
    Swatch("#17BECF", "blue"),
    Swatch("#FF7C43", "orange"),
    Swatch("#8C564B", "orange"),
    Swatch("#5F5F5F", "gray"),
)


def _by_value(table: Mapping[Any, Swatch]) -> dict[str, Swatch]:
    """A vocabulary's swatches keyed by plain strings (the values a chart's column holds)."""
    return {str(value): swatch for value, swatch in table.items()}


_TABLES: dict[Kind, dict[str, Swatch]] = {
    "status": _by_value(STATUS),
    "status_source": _by_value(STATUS_SOURCE),
    "pair_state": _by_value(PAIR_STATE),
    "verdict": _by_value(VERDICT),
    "error_type": _by_value(ERROR_TYPE),
}
#: Badge colors of the tones.
TONE: dict[Tone, BadgeColor] = {
    "ok": "green",
    "error": "red",
    "warning": "orange",
    "info": "blue",
    "muted": "gray",
    "highlight": "violet",
}
#: Bars that count nothing of a vocabulary, and bars that mark a problem (over budget, a loop).
NEUTRAL = "#4C78A8"
PROBLEM = RED.hex


def swatch(kind: Kind, value: str) -> Swatch:
    """The color of ``value`` among the ``kind`` values: its own, else one of :data:`EXTRA` by
    a CRC-32 of the name (Python's ``hash`` of a string changes from process to process).

    >>> swatch("verdict", "followed")
    Swatch(hex='#54A24B', badge='green')
    >>> swatch("error_type", "payment_declined") == swatch("error_type", "payment_declined")
    True
    """
    known = _TABLES[kind].get(value)
    if known is not None:
        return known
    return EXTRA[zlib.crc32(value.encode()) % len(EXTRA)]


def color(kind: Kind, value: str) -> str:
    """The chart color (hex) of ``value``: ``color("status", "error")`` → ``"#E45756"``."""
    return swatch(kind, value).hex


def badge(kind: Kind, value: str) -> BadgeColor:
    """The badge color of ``value``: ``badge("pair_state", "paired")`` → ``"green"``."""
    return swatch(kind, value).badge


#: The colors of the trace outline's marker kinds (``db.queries.traces.MARKER_KINDS``): the
#: problem's own color where the vocabulary has one, a loop the color of problem bars, a plain
#: call neutral.
MARKER: dict[str, str] = {
    "error": STATUS["error"].hex,
    "missing_result": PAIR_STATE["missing_result"].hex,
    "late_result": PAIR_STATE["late_result"].hex,
    "lone_result": PAIR_STATE["orphan_result"].hex,
    "loop": "#AB63FA",
    "ignored_advice": VERDICT["ignored"].hex,
    "finding": PAIR_STATE["duplicate_result"].hex,
    "call": GRAY.hex,
}
