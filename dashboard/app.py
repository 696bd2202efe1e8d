"""ToolLens dashboard entry point.

Run ``streamlit run dashboard/app.py -- --db URL`` (``toollens serve`` does exactly that); without
``--db`` the database comes from ``TOOLLENS_DB``, else ``toollens.db`` in the working directory.
This script runs before every page: it sets up the page, the navigation (the pages of
``dashboard.pages``), the shared sidebar
filters (bound to the URL) and, below them, the reviewer's name that signs notes and
corrections on every page, the active filters as removable chips above the page's content,
then runs the selected page.
"""

from __future__ import annotations

import streamlit as st

from dashboard import pages, review_ui, state, widgets

st.set_page_config(page_title="ToolLens", page_icon=":material/build:", layout="wide")

NAVIGATION = [
    st.Page(
        p.script,
        title=p.title,
        icon=p.icon,
        # The default page is served at ``/``; its own path (``/overview``) is the hidden
        # entry below, so both addresses open it and neither says "Page not found".
        url_path="" if p.default else p.url_path,
        default=p.default,
    )
    for p in pages.PAGES
]
#: The default page under its own path, out of the menu (the menu's entry is ``/``). It runs
#: the page rather than redirecting: a redirect would make Back return to the redirect.
ALIASES = [
    st.Page(p.script, title=p.title, icon=p.icon, url_path=p.url_path, visibility="hidden")
    for p in pages.PAGES
    if p.default
]

page = st.navigation([*NAVIGATION, *ALIASES])
state.sidebar()
review_ui.author_field()
widgets.filter_chips()
page.run()
