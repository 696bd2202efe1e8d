"""Safe rendering of untrusted trace content.

Trace content (message text, tool names, arguments, ids, error messages, file names) is written
by whoever produced the trace. It is never rendered as HTML, and never as markdown unless every
markdown character is escaped: ``st.markdown`` without ``unsafe_allow_html`` still renders
links, images, directives (``:red[…]``), emoji shortcodes and LaTeX. Content is shown as plain
text (``st.text``) or, when it is JSON, as code (``st.code``); neither renders anything. Long
content is cut, the rest in an expander that says its size. A long JSON object or array is
shown folded (``st.json``: a tree of its keys, opened a level at a click, whose every string is
text, never markup) with its size.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import streamlit as st

from dashboard.pages import IMPORTS
from dashboard.palette import TONE, BadgeColor
from db.contract import exact_json

#: Characters of content shown before the rest is collapsed.
PREVIEW_CHARS = 1500
#: Characters shown either side of a highlighted match (:func:`marked_text`).
MARK_AROUND = 160
#: Content longer than this is not parsed as JSON for pretty-printing (shown as is).
PRETTY_MAX_CHARS = 2_000_000
#: Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all of
#: them also defuses GFM autolinks (``www.x.com``, ``a@b.c``) and Streamlit's own syntax.
_MARKDOWN_SPECIAL = frozenset(string.punctuation)
EMPTY_STORE_TEXT = (
    "No traces yet. Upload trace files on the Imports page (below), or import them with "
    "`toollens import FILE` (OpenAI, Anthropic, LangChain, Claude Code … JSON or JSONL, also "
    ".gz), or try `toollens demo`, then reload this page."
)
NO_MATCH_TEXT = (
    "No traces match the filters. Widen the time range or clear a filter in the sidebar."
)


def escape_markdown(text: str) -> str:
    r"""Text that ``st.markdown`` shows literally: every ASCII punctuation character escaped,
    line breaks turned into spaces (labels are one line).

    >>> print(escape_markdown("[x](y) *a*"))
    \[x\]\(y\) \*a\*
    """
    flat = _AUTOLINK_START.sub("\u200b", " ".join(str(text).split()))
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in flat)


#: Where GitHub-flavoured markdown starts an autolink even in escaped text (``https://``,
#: ``www.``, ``user@host``); an invisible zero-width space there keeps the URL plain text.
_AUTOLINK_START = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)


def badge_text(label: str, color: BadgeColor) -> str:
    """The markdown of one badge with an escaped label (to combine several on one line); the
    color comes from :mod:`dashboard.palette` (a value's own color, or a tone's)."""
    return f":{color}-badge[{escape_markdown(label)}]"


def badge(label: str, color: BadgeColor) -> None:
    """Show one colored badge; the label is untrusted-safe."""
    st.markdown(badge_text(label, color))


def badges(items: Sequence[tuple[str, BadgeColor]]) -> None:
    """Show several badges on one line: ``[(label, color), …]``."""
    if items:
        st.markdown(" ".join(badge_text(label, color) for label, color in items))


def pretty(text: str) -> tuple[str, str | None]:
    """``(text to show, code language)``: JSON objects and arrays pretty-printed as ``json``,
    anything else unchanged (language ``None``: plain text)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(stripped) <= PRETTY_MAX_CHARS:
        try:
            value = exact_json.loads(stripped)
        except orjson.JSONDecodeError:
            return text, None
        return exact_json.dumps(value, indent=True), "json"
    return text, None


def json_value(text: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is a JSON object or array (of at most
    :data:`PRETTY_MAX_CHARS`), else ``(False, None)``.

    >>> json_value(' {"a": [1, 2]} '), json_value("[1, 2"), json_value("12")
    ((True, {'a': [1, 2]}), (False, None), (False, None))
    """
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(stripped) <= PRETTY_MAX_CHARS:
        try:
            return True, orjson.loads(stripped)
        except orjson.JSONDecodeError:
            pass
    return False, None


def json_summary(value: Any, chars: int) -> str:
    """What a folded JSON value is, in one line: its kind, its size on the first level and
    in characters.

    >>> json_summary({"a": 1, "b": [2]}, 204_800)
    'JSON object of 2 keys, 204,800 chars'
    >>> json_summary([1], 3)
    'JSON array of 1 item, 3 chars'
    """
    if isinstance(value, dict):
        return f"JSON object of {count_text(len(value), 'key')}, {count_text(chars, 'char')}"
    return f"JSON array of {count_text(len(value), 'item')}, {count_text(chars, 'char')}"


def show_folded_json(value: Any, chars: int) -> None:
    """A JSON object or array as a folded tree: its first level shown, each deeper level
    opened by a click (``st.json``, which shows keys and strings as text), under a line that
    says its size."""
    st.caption(json_summary(value, chars) + " · folded: click a ▸ to open a level")
    st.json(value, expanded=1)


def phrase_span(text: str, words: Sequence[str]) -> tuple[int, int] | None:
    """Where ``words`` (lowercased letters and digits, as ``db.dialect.search_words`` makes
    them) first stand in ``text`` as the search finds them: adjacent whole words in order, any
    case, anything but letters and digits between them; ``None`` when they do not.

    >>> phrase_span("Got: Permission-DENIED here", ["permission", "denied"])
    (5, 22)
    >>> phrase_span("permissions denied", ["permission", "denied"]) is None
    True
    """
    if not words:
        return None
    body = r"[\W_]+".join(re.escape(w) for w in words)
    found = re.search(rf"(?<![^\W_]){body}(?![^\W_])", text, re.IGNORECASE)
    return None if found is None else found.span()


def marked_text(text: str, span: tuple[int, int], *, around: int = MARK_AROUND) -> str:
    """Markdown of one line of ``text``: up to ``around`` characters either side of ``span``
    and the span itself on a highlighted background. Every part is escaped first
    (:func:`escape_markdown`), so nothing of the text is rendered as markup.

    >>> print(marked_text("see [x](y) now", (4, 10), around=4))
    see :violet-background[\\[x\\]\\(y\\)] now
    """
    start, end = span
    before = text[max(0, start - around) : start]
    after = text[end : end + around]
    return (
        ("…" if start > around else "")
        + escape_markdown(before)
        + (" " if before[-1:].isspace() else "")
        + f":{TONE['highlight']}-background[{escape_markdown(text[start:end])}]"
        + (" " if after[:1].isspace() else "")
        + escape_markdown(after)
        + ("…" if end + around < len(text) else "")
    )


def count_text(n: int, noun: str) -> str:
    """``"1 token"``, ``"3,210 tokens"``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def size_text(chars: int, tokens: int | None = None) -> str:
    """``"12,345 chars, 3,210 tokens"``."""
    return count_text(chars, "char") + (
        "" if tokens is None else ", " + count_text(tokens, "token")
    )


def show_content(
    text: str | None,
    *,
    tokens: int | None = None,
    chars: int | None = None,
    max_chars: int = PREVIEW_CHARS,
    key: str | None = None,
    load: Callable[[], str] | None = None,
) -> None:
    """Show untrusted content: JSON objects and arrays pretty-printed as code, anything else
    as plain text (``st.text``: a code block per message costs the browser about four times
    as much); long content cut to ``max_chars``, all of it in a "Show all" expander.

    ``chars`` is the full length when ``text`` was cut short by the query (the expander then
    says how much is shown). With a ``key`` the expander draws its content only while open
    (opening it reruns the page): a closed expander's content is still sent to the browser
    and laid out there.

    A JSON object or array longer than ``max_chars`` is shown folded
    (:func:`show_folded_json`), its text in a "Show as text" expander. Cut short by the query,
    content that starts like JSON is read whole by ``load`` (when given, and only once its
    expander is open) and shown folded if it is JSON.
    """
    text = text or ""
    full = max(chars or 0, len(text))
    if not text:
        st.caption("(empty)")
        return
    shown, language = pretty(text)
    if len(shown) <= max_chars and full == len(text):
        _content_block(shown, language)
        return
    if language == "json" and full == len(text):
        show_folded_json(json_value(text)[1], full)
        _text_expander(f"Show as text ({size_text(full, tokens)})", shown, language, key)
        return
    if load is not None and full > len(text) and text.lstrip()[:1] in ("{", "["):
        # Its start alone is no JSON to pretty-print: one unbroken line of text.
        st.caption(f"Starts like JSON; {count_text(full, 'char')}, more than a page reads.")
        label = f"Open all of it, folded if JSON ({size_text(full, tokens)})"
        with st.expander(label, key=key, on_change="rerun") as whole:
            if whole.open:
                _loaded(load(), full)
        return
    _content_block(shown[:max_chars] + "\n…", language)
    label = f"Show all ({size_text(full, tokens)})"
    if full > len(text):
        label = f"Show the first {len(text):,} chars ({size_text(full, tokens)})"
    _text_expander(label, shown, language, key)


def _text_expander(label: str, shown: str, language: str | None, key: str | None) -> None:
    """``shown`` in an expander labelled ``label``, drawn only while open when ``key`` is
    given."""
    if key is None:
        with st.expander(label):
            _content_block(shown, language)
        return
    with st.expander(label, key=key, on_change="rerun") as box:
        if box.open:
            _content_block(shown, language)


def _loaded(text: str, chars: int) -> None:
    """Content read whole: folded when it is JSON, else as code."""
    parsed, value = json_value(text)
    if parsed:
        show_folded_json(value, chars)
    else:
        _content_block(text, None)


def _content_block(text: str, language: str | None) -> None:
    # Tool output is machine text (columns, paths, tracebacks): monospace, plain or highlighted.
    st.code(text, language=language, wrap_lines=True)


def rate_text(numerator: int, denominator: int) -> str:
    """A rate always with its counts: ``"62% (31 of 50)"``; ``"– (0 of 0)"`` when undefined.

    >>> rate_text(31, 50)
    '62% (31 of 50)'
    """
    if denominator <= 0:
        return f"– ({numerator} of {denominator})"
    return f"{numerator / denominator:.0%} ({numerator:,} of {denominator:,})"


def percent_text(numerator: int, denominator: int) -> str:
    """``"44.4%"`` (one decimal), ``"–"`` when the denominator is 0."""
    if denominator <= 0:
        return "–"
    return f"{numerator / denominator:.1%}"


def duration_text(ms: float | None) -> str:
    """A tool execution time for people: ``"71 ms"``, ``"2.46 s"``, ``"18.5 s"``,
    ``"3 min 5 s"``, ``"2 h 48 min"``; ``"–"`` when unknown; a negative one keeps its sign.

    >>> [duration_text(v) for v in (71.0, 2464.0, 18_453.0, 185_000.0, 10_086_099.0, -500.0)]
    ['71 ms', '2.46 s', '18.5 s', '3 min 5 s', '2 h 48 min', '−500 ms']
    """
    if ms is None or ms != ms:  # None or NaN
        return "–"
    if ms < 0:
        return "−" + duration_text(-ms)
    if ms < 1000:
        return f"{ms:,.0f} ms"
    seconds = ms / 1000
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def humanize(name: str) -> str:
    """A snake_case name as words for a label: ``"error_without_suggestion"`` →
    ``"Error without suggestion"``.

    >>> humanize("no_next_action")
    'No next action'
    """
    words = str(name).replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th`` … ``11th``, ``21st``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def show_error(exc: Exception) -> None:
    """An error box with the exception's message (escaped: it may quote trace content)."""
    st.error(escape_markdown(str(exc)), icon=":material/error:")


def empty_store() -> None:
    """The empty state every page shows when the store holds no trace."""
    st.info(EMPTY_STORE_TEXT, icon=":material/upload_file:")
    st.page_link(IMPORTS.script, label="Upload trace files", icon=":material/upload_file:")


def no_match() -> None:
    """The empty state when the filters match nothing."""
    st.info(NO_MATCH_TEXT, icon=":material/filter_alt_off:")
