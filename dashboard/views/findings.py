"""Findings: every finding kind with its count, and the list of one kind's occurrences.

The kind is the ``kind`` URL parameter (``/findings?kind=bare_status`` is a link the Overview's
findings table and anyone can share); the sidebar filters narrow the list like every other page.
Each occurrence shows its trace's title, the tool, the call id and the message ``toollens lint``
prints for it, as plain cell text (trace content is untrusted), with a link to its pair on the
Trace page. A name mismatch counts once, on its call.
"""

from __future__ import annotations

import streamlit as st

from dashboard import render, state, widgets
from db.contract.vocabulary import FINDING_DESCRIPTION, FINDING_KINDS, finding_level
from db.queries import findings as q

PAGE_SIZE = 50

state.open_page("Findings")

f = state.filters()
counts = state.query(q.finding_kind_counts, f)
by_kind = dict(zip(counts["kind"], counts["occurrences"], strict=True))
# Most frequent first, so the page opens on the kind with the most to read.
ordered = sorted(FINDING_KINDS, key=lambda k: (-int(by_kind.get(k, 0)), FINDING_KINDS.index(k)))
kind = st.selectbox(
    "Finding",
    ordered,
    key="kind",
    # No format_func: a URL-bound select matches the URL against the shown option, and the
    # kind's own name is what `toollens lint --ignore` takes and a shared link carries.
    bind="query-params",
    help="Every finding kind ToolLens checks, the most frequent under the filters first.",
)
st.caption(
    f"{FINDING_DESCRIPTION[kind]} ({finding_level(kind)}) · "
    f"{int(by_kind.get(kind, 0)):,} occurrences"
)

total = state.query(q.finding_occurrence_count, kind, f)
if total == 0:
    st.info(f"No {render.humanize(kind).lower()} finding under these filters.")
else:
    offset = widgets.page_offset(total, PAGE_SIZE, key="fpage", noun="occurrences")
    found = widgets.with_links(
        state.query(q.finding_occurrences, kind, f, limit=PAGE_SIZE, offset=offset)
    )
    st.caption("Select a row to open the pair on the Trace page.")
    widgets.trace_table(
        found,
        key="findings_table",
        height=widgets.table_height(len(found), max_rows=20),
        **widgets.columns(
            {
                "title": st.column_config.TextColumn("Trace title", width="medium"),
                "tool": st.column_config.TextColumn("Tool"),
                "call_id": st.column_config.TextColumn(
                    "Call", help="the call's tool_call_id (#seq.index without one)"
                ),
                "message": st.column_config.TextColumn(
                    "Message", width="large", help="what `toollens lint` prints for it"
                ),
                "link": widgets.link_column("Pair"),
                "trace": st.column_config.TextColumn("Trace"),
            }
        ),
    )

st.subheader("Every finding kind")
st.dataframe(
    counts.assign(description=[FINDING_DESCRIPTION.get(k, "") for k in counts["kind"]]),
    hide_index=True,
    height=widgets.table_height(len(counts), max_rows=len(counts)),
    placeholder=widgets.EMPTY_CELL,
    **widgets.columns(
        {
            "kind": st.column_config.TextColumn(
                "Kind", help="the name `toollens lint --ignore` takes"
            ),
            "level": st.column_config.TextColumn("Level"),
            "occurrences": widgets.count_column("Occurrences"),
            "traces": widgets.count_column("Traces", help="traces with at least one"),
            "tools": widgets.count_column("Tools", help="tools with at least one"),
            "description": st.column_config.TextColumn("Means", width="large"),
        }
    ),
)
