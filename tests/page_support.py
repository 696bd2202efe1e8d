"""Reading what a page or a page query shows, in tests: DataFrame rows, AppTest metrics,
captions (the Trace page's page caption), table and chart selection, chart specs, and the
Trace page a selection opened."""

from __future__ import annotations

from typing import Any

import orjson


def rows(df: Any) -> list[tuple[object, ...]]:
    """A DataFrame's rows as plain tuples (numpy scalars compare equal to Python ones)."""
    return [tuple(r) for r in df.itertuples(index=False)]


def page_caption(at: Any) -> str:
    """The Trace page's caption of the messages shown (``Messages 1–20 of 101 · page 1 of 6``)."""
    return next(c.value for c in at.caption if str(c.value).startswith("Messages "))


def metrics(at: Any) -> dict[str, str]:
    """Metric label -> shown value."""
    return {m.label: m.value for m in at.metric}


def captions(at: Any) -> list[str]:
    """The texts of the page's captions, in page order."""
    return [c.value for c in at.caption]


def select_row(at: Any, table_key: str, row: int) -> Any:
    """Select one row of a selectable table, the way a click does, and rerun."""
    at.session_state[table_key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    return at.run()


def select_points(at: Any, key: str, points: list[dict[str, Any]], box: Any = ()) -> Any:
    """Select ``points`` (and a ``box``) on the chart ``key`` (of the generation in use), as a
    click or a drag does, and rerun."""
    from dashboard.selection import GENERATION_SUFFIX

    counter = key + GENERATION_SUFFIX
    generation = at.session_state[counter] if counter in at.session_state else 0  # noqa: SIM401
    at.session_state[f"{key}__{generation}"] = {
        "selection": {
            "points": points,
            "point_indices": [p["point_index"] for p in points],
            "box": list(box),
            "lasso": [],
        }
    }
    return at.run()


def chart_spec(at: Any, index: int) -> dict[str, Any]:
    """The Plotly figure JSON of the ``index``-th chart on the page."""
    spec: dict[str, Any] = orjson.loads(at.get("plotly_chart")[index].proto.spec)
    return spec


def assert_opened(at: Any, trace: str, pair: str) -> None:
    """The app shows the Trace page on ``trace`` with ``pair`` selected."""
    assert not at.exception
    assert [t.value for t in at.title] == ["Trace"]
    assert at.query_params["trace"] == trace
    assert at.query_params["pair"] == pair


def open_section(at: Any, key: str, label: str) -> Any:
    """Open the tab ``label`` of the tabs whose URL parameter is ``key`` (a page's sections:
    ``Page.section_param``), the way a click does, and rerun. The address is set too: AppTest
    sends its last address with every run as if the page were loaded from it, and the
    dashboard writes the open section to the address (a browser's click sends the new value
    over the old address, which a test's Session State assignment cannot)."""
    at.session_state[key] = label
    at.query_params[key] = label
    return at.run()
