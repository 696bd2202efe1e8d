"""Compare: did the change help? A baseline and a candidate trace set, side by side.

Each set is written the way the sidebar's filters are, as a URL query (``import=3``,
``model=gpt-4o&start=2026-01-01``, ``tag=v2``), and both live in this page's URL
(``baseline``, ``candidate``), so a comparison is a link; ``toollens compare`` reads the same
filters. The sidebar's filters do not apply here; its loop threshold k does. Statistics:
:mod:`db.queries.compare_stats` (traces are the independent units; Benjamini–Hochberg across every
metric and tool).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import render, state, widgets
from db.queries.compare import compare_sets
from db.queries.compare_stats import (
    BOOTSTRAP,
    FALSE_DISCOVERY_RATE,
    MIN_TRACES,
    PERMUTATIONS,
    Difference,
)
from db.queries.filters import FilterQueryError, Filters, describe, parse_query
from db.queries.traces import import_choices
from ingest.outputs.compare_report import dollars

ALL_TOOLS = "(all tools)"
DIFF_COLUMNS = (
    "verdict", "tool", "metric", "baseline_traces", "candidate_traces", "baseline", "candidate",
    "difference", "interval", "adjusted_p",
)  # fmt: skip
FINGERPRINT_COLUMNS = ("fingerprint", "tool", "error_type", "n", "traces", "link", "trace")
METHOD_TEXT = f"""
* **Traces, not calls, are the independent units**: the calls of one run share its prompt,
  model and user, so every resampling draws whole traces. *Traces* columns: the traces a row
  rests on (with a result of the tool for a rate, calling the tool for a per-trace figure).
* **Too few traces**: a row resting on fewer than {MIN_TRACES} traces on either side is not
  tested. Below five per side no test over traces can reach 5 % (at 4 against 4 the most
  extreme split of the traces still has a chance of 1 in 35).
* **p-values**: a permutation test — the pooled traces relabelled at random
  {PERMUTATIONS:,} times (fixed seed: the same sets always give the same page). It needs no
  assumption about the shape of the data, so a split of one population is flagged no more
  often than the threshold says, however few the traces.
* **Rates** (errors / results …, in %) get Wilson score intervals per side and Newcombe's
  interval for the difference (in percentage points), with the effective number of results
  the clustering in traces leaves. **Means per trace and size percentiles** get a bootstrap
  over traces ({BOOTSTRAP:,} resamples). An interval has zero width only when every value on
  both sides is the same.
* **Many comparisons at once**: every metric of every tool is a test, so the p-values are
  adjusted with Benjamini–Hochberg (false discovery rate {FALSE_DISCOVERY_RATE:.0%}). A
  difference is *better* or *worse* only when its adjusted p-value is at most that rate;
  *changed* is a real difference in a metric with no better direction (calls per trace,
  message size); everything else is *no evidence*. Intervals are unadjusted.
* **Re-read tokens and cost per trace** are what the traces' Tool Messages add to the model
  calls after them (the Tokens page's figures), over the traces whose every Tool Message has
  them: the cost only where the trace's model has a price, so a set of unpriced models shows
  *too few traces* for it rather than a guessed amount.
* Error types count errors **per trace**, so an unchanged error does not look more frequent
  when a run makes fewer other calls. Findings count per trace too.
"""
VERDICT_COLORS = {"worse": "#fde2e1", "better": "#dcf5e3", "changed": "#fff4d6"}


def _pick(label: str, key: str, example: str) -> tuple[Filters | None, str]:
    text = st.text_input(
        label,
        key=key,
        bind="query-params",
        placeholder=example,
        help="A filter as a URL query: import, start, end (YYYY-MM-DD), agent, model, tool, tag.",
    )
    try:
        return (parse_query(text) if text else None), text
    except FilterQueryError as exc:
        render.show_error(exc)
        return None, text


def _value(d: Difference, value: float | None) -> str:
    if value is None:
        return widgets.EMPTY_CELL
    if d.is_money:
        return dollars(value)
    return f"{value:.1%}" if d.is_rate else f"{value:,.4g}"


def _signed(d: Difference, value: float | None) -> str:
    if value is None:
        return widgets.EMPTY_CELL
    if d.is_money:
        return dollars(value, sign=True)
    return f"{100 * value:+.1f} pp" if d.is_rate else f"{value:+,.4g}"


def _interval(d: Difference) -> str:
    if d.low is None or d.high is None:
        return widgets.EMPTY_CELL
    if d.is_rate:
        return f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}] pp"
    return f"[{_signed(d, d.low)}, {_signed(d, d.high)}]"


def _p(value: float | None) -> str:
    if value is None:
        return widgets.EMPTY_CELL
    return "< 0.0001" if value < 0.0001 else f"{value:.2g}"


def _diff_frame(rows: list[Difference]) -> pd.DataFrame:
    """The rows as the table shows them: rates in %, their differences in percentage points,
    "—" where a row has no figure (one side without data, too few traces to test)."""
    return pd.DataFrame(
        {
            "verdict": [d.verdict for d in rows],
            "tool": [d.tool or ALL_TOOLS for d in rows],
            "metric": [d.label for d in rows],
            "baseline_traces": [d.baseline_traces for d in rows],
            "candidate_traces": [d.candidate_traces for d in rows],
            "baseline": [_value(d, d.baseline) for d in rows],
            "candidate": [_value(d, d.candidate) for d in rows],
            "difference": [_signed(d, d.difference) for d in rows],
            "interval": [_interval(d) for d in rows],
            "adjusted_p": [_p(d.adjusted_p) for d in rows],
        },
        columns=list(DIFF_COLUMNS),
    )


def _diff_table(rows: list[Difference], key: str) -> None:
    df = _diff_frame(rows)
    styled = df.style.map(
        lambda v: f"background-color: {VERDICT_COLORS[v]}" if v in VERDICT_COLORS else "",
        subset=["verdict"],
    )
    st.dataframe(
        styled,
        key=key,
        hide_index=True,
        height=widgets.table_height(len(df), max_rows=16),
        column_order=DIFF_COLUMNS,
        column_config={
            "verdict": st.column_config.TextColumn("Verdict"),
            "tool": st.column_config.TextColumn("Tool"),
            "metric": st.column_config.TextColumn("Metric", width=330),
            "baseline_traces": widgets.count_column(
                "Baseline traces", help="the baseline traces this row rests on"
            ),
            "candidate_traces": widgets.count_column(
                "Candidate traces", help="the candidate traces this row rests on"
            ),
            "baseline": st.column_config.TextColumn("Baseline"),
            "candidate": st.column_config.TextColumn("Candidate"),
            "difference": st.column_config.TextColumn(
                "Difference", help="candidate − baseline; rates in percentage points (pp)"
            ),
            "interval": st.column_config.TextColumn("95 % interval"),
            "adjusted_p": st.column_config.TextColumn(
                "Adjusted p",
                help="Benjamini–Hochberg across every tested row; — where a row is not tested",
            ),
        },
    )


def _fingerprints(title: str, df: pd.DataFrame, key: str, where: str) -> None:
    st.markdown(f"**{title}**")
    if df.empty:
        st.caption(f"None: every error fingerprint of the {where} also occurs in the other set.")
        return
    widgets.trace_table(
        widgets.with_links(df),
        key=key,
        height=widgets.table_height(len(df), max_rows=8),
        column_order=FINGERPRINT_COLUMNS,
        column_config={
            "fingerprint": st.column_config.TextColumn("Fingerprint", width=380),
            "tool": st.column_config.TextColumn("Tool"),
            "error_type": st.column_config.TextColumn("Error type"),
            "n": widgets.count_column("Errors"),
            "traces": widgets.count_column("Traces"),
            "link": widgets.link_column("First", help="open the first occurrence"),
            "trace": None,
        },
    )


def _names(label: str, names: list[str]) -> None:
    st.markdown(f"**{label}:** " + (", ".join(render.escape_markdown(n) for n in names) or "none"))


st.title("Compare")
st.caption(
    "Did the change help? Pick a baseline and a candidate set of traces, written like the "
    "filters in a link (`import=3`, `model=gpt-4o&start=2026-01-01`, `tag=v2`). The sidebar's "
    "filters do not apply here; its loop threshold k does."
)
state.end_on_empty_store()

imports = state.query(import_choices)
ids = [str(i) for i in imports["id"]]
left, right = st.columns(2)
with left:
    baseline, base_text = _pick("Baseline", "baseline", f"import={ids[-1] if ids else 1}")
with right:
    candidate, cand_text = _pick("Candidate", "candidate", f"import={ids[0] if ids else 2}")
if baseline is None or candidate is None:
    if not (base_text and cand_text):
        st.info(
            "Write a baseline and a candidate filter above, e.g. the import of the run before "
            "the change and the import of the run after it.",
            icon=":material/compare_arrows:",
        )
    state.end_page()

k = state.loop_k()
comparison = state.query(compare_sets, baseline, candidate, k)
left.caption(
    render.escape_markdown(
        f"{describe(baseline)}: {render.count_text(comparison.baseline_traces, 'trace')}"
    )
)
right.caption(
    render.escape_markdown(
        f"{describe(candidate)}: {render.count_text(comparison.candidate_traces, 'trace')}"
    )
)
for note in comparison.notes:
    st.warning(render.escape_markdown(note), icon=":material/warning:")

flagged = comparison.flagged()
verdicts = [d.verdict for d in flagged]
row = st.columns(5)
row[0].metric("Worse", verdicts.count("worse"), help="differences worse with evidence")
row[1].metric("Better", verdicts.count("better"), help="differences better with evidence")
row[2].metric("Changed", verdicts.count("changed"), help="real differences, no better direction")
row[3].metric(
    "New error fingerprints", len(comparison.new_fingerprints), help="only in the candidate"
)
unchanged = comparison.unchanged_tools()
row[4].metric("Unchanged tools", len(unchanged), help=", ".join(unchanged) or None)

st.subheader("Differences with evidence")
if flagged:
    _diff_table(flagged, "flagged_table")
else:
    st.success("No metric differs with evidence between the two sets.")
_names("Unchanged tools (no metric differs)", unchanged)

st.subheader("What is new, what is gone")
_fingerprints(
    "Error fingerprints only in the candidate", comparison.new_fingerprints, "new_fp", "candidate"
)
_fingerprints(
    "Error fingerprints only in the baseline", comparison.gone_fingerprints, "gone_fp", "baseline"
)
_names("Tools only in the candidate", comparison.new_tools)
_names("Tools only in the baseline", comparison.gone_tools)
if comparison.new_schema_issues.empty:
    st.markdown("**Schema findings only in the candidate:** none")
else:
    st.markdown("**Schema findings only in the candidate**")
    widgets.trace_table(
        widgets.with_links(comparison.new_schema_issues),
        key="new_schema",
        height=widgets.table_height(len(comparison.new_schema_issues), max_rows=8),
        **widgets.columns(
            {
                "tool": st.column_config.TextColumn("Tool"),
                "issue": st.column_config.TextColumn("Schema finding"),
                "n": widgets.count_column("Calls"),
                "link": widgets.link_column("First", help="open the first occurrence"),
                "trace": None,
            }
        ),
    )

st.subheader("Every metric, per tool")
scopes = [ALL_TOOLS, *sorted({d.tool for d in comparison.differences if d.tool is not None})]
scope = st.selectbox("Scope", scopes, key="compare_scope", bind="query-params")
_diff_table([d for d in comparison.differences if (d.tool or ALL_TOOLS) == scope], "scope_table")
with st.expander("How the differences are judged"):
    st.markdown(METHOD_TEXT)
