"""Charts that click through: a chart whose selection (a clicked bar or point, a brushed box)
the page turns into a filter or a page that lists what was selected.

:func:`selectable_chart` draws a Plotly figure with Streamlit's selection events and returns a
selection once: the chart's key carries a generation that moves on when a selection is taken,
so the selection is not replayed on the next run (after the user removed the filter it set,
say). :func:`picked_point` and :func:`brushed_range` read a selection (pure; tested without
Streamlit). The page maps a point back to its own data by the trace (``curve_number``) and the
position in it (``point_index``), never by a label shown on the chart (labels are escaped and
shortened).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from db.queries.filters import instant_text

#: How a chart may be selected on (Streamlit's ``selection_mode``).
SelectionMode = Literal["points", "box", "lasso"]

#: Session State key suffix of a chart's generation.
GENERATION_SUFFIX = "__generation"


def chart_key(key: str) -> str:
    """The widget key ``key``'s chart has in this run (``key`` and its generation)."""
    return f"{key}__{st.session_state.get(key + GENERATION_SUFFIX, 0)}"


def selectable_chart(
    fig: go.Figure, *, key: str, modes: Iterable[SelectionMode] = ("points",)
) -> Mapping[str, Any] | None:
    """Draw ``fig`` with selection events (``modes``: ``points``, ``box``); the selection the
    user just made, or ``None``. A returned selection is consumed (the next run draws the
    chart afresh)."""
    event = st.plotly_chart(fig, key=chart_key(key), on_select="rerun", selection_mode=tuple(modes))
    # Item access: the event is a dict-like state (and a plain dict in AppTest).
    chosen = event["selection"] if event is not None else None
    if not chosen or not (chosen.get("points") or chosen.get("box")):
        return None
    generation = key + GENERATION_SUFFIX
    st.session_state[generation] = st.session_state.get(generation, 0) + 1
    return chosen


def picked_point(selection: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """``(curve_number, point_index)`` of the first selected point, or ``None``.

    >>> picked_point({"points": [{"curve_number": 1, "point_index": 4, "x": 3}], "box": []})
    (1, 4)
    """
    points = (selection or {}).get("points") or []
    for point in points:
        curve, index = point.get("curve_number"), point.get("point_index")
        if curve is not None and index is not None:
            return int(curve), int(index)
    return None


def _instant(value: Any) -> datetime | None:
    try:
        moment = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    if pd.isna(moment):
        return None
    moment = moment.tz_localize(UTC) if moment.tzinfo is None else moment.tz_convert(UTC)
    result: datetime = moment.to_pydatetime()
    return result


def _minute_floor(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def _minute_ceil(moment: datetime) -> datetime:
    floor = _minute_floor(moment)
    return floor if floor == moment else floor + timedelta(minutes=1)


#: Bucket units whose brushed ranges snap to whole days (UTC): their bars are whole days, and
#: a range of whole days is read from the daily rollups, where one cut at a minute sends every
#: figure of the page to the base tables (at 10M messages, seconds instead of a tenth).
WHOLE_DAY_UNITS = ("day", "week")


def _day_floor(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _day_ceil(moment: datetime) -> datetime:
    floor = _day_floor(moment)
    return floor if floor == moment else floor + timedelta(days=1)


def brushed_range(
    selection: Mapping[str, Any] | None,
    buckets: pd.DataFrame | None = None,
    unit: str | None = None,
) -> tuple[str, str] | None:
    """The time range a selection on a time chart covers, as ``since``/``until`` filter values
    (``2026-11-30T09:05``, whole minutes that contain it), or ``None``.

    A brushed box gives its x range (a box on a date axis has the instants at its edges);
    on a chart of days or weeks (``unit``, :data:`WHOLE_DAY_UNITS`) the whole days it touches.
    A clicked bar gives its bucket: the row ``point_index`` of ``buckets`` (columns ``start``
    and ``end``).

    >>> brushed_range({"box": [{"x": ["2025-01-01 10:12:30", "2025-01-01 09:58"]}]})
    ('2025-01-01T09:58', '2025-01-01T10:13')
    >>> brushed_range({"box": [{"x": ["2025-01-01 10:12", "2025-01-03 09:58"]}]}, unit="day")
    ('2025-01-01T00:00', '2025-01-04T00:00')
    """
    floor, ceil = (
        (_day_floor, _day_ceil) if unit in WHOLE_DAY_UNITS else (_minute_floor, _minute_ceil)
    )
    for box in (selection or {}).get("box") or []:
        xs = [_instant(x) for x in box.get("x") or []]
        edges = [x for x in xs if x is not None]
        if len(edges) == 2:
            low, high = sorted(edges)
            return instant_text(floor(low)), instant_text(ceil(high))
    point = picked_point(selection)
    if point is not None and buckets is not None and 0 <= point[1] < len(buckets):
        row = buckets.iloc[point[1]]
        start, end = _instant(row["start"]), _instant(row["end"])
        if start is not None and end is not None:
            return instant_text(_minute_floor(start)), instant_text(_minute_ceil(end))
    return None
