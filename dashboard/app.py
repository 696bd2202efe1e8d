"""ToolLens dashboard entry point.

Run ``streamlit run dashboard/app.py -- --db URL``; without ``--db`` the database comes from
``TOOLLENS_DB``, else ``toollens.db`` in the working directory. ``toollens serve`` passes it in
``TOOLLENS_DB``, never on the command line, where ``ps`` would show a password.
This script runs before every page: it sets up the page (a favicon served from this machine:
an icon name would make the browser fetch the icon from a font host), the warning when no
login guards a dashboard other machines reach, the login gate when login is configured, the
navigation (the pages of ``dashboard.pages``), the signed-in identity with "Sign out" (and,
after signing in, the way back to the link that was opened), one history entry per action
(``dashboard.address``), the shared sidebar filters (bound to the URL) and, below them in
local mode, the reviewer's name that signs notes and corrections on every page, the active
filters as removable chips above the page's content, then runs the selected page and writes
the view it shows to the URL.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import address, auth, heap, pages, review_ui, state, widgets
from db.migrate import NewerStoreError

FAVICON = Path(__file__).resolve().parent / "static" / "favicon.png"

st.set_page_config(page_title="ToolLens", page_icon=str(FAVICON), layout="wide")
auth.exposure_banner()
person = auth.gate()

try:
    state.engine()
except NewerStoreError as exc:
    # A store migrated by a newer ToolLens: say so in one line instead of a traceback.
    st.error(str(exc))
    st.stop()

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

state.write_view_to_url(before_page=True)
page = st.navigation([*NAVIGATION, *ALIASES])
if person is not None and person.signed_in:
    auth.sidebar_identity(person)
    address.return_to_remembered_link()
address.one_entry_per_action()
state.normalize_url()
state.sidebar()
review_ui.author_field()
widgets.filter_chips()
with state.view_in_url():
    page.run()
# After the first run the modules and the engine exist: out of the collector's way from now on.
heap.freeze_startup_heap()
