"""Search: every message, Tool Message and call argument that holds a phrase, across traces.

The query is the ``q`` URL parameter (so a search is a link) and the sidebar filters narrow it
like every other page. Each hit shows its trace's title and the words around the match as plain
text (trace content is untrusted: never markdown); selecting a hit opens its pair, or its
trace, on the Trace page.
"""

from __future__ import annotations

import streamlit as st

from dashboard import state, widgets
from db.queries.search import COUNT_CAP, search_content

PAGE_SIZE = 50
#: What and where the match is first (on screen at 1,440 px), then its trace.
HITS_ORDER = ("kind", "tool", "snippet", "trace", "title", "role", "pair", "seq")

state.open_page("Search")

row = st.columns([6, 2], vertical_alignment="bottom")
text = row[0].text_input(
    "Search messages, tool results and call arguments",
    key="q",
    bind="query-params",
    placeholder="e.g. permission denied, customer_4711",
    help="Words in this order, any case; punctuation between words does not matter.",
)
if not text:
    st.caption("Type a word or a phrase: an id, an error message, a file name.")
    state.end_page()

page_no = row[1].number_input(
    "Page", min_value=1, value=1, step=1, key="spage", bind="query-params"
)
found = state.query(
    search_content, text, state.filters(), limit=PAGE_SIZE, offset=(int(page_no) - 1) * PAGE_SIZE
)
if found.total == 0:
    st.info(
        "Nothing holds these words. Check the spelling, search fewer words, or widen the "
        "filters in the sidebar.",
        icon=":material/search_off:",
    )
    state.end_page()
counted = f"more than {COUNT_CAP:,}" if found.capped else f"{found.total:,}"
st.caption(f"{counted} matches · page {int(page_no):,} · select a row to open it")
if found.hits.empty:
    st.caption("No more matches: go back a page.")
    state.end_page()
picked = widgets.picked_row(
    found.hits,
    height=widgets.table_height(len(found.hits), max_rows=20),
    key="search_hits",
    column_order=HITS_ORDER,
    column_config={
        "trace": st.column_config.TextColumn("Trace"),
        "title": st.column_config.TextColumn("Title", width="medium"),
        "kind": st.column_config.TextColumn(
            "In", help="arguments of a call, a tool result, or a message"
        ),
        "role": st.column_config.TextColumn("Role"),
        "tool": st.column_config.TextColumn("Tool", width=widgets.TOOL_PX),
        "pair": st.column_config.TextColumn("Pair", help="message seq:call index, r = result"),
        "seq": widgets.count_column("Message", help="position in the trace"),
        "snippet": st.column_config.TextColumn(
            "Match", width=widgets.CONTENT_PX * 2, help="« » mark the match"
        ),
    },
)
if picked is not None:
    pair = picked["pair"]
    # On the Trace page: the page of the message holding the match, scrolled to it, the
    # words marked; the pair (a call or Tool Message) selected too.
    state.open_trace(
        str(picked["trace"]),
        pair if isinstance(pair, str) else None,
        {state.FOUND_PARAM: str(int(picked["seq"])), state.WORDS_PARAM: text},
    )
