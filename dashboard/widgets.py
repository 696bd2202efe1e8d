"""Widgets shared by the pages.

A pager whose page lives in the URL, a table whose selected row opens the Trace page, a slider
that mirrors one of the sidebar's analysis settings (``k``, ``budget``) next to the chart it
drives, and the column formats every table uses: counts with thousands separators, rates as
percentages with one decimal, a link that opens a pair on the Trace page, and "—" for an empty
cell (:data:`EMPTY_CELL`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from dashboard import render, state
from dashboard.pages import TRACE as TRACE_PAGE
from dashboard.pages import Page

#: What a table shows in a cell without a value (instead of "None").
EMPTY_CELL = "—"


#: Pixel widths of the columns lists put first (tool, error type, the arguments and the Tool
#: Message), so the four are on screen without scrolling at 1,440 px beside the open sidebar
#: (a table there is 980 px wide; tests/test_browser_landing.py measures); longer values are cut
#: and shown whole on hover, and the columns after them may be cut by the table's edge.
TOOL_PX, ERROR_TYPE_PX, CONTENT_PX = 120, 120, 250

#: Pixel heights of a table's header and of one row (Streamlit's defaults), for
#: :func:`table_height`.
HEADER_PX, ROW_PX = 38, 35


def table_height(rows: int, *, max_rows: int = 12) -> int:
    """The height that shows ``rows`` rows (at most ``max_rows``, then the table scrolls)
    without an empty band below them.

    >>> table_height(3)
    145
    """
    return HEADER_PX + ROW_PX * max(1, min(rows, max_rows)) + 2


def metrics(where: Sequence[Any], figures: Sequence[tuple[str, str, str]]) -> None:
    """Each of ``figures`` (label, value, help) as a metric, in the columns ``where`` in turn."""
    for column, (label, value, text) in zip(where, figures, strict=True):
        column.metric(label, value, help=text)


def rate_metric(
    where: Any, label: str, numerator: int, denominator: int, *, of: str = "", help: str = ""
) -> None:
    """A rate as a metric in ``where`` (a column): the percentage with one decimal, and its
    counts under it in grey (``"18 of 25 decided"``), so the rate is never shown alone and
    the value stays short enough for a quarter of the page."""
    where.metric(
        label,
        render.percent_text(numerator, denominator),
        delta=f"{numerator:,} of {denominator:,}" + (f" {of}" if of else ""),
        delta_color="off",
        delta_arrow="off",
        help=help or None,
    )


def count_column(label: str, *, help: str | None = None, **kwargs: Any) -> Any:
    """A number column shown with thousands separators (``12,127``)."""
    return st.column_config.NumberColumn(label, help=help, format="localized", **kwargs)


def seconds_column(label: str, *, help: str | None = None, **kwargs: Any) -> Any:
    """A column of durations in seconds (see :func:`as_seconds`), two decimals."""
    return st.column_config.NumberColumn(label, help=help, format="%.2f s", **kwargs)


def as_seconds(ms: pd.Series) -> pd.Series:
    """Milliseconds as seconds (floats; a missing duration stays missing).

    >>> as_seconds(pd.Series([1250.0, None])).tolist()[0]
    1.25
    """
    return pd.to_numeric(ms, errors="coerce") / 1000


def percent_column(label: str, *, help: str | None = None, **kwargs: Any) -> Any:
    """A column of percentages (0–100, see :func:`as_percent`) shown with one decimal."""
    return st.column_config.NumberColumn(label, help=help, format="%.1f%%", **kwargs)


def as_percent(rates: pd.Series) -> pd.Series:
    """Rates 0–1 as percentages 0–100 (floats; a missing rate stays missing).

    >>> as_percent(pd.Series([0.369906, None])).round(2).tolist()[0]
    36.99
    """
    return pd.to_numeric(rates, errors="coerce").astype(float) * 100


def app_path(path: str) -> str:
    """``path`` of this dashboard under the server's base path (``server.baseUrlPath``, as
    when served behind a proxy at ``/toollens/``): ``"/trace"`` → ``"/toollens/trace"``."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}{path}" if base else path


def pair_link(trace: str, pair: str | None = None) -> str:
    """The Trace page's URL of a trace (and pair): ``/trace?trace=demo-1&pair=2:0``, under the
    server's base path if it has one (:func:`app_path`).

    Untrusted ids are URL-encoded, so the link can only ever open the Trace page.
    """
    params = {"trace": trace, **({"pair": pair} if pair else {})}
    return f"{app_path(TRACE_PAGE.path)}?{urlencode(params, safe=':')}"


def link_column(label: str = "Open", *, help: str | None = None) -> Any:
    """A column of :func:`pair_link` URLs, each shown as the word "open"."""
    return st.column_config.LinkColumn(
        label, help=help or "open this pair on the Trace page (a new tab)", display_text="open"
    )


def with_links(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (columns ``trace`` and ``pair``) with a ``link`` column of :func:`pair_link`."""
    links = [
        pair_link(str(t), str(p) if isinstance(p, str) and p else None)
        for t, p in zip(df["trace"], df["pair"], strict=True)
    ]
    return df.assign(link=links)


def page_offset(total: int, page_size: int, *, key: str, noun: str = "rows") -> int:
    """Draw a page number input bound to the URL parameter ``key``; return the row offset.

    Nothing is drawn when everything fits on one page. A page beyond the last (an old link)
    shows the last page.
    """
    pages = max(1, -(-total // page_size))
    if pages == 1:
        st.caption(f"{total:,} {noun}")
        return 0
    left, right = st.columns([1, 4])
    page = left.number_input(
        "Page", min_value=1, value=1, step=1, key=key, bind="query-params", width=140
    )
    page = min(int(page), pages)
    right.caption(f"{total:,} {noun} · page {page:,} of {pages:,}")
    return (page - 1) * page_size


def picked_row(df: pd.DataFrame, *, key: str, **table: Any) -> pd.Series | None:
    """Show ``df`` as a table of which one row at a time can be selected (no index, untrusted
    text as plain cell text, :data:`EMPTY_CELL` in empty cells); the row selected, or ``None``.
    ``table``: the other arguments of ``st.dataframe`` (height, column order and config)."""
    event = st.dataframe(
        df,
        hide_index=True,
        placeholder=EMPTY_CELL,
        on_select="rerun",
        selection_mode="single-row",
        key=key,
        **table,
    )
    rows = event.selection.rows if event is not None else []
    return df.iloc[rows[0]] if rows else None


def columns(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``column_order`` and ``column_config`` arguments of a table that shows the columns
    of ``config`` and only them, in its order: each column named once, beside its settings."""
    return {"column_order": tuple(config), "column_config": dict(config)}


def trace_table(
    df: pd.DataFrame,
    *,
    key: str,
    column_order: Sequence[str],
    column_config: Mapping[str, Any] | None = None,
    height: int | None = None,
    open_params: Mapping[str, str] | None = None,
) -> None:
    """Show ``df`` (untrusted text stays plain cell text); selecting a row opens its pair.

    ``df`` must have the columns ``trace`` (display id) and ``pair`` (URL ``pair`` value).
    ``height`` defaults to :func:`table_height` of the rows (at most 12, then it scrolls).
    ``open_params``: more URL parameters of the opened Trace page.
    """
    row = picked_row(
        df,
        key=key,
        height=height or table_height(len(df)),
        column_order=tuple(column_order),
        column_config=dict(column_config or {}),
    )
    if row is not None:
        pair = str(row["pair"]) if row["pair"] else None
        state.open_trace(str(row["trace"]), pair, open_params)


def _copy_setting(source: str, target: str) -> None:
    st.session_state[target] = st.session_state[source]


def setting_slider(
    label: str,
    *,
    setting: str,
    current: int,
    min_value: int,
    max_value: int,
    step: int = 1,
    help: str | None = None,
) -> int:
    """A slider for the sidebar setting ``setting`` (``k`` or ``budget``, bound to the URL).

    Moving the slider writes the sidebar widget's state, which updates the URL parameter, so
    both controls always agree. A current value outside the slider's range (set in the sidebar
    or the URL) is shown clipped but kept: the returned value is the setting itself.
    """
    key = f"{setting}_slider"
    # Set before the slider exists in this run: the slider shows the shared setting, not a
    # stale value of its own.
    st.session_state[key] = min(max(current, min_value), max_value)
    st.slider(
        label,
        min_value=min_value,
        max_value=max_value,
        step=step,
        key=key,
        on_change=_copy_setting,
        args=(key, setting),
        help=help,
    )
    return current


def _clear_filter(name: str) -> None:
    # The widget is bound to the URL: setting its state also removes the URL parameter.
    st.session_state[name] = "" if name in state.TEXT_FILTERS else None


def active_filters() -> list[tuple[str, str]]:
    """The sidebar filters in use, as ``(URL parameter, chip text)``: ``("tool", "Tool:
    lookup")``, in the sidebar's order."""
    out = []
    for name, value in state.active_values(st.session_state):
        shown = value.isoformat() if hasattr(value, "isoformat") else str(value)
        out.append((name, f"{state.FILTER_LABELS[name]}: {shown}"))
    return out


def filter_chips() -> None:
    """Above every page's content, one chip per active sidebar filter, so nobody reads
    narrowed figures as the whole store; clicking a chip removes its filter."""
    chips = active_filters()
    if not chips:
        return
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    row.caption("Filtered by")
    for name, text in chips:
        row.button(
            render.escape_markdown(text),
            key=f"chip_{name}",
            icon=":material/close:",
            on_click=_clear_filter,
            args=(name,),
            help="Remove this filter",
        )


def sections(draw: Mapping[str, Callable[[], None]], *, key: str) -> None:
    """Tabs labelled by ``draw``'s keys; only the open tab's function runs, so a hidden tab
    costs neither its queries nor the browser's drawing (a page of nine charts and tables takes
    as long to draw as five one-line pages: docs/performance.md). The open tab is the URL
    parameter ``key``, its value the tab's label, so a copied link opens the same tab; the
    first is open when the URL names none (or a label there is not)."""
    tabs = st.tabs(list(draw), key=key, bind="query-params")
    for tab, function in zip(tabs, draw.values(), strict=True):
        if tab.open:
            with tab:
                function()


def page_sections(page: Page, draw: Sequence[Callable[[], None]]) -> None:
    """``page``'s sections (``Page.sections``, in order, drawn by ``draw``) as :func:`sections`
    under the page's own URL parameter (``Page.section_param``)."""
    sections(dict(zip(page.sections, draw, strict=True)), key=page.section_param)
