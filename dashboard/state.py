"""Dashboard state: the database, the shared filters kept in the URL, and cached queries.

The URL is the state: the sidebar widgets are bound to query parameters (``start``, ``end``,
``since``, ``until``, ``import``, ``agent``, ``model``, ``tool``, ``k``, ``budget``), so a copied
link opens the same view; the selected trace and pair travel as ``trace`` and ``pair``. A chart
or table that filters what it counts sets those widgets through :func:`apply_filters` /
:func:`open_filtered` (a bound widget keeps its own value over the URL on a rerun, so the value
is put in Session State before the widget is drawn). Whatever changed a bound widget, its
value is written to the address before and after the page runs (:func:`write_view_to_url`),
so the address always names the view on screen. Pages read the filters with
:func:`filters` and run every query through :func:`query` (cached for a minute, keyed by the
database URL and the arguments).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import PurePath
from typing import Any, NoReturn, TypeVar

import streamlit as st
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state.session_state_proxy import get_session_state

from dashboard import pages
from dashboard.render import count_text, empty_store, escape_markdown
from db.contract.vocabulary import (
    DEFAULT_ENCODING,
    DEFAULT_LOOP_K,
    DEFAULT_STREAK_K,
    DEFAULT_TOKEN_BUDGET,
)
from db.engine import DEFAULT_DB_PATH, display_url, make_engine, resolve_url
from db.queries.filters import FilterQueryError, Filters, parse_query
from db.queries.traces import filter_choices, import_choices, trace_count

#: Query parameters bound to the shared sidebar widgets.
FILTER_PARAMS = (
    "start", "end", "since", "until", "import", "agent", "model", "tool", "k", "budget",
)  # fmt: skip
#: The sidebar's trace filters (the query parameters :func:`db.queries.filters.parse_query` reads).
SIDEBAR_FILTERS = ("start", "end", "since", "until", "import", "agent", "model", "tool")
#: What the sidebar and the chips above each page call each filter.
FILTER_LABELS = {
    "start": "From", "end": "To", "since": "Since", "until": "Until", "import": "Import",
    "agent": "Agent", "model": "Model", "tool": "Tool",
}  # fmt: skip
#: The sidebar filters typed as text (a brushed time range, ``2026-11-30T09:05``).
TEXT_FILTERS = ("since", "until")
#: Session State key of widget values to set before the widgets are drawn (next run).
PENDING_KEY = "_pending_widget_values"
#: URL parameters bound to whole-number inputs (the analysis settings, the pages of a table
#: or a trace, the Tool calls page's token range).
NUMBER_PARAMS = ("k", "sk", "budget", "page", "spage", "mpage", "msg", "tmin", "tmax")
#: URL parameters of a search hit opened on the Trace page: the message it is in (its seq) and
#: the words searched, marked in it. Choosing another trace or pair drops them.
FOUND_PARAM, WORDS_PARAM = "msg", "hl"
#: A whole number as a number input reads it (15 digits: beyond any page, count or setting,
#: and within every engine's integers).
_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,15}")
#: Characters no page shows or looks up as written: NUL (which PostgreSQL text refuses) and
#: lone surrogates (which UTF-8 cannot encode).
_UNUSABLE_CHARACTERS = re.compile("[\x00\ud800-\udfff]")

T = TypeVar("T")


def db_url(argv: Sequence[str] | None = None) -> str:
    """The database URL: ``--db`` after ``--`` on the ``streamlit run`` line, else
    ``TOOLLENS_DB``, else ``toollens.db`` in the working directory.

    >>> db_url(["--db", "runs.db"])
    'sqlite:///runs.db'
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--db")
    known, _ = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    return resolve_url(known.db or os.environ.get("TOOLLENS_DB") or DEFAULT_DB_PATH)


def safe_url(url: str) -> str:
    """The URL with any password masked, fit to show on screen (:func:`db.engine.display_url`)."""
    return display_url(url)


@st.cache_resource(show_spinner=False)
def get_engine(url: str) -> Engine:
    """One engine per database URL for the whole server (migrations applied on first use)."""
    return make_engine(url)


def engine() -> Engine:
    """The engine of the database this dashboard serves."""
    return get_engine(db_url())


@st.cache_data(ttl=60, max_entries=512, show_spinner=False)
def _cached_call(
    url: str, module: str, name: str, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]
) -> Any:
    function = getattr(importlib.import_module(module), name)
    return function(get_engine(url), *args, **dict(kwargs))


def query(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``function(engine, *args, **kwargs)`` — a read query from ``db`` — cached for 60 s.

    The cache key is the database URL, the function's name and the arguments (``Filters`` and
    other dataclasses hash by value), so every view of the same data shares one result.
    """
    module = function.__module__
    if not module.startswith("db."):
        raise ValueError(f"{module}.{function.__qualname__} is not a db query")
    result: T = _cached_call(
        db_url(), module, function.__qualname__, args, tuple(sorted(kwargs.items()))
    )
    return result


def store_is_empty() -> bool:
    """True when the database holds no trace at all (pages then show how to import)."""
    return query(trace_count) == 0


def end_on_empty_store() -> None:
    """End the page on how to import when the store holds no trace (every page that reads
    traces starts with this, under its title)."""
    if store_is_empty():
        empty_store()
        end_page()


def open_page(title: str) -> None:
    """The page's title, then :func:`end_on_empty_store`."""
    st.title(title)
    end_on_empty_store()


def usable_url_value(name: str, value: str) -> str | None:
    """``value`` of the URL parameter ``name`` as the pages read it: NUL and lone surrogates
    become U+FFFD, and a number parameter (:data:`NUMBER_PARAMS`) that is not a whole number
    is ``None`` (dropped: its widget starts at its default).

    >>> usable_url_value("trace", "a\\x00b") == "a\\ufffdb", usable_url_value("k", "1e999")
    (True, None)
    >>> usable_url_value("page", "-3")
    '-3'
    """
    text = _UNUSABLE_CHARACTERS.sub("\ufffd", value)
    if name in NUMBER_PARAMS and not _WHOLE_NUMBER.fullmatch(text.strip()):
        return None
    return text


def normalize_url() -> None:
    """Make every URL parameter one the pages can use (:func:`usable_url_value`), before any
    widget or page reads it: the one place values from the address enter, so an odd value
    (``?k=1e999``, ``?trace=%00``) gives the page's own "not found" or default, never an
    internal error.

    Streamlit's own query parameters are changed, not ``st.query_params``: that API refuses to
    touch a parameter bound to a widget, and a bound widget reads the address as it arrived
    (its "initial" parameters), which is set again from the cleaned values here.
    """
    changed = False
    with get_session_state().query_params() as params:
        for name in list(params):
            given = params.get_all(name)
            usable = [
                v for v in (usable_url_value(name, value) for value in given) if v is not None
            ]
            if usable == given:
                continue
            changed = True
            if usable:
                params.set_with_no_forward_msg(name, usable)
            else:
                params.remove_param(name)
        if changed:
            params.set_initial_query_params_from_current()


def write_view_to_url(*, before_page: bool = False) -> None:
    """Write URL-bound widgets to the address as they now stand: a widget's value when it is
    not its default, nothing when it is. The address then always names the view on screen,
    whichever widget or page change made it.

    Streamlit writes a bound widget's parameter only when the widget's value changes or a URL
    seeds it, and a page opened from the menu gets only the parameters of widgets the browser
    has drawn: the sidebar's filters sit in a closed popover, so a filter chosen on one page
    stayed in force on the next while its parameter was gone, and a copied link showed another
    view. Two passes mend that:

    - ``before_page`` (``app.py``, before the navigation): the sidebar's widgets, from their
      values kept since the last run, so the browser records the new page's address with them
      in one history entry (a later correction would add a second entry, without them, for
      Back to land on). Skipped on Back and Forward (the address is the view asked for there)
      and for values a chart or table just asked for (:func:`adopt_pending_values`).
    - after the page (:func:`view_in_url`): every bound widget drawn in this run. Parameters
      of widgets not drawn are left alone (Streamlit drops those of another page).
    """
    ctx = get_script_run_ctx()
    if ctx is None or (before_page and ctx.is_history_navigation):
        return
    inner = get_session_state()._state
    metadata = inner._new_widget_state.widget_metadata
    pending = st.session_state.get(PENDING_KEY, {})
    with get_session_state().query_params() as params:
        for name, binding in list(params._bindings_by_param.items()):
            widget = metadata.get(binding.widget_id)
            if widget is None:
                continue
            if before_page:
                sidebar = binding.script_hash == ctx.pages_manager.main_script_hash
                if not sidebar or name in pending or binding.widget_id not in inner:
                    continue
            elif binding.widget_id not in ctx.shared.widget_ids_this_run:
                continue
            value = inner[binding.widget_id]
            if value == widget.deserializer(None):
                if params.has_param(name):
                    params.remove_param(name)
                continue
            shown = widget.serializer(value)
            if not params.stored_param_matches_corrected_value(name, shown, widget.value_type):
                params.set_corrected_value(name, shown, widget.value_type)


class _PageEnd(BaseException):
    """Raised by :func:`end_page`; ends the page inside :func:`view_in_url`. A ``BaseException``,
    as Streamlit's own stop is: a page's ``except Exception`` must not swallow it."""


#: ``running`` is True while a page runs inside :func:`view_in_url` (per script thread: each
#: browser session runs its script in a thread of its own).
_page = threading.local()


def end_page() -> NoReturn:
    """End the page here (in place of ``st.stop()``, after which nothing can be written, not
    even the address): :func:`view_in_url` still writes the view to the URL. Outside it (a
    page script run alone in a test) this is ``st.stop()``."""
    if getattr(_page, "running", False):
        raise _PageEnd
    st.stop()
    raise AssertionError("st.stop() returned")  # pragma: no cover - it raises


@contextlib.contextmanager
def view_in_url() -> Iterator[None]:
    """Run the block (the page), then :func:`write_view_to_url`, also when the page ended
    early with :func:`end_page` (a table with no rows). ``st.stop()``, a rerun and a page
    switch are left to Streamlit: after them nothing can be written (the next run writes its
    own address)."""
    _page.running = True
    try:
        yield
    except _PageEnd:
        pass
    finally:
        _page.running = False
    write_view_to_url()


def filters() -> Filters:
    """The shared filters as chosen in the sidebar (and therefore in the URL).

    Read by the same parser as a filter written as a query string (``toollens compare``), so
    the end date is inclusive for the user and the filter ends at the next midnight (UTC).
    """
    get = st.session_state.get
    values = {name: get(name) for name in SIDEBAR_FILTERS}
    try:
        return parse_query(values)
    except FilterQueryError as exc:  # a mistyped since/until: said in the sidebar, left out
        st.sidebar.error(str(exc), icon=":material/error:")
        return parse_query({k: v for k, v in values.items() if k not in TEXT_FILTERS})


def apply_filters(values: Mapping[str, str | int | bool | None]) -> NoReturn:
    """Set URL-bound widgets (sidebar filters, the Tool calls page's own filters) to
    ``values`` (``None`` clears one) and rerun the page: how a chart's brushed range
    becomes the ``since``/``until`` filter."""
    st.session_state[PENDING_KEY] = dict(values)
    st.rerun()


def open_filtered(
    page: pages.Page,
    values: Mapping[str, str | int | bool | None],
    params: Mapping[str, str] | None = None,
) -> NoReturn:
    """Switch to ``page`` with URL-bound widgets set to ``values`` and the other URL
    parameters ``params``: a selected bar or table row opening the list of what it counts.

    The values of that page's own widgets go into its URL as well: a widget first drawn there
    takes the value from Session State but would not write it to the address itself (the
    sidebar's widgets, bound on every page, write theirs; Streamlit refuses them here).
    """
    st.session_state[PENDING_KEY] = dict(values)
    shown = {k: url_text(v) for k, v in values.items() if v is not None and k not in FILTER_PARAMS}
    st.switch_page(page.script, query_params={**shown, **dict(params or {})})


def url_text(value: str | int | bool) -> str:
    """How a bound widget writes ``value`` in the URL (``True`` → ``"true"``).

    >>> url_text(True), url_text(2001)
    ('true', '2001')
    """
    return str(value).lower() if isinstance(value, bool) else str(value)


def adopt_pending_values() -> None:
    """Put the values :func:`apply_filters` / :func:`open_filtered` left into Session State;
    runs before any widget is drawn (``app.py``), as a drawn widget's state cannot be set."""
    for key, value in st.session_state.pop(PENDING_KEY, {}).items():
        st.session_state[key] = ("" if key in TEXT_FILTERS else None) if value is None else value


#: Session State key: the value the browser sent for each sidebar filter in the last run.
_SENT_KEY = "_sidebar_values_sent"


def keep_set_filter_values() -> None:
    """Keep a sidebar filter that a chip, a chart or a table set (``st.session_state``) from
    coming back on the next run. Runs before the sidebar's widgets are drawn.

    The filters sit in a popover the browser draws only while it is open, so the browser
    never hears of a value set while it is closed: on every later run it sends the value the
    person last chose there, and Streamlit takes a value the browser sends over the one it
    kept. A removed chip's filter came back with the next click anywhere. A value the browser
    sends unchanged from the last run is no choice of the person's: the kept value is set
    again, which wins and tells the browser (a value changed in the popover is taken).
    """
    inner = get_session_state()._state
    sent: dict[str, Any] = st.session_state.setdefault(_SENT_KEY, {})
    for name in SIDEBAR_FILTERS:
        widget_id = inner._key_id_mapper.get_id_from_key(name, None)
        if widget_id is None or widget_id not in inner._new_widget_state.states:
            sent.pop(name, None)
            continue
        incoming = inner._new_widget_state[widget_id]
        unchanged = name in sent and sent[name] == incoming
        sent[name] = incoming
        if not unchanged or name in inner._new_session_state or widget_id not in inner._old_state:
            continue
        kept = inner._old_state[widget_id]
        if kept != incoming:
            st.session_state[name] = kept


def loop_k() -> int:
    """The loop threshold k (a signature occurring k or more times in a trace is a loop)."""
    return int(st.session_state.get("k") or DEFAULT_LOOP_K)


def streak_k() -> int:
    """The error-streak threshold k (k or more consecutive calls of one tool ending in the
    same error fingerprint are a streak)."""
    return int(st.session_state.get("sk") or DEFAULT_STREAK_K)


def token_budget() -> int:
    """The token budget one Tool Message should stay within."""
    return int(st.session_state.get("budget") or DEFAULT_TOKEN_BUDGET)


def selected_trace() -> str | None:
    """The ``trace`` URL parameter (a trace's display id), if any."""
    return st.query_params.get("trace") or None


def selected_pair() -> str | None:
    """The ``pair`` URL parameter (``"12:0"`` for a call, ``"r12"`` for a lone result)."""
    return st.query_params.get("pair") or None


def found_message() -> int | None:
    """The ``msg`` URL parameter: the seq of the message a search hit opened, if any."""
    value = st.query_params.get(FOUND_PARAM)
    return int(value) if value and _WHOLE_NUMBER.fullmatch(value.strip()) else None


def found_words() -> str | None:
    """The ``hl`` URL parameter: the words the search hit matched, if any."""
    return st.query_params.get(WORDS_PARAM) or None


def select_trace(trace: str | None, pair: str | None = None) -> None:
    """Put ``trace`` (and ``pair``) in the URL of the current page; ``None`` removes them.
    A search hit's message and words (:data:`FOUND_PARAM`, :data:`WORDS_PARAM`) go: the view
    lands on the new choice."""
    for key, value in (("trace", trace), ("pair", pair), (FOUND_PARAM, None), (WORDS_PARAM, None)):
        if value:
            st.query_params[key] = value
        elif key in st.query_params:
            del st.query_params[key]


def open_trace(
    trace: str, pair: str | None = None, extra: Mapping[str, str] | None = None
) -> NoReturn:
    """Switch to the Trace page showing ``trace`` with ``pair`` selected (and the ``extra``
    URL parameters, e.g. the review queue it was opened from)."""
    params = {"trace": trace, **({"pair": pair} if pair else {}), **(extra or {})}
    st.switch_page(pages.TRACE.script, query_params=params)


def import_label(row: Any) -> str:
    """What the Import filter calls an import: id, file name and start time.

    >>> from datetime import datetime
    >>> import_label({"id": 3, "paths": ["/data/runs.jsonl", "b.jsonl"], "origin": "cli",
    ...               "started_at": datetime(2026, 11, 30, 9, 5)})
    '3 · runs.jsonl +1 · 2026-11-30 09:05 UTC'
    """
    paths = [str(p) for p in (row["paths"] or [])]
    name = PurePath(paths[0]).name if paths else str(row["origin"])
    more = f" +{len(paths) - 1}" if len(paths) > 1 else ""
    return f"{row['id']} · {name}{more} · {row['started_at']:%Y-%m-%d %H:%M} UTC"


def _import_caption(imports: Any, value: str | None) -> str | None:
    row = imports[imports["id"].astype(str) == value]
    if value is None or row.empty:
        return None
    r = row.iloc[0]
    return f"{r['origin']}, {count_text(int(r['traces_imported']), 'trace')}"


def sidebar() -> None:
    """Draw the shared filters and analysis settings in the sidebar, bound to the URL.

    The widgets sit in two popovers, with a line under each saying what is in use: a browser
    draws a popover's widgets only when it opens, and drawing these eleven widgets on every
    page load cost as much as a one-line page does in all (docs/performance.md, "The sidebar's
    own cost"). The widgets run on every page all the same, so their values and their URL
    parameters stay as they were. Choices come from small DISTINCT queries; a URL value that
    is not a current choice is dropped by Streamlit (and so is the filter). Values a chart or
    table asked for (:func:`open_filtered`) are put in place first, before any widget is drawn.
    """
    keep_set_filter_values()
    adopt_pending_values()
    try:
        choices = query(filter_choices)
        imports = query(import_choices)
    except (SQLAlchemyError, OSError) as exc:  # unreachable, or not a ToolLens store
        st.error(f"Cannot open the database {safe_url(db_url())}: {exc.__class__.__name__}")
        st.stop()
    bar = st.sidebar
    bar.subheader("Filters")
    with bar.popover("Choose filters", icon=":material/filter_list:", width="stretch"):
        _filter_widgets(choices, imports)
    bar.caption(filters_in_use(st.session_state))
    bar.subheader("Analysis")
    with bar.popover("Change settings", icon=":material/tune:", width="stretch"):
        _analysis_widgets()
    bar.caption(
        f"Loop threshold k {loop_k()} · error streak k {streak_k()} · "
        f"token budget {token_budget():,}"
    )
    encoding = str(imports["encoding"].iloc[0]) if not imports.empty else DEFAULT_ENCODING
    bar.caption(f"Token counts: {encoding}")


def filters_in_use(values: Any) -> str:
    """The line under the filters: which are in use (their values are on the chips above the
    page), or that every trace counts.

    >>> filters_in_use({"model": "gpt-4o", "since": "", "tool": None, "start": "2026-11-30"})
    'In use: From, Model'
    >>> filters_in_use({"model": None})
    'None in use: every trace counts'
    """
    used = [FILTER_LABELS[name] for name, _ in active_values(values)]
    return f"In use: {', '.join(used)}" if used else "None in use: every trace counts"


def active_values(values: Any) -> list[tuple[str, Any]]:
    """The sidebar filters with a value (neither None nor empty text), as ``(name, value)``,
    in the sidebar's order: what the line under the filters and the chips above a page show."""
    found = ((name, values.get(name)) for name in SIDEBAR_FILTERS)
    return [(name, value) for name, value in found if value is not None and value != ""]


def _filter_widgets(choices: Mapping[str, Sequence[str]], imports: Any) -> None:
    """The trace filters (in the "Choose filters" popover)."""
    left, right = st.columns(2)
    left.date_input("From", value=None, key="start", bind="query-params", format="YYYY-MM-DD")
    right.date_input("To", value=None, key="end", bind="query-params", format="YYYY-MM-DD")
    # The options are the import ids (what the filters read) shown as id, file and time. The
    # URL holds what the selectbox shows, which the widget would not find in a link's bare id
    # (``import=3``): that id is chosen through Session State before the widget is drawn.
    labels = {str(row["id"]): import_label(row) for _, row in imports.iterrows()}
    given = st.query_params.get("import")
    if given in labels:
        st.session_state["import"] = given
    chosen = st.selectbox(
        "Import",
        list(labels),
        format_func=labels.__getitem__,
        index=None,
        key="import",
        bind="query-params",
        placeholder="All imports",
    )
    caption = _import_caption(imports, chosen)
    if caption:
        st.caption(escape_markdown(caption))
    # A range brushed on a time chart, to the minute; editable here.
    left, right = st.columns(2)
    for where, name, label in ((left, "since", "Since"), (right, "until", "Until")):
        where.text_input(
            f"{label} (UTC)",
            key=name,
            bind="query-params",
            placeholder="YYYY-MM-DDTHH:MM",
            help="Traces that started in this range (brush a time chart to set it); "
            "until is exclusive.",
        )
    for name in ("agent", "model", "tool"):
        label = FILTER_LABELS[name]
        st.selectbox(
            label,
            choices[name],
            index=None,
            key=name,
            bind="query-params",
            placeholder=f"All {label.lower()}s",
        )


#: The analysis settings, bound to the URL: key, label, lowest and highest value, default,
#: step, help.
ANALYSIS_SETTINGS: tuple[tuple[str, str, int, int, int, int, str], ...] = (
    ("k", "Loop threshold k", 2, 1000, DEFAULT_LOOP_K, 1,
     "A call signature repeated k or more times in one trace is a loop."),
    ("sk", "Error streak k", 2, 1000, DEFAULT_STREAK_K, 1,
     "k or more consecutive calls of one tool ending in the same error, whatever their "
     "arguments, are an error streak."),
    ("budget", "Token budget", 1, 10_000_000, DEFAULT_TOKEN_BUDGET, 100,
     "Tool Messages above this many tokens count as over budget."),
)  # fmt: skip


def _analysis_widgets() -> None:
    """The analysis settings (in the "Change settings" popover)."""
    for key, label, low, high, default, step, text in ANALYSIS_SETTINGS:
        st.number_input(
            label,
            min_value=low,
            max_value=high,
            value=default,
            step=step,
            key=key,
            bind="query-params",
            help=text,
        )
