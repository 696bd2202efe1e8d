"""Odd values in the address: every URL parameter of every page fed hostile values (NUL,
what a lone surrogate arrives as, numbers beyond any integer, negative and non-finite
numbers, very long text, SQL fragments), in Streamlit's AppTest, on SQLite and PostgreSQL.
Every page answers with its own heading and its own "not found" or default, never an
exception (``dashboard.state.normalize_url`` is where the values enter)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dbfixture import OpenPage, build_pages2_database

from dashboard import pages
from dashboard.render import escape_markdown
from db.engine import make_engine

#: Every parameter a page or the sidebar reads from the address, sections included.
PARAMS = (
    "start", "end", "since", "until", "import", "agent", "model", "tool", "k", "sk", "budget",
    "trace", "pair", "mpage", "msg", "hl", "fingerprint", "q", "spage", "page", "sort", "desc",
    "status", "call_kind", "error_type", "finding", "pair_state", "source", "tmin", "tmax",
    "verdict",
    "compare_scope", "tokens_log", "reviewed", "note_author", "note_label", "reviewer", "kind",
    "problem", *(p.section_param for p in pages.PAGES if p.sections),
)  # fmt: skip

HOSTILE = {
    "nul": "\x00",
    "embedded nul": "a\x00b",
    # A browser sends a lone surrogate as its UTF-8 bytes; they are read back as U+FFFD.
    "surrogate": "\ufffd\ufffd\ufffd",
    "huge number": "99999999999999999999999999",
    "negative": "-5",
    "infinite": "1e999",
    "long": "x" * 20_000,
    "sql": "1' OR '1'='1'; DROP TABLE traces; --",
}
#: The values every parameter of every page gets, one run each: one of each kind above (NUL,
#: numbers beyond any integer and beyond any float, negative, long text ending in SQL).
SWEEP = ("a\x00b", HOSTILE["huge number"], HOSTILE["infinite"], HOSTILE["negative"],
         HOSTILE["long"] + HOSTILE["sql"])  # fmt: skip


@pytest.fixture(scope="module")
def hostile_store(module_db_url: str) -> Iterator[str]:
    engine = make_engine(module_db_url)
    build_pages2_database(engine)
    engine.dispose()
    yield module_db_url


@pytest.fixture(params=list(HOSTILE))
def value(request: pytest.FixtureRequest) -> str:
    """Each of the :data:`HOSTILE` values in turn (the test's id names it)."""
    return HOSTILE[request.param]


def assert_page_shown(at: object, page: pages.Page, value: str) -> None:
    assert [e.value for e in at.exception] == [], (page.key, value[:40])  # type: ignore[attr-defined]
    assert [t.value for t in at.title] == [page.title]  # type: ignore[attr-defined]


@pytest.mark.parametrize("page", pages.PAGES, ids=[p.key for p in pages.PAGES])
def test_every_parameter_holding_a_hostile_value_leaves_the_page_standing(
    open_page: OpenPage, hostile_store: str, page: pages.Page
) -> None:
    for value in SWEEP:
        at = open_page(hostile_store, page.script, dict.fromkeys(PARAMS, value))
        assert_page_shown(at, page, value)


def test_a_hostile_trace_id_is_a_trace_the_trace_page_does_not_have(
    open_page: OpenPage, hostile_store: str, value: str
) -> None:
    at = open_page(hostile_store, pages.TRACE.script, {"trace": value})
    assert_page_shown(at, pages.TRACE, value)
    shown = escape_markdown(value.replace("\x00", "\ufffd"))
    assert [w.value for w in at.warning] == [f"No trace has the id {shown}."]


def test_a_hostile_pair_or_message_page_in_a_real_trace_still_shows_the_trace(
    open_page: OpenPage, hostile_store: str, value: str
) -> None:
    at = open_page(
        hostile_store, pages.TRACE.script, {"trace": "run-a", "pair": value, "mpage": value}
    )
    assert_page_shown(at, pages.TRACE, value)
    assert at.warning.len == 0


def test_a_hostile_fingerprint_is_an_error_that_does_not_occur(
    open_page: OpenPage, hostile_store: str, value: str
) -> None:
    at = open_page(hostile_store, pages.ERRORS.script, {"fingerprint": value})
    assert_page_shown(at, pages.ERRORS, value)
    assert "This error does not occur under the current filters." in [i.value for i in at.info]
