"""Overview: headline figures, then five sections as tabs (``pages.OVERVIEW.sections``): top
problems, activity over time, small distributions, execution times and the per-tool scorecard.

Everything clicks through: brushing the time series (or clicking a bucket) sets the ``since`` /
``until`` filter; a bar of a small chart opens the Tool calls (or Loops) page filtered to what it
counts; a row of a table opens its error group, its loop or its tool's calls.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import pages, render, state, widgets
from dashboard.charts import activity as activity_charts
from dashboard.charts import overview as charts
from dashboard.selection import brushed_range, picked_point, selectable_chart
from db.queries import activity, durations, histograms
from db.queries import overview as q
from db.queries.common import UNCLASSIFIED
from db.queries.filters import Filters
from db.queries.summary import summary_counts

state.open_page("Overview")

f = state.filters()
k = state.loop_k()
budget = state.token_budget()
summary = state.query(summary_counts, loop_k=k, filters=f)
if summary["traces"] == 0:
    render.no_match()
    state.end_page()

problems = {name: n for name, n in summary["pair_states"].items() if name != "paired"}
errors = summary["status"]["error"]
results = summary["tool_results"]
verdicts = summary["suggestions"]
decided = verdicts["followed"] + verdicts["ignored"]

# One (tool, tokens) histogram per filter set and budget: every size figure below derives from it.
token_counts = state.query(histograms.tool_token_counts, f, budget)
sizes = histograms.size_bins(token_counts, budget)
over_budget = int(sizes.loc[sizes["over_budget"].astype(bool), "results"].sum())

# Two rows of four: seven figures in one row cut their labels at 1,280 px.
top_row, bottom_row = st.columns(4, border=True), st.columns(4, border=True)
pairing = ", ".join(f"{name.replace('_', ' ')}: {n:,}" for name, n in problems.items())
widgets.metrics(
    [*top_row, *bottom_row[:3]],
    [
        ("Traces", f"{summary['traces']:,}", render.count_text(summary["messages"], "message")),
        ("Tool calls", f"{summary['tool_calls']:,}", f"{results:,} Tool Messages (results)"),
        ("Errors", f"{errors:,}", "Tool Messages with status error"),
        (
            "Error rate",
            render.percent_text(errors, results),
            f"{errors:,} of {render.count_text(results, 'result')}",
        ),
        ("Pairing problems", f"{sum(problems.values()):,}", pairing),
        (
            f"Loop calls (k={k})",
            f"{summary['loops']['calls']:,}",
            f"calls of {summary['loops']['signatures']:,} signatures repeated {k}+ times "
            "in a trace",
        ),
        (
            "Over budget",
            f"{over_budget:,}",
            f"Tool Messages above {budget:,} tokens ({render.percent_text(over_budget, results)})",
        ),
    ],
)
widgets.rate_metric(
    bottom_row[3],
    "Suggestions followed",
    verdicts["followed"],
    decided,
    of="decided",
    help="followed / (followed + ignored); "
    f"{render.count_text(verdicts['with_suggestion'], 'result')} "
    f"{'carries' if verdicts['with_suggestion'] == 1 else 'carry'} a suggestion",
)


def _activity(f: Filters, results: int) -> None:
    """Tool Messages, errors and tokens over time; a brushed range becomes the time filter."""
    unit = state.query(activity.span_unit, f)
    if unit is None:
        st.caption("No Tool Message has a time (the formats imported carry no timestamps).")
    else:
        timeline = state.query(activity.activity_over_time, f, unit)
        placed = int(timeline["results"].sum())
        st.caption(
            f"Per {unit}: Tool Messages (errors in red), error rate and tokens; "
            f"{results - placed:,} Tool Messages without a time are not on the axis. "
            "Drag across the chart, or click a bar, to filter to that time range."
            if placed < results
            else f"Per {unit}: Tool Messages (errors in red), error rate and tokens. Drag across "
            "the chart, or click a bar, to filter to that time range."
        )
        brushed = brushed_range(
            selectable_chart(
                activity_charts.activity_chart(timeline, unit),
                key="activity",
                modes=("points", "box"),
            ),
            timeline,
            unit,
        )
        if brushed is not None:
            state.apply_filters({"since": brushed[0], "until": brushed[1]})


def _distributions(f: Filters, k: int, budget: int, sizes: pd.DataFrame) -> None:
    """Four small charts (error types, Tool Message sizes, repeated calls, verdicts); a bar
    opens the list of what it counts."""
    st.caption("Click a bar to list what it counts.")
    charts_row = st.columns(4)
    with charts_row[0]:
        by_type = state.query(q.error_type_counts, f)
        if by_type.empty:
            st.caption("No error results.")
        else:
            shown_types = [str(t) for t in by_type.head(10)["error_type"]][::-1]  # bottom-up
            point = picked_point(
                selectable_chart(
                    charts.errors_by_type_chart(by_type.head(10)), key="errors_by_type"
                )
            )
            if point is not None:
                picked_type = shown_types[point[1]]
                state.open_filtered(
                    pages.CALLS,
                    {
                        "status": "error",
                        "error_type": None if picked_type == UNCLASSIFIED else picked_type,
                    },
                )
    with charts_row[1]:
        point = picked_point(
            selectable_chart(charts.token_histogram_chart(sizes, budget), key="token_sizes")
        )
        if point is not None:
            size_bin = sizes.iloc[point[1]]
            upper = size_bin["upper"]
            state.open_filtered(
                pages.CALLS,
                {
                    "tmin": int(size_bin["lower"]),
                    "tmax": None if pd.isna(upper) else int(upper),
                    "sort": "tokens",
                    "desc": True,
                },
            )
    with charts_row[2]:
        occurrences = state.query(q.occurrence_histogram, f)
        point = picked_point(
            selectable_chart(charts.occurrence_chart(occurrences, k), key="occurrences")
        )
        if point is not None:
            # The n-th identical call: the loops of at least n calls (a loop needs two).
            nth = int(occurrences.iloc[point[1]]["occurrence"])
            state.open_filtered(pages.LOOPS, {"k": max(2, nth)})
    with charts_row[3]:
        verdict_df = state.query(q.verdict_counts, f)
        if int(verdict_df["results"].sum()) == 0:
            st.caption("No suggestions in Tool Messages.")
        else:
            point = picked_point(selectable_chart(charts.verdict_chart(verdict_df), key="verdicts"))
            if point is not None:
                verdict = str(verdict_df.iloc[::-1].iloc[point[1]]["verdict"])
                state.open_filtered(pages.CALLS, {"verdict": verdict})


def _top_problems(
    f: Filters, k: int, budget: int, token_counts: pd.DataFrame, summary: dict[str, Any]
) -> None:
    """Most frequent errors, most oversized tools, longest loops and findings; a row opens it."""
    st.caption(
        "Select a row to open it: an error group on the Errors page, a loop in its trace, a "
        "tool's biggest Tool Messages, a finding's pairs."
    )
    # A 2 × 2 grid: four tables side by side cut their columns.
    left, right = st.columns(2)
    with left.container(border=True):
        st.markdown("**Most frequent errors**")
        fingerprints = state.query(q.top_error_fingerprints, f)
        if fingerprints.empty:
            st.caption("No errors under these filters.")
        else:
            picked = widgets.picked_row(
                fingerprints,
                **widgets.columns(
                    {
                        "errors": widgets.count_column("Errors"),
                        "traces": widgets.count_column("Traces", help="traces it occurs in"),
                        "fingerprint": st.column_config.TextColumn(
                            "Error", help="tool + first line, ids and numbers masked"
                        ),
                    }
                ),
                key="top_errors",
            )
            if picked is not None:
                chosen = str(picked["fingerprint"])
                st.switch_page(pages.ERRORS.script, query_params={"fingerprint": chosen})
    with right.container(border=True):
        st.markdown(f"**Most oversized tools** (over {budget:,} tokens)")
        oversized = histograms.oversized_tools(token_counts, budget)
        if oversized.empty:
            st.caption(f"No Tool Message is over {budget:,} tokens.")
        else:
            picked = widgets.picked_row(
                oversized,
                key="top_oversized",
                **widgets.columns(
                    {
                        "tool": st.column_config.TextColumn("Tool", width=160),
                        "over_budget": widgets.count_column(
                            "Over budget", help="results over budget"
                        ),
                        "results": widgets.count_column("Results"),
                        "max_tokens": widgets.count_column(
                            "Largest", help="tokens of the biggest result"
                        ),
                    }
                ),
            )
            if picked is not None:
                tool = str(picked["tool"])
                state.open_filtered(
                    pages.CALLS, {"tool": tool, "tmin": budget + 1, "sort": "tokens", "desc": True}
                )
    left, right = st.columns(2)
    with left.container(border=True):
        st.markdown(f"**Longest loops** (k = {k})")
        loops = state.query(q.top_loops, k, f)
        if loops.empty:
            st.caption(f"No call repeats {k} or more times in a trace.")
        else:
            picked = widgets.picked_row(
                loops,
                **widgets.columns(
                    {
                        # Fixed text widths keep the count in view at 1,280 px.
                        "trace": st.column_config.TextColumn("Trace", width=170),
                        "tool": st.column_config.TextColumn("Tool", width=130),
                        "calls": widgets.count_column("Calls", help="identical calls in the trace"),
                    }
                ),
                key="top_loops",
            )
            if picked is not None:
                state.open_trace(
                    str(picked["trace"]), f"{picked['first_seq']}:{picked['first_call_index']}"
                )
    with right.container(border=True):
        st.markdown("**Findings**")
        findings = pd.DataFrame(list(summary["findings"].items()), columns=["finding", "count"])
        if findings.empty:
            st.caption("No findings: every Tool Message passed the checks.")
        else:
            # Each kind links to the list of its occurrences on the Findings page; selecting a row
            # opens the Tool calls page filtered to it.
            findings["list"] = [
                f"{widgets.app_path(pages.FINDINGS.path)}?kind={kind}"
                for kind in findings["finding"]
            ]
            findings["label"] = findings["finding"].map(render.humanize)
            picked = widgets.picked_row(
                findings,
                # As tall as the loops table beside it; more findings scroll.
                height=widgets.table_height(len(findings), max_rows=5),
                key="top_findings",
                **widgets.columns(
                    {
                        "label": st.column_config.TextColumn("Finding", width="medium"),
                        "count": widgets.count_column("Count"),
                        "list": st.column_config.LinkColumn(
                            "Occurrences",
                            help="every occurrence on the Findings page",
                            display_text="list",
                        ),
                    }
                ),
            )
            if picked is not None:
                kind = str(picked["finding"])
                state.open_filtered(pages.CALLS, {"finding": kind})


def _execution_time(f: Filters) -> None:
    """Execution-time percentiles overall and per tool."""
    by_tool, timing = state.query(durations.duration_figures, f)
    if timing["timed"] == 0:
        st.caption(
            "No call has an execution time: the traces carry no timestamps or tool spans "
            f"({render.count_text(timing['missing'], 'result')} without one)."
        )
    else:
        time_row = st.columns(4, border=True)
        time_row[0].metric(
            "Median tool time",
            render.duration_text(timing["p50_ms"]),
            help="nearest-rank p50 of the execution times (result − call, or the tool span)",
        )
        time_row[1].metric("p95 tool time", render.duration_text(timing["p95_ms"]))
        time_row[2].metric("Slowest call", render.duration_text(timing["max_ms"]))
        time_row[3].metric(
            "Timed calls",
            f"{timing['timed']:,}",
            help=f"{render.count_text(timing['missing'], 'result')} without a time; "
            f"{timing['negative']:,} stamped "
            "before their call (left out)",
        )
        by_tool = by_tool.assign(
            **{c: widgets.as_seconds(by_tool[c]) for c in ("p50_ms", "p95_ms", "max_ms")}
        )
        st.dataframe(
            by_tool,
            hide_index=True,
            height=widgets.table_height(len(by_tool), max_rows=8),
            placeholder=widgets.EMPTY_CELL,
            **widgets.columns(
                {
                    "tool": st.column_config.TextColumn("Tool"),
                    "p50_ms": widgets.seconds_column(
                        "p50", help="nearest-rank median execution time"
                    ),
                    "p95_ms": widgets.seconds_column("p95", help="nearest-rank 95th percentile"),
                    "max_ms": widgets.seconds_column("Max"),
                    "timed": widgets.count_column("Timed", help="results with a known time ≥ 0"),
                    "missing": widgets.count_column("No time", help="results without a time"),
                    "negative": widgets.count_column(
                        "Negative", help="results stamped before their call: left out"
                    ),
                }
            ),
        )


def _scorecard(f: Filters, k: int, budget: int, token_counts: pd.DataFrame) -> None:
    """One row per tool: calls, errors, sizes, loops, advice, findings."""
    st.caption("Select a tool to list its calls.")
    card = q.scorecard(state.query(q.scorecard_counts, k, f), token_counts, budget)
    card = card.assign(
        follow=[
            render.rate_text(int(a), int(a) + int(b)) if int(a) + int(b) else widgets.EMPTY_CELL
            for a, b in zip(card["followed"], card["ignored"], strict=True)
        ],
        error_pct=widgets.as_percent(card["error_rate"]),
        over_budget_pct=widgets.as_percent(card["over_budget_rate"]),
        suggestion_pct=widgets.as_percent(card["suggestion_rate"]),
        tokens=[
            widgets.EMPTY_CELL if pd.isna(a) else f"{int(a):,} / {int(b):,}"
            for a, b in zip(card["p50_tokens"], card["p95_tokens"], strict=True)
        ],
        kinds=[
            ", ".join(f"{kind} {n:,}" for kind, n in kinds.items())
            for kinds in card["finding_kinds"]
        ],
    )
    picked = widgets.picked_row(
        card,
        key="scorecard",
        height=widgets.table_height(len(card), max_rows=20),
        **widgets.columns(
            {
                "tool": st.column_config.TextColumn("Tool"),
                "calls": widgets.count_column(
                    "Calls", help="results: the Tool Messages that came back"
                ),
                "error_pct": widgets.percent_column(
                    "Error rate", help="error results of all results"
                ),
                "top_error_type": st.column_config.TextColumn("Top error type"),
                "tokens": st.column_config.TextColumn(
                    "Tokens p50 / p95",
                    help="median and 95th percentile tokens of its Tool Messages",
                    alignment="right",
                ),
                "over_budget_pct": widgets.percent_column(
                    "Over budget", help=f"results over {budget:,} tokens"
                ),
                "loop_calls": widgets.count_column(
                    "Loop calls", help=f"calls of a signature repeated {k}+ times in a trace"
                ),
                "suggestion_pct": widgets.percent_column(
                    "With advice", help="share of the error results that carry a suggestion"
                ),
                "follow": st.column_config.TextColumn(
                    "Advice followed", help="followed of followed + ignored"
                ),
                "findings": widgets.count_column("Findings", help="a name mismatch counts once"),
                "kinds": st.column_config.TextColumn(
                    "Findings per kind",
                    width="medium",
                    help="the Findings page lists each occurrence",
                ),
            }
        ),
    )
    if picked is not None:
        state.open_filtered(pages.CALLS, {"tool": str(picked["tool"])})


# The page's sections as tabs (``pages.OVERVIEW.sections``): only the open one runs its queries
# and is drawn, and the open tab is in the URL, so a link opens the same one.
widgets.page_sections(
    pages.OVERVIEW,
    (
        lambda: _top_problems(f, k, budget, token_counts, summary),
        lambda: _activity(f, results),
        lambda: _distributions(f, k, budget, sizes),
        lambda: _execution_time(f),
        lambda: _scorecard(f, k, budget, token_counts),
    ),
)
