"""ToolLens dashboard entry point.

Run ``streamlit run dashboard/app.py -- --db URL``; without ``--db`` the database comes from
``TOOLLENS_DB``, else ``toollens.db`` in the working directory. ``toollens serve`` passes it in
``TOOLLENS_DB``, never on the command line, where ``ps`` would show a password.
This script runs before every page: it sets up the page, the navigation (the pages of
``dashboard.pages``), the shared sidebar
filters (bound to the URL) and, below them, the reviewer's name that signs notes and
corrections on every page, then runs the selected page.
"""

from __future__ import annotations

import streamlit as st

from dashboard import pages, review_ui, state
from db.migrate import NewerStoreError

st.set_page_config(page_title="ToolLens", page_icon=":material/build:", layout="wide")

try:
    state.engine()
except NewerStoreError as exc:
    # A store migrated by a newer ToolLens: say so in one line instead of a traceback.
    st.error(str(exc))
    st.stop()

NAVIGATION = [
    st.Page(p.script, title=p.title, icon=p.icon, url_path=p.url_path, default=p.default)
    for p in pages.PAGES
]

page = st.navigation(NAVIGATION)
state.sidebar()
review_ui.author_field()
page.run()
