"""Bring a landing's target into view: the selected pair, or the message a search hit names.

Streamlit has no element of its own that scrolls the page, so :func:`bring_into_view` adds one
fixed script (``st.html`` with JavaScript: our own constant code; the only value put in it is
a widget key of letters, digits, ``_`` and ``-``, checked here, never trace content). In the
browser the script waits for the element Streamlit derives from the key (class
``st-key-<key>``), scrolls it to the top of the window below the app's header, and keeps it
there while what is drawn above it still grows (a chart, a table), for at most
:data:`FOLLOW_MS`; it stops as soon as the person scrolls, clicks or types. It runs once per
target and address until Back or Forward: drawing the page again (a widget changed) does not
pull the view back.
"""

from __future__ import annotations

import re

from dashboard import address

#: How long (ms) the script keeps the target in place while the page above it still grows.
FOLLOW_MS = 15_000
#: The keys a script may name: those of :func:`st.container`'s ``st-key-`` class.
_SAFE_KEY = re.compile(r"[A-Za-z0-9_-]{1,200}")
_SCRIPT = """<script>
(() => {
  const key = "__KEY__";
  if (!window.__toollensLanded) {
    // Back and Forward land again, even on an address landed on before.
    window.addEventListener("popstate", () => { window.__toollensLanded = {}; });
    window.__toollensLanded = {};
  }
  const where = key + location.pathname + location.search;
  if (window.__toollensLanded[where]) return;
  window.__toollensLanded[where] = true;
  const started = performance.now();
  let stopped = false, last = null, steady = 0;
  const events = ["wheel", "touchstart", "keydown", "mousedown"];
  const stop = () => { stopped = true; };
  events.forEach(e => window.addEventListener(e, stop, {capture: true, passive: true}));
  const end = () => events.forEach(e => window.removeEventListener(e, stop, {capture: true}));
  const step = () => {
    if (stopped || performance.now() - started > __FOLLOW_MS__) return end();
    const target = document.querySelector(".st-key-" + key);
    const app = document.querySelector('[data-testid="stApp"]');
    const running = !app || app.getAttribute("data-test-script-state") === "running";
    if (target) {
      const header = document.querySelector('[data-testid="stHeader"]');
      target.style.scrollMarginTop = ((header ? header.offsetHeight : 0) + 8) + "px";
      const top = Math.round(target.getBoundingClientRect().top);
      if (top !== last) { target.scrollIntoView({block: "start"}); steady = 0; }
      else if (!running && ++steady >= 10) return end();
      last = Math.round(target.getBoundingClientRect().top);
    }
    setTimeout(step, 100);
  };
  step();
})();
</script>"""


def bring_into_view(key: str) -> None:
    """Scroll the browser to the element drawn with widget key ``key`` once it is drawn (see
    the module docstring). Raises ``ValueError`` for a key a class name cannot hold."""
    if not _SAFE_KEY.fullmatch(key):
        raise ValueError(f"not a widget key a script may name: {key!r}")
    body = _SCRIPT.replace("__KEY__", key).replace("__FOLLOW_MS__", str(FOLLOW_MS))
    address.run_script(body)
