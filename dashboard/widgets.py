"""Widgets shared by the Errors, Tokens, Loops, Suggestions and Imports pages.

A pager whose page lives in the URL, a table whose selected row opens the Trace page, and a
slider that mirrors one of the sidebar's analysis settings (``k``, ``budget``) next to the chart
it drives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import state


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


def trace_table(
    df: pd.DataFrame,
    *,
    key: str,
    column_order: Sequence[str],
    column_config: Mapping[str, Any] | None = None,
) -> None:
    """Show ``df`` (untrusted text stays plain cell text); selecting a row opens its pair.

    ``df`` must have the columns ``trace`` (display id) and ``pair`` (URL ``pair`` value).
    """
    event = st.dataframe(
        df,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key=key,
        column_order=tuple(column_order),
        column_config=dict(column_config or {}),
    )
    selected = event.selection.rows if event is not None else []
    if selected:
        row = df.iloc[selected[0]]
        state.open_trace(str(row["trace"]), str(row["pair"]) if row["pair"] else None)


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
