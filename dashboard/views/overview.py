"""Overview: headline figures, small distributions, top problems and the per-tool scorecard."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import render, state
from dashboard.charts import overview as charts
from db.queries import overview as q
from db.summary import summarize

st.title("Overview")
if state.store_is_empty():
    render.empty_store()
    st.stop()

f = state.filters()
k = state.loop_k()
budget = state.token_budget()
summary = state.query(summarize, loop_k=k, filters=f)
if summary["traces"] == 0:
    render.no_match()
    st.stop()

problems = {name: n for name, n in summary["pair_states"].items() if name != "paired"}
errors = summary["status"]["error"]
results = summary["tool_results"]
verdicts = summary["suggestions"]
decided = verdicts["followed"] + verdicts["ignored"]

row = st.columns(7)
row[0].metric("Traces", f"{summary['traces']:,}", help=f"{summary['messages']:,} messages")
row[1].metric(
    "Tool calls", f"{summary['tool_calls']:,}", help=f"{results:,} Tool Messages (results)"
)
row[2].metric("Errors", f"{errors:,}", help="Tool Messages with status error")
row[3].metric(
    "Error rate", render.percent_text(errors, results), help=f"{errors:,} of {results:,} results"
)
row[4].metric(
    "Pairing problems",
    f"{sum(problems.values()):,}",
    help=", ".join(f"{name}: {n:,}" for name, n in problems.items()),
)
row[5].metric(
    f"Loop calls (k={k})",
    f"{summary['loops']['calls']:,}",
    help=f"calls of {summary['loops']['signatures']:,} signatures repeated {k}+ times in a trace",
)
row[6].metric(
    "Suggestions followed",
    render.rate_text(verdicts["followed"], decided),
    help="followed / (followed + ignored); "
    f"{verdicts['with_suggestion']:,} results carry a suggestion",
)

charts_row = st.columns(4)
with charts_row[0]:
    by_type = state.query(q.error_type_counts, f)
    if by_type.empty:
        st.caption("No error results.")
    else:
        st.plotly_chart(charts.errors_by_type_chart(by_type.head(10)), key="errors_by_type")
with charts_row[1]:
    sizes = state.query(q.token_histogram, budget, f)
    st.plotly_chart(charts.token_histogram_chart(sizes, budget), key="token_sizes")
with charts_row[2]:
    occurrences = state.query(q.occurrence_histogram, f)
    st.plotly_chart(charts.occurrence_chart(occurrences, k), key="occurrences")
with charts_row[3]:
    verdict_df = state.query(q.verdict_counts, f)
    if int(verdict_df["results"].sum()) == 0:
        st.caption("No suggestions in Tool Messages.")
    else:
        st.plotly_chart(charts.verdict_chart(verdict_df), key="verdicts")

st.subheader("Top problems")
st.caption("Select a row to open it: an error group on the Errors page, a loop in its trace.")
top = st.columns(4)
with top[0]:
    st.markdown("**Most frequent errors**")
    fingerprints = state.query(q.top_error_fingerprints, f)
    if fingerprints.empty:
        st.caption("No errors.")
    else:
        picked = st.dataframe(
            fingerprints,
            hide_index=True,
            column_order=("fingerprint", "errors", "traces"),
            on_select="rerun",
            selection_mode="single-row",
            key="top_errors",
        )
        if picked.selection.rows:
            chosen = str(fingerprints.iloc[picked.selection.rows[0]]["fingerprint"])
            st.switch_page(state.ERRORS_PAGE, query_params={"fingerprint": chosen})
with top[1]:
    st.markdown(f"**Most oversized tools** (> {budget:,} tokens)")
    oversized = state.query(q.top_oversized_tools, budget, f)
    if oversized.empty:
        st.caption("No Tool Message is over budget.")
    else:
        st.dataframe(
            oversized,
            hide_index=True,
            column_order=("tool", "over_budget", "results", "max_tokens"),
        )
with top[2]:
    st.markdown(f"**Longest loops** (k = {k})")
    loops = state.query(q.top_loops, k, f)
    if loops.empty:
        st.caption("No loops at this k.")
    else:
        picked = st.dataframe(
            loops,
            hide_index=True,
            column_order=("trace", "tool", "calls"),
            on_select="rerun",
            selection_mode="single-row",
            key="top_loops",
        )
        if picked.selection.rows:
            row = loops.iloc[picked.selection.rows[0]]
            state.open_trace(str(row["trace"]), f"{row['first_seq']}:{row['first_call_index']}")
with top[3]:
    st.markdown("**Findings**")
    findings = pd.DataFrame(list(summary["findings"].items()), columns=["finding", "count"])
    if findings.empty:
        st.caption("No findings.")
    else:
        st.dataframe(findings.head(8), hide_index=True)

st.subheader("Tool scorecard")
card = state.query(q.tool_scorecard, k, budget, f)
card = card.assign(
    follow=[
        render.rate_text(int(a), int(a) + int(b))
        for a, b in zip(card["followed"], card["ignored"], strict=True)
    ]
)
percent = "percent"
st.dataframe(
    card,
    hide_index=True,
    column_order=(
        "tool",
        "calls",
        "results",
        "error_rate",
        "top_error_type",
        "p50_tokens",
        "p95_tokens",
        "over_budget_rate",
        "loop_calls",
        "suggestion_rate",
        "follow",
        "findings",
    ),
    column_config={
        "tool": st.column_config.TextColumn("Tool", pinned=True),
        "calls": st.column_config.NumberColumn("Calls"),
        "results": st.column_config.NumberColumn("Results"),
        "error_rate": st.column_config.NumberColumn("Error rate", format=percent),
        "top_error_type": st.column_config.TextColumn("Top error type"),
        "p50_tokens": st.column_config.NumberColumn("Median tokens"),
        "p95_tokens": st.column_config.NumberColumn("p95 tokens"),
        "over_budget_rate": st.column_config.NumberColumn(
            "Oversized", format=percent, help=f"results over {budget:,} tokens"
        ),
        "loop_calls": st.column_config.NumberColumn(f"Loop calls (k={k})"),
        "suggestion_rate": st.column_config.NumberColumn("Errors with suggestion", format=percent),
        "follow": st.column_config.TextColumn("Follow rate", help="followed of followed+ignored"),
        "findings": st.column_config.NumberColumn("Findings"),
    },
)
