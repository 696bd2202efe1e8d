"""The browser's address and history: one history entry per view, and back to the link that
was opened after signing in.

Two small scripts run in the page (static text: nothing from a trace or the URL is ever put
into them or into the page):

- :func:`one_entry_per_action`. Streamlit's browser side writes a new history entry for
  every address the server sends. When a page opens another (a table row opening the Trace
  page, a bar opening the filtered list) or the menu leaves a page with its own parameters
  set, the server first sends the new query while the old page is still shown, then the new
  page; a page opened from the menu then gets its remembered widget values written one by
  one. Each was an entry, most of them addresses the user never saw (``/calls?trace=…``, the
  list without its sort), and Back landed there and showed another list. The script keeps
  one entry per click or key: the address the action ended at.
- :func:`remember_link_for_sign_in` / :func:`return_to_remembered_link`. Signing in goes to the
  identity provider and comes back at the dashboard's root (Streamlit's callback always does),
  so the link that was opened — a trace, a filtered list — was lost. The login screen keeps
  the address in the tab's session storage; the first page after signing in goes back to it
  (same origin only) in place of the root.
"""

from __future__ import annotations

import streamlit as st

#: Wraps ``history.pushState``: one entry per action. The first push after a click or a key
#: makes an entry; later pushes until the next click or key replace it, as do pushes after
#: the page loaded or Back and Forward (whose entry is there already). Installed once per
#: page load.
HISTORY_SCRIPT = """
<script>
(() => {
  if (window.__toollensHistory) return;
  window.__toollensHistory = true;
  const push = history.pushState.bind(history);
  let pushed = true;  // this action has its entry (the page load's is the one loaded)
  for (const kind of ['pointerdown', 'keydown'])
    window.addEventListener(kind, () => { pushed = false; }, true);
  window.addEventListener('popstate', () => { pushed = true; }, true);
  history.pushState = (data, unused, url) => {
    if (pushed) {
      history.replaceState(data, unused, url);
      return;
    }
    pushed = true;
    push(data, unused, url);
  };
})();
</script>
"""

#: Session storage key of the address the login screen was opened at.
RETURN_KEY = "toollens.returnTo"

#: On the login screen: keep the address (path and query) for after signing in.
REMEMBER_SCRIPT = f"""
<script>
sessionStorage.setItem({RETURN_KEY!r}, location.pathname + location.search + location.hash);
</script>
"""

#: After signing in: go back to the kept address, once, if it is on this origin and the
#: browser is at the root the provider's callback sent it to.
RETURN_SCRIPT = f"""
<script>
(() => {{
  const kept = sessionStorage.getItem({RETURN_KEY!r});
  sessionStorage.removeItem({RETURN_KEY!r});
  if (!kept || location.search) return;
  const target = new URL(kept, location.origin);
  const root = new URL(document.baseURI).pathname;
  if (target.origin !== location.origin || location.pathname !== root) return;
  if (target.pathname + target.search === root) return;
  location.replace(target.href);
}})();
</script>
"""

#: Session State flag: this session has looked for a kept address.
_RETURN_CHECKED = "_returned_after_sign_in"


def run_script(script: str, where: st.delta_generator.DeltaGenerator | None = None) -> None:
    """Run one of the dashboard's own fixed scripts in the browser: the one place a page may
    draw HTML. ``script`` is a constant of this module or :mod:`dashboard.scroll`'s template
    with a checked widget key, never trace content (``tests/test_dashboard_overview.py``)."""
    (where or st).html(script, unsafe_allow_javascript=True, width="content")


def one_entry_per_action() -> None:
    """Install :data:`HISTORY_SCRIPT` (in the sidebar, where it takes no room of the page)."""
    run_script(HISTORY_SCRIPT, st.sidebar)


def remember_link_for_sign_in() -> None:
    """On the login screen: keep the address for :func:`return_to_remembered_link`."""
    run_script(REMEMBER_SCRIPT)


def return_to_remembered_link() -> None:
    """On the first run of a signed-in session: go back to the address kept at the login
    screen, if there is one (:data:`RETURN_SCRIPT`)."""
    if st.session_state.get(_RETURN_CHECKED):
        return
    st.session_state[_RETURN_CHECKED] = True
    run_script(RETURN_SCRIPT, st.sidebar)
