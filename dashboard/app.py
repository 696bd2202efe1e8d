"""ToolLens dashboard entry point.

Run ``streamlit run dashboard/app.py -- --db URL`` (``toollens serve`` does exactly that); without
``--db`` the database comes from ``TOOLLENS_DB``, else ``toollens.db`` in the working directory.
This script runs before every page: it sets up the page, the navigation, the shared sidebar
filters (bound to the URL) and, below them, the reviewer's name that signs notes and
corrections on every page, then runs the selected page.
"""

from __future__ import annotations

import streamlit as st

from dashboard import review_ui, state

st.set_page_config(page_title="ToolLens", page_icon=":material/build:", layout="wide")

PAGES = [
    st.Page(
        "views/overview.py",
        title="Overview",
        icon=":material/dashboard:",
        url_path="overview",
        default=True,
    ),
    st.Page("views/calls.py", title="Tool calls", icon=":material/table_rows:", url_path="calls"),
    st.Page("views/trace.py", title="Trace", icon=":material/forum:", url_path="trace"),
    st.Page("views/errors.py", title="Errors", icon=":material/error:", url_path="errors"),
    st.Page("views/tokens.py", title="Tokens", icon=":material/data_usage:", url_path="tokens"),
    st.Page("views/loops.py", title="Loops", icon=":material/repeat:", url_path="loops"),
    st.Page(
        "views/suggestions.py",
        title="Suggestions",
        icon=":material/tips_and_updates:",
        url_path="suggestions",
    ),
    st.Page("views/imports.py", title="Imports", icon=":material/upload_file:", url_path="imports"),
    st.Page("views/review.py", title="Review", icon=":material/rate_review:", url_path="review"),
    st.Page(
        "views/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"
    ),
]

page = st.navigation(PAGES)
state.sidebar()
review_ui.author_field()
page.run()
