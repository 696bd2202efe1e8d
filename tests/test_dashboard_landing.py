"""Landing on a search hit on the Trace page (``msg`` and ``hl`` in the URL): the page holding
the message, the message boxed with the searched words marked over escaped text, and the scroll
that brings it (or the selected pair) into view; on SQLite and PostgreSQL.

The browser side (the scroll itself, the mark's colour) is ``tests/test_browser_landing.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from dbfixture import OpenPage
from page_support import page_caption
from test_dashboard_trace_pages import long_store, shown_seqs  # noqa: F401

from dashboard import pages, render, scroll, trace_blocks

TRACE = pages.TRACE.script


def test_a_phrase_is_found_as_the_search_finds_it() -> None:
    words = ["permission", "denied"]
    assert render.phrase_span("Got: Permission-DENIED here", words) == (5, 22)
    assert render.phrase_span("x permission_denied", words) == (2, 19)
    # Whole words only, in this order.
    assert render.phrase_span("permissions denied", words) is None
    assert render.phrase_span("denied permission", words) is None
    assert render.phrase_span("anything", []) is None


def test_the_marked_line_escapes_the_text_and_marks_only_the_match() -> None:
    text = "a " * 100 + "[x](javascript:alert(1)) <b>hit</b> :red[y] " + "z " * 100
    span = render.phrase_span(text, ["b", "hit", "b"])
    assert span is not None and text[span[0] : span[1]] == "b>hit</b"
    line = render.marked_text(text, span, around=20)
    assert line == (
        "…vascript\\:alert\\(1\\)\\) \\<:violet-background[b\\>hit\\<\\/b]\\> "
        "\\:red\\[y\\] z z z z z…"
    )
    # Every markdown character of the text is escaped: only our directive is markup.
    assert line.count("[") - line.count("\\[") == 1


def test_the_match_line_says_so_when_the_words_are_not_in_the_text() -> None:
    assert trace_blocks.match_line("an *error* here", ["error"]) == (
        "an \\*:violet-background[error]\\* here"
    )
    assert (
        trace_blocks.match_line("nothing", ["error"])
        == "The searched words are in this message or its calls."
    )


@pytest.mark.parametrize("key", ["", "a b", "x'];alert(1);//", "é", "a" * 201])
def test_only_a_widget_key_goes_into_the_scroll_script(key: str) -> None:
    with pytest.raises(ValueError, match="not a widget key"):
        scroll.bring_into_view(key)


def _markdown(at: Any) -> list[str]:
    return [str(m.value) for m in at.markdown]


def _open_search_hit(open_page: OpenPage, url: str, searched: str) -> Any:
    """The Trace page as a search hit opens it: on message 71 of ``long-a``, the Tool Message
    "found 34" (its call at 70), with the words ``searched`` to mark."""
    return open_page(url, TRACE, {"trace": "long-a", "msg": "71", "hl": searched})


def test_a_search_hit_opens_the_page_of_its_message_boxed_and_marked(
    open_page: OpenPage,
    long_store: str,  # noqa: F811
) -> None:
    at = _open_search_hit(open_page, long_store, "Found 34")
    assert at.number_input(key="mpage").value == 4
    assert page_caption(at) == "Messages 61–80 of 101 · page 4 of 6 (the search match's page)"
    assert shown_seqs(at) == list(range(60, 80))
    marked = [m for m in _markdown(at) if trace_blocks.FOUND_TEXT in m]
    assert marked == [
        f":violet-badge[{trace_blocks.FOUND_TEXT}] :violet-background[found 34]",
    ]
    assert "mpage" not in at.query_params


def test_choosing_a_pair_leaves_the_search_hit(
    open_page: OpenPage,
    long_store: str,  # noqa: F811
) -> None:
    at = _open_search_hit(open_page, long_store, "found 34")
    at.button(key="select_70:0").click().run()
    assert not at.exception
    assert dict(at.query_params) == {"trace": "long-a", "pair": "70:0"}
    assert not [m for m in _markdown(at) if trace_blocks.FOUND_TEXT in m]
