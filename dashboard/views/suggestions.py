"""Suggestions: is the advice inside Tool Messages followed, and does it help?

Follow rate = followed / (followed + ignored), always shown with its counts. Recovery compares
error results with and without a suggestion: did the next call of the same tool succeed?
Examples of every verdict link to the two messages the verdict joins.
"""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from dashboard import pages, render, state, widgets
from dashboard.charts import suggestions as charts
from dashboard.selection import picked_point, selectable_chart
from db.contract.vocabulary import VERDICTS
from db.queries import suggestions as q
from db.queries.common import UNCLASSIFIED
from db.queries.filters import Filters
from db.writes.corrections import correction_counts

EXAMPLES = 10
VERDICT_HELP: dict[str, str] = {
    "followed": "the next action did what the advice said",
    "ignored": "the next action repeated the failing call or did the opposite",
    "unclear": "the next action neither follows nor contradicts the advice",
    "no_next_action": "the trace ended after the result",
}

EXAMPLE_COLUMNS = (
    "tool", "error_type", "suggestion", "verdict_reason", "suggestion_kind", "trace", "pair",
)  # fmt: skip

state.open_page("Suggestions")

f = state.filters()
breakdown = state.query(q.verdict_breakdown, f)
if breakdown.empty:
    st.info(
        "No Tool Message under the current filters carries a suggestion (a protocol "
        "`suggestion` field or a hint such as 'retry after 6s' or 'use X instead')."
    )
    state.end_page()

per_verdict = breakdown.groupby("verdict")["results"].sum()
counts = {v: int(per_verdict.get(v, 0)) for v in VERDICTS}
decided = counts["followed"] + counts["ignored"]
recovery = state.query(q.recovery_rates, f)
with_s, without_s = recovery.iloc[0], recovery.iloc[1]

row = st.columns(4)
row[0].metric("Results with a suggestion", f"{sum(counts.values()):,}")
widgets.rate_metric(
    row[1],
    "Follow rate",
    counts["followed"],
    decided,
    of="decided",
    help="followed / (followed + ignored); unclear and no next action are left out",
)
for column, group in ((row[2], with_s), (row[3], without_s)):
    tried = int(group["recovered"]) + int(group["not_recovered"])
    widgets.rate_metric(
        column,
        f"Recovery {group['group']}",
        int(group["recovered"]),
        tried,
        of="retried",
        help=f"error results whose next call of the same tool succeeded; {int(group['errors']):,} "
        f"errors, {int(group['no_next_call']):,} without a later call of their tool",
    )

corrected = state.query(correction_counts, f)["verdict"]
if corrected:
    st.caption(
        f"{render.count_text(corrected, 'verdict')} corrected by reviewers; the figures and "
        "charts use the corrected verdicts."
    )


def _verdicts(breakdown: pd.DataFrame) -> None:
    """The verdicts per kind of suggestion; a bar lists those results."""
    st.caption("Verdicts per kind of suggestion. Click a bar to list those results.")
    point = picked_point(selectable_chart(charts.verdict_chart(breakdown), key="verdicts"))
    if point is not None:
        kinds = sorted(set(breakdown["suggestion_kind"]))
        part = breakdown[breakdown["suggestion_kind"] == kinds[point[0]]]
        state.open_filtered(pages.CALLS, {"verdict": str(part.iloc[point[1]]["verdict"])})


def _recovery(recovery: pd.DataFrame) -> None:
    """Recovery after an error result, with and without a suggestion."""
    st.caption(
        "Error results whose next call of the same tool succeeded, with and without a "
        "suggestion in the result."
    )
    st.plotly_chart(charts.recovery_chart(recovery), key="recovery")


RATE_CONFIG = {
    "suggestions": widgets.count_column("Suggestions"),
    "followed": widgets.count_column("Followed"),
    "ignored": widgets.count_column("Ignored"),
    "unclear": widgets.count_column("Unclear"),
    "no_next_action": widgets.count_column("No next action"),
    "decided": widgets.count_column("Decided", help="followed + ignored"),
    "follow_pct": widgets.percent_column("Follow rate", help="followed / decided"),
}


def _follow_rate(f: Filters, key: str, title: str) -> None:
    """The follow rate per tool or per error type (``key``); a bar lists those calls."""
    rates = state.query(q.follow_rates, f, by=key)
    point = picked_point(
        selectable_chart(charts.follow_rate_chart(rates, key), key=f"follow_{key}")
    )
    if point is not None:
        value = str(rates.iloc[point[1]][key])
        # The calls of that tool (error type), those with a verdict first.
        wanted = (
            {"tool": value}
            if key == "tool"
            else {"status": "error", "error_type": None if value == UNCLASSIFIED else value}
        )
        state.open_filtered(pages.CALLS, {**wanted, "sort": "verdict"})
    st.dataframe(
        rates.assign(follow_pct=widgets.as_percent(rates["follow_rate"])),
        hide_index=True,
        placeholder=widgets.EMPTY_CELL,
        **widgets.columns({key: st.column_config.TextColumn(title), **RATE_CONFIG}),
    )


def _examples(f: Filters, verdict: str, count: int) -> None:
    """The examples of one verdict; a row opens the result and the next action in its trace."""
    noun = "result" if count == 1 else "results"
    st.caption(f"{count:,} {noun}: {VERDICT_HELP[verdict]}.")
    examples = state.query(q.verdict_examples, verdict, f, limit=EXAMPLES)
    if examples.empty:
        return
    st.caption("Select an example to open the result and the model's next action in the trace.")
    widgets.trace_table(
        examples,
        key=f"examples_{verdict}",
        column_order=EXAMPLE_COLUMNS,
        column_config={
            "tool": st.column_config.TextColumn("Tool"),
            "error_type": st.column_config.TextColumn("Error type"),
            "suggestion": st.column_config.TextColumn("Suggestion", width="large"),
            "verdict_reason": st.column_config.TextColumn("Why", width="large"),
            "suggestion_kind": st.column_config.TextColumn("Kind"),
            "trace": st.column_config.TextColumn("Trace"),
            "pair": st.column_config.TextColumn("Pair", help="call seq:index, r = result"),
        },
    )


# The sections as tabs (``pages.SUGGESTIONS.sections``): only the open one runs and is drawn;
# so do the tabs within a section (each with a URL parameter of its own).
widgets.page_sections(
    pages.SUGGESTIONS,
    (
        lambda: _verdicts(breakdown),
        lambda: _recovery(recovery),
        lambda: widgets.sections(
            {
                "By tool": lambda: _follow_rate(f, "tool", "Tool"),
                "By error type": lambda: _follow_rate(f, "error_type", "Error type"),
            },
            key="follow_by",
        ),
        lambda: widgets.sections(
            {render.humanize(v): partial(_examples, f, v, counts[v]) for v in VERDICTS},
            key="verdict_examples",
        ),
    ),
)
