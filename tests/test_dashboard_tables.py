"""Every table on every page speaks to people: human column headings (never a raw snake_case
column name), a dash in empty cells instead of "None", and counts with thousands separators.

The pages run in AppTest on the fixture store, on views that show every table they have
(a fingerprint drill-down on Errors, a trace with a selected pair and its Findings box open,
k = 2 on Loops).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dbfixture import OpenPage
from page_support import open_section

from dashboard import pages
from dashboard.render import NO_MATCH_TEXT
from db.engine import make_engine
from db.queries.traces import find_trace

#: (page, URL parameters) that between them draw every table of the dashboard.
VIEWS: tuple[tuple[str | None, dict[str, str]], ...] = (
    (None, {"k": "2"}),
    (pages.CALLS.script, {}),
    (pages.TRACE.script, {}),
    (pages.TRACE.script, {"trace": "orders-7", "pair": "4:0"}),
    (pages.ERRORS.script, {"fingerprint": "lookup_order: Error: order # not found."}),
    (pages.TOKENS.script, {}),
    (pages.LOOPS.script, {"k": "2"}),
    (pages.SUGGESTIONS.script, {}),
    (pages.IMPORTS.script, {}),
    (pages.REVIEW.script, {}),
)


def headings(table: Any) -> dict[str, str]:
    """The heading each shown column of an ``st.dataframe`` gets on screen."""
    config = json.loads(table.proto.columns or "{}")
    shown = list(table.proto.column_order) or [str(c) for c in table.value.columns]
    return {column: config.get(column, {}).get("label") or column for column in shown}


@pytest.mark.parametrize(("page", "params"), VIEWS)
def test_every_table_has_human_headings_and_a_dash_for_empty_cells(
    open_page: OpenPage, store_url: str, page: str | None, params: dict[str, str]
) -> None:
    at = open_page(store_url, page, params)
    if "trace" in params:  # the Findings box draws its table only when opened
        engine = make_engine(store_url)
        trace = find_trace(engine, params["trace"])
        engine.dispose()
        assert trace is not None
        at.session_state[f"findings_{trace['id']}"] = True
        at.run()
        assert not at.exception
    tables = list(at.dataframe)
    # Every section of the page (only the open one is drawn).
    shown = next(p for p in pages.PAGES if p.script == (page or pages.OVERVIEW.script))
    for label in shown.sections[1:]:
        open_section(at, shown.section_param, label)
        assert not at.exception
        tables += list(at.dataframe)
    assert tables, f"{page} shows no table"
    for table in tables:
        raw = {column: label for column, label in headings(table).items() if "_" in label}
        assert raw == {}, f"{page}: {table.key} shows raw column names"
        assert table.proto.placeholder == "—", f"{page}: {table.key} shows None in empty cells"


def test_counts_are_shown_with_thousands_separators(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, pages.TOKENS.script, {"tokens_tab": "Biggest"})
    biggest = at.dataframe(key="biggest_table")
    config = json.loads(biggest.proto.columns)
    assert config["chars"]["type_config"]["format"] == "localized"
    assert config["tokens"]["type_config"]["format"] == "%,d"


@pytest.mark.parametrize(
    "page", [pages.ERRORS.script, pages.TOKENS.script, pages.LOOPS.script, None]
)
def test_pages_say_when_the_filters_match_nothing(
    open_page: OpenPage, store_url: str, page: str | None
) -> None:
    at = open_page(store_url, page, {"start": "2030-01-01"})
    assert [i.value for i in at.info] == [NO_MATCH_TEXT]
