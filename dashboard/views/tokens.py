"""Tokens: how big Tool Messages are, per tool, against a budget, and per trace.

The distribution per tool is drawn from quantiles computed in SQL (never every row). The budget
is the shared ``budget`` setting (URL parameter), adjustable here with a slider; results above
it are counted live, without re-import.
"""

from __future__ import annotations

import streamlit as st

from dashboard import pages, render, state, widgets
from dashboard.charts import tokens as charts
from dashboard.charts.plot_text import plot_texts
from dashboard.selection import selectable_chart
from db.contract.vocabulary import DEFAULT_ENCODING
from db.queries import tokens as q
from db.queries.filters import Filters

TOP_RESULTS = 50
BUDGET_MIN, BUDGET_MAX, BUDGET_STEP = 100, 20_000, 100

state.open_page("Tokens")

f = state.filters()
encoding = state.query(q.latest_encoding) or DEFAULT_ENCODING
kinds = state.query(q.token_count_kinds, state.filters())
st.caption(
    f"Token counts: {encoding} (the encoding of the latest import). Exact for "
    f"{render.count_text(kinds['exact'], 'trace')} (counted with their model's own tokenizer); "
    "estimates for "
    f"{kinds['estimate']:,} (another model's, e.g. Claude counted with an OpenAI encoding, or "
    "no model named). Images count by their provider's image rule: estimates too."
)

budget = widgets.setting_slider(
    "Token budget per Tool Message",
    setting="budget",
    current=state.token_budget(),
    min_value=BUDGET_MIN,
    max_value=BUDGET_MAX,
    step=BUDGET_STEP,
    help="Results above this many tokens count as over budget (also in the sidebar).",
)
over, results = state.query(q.budget_excess, budget, f)
if results == 0:
    render.no_match()
    state.end_page()
share = state.query(q.tool_result_share, f)

row = st.columns(4)
row[0].metric(
    "Over budget",
    f"{over:,}",
    help=f"Tool Messages above {budget:,} tokens, of {results:,}",
)
row[1].metric(
    "Share over budget", render.percent_text(over, results), help=f"{over:,} of {results:,}"
)
row[2].metric("Tool Message tokens", f"{share['tool_result_tokens']:,}")
row[3].metric(
    "Of the transcripts' tokens",
    render.percent_text(share["tool_result_tokens"], share["total_tokens"]),
    help=f"{share['tool_result_tokens']:,} of {share['total_tokens']:,} tokens in "
    f"{render.count_text(share['traces'], 'trace')}",
)


def _by_tool(f: Filters, budget: int) -> None:
    """Tokens per Tool Message as a box per tool (quantiles from SQL); a box lists its results."""
    # Sizes span orders of magnitude (a 3-token "ok" beside a 10k-token file), so the axis is
    # logarithmic unless the reader turns it off (``tokens_log=false`` in the URL).
    log_x = st.toggle("Logarithmic axis", value=True, key="tokens_log", bind="query-params")
    quantiles = state.query(q.token_quantiles_by_tool, f)
    st.caption("Click a tool's box (or its row below) to list its Tool Messages, biggest first.")
    selection = selectable_chart(
        charts.token_box_chart(quantiles, budget, log_x=log_x), key="token_box"
    )
    if selection is not None:
        # A box's point names its tool by the (escaped) label on the axis.
        by_label = dict(zip(plot_texts(quantiles["tool"]), quantiles["tool"], strict=True))
        labels = [p.get("y") for p in selection.get("points") or []]
        tool = next((by_label[y] for y in labels if y in by_label), None)
        if tool is not None:
            state.open_filtered(pages.CALLS, {"tool": str(tool), "sort": "tokens", "desc": True})
    with st.expander("Quantiles per tool"):
        picked = widgets.picked_row(
            quantiles,
            key="quantiles_table",
            column_config={
                "tool": st.column_config.TextColumn("Tool"),
                "results": widgets.count_column("Results"),
                "min": widgets.count_column("Min"),
                "p25": widgets.count_column("25th pct."),
                "p50": widgets.count_column("Median"),
                "p75": widgets.count_column("75th pct."),
                "p95": widgets.count_column("95th pct."),
                "max": widgets.count_column("Max"),
                "mean": st.column_config.NumberColumn("Mean", format="%,.1f"),
            },
        )
        if picked is not None:
            tool = str(picked["tool"])
            state.open_filtered(pages.CALLS, {"tool": tool, "sort": "tokens", "desc": True})


def _input_share(f: Filters, results: int) -> None:
    """Each Tool Message's share of the input of the model call that read it."""
    st.caption(
        "A Tool Message's tokens against the input tokens the provider reported for the model call "
        "that read it (the first assistant message after it with usage); only traces that carry "
        "usage. Above 100 %: the counts come from another tokenizer than the model's."
    )
    input_shares = state.query(q.input_share_histogram, f)
    with_usage = int(input_shares["results"].sum())
    if with_usage == 0:
        st.caption("No Tool Message here was read by a model call whose usage the trace reports.")
    else:
        st.caption(f"{with_usage:,} of {results:,} Tool Messages")
        st.plotly_chart(charts.input_share_chart(input_shares), key="input_share")

    images = state.query(q.image_totals, f)
    if images["results"]:
        st.caption(
            f"{images['results']:,} Tool Messages carry images, "
            f"~{images['image_tokens']:,} tokens by the providers' image rules (included above)."
        )


def _transcript_share(f: Filters) -> None:
    """Each trace's share of transcript tokens taken by tool results."""
    st.caption(
        "Tool Message tokens over all message tokens of the trace's transcript: not the model's "
        "context window (the tab “Share of the model's input” shows that)."
    )
    histogram = state.query(q.trace_share_histogram, f)
    if int(histogram["traces"].sum()) == 0:
        st.caption("No trace has token counts.")
    else:
        st.plotly_chart(charts.trace_share_chart(histogram), key="trace_share")


def _biggest(f: Filters) -> None:
    """The biggest Tool Messages; a row opens it in its trace."""
    st.caption(f"The {TOP_RESULTS} biggest Tool Messages. Select a row to open it in its trace.")
    biggest = state.query(q.biggest_results, f, limit=TOP_RESULTS)
    widgets.trace_table(
        biggest,
        key="biggest_table",
        **widgets.columns(
            {
                "tokens": st.column_config.ProgressColumn(
                    "Tokens",
                    format="%,d",
                    min_value=0,
                    max_value=int(biggest["tokens"].max()) if not biggest.empty else 1,
                ),
                "tool": st.column_config.TextColumn("Tool"),
                "status": st.column_config.TextColumn("Status"),
                "trace": st.column_config.TextColumn("Trace"),
                "pair": st.column_config.TextColumn("Pair", help="call seq:index, r = result"),
                "chars": widgets.count_column("Chars"),
                "preview": st.column_config.TextColumn("Start of the content", width="large"),
            }
        ),
    )


def _money(usd: float | None) -> str:
    return "tokens only" if usd is None else f"${usd:,.4f}" if usd < 1 else f"${usd:,.2f}"


def _costs(f: Filters) -> None:
    """What each tool's Tool Messages add to the model calls after them, and the most
    expensive Tool Messages (``ingest.analysis.costs``)."""
    st.caption(
        "A Tool Message stays in the conversation: every later model call of its branch reads it "
        "again until the context is compacted. Tokens added: its own tokens (the first read); "
        "re-read: the later calls' reads of it. Measured where the trace reports each call's "
        "usage (cached reads and compactions from it); elsewhere an estimate: every later "
        "assistant turn reads it, fresh. Cost: every read at the model's price "
        "(`--prices` / TOOLLENS_PRICES, else the dated default table); a model without a price "
        "shows tokens only."
    )
    by_tool = state.query(q.tool_costs, f)
    if by_tool.empty:
        render.no_match()
        return
    priced = int(by_tool["priced"].sum())
    cost = float(by_tool["cost_usd"].fillna(0).sum()) if priced else None
    results = int(by_tool["results"].sum())
    measured = int(by_tool["measured"].sum())
    row = st.columns(4)
    row[0].metric("Tokens added", f"{int(by_tool['tokens_added'].sum()):,}")
    row[1].metric(
        "Tokens re-read",
        f"{int(by_tool['reread_tokens'].sum()):,}",
        help=f"{int(by_tool['reread_cached'].sum()):,} of them cached reads (measured only)",
    )
    row[2].metric(
        "Cost", _money(cost), help=f"{priced:,} of {results:,} Tool Messages have a price"
    )
    row[3].metric(
        "Measured",
        render.percent_text(measured, results),
        help=f"{measured:,} of {results:,} from reported usage; the others are estimates",
    )
    st.dataframe(
        by_tool,
        hide_index=True,
        key="cost_table",
        placeholder=widgets.EMPTY_CELL,
        **widgets.columns(
            {
                "tool": st.column_config.TextColumn("Tool"),
                "results": widgets.count_column("Results"),
                "tokens_added": widgets.count_column("Tokens added"),
                "reread_tokens": widgets.count_column("Tokens re-read"),
                "reread_cached": widgets.count_column("Of them cached"),
                "later_calls": widgets.count_column("Later calls", help="Summed over its results"),
                "cost_usd": st.column_config.NumberColumn("Cost (USD)", format="$%.4f"),
                "measured": widgets.count_column("Measured", help="Results measured from usage"),
            }
        ),
    )
    st.caption(
        f"The {TOP_RESULTS} most expensive Tool Messages (with a price). "
        "Select a row to open it in its trace."
    )
    top = state.query(q.most_expensive_results, f, limit=TOP_RESULTS)
    widgets.trace_table(
        top,
        key="costliest_table",
        **widgets.columns(
            {
                "cost_usd": st.column_config.NumberColumn("Cost (USD)", format="$%.4f"),
                "tool": st.column_config.TextColumn("Tool"),
                "tokens": widgets.count_column("Tokens"),
                "later_calls": widgets.count_column("Later calls"),
                "reread_tokens": widgets.count_column("Re-read"),
                "reread_cached": widgets.count_column("Cached"),
                "trace": st.column_config.TextColumn("Trace"),
                "pair": st.column_config.TextColumn("Pair", help="call seq:index, r = result"),
                "preview": st.column_config.TextColumn("Start of the content", width="large"),
            }
        ),
    )


# The sections as tabs (``pages.TOKENS.sections``): only the open one runs and is drawn.
widgets.page_sections(
    pages.TOKENS,
    (
        lambda: _by_tool(f, budget),
        lambda: _input_share(f, results),
        lambda: _transcript_share(f),
        lambda: _biggest(f),
        lambda: _costs(f),
    ),
)
