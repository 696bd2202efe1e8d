"""The dashboard's pages, in navigation order: the one list the navigation (``app.py``), the
links between pages, the tests and the UI benchmark read.

Plain data (no Streamlit import), so the browser tests and ``benchmarks/ui_bench.py`` read it
without starting an app. Adding a page: see "Adding a page" in ``docs/architecture.md``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Page:
    """One page of the dashboard."""

    #: Stable name (benchmark rows, screenshot files), the page's URL path and the name of its
    #: script.
    key: str
    #: Navigation label and the page's heading (``st.title``).
    title: str
    #: Material icon of the navigation entry.
    icon: str
    #: The page ``/`` opens.
    default: bool = False
    #: The labels of the page's sections, drawn as tabs of which only the open one runs
    #: (``dashboard.widgets.sections``); the first opens unless the URL names another.
    sections: tuple[str, ...] = ()

    @property
    def url_path(self) -> str:
        """The page's URL path (``trace``); Streamlit serves the default page at ``/`` too."""
        return self.key

    @property
    def script(self) -> str:
        """The page's script, relative to ``app.py`` (what ``st.switch_page`` and AppTest
        take): ``views/trace.py``."""
        return f"views/{self.key}.py"

    @property
    def section_param(self) -> str:
        """The URL parameter naming the open section: ``errors_tab``. One per page: Streamlit
        keeps a bound widget's value in Session State under its key, and a key shared with the
        page shown before would let that page's value win over the URL of the next."""
        return f"{self.key}_tab"

    @property
    def path(self) -> str:
        """The page's path in links: ``/trace``; ``/`` for the default page."""
        return "/" if self.default else f"/{self.url_path}"


OVERVIEW = Page(
    "overview",
    "Overview",
    ":material/dashboard:",
    default=True,
    sections=("Top problems", "Activity", "Distributions", "Execution time", "Scorecard"),
)
CALLS = Page("calls", "Tool calls", ":material/table_rows:")
SEARCH = Page("search", "Search", ":material/search:")
TRACE = Page("trace", "Trace", ":material/forum:")
SESSIONS = Page("sessions", "Sessions", ":material/groups:")
ERRORS = Page(
    "errors",
    "Errors",
    ":material/error:",
    sections=("Same error, many traces", "By tool", "How recognized", "Over time"),
)
TOKENS = Page(
    "tokens",
    "Tokens",
    ":material/data_usage:",
    sections=(
        "By tool",
        "Share of the model's input",
        "Share of the transcript",
        "Biggest",
        "What it costs",
    ),
)
LOOPS = Page(
    "loops",
    "Loops",
    ":material/repeat:",
    sections=("Looping calls", "Per tool", "Ping-pong", "Error streaks"),
)
FINDINGS = Page("findings", "Findings", ":material/flag:")
SUGGESTIONS = Page(
    "suggestions",
    "Suggestions",
    ":material/tips_and_updates:",
    sections=("Verdicts", "Recovery", "Follow rate", "Examples"),
)
IMPORTS = Page("imports", "Imports", ":material/upload_file:")
REVIEW = Page("review", "Review", ":material/rate_review:")
COMPARE = Page("compare", "Compare", ":material/compare_arrows:")

#: Every page, in navigation order.
PAGES: tuple[Page, ...] = (
    OVERVIEW, CALLS, TRACE, SESSIONS, SEARCH, ERRORS, TOKENS, LOOPS, FINDINGS, SUGGESTIONS,
    IMPORTS, REVIEW, COMPARE,
)  # fmt: skip
