"""Trace: one conversation rebuilt in order, each tool call beside the Tool Message answering it.

Missing, orphan and duplicate results show where they happen; the pair named in the URL
(``pair``) is shown first, expanded, under "Selected pair", with its notes and the form that
corrects its verdict or error type, and is highlighted where it stands among the messages;
every other pair has a Select button and says how many notes it carries. Above them, the
outline of the whole trace (``dashboard.trace_outline``) and the findings open a pair with a
click; "Mark reviewed, open the next" walks the review queue. Notes on the whole trace, the
incident report downloads and the link to this view sit at the top. Long traces are read in
pages of :data:`MESSAGES_PER_PAGE` messages; the page is in the URL (``mpage``) and, unless
the URL names one, is the selected pair's, or the one of the message a search hit opened
(``msg``: its seq, boxed among the messages with the searched words ``hl`` marked in it). The
browser lands on the target: the search hit's message, else the selected pair, is scrolled into
view (``dashboard.scroll``). All trace content is untrusted and shown as code or escaped text.

The browser lays out everything sent to it, closed boxes included, so the boxes with forms or
tables (Find a trace once a trace is shown, Notes, Findings, the review box, Show all) draw
their content only while open: opening one reruns the page.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, cast
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from dashboard import (
    admin_ui,
    auth,
    files_ui,
    render,
    review_ui,
    scroll,
    state,
    trace_blocks,
    trace_outline,
    trace_timeline,
    widgets,
    writes,
)
from dashboard.pages import SESSIONS as SESSIONS_PAGE
from dashboard.pages import TRACE as TRACE_PAGE
from db.dialect import search_words
from db.queries.filters import Filters
from db.queries.pairs import pair_choices
from db.queries.sessions import session_of, session_traces
from db.queries.streaks import trace_streaks
from db.queries.traces import (
    PairRef,
    TraceWindow,
    count_traces,
    filter_choices,
    find_trace,
    page_of_seq,
    pair_detail,
    parse_pair,
    search_traces,
    trace_findings,
    trace_markers,
    trace_window,
)
from db.writes import review
from db.writes.annotations import trace_annotations
from db.writes.deletion import traces_by_id

#: Messages shown per page: a long trace in one page is thousands of elements, and the time
#: a page takes to show in the browser grows with its elements.
MESSAGES_PER_PAGE = 20
#: URL parameter (and widget key) of the messages page.
PAGE_KEY = "mpage"
#: Session key of the (trace, pair) the page selector last showed.
ANCHOR_KEY = "_trace_page_anchor"
REVIEW_LABEL = "Notes and corrections on this pair"
#: The trace, its size and its problems first (on screen at 1,440 px), then where it came from.
TRACE_PICKER_COLUMNS = (
    "trace",
    "title",
    "messages",
    "errors",
    "problems",
    "agent",
    "model",
    "started_at",
)
#: Traces per page of the trace picker.
PICKER_PAGE_SIZE = 50
#: Other traces of its session the Trace page lists at most.
SESSION_TRACES_SHOWN = 200
#: Widget key of the "Find a trace" box (Session State holds whether it is open).
FINDER_KEY = "trace_finder"


def _picker(f: Any) -> None:
    tools = state.query(filter_choices)["tool"]
    error_types = state.query(pair_choices, f)["error_type"]
    cols = st.columns([3, 2, 2])
    text = cols[0].text_input(
        "Trace id or title contains",
        key="trace_search",
        help="The title is the trace's first user message.",
    )
    tool = cols[1].selectbox("Calls tool", tools, index=None, key="trace_tool", placeholder="Any")
    error_type = cols[2].selectbox(
        "Has error type", error_types, index=None, key="trace_error", placeholder="Any"
    )
    search = {"text": text or None, "tool": tool, "error_type": error_type}
    total = state.query(count_traces, f, **search)
    if total == 0:
        st.caption(
            "No trace matches: change the search above, or widen the filters in the sidebar."
        )
        return
    pages = -(-total // PICKER_PAGE_SIZE)
    at_page = 1
    if pages > 1:
        # No max_value: a narrower search must not make the page kept in Session State invalid.
        chosen = st.columns([1, 3])[0].number_input(
            f"Page (of {pages:,})", min_value=1, value=1, key="trace_page"
        )
        at_page = min(int(chosen), pages)
    offset = (at_page - 1) * PICKER_PAGE_SIZE
    found = state.query(search_traces, f, **search, limit=PICKER_PAGE_SIZE, offset=offset)
    st.caption(
        f"{render.count_text(total, 'trace')}, most problems first; "
        f"{offset + 1:,}–{offset + len(found):,} shown "
        "(select one to open it)"
    )
    picked = widgets.picked_row(
        found,
        key="trace_picker",
        column_order=TRACE_PICKER_COLUMNS,
        height=widgets.table_height(len(found), max_rows=8),
        column_config={
            "trace": st.column_config.TextColumn("Trace", width="medium"),
            "title": st.column_config.TextColumn("Title", width=widgets.CONTENT_PX),
            "agent": st.column_config.TextColumn("Agent"),
            "model": st.column_config.TextColumn("Model"),
            "started_at": st.column_config.DatetimeColumn(
                "Started (UTC)", format="YYYY-MM-DD HH:mm"
            ),
            "messages": widgets.count_column("Messages"),
            "errors": widgets.count_column("Errors"),
            "problems": widgets.count_column(
                "Problems", help="errors + pairing problems + loop calls + ignored advice"
            ),
        },
    )
    # The selection outlives the rerun; acting only on a change keeps it from looping.
    if picked is not None and str(picked["trace"]) != state.selected_trace():
        state.select_trace(str(picked["trace"]))
        st.rerun()


def _share_link() -> str:
    """This view as a link: the page's address (just its path when the browser has not said)
    with every URL parameter, so a colleague opens the same trace, pair and filters."""
    params = {
        key: st.query_params.get_all(key)
        for key in st.query_params
        if key not in review_ui.PRIVATE_PARAMS
    }
    query = urlencode(params, doseq=True, safe=":")
    return f"{st.context.url or widgets.app_path(TRACE_PAGE.path)}" + (f"?{query}" if query else "")


def _answer_id(detail: TraceWindow, pair: PairRef) -> int | None:
    """The stored id of the Tool Message a reviewer corrects for ``pair``: the call's answer,
    or the lone result itself; None when no result came back."""
    results = detail.results
    if results.empty:
        return None
    if pair.is_call:
        answered = detail.calls["result_seq"].dropna()
        if answered.empty:
            return None
        results = results[results["message_seq"] == int(answered.iloc[0])]
    else:
        results = results[results["message_seq"] == pair.seq]
    return None if results.empty else int(results["id"].iloc[0])


def _selected_pair(detail: TraceWindow, ctx: trace_blocks.BlockContext) -> bool:
    """The selected pair: the call beside its answers, or the lone Tool Message. False when
    the trace has no such pair."""
    if detail.calls.empty and detail.results.empty:
        st.caption("This trace has no such pair.")
        return False
    rows = trace_blocks.PageRows.of(detail.calls, detail.results)
    for call in detail.calls.to_dict("records"):
        answered_by = rows.answers(int(call["message_seq"]), int(call["call_index"]))
        trace_blocks.show_pair(call, answered_by, ctx, controls=False)
    if detail.calls.empty:
        for result in detail.results.to_dict("records"):
            trace_blocks.show_lone_result(result, ctx, controls=False)
    return True


def _review_pair(
    trace_id: int, detail: TraceWindow, pair: PairRef, ctx: trace_blocks.BlockContext
) -> None:
    """The selected pair's notes (left) and the correction form (right), in an expander of
    their own: the forms are tall, and most visits only read the pair, so they are drawn only
    while the box is open."""
    labels = ctx.labels.get((pair.seq, pair.call_index), ())
    with st.expander(
        f"{REVIEW_LABEL} ({render.count_text(len(labels), 'note')})",
        expanded=bool(labels),
        key=review_key(trace_id, pair),
        icon=":material/rate_review:",
        on_change="rerun",
    ) as box:
        if not box.open:
            return
        engine = state.engine()
        notes, fix = st.columns(2, border=True)
        with notes:
            st.caption(f"Notes and labels on this pair ({len(labels)})")
            review_ui.annotation_panel(engine, trace_id, pair.seq, pair.call_index)
        with fix:
            st.caption("Correct what the rules derived")
            result_id = _answer_id(detail, pair)
            if result_id is None:
                st.caption("No Tool Message came back: there is nothing to correct.")
            else:
                review_ui.correction_form(engine, result_id)


def review_key(trace_id: int, pair: PairRef) -> str:
    """The widget key of the selected pair's review box (Session State holds whether it is
    open)."""
    return f"review_{trace_id}_{pair.seq}_{pair.call_index}"


def _messages_page(trace_id: int, messages: int, pair: PairRef | None, found: int | None) -> int:
    """Draw the page selector of a long trace (bound to the URL as ``mpage``); return the
    0-based page to show. Without ``mpage`` in the URL the page is the one of the message a
    search hit opened (``found``), else the selected pair's."""
    pages = max(1, -(-messages // MESSAGES_PER_PAGE))
    target = found if found is not None else pair.seq if pair else None
    home = 0
    if target is not None:
        home = state.query(page_of_seq, trace_id, target, size=MESSAGES_PER_PAGE)
    if pages == 1:
        return 0
    # Another trace, pair or hit than in the last run (the picker, a Select button, Search):
    # go to its page. The first run keeps what the URL says, so a shared link opens the page
    # it names.
    anchor = (trace_id, None if pair is None else (pair.seq, pair.call_index), found)
    if st.session_state.get(ANCHOR_KEY, anchor) != anchor:
        st.session_state[PAGE_KEY] = home + 1
    st.session_state[ANCHOR_KEY] = anchor
    left, right = st.columns([1, 4], vertical_alignment="bottom")
    page = left.number_input(
        "Messages page",
        min_value=1,
        max_value=pages,
        value=home + 1,
        step=1,
        key=PAGE_KEY,
        bind="query-params",
    )
    page = min(max(int(page), 1), pages)
    first = (page - 1) * MESSAGES_PER_PAGE
    last = min(messages, first + MESSAGES_PER_PAGE)
    where = ""
    if target is not None and page == home + 1:
        where = " (the search match's page)" if found is not None else " (the selected pair's page)"
    right.caption(
        f"Messages {first + 1:,}–{last:,} of {messages:,} · page {page:,} of {pages:,}{where}"
    )
    return page - 1


def _findings_table(findings: pd.DataFrame, trace: str, trace_id: int) -> None:
    """The trace's findings, each named by its message number and tool; selecting one opens
    its pair (the URL's ``pair``, a history entry)."""
    if findings.empty:
        st.caption("No findings: every Tool Message of this trace passed the checks.")
        return
    st.caption("Select a finding to open its pair.")
    key = f"findings_table_{trace_id}"
    picked = widgets.picked_row(
        findings.assign(
            name=findings["name"].map(render.humanize),
            message=[f"#{int(seq)}" for seq in findings["message_seq"]],
        ),
        key=key,
        height=widgets.table_height(len(findings), max_rows=8),
        **widgets.columns(
            {
                "name": st.column_config.TextColumn("Finding", width="medium"),
                "message": st.column_config.TextColumn(
                    "Message", help="the message's number (seq)"
                ),
                "tool": st.column_config.TextColumn("Tool"),
            }
        ),
    )
    chosen = None if picked is None else str(picked["pair"])
    if trace_outline.changed(f"_{key}_seen", chosen) and chosen != state.selected_pair():
        state.select_trace(trace, chosen)
        st.rerun()


def _streaks_table(streaks: pd.DataFrame, sk: int, trace: str, trace_id: int) -> None:
    """The trace's error streaks (of ``sk`` or more calls); selecting one opens its first
    call."""
    if streaks.empty:
        st.caption(f"No tool of this trace fails the same way {sk} or more times in a row.")
        return
    st.caption(
        "Consecutive calls of one tool ending in the same error, whatever their arguments. "
        "Select a streak to open its first call."
    )
    key = f"streaks_table_{trace_id}"
    picked = widgets.picked_row(
        streaks.assign(wasted_ms=widgets.as_seconds(streaks["wasted_ms"])),
        key=key,
        height=widgets.table_height(len(streaks), max_rows=6),
        **widgets.columns(
            {
                "tool": st.column_config.TextColumn("Tool"),
                "length": widgets.count_column("Calls"),
                "fingerprint": st.column_config.TextColumn("Error", width="medium"),
                "pair": st.column_config.TextColumn("First call"),
                "last": st.column_config.TextColumn("Last call"),
                "wasted_tokens": widgets.count_column(
                    "Wasted tokens", help="result + argument tokens of the calls after the first"
                ),
                "wasted_ms": widgets.seconds_column(
                    "Wasted time", help="execution time of the calls after the first"
                ),
            }
        ),
    )
    chosen = None if picked is None else str(picked["pair"])
    if trace_outline.changed(f"_{key}_seen", chosen) and chosen != state.selected_pair():
        state.select_trace(trace, chosen)
        st.rerun()


def _closed_section(label: str, *, key: str, icon: str, draw: Callable[[], None]) -> None:
    """An expander, closed at first, whose content (``draw()``) is drawn only while it is
    open."""
    with st.expander(label, key=key, icon=icon, on_change="rerun") as box:
        if box.open:
            draw()


def _metadata(metadata: dict[str, Any]) -> None:
    """What the source said about the run (user, environment, run info …), exactly as
    imported: a JSON viewer, never markdown, because it is untrusted text."""
    if not metadata:
        st.caption("The source gave this trace no metadata.")
        return
    st.json(metadata, expanded=2)


def _queue_problem() -> review.Problem | None:
    """The problem filter of the review queue this trace was opened from (the URL's
    ``queue``); ``None`` for the whole queue."""
    value = st.query_params.get(review_ui.QUEUE_PARAM)
    return cast(review.Problem, value) if value in review.PROBLEMS else None


def _mark_and_next(trace_id: int, f: Filters, k: int) -> None:
    """Sign this trace reviewed and open the first trace of the review queue (the Review
    page's order, the sidebar filters and the queue's problem filter when the trace was
    opened from it); say so when the queue is empty."""
    engine = state.engine()
    try:
        writes.mark_reviewed(engine, [trace_id])
    except auth.PermissionDeniedError as exc:
        render.show_error(exc)
        return
    problem = _queue_problem()
    queue = review.review_queue(engine, filters=f, problem=problem, loop_k=k, limit=1)
    which = "review queue" if problem is None else f"review queue of {problem}"
    if queue.empty:
        st.toast(f"Marked reviewed. The {which} is empty.", icon=":material/done_all:")
        return
    state.select_trace(str(queue["display_id"].iloc[0]))
    st.toast(f"Marked reviewed; this is the next trace in the {which}.", icon=":material/done_all:")


def _review_status(trace: dict[str, Any], f: Filters, k: int) -> None:
    """Who reviewed this trace, and the button that marks it and opens the next one."""
    reviewed = review.trace_header(state.engine(), int(trace["id"]))
    if reviewed is not None and reviewed["reviewed_by"]:
        st.caption(
            render.escape_markdown(
                f"Reviewed by {reviewed['reviewed_by']} "
                f"{reviewed['reviewed_at']:%Y-%m-%d %H:%M} UTC"
            )
        )
    author = review_ui.current_author()
    if not review_ui.may_write(state.engine(), "mark_reviewed"):
        return  # a viewer reads who reviewed; marking is not theirs (nor a ClickHouse store's)
    st.button(
        "Mark reviewed, open the next",
        key="mark_and_next",
        icon=":material/done_all:",
        disabled=not author,
        on_click=_mark_and_next,
        args=(int(trace["id"]), f, k),
        help=(
            "Signs this trace reviewed and opens the first trace of the review queue "
            "(with the sidebar filters"
            + ("" if _queue_problem() is None else f" and the queue's problem {_queue_problem()}")
            + ")."
        )
        if author
        else review_ui.NO_AUTHOR_TEXT,
    )


def _session_links(trace: dict[str, Any]) -> None:
    """The trace's session, a link to it on the Sessions page and, while open, the other
    traces of the session, each a link to it."""
    session, count = state.query(session_of, int(trace["id"]))
    if session is None:
        return
    st.page_link(
        SESSIONS_PAGE.script,
        label=f"Its session: {render.count_text(count, 'trace')}",
        icon=":material/forum:",
        query_params={"session": session},
    )
    others = state.query(session_traces, session, limit=SESSION_TRACES_SHOWN + 1)
    others = others[others["trace"] != trace["display_id"]].head(SESSION_TRACES_SHOWN)
    if others.empty:
        return
    with st.expander(
        f"Other traces of this session ({count - 1:,}"
        + (f", the first {len(others):,} listed)" if count - 1 > len(others) else ")"),
        key=f"session_traces_{trace['id']}",
        icon=":material/list:",
        on_change="rerun",
    ) as box:
        if box.open:
            st.dataframe(
                widgets.with_links(others.assign(pair=None)),
                hide_index=True,
                height=widgets.table_height(len(others), max_rows=8),
                placeholder=widgets.EMPTY_CELL,
                **widgets.columns(
                    {
                        "title": st.column_config.TextColumn("Title", width="large"),
                        "started_at": st.column_config.DatetimeColumn(
                            "Started (UTC)", format="YYYY-MM-DD HH:mm"
                        ),
                        "messages": widgets.count_column("Messages"),
                        "errors": widgets.count_column("Errors"),
                        "problems": widgets.count_column("Problems"),
                        "link": widgets.link_column("Trace", help="open this trace"),
                    }
                ),
            )


def _first_seq_shown() -> int:
    """The first message number of the messages page in the URL (seq counts messages from
    0, so page p starts at (p - 1) × the page size); the outline's buttons step from there
    while no pair is selected."""
    page = st.session_state.get(PAGE_KEY) or st.query_params.get(PAGE_KEY) or 1
    try:
        return (max(int(page), 1) - 1) * MESSAGES_PER_PAGE
    except ValueError:
        return 0


state.open_page("Trace")

filters = state.filters()
display_id = state.selected_trace()
# Drawn only while open (its queries and table cost more than the page once a trace is shown).
with st.expander(
    "Find a trace",
    expanded=display_id is None,
    key=FINDER_KEY,
    icon=":material/search:",
    on_change="rerun",
) as finder:
    if finder.open:
        _picker(filters)
if display_id is None:
    st.info("Pick a trace above, or open one from the Tool calls page.")
    state.end_page()

trace = state.query(find_trace, display_id)
if trace is None:
    st.warning(f"No trace has the id {render.escape_markdown(display_id)}.")
    state.end_page()

k, budget = state.loop_k(), state.token_budget()
trace_id = int(trace["id"])
if auth.can("delete") and admin_ui.delete_control(
    traces_by_id([trace_id], f"trace {display_id}"), "Delete this trace", "delete_trace"
):
    state.select_trace(None)
    st.success(f"Deleted trace {render.escape_markdown(display_id)}.")
    state.end_page()
engine = state.engine()
# Read on every run, not cached: a note just written must show at once. One query for the
# whole trace; the pair blocks take their counts from it.
all_notes = trace_annotations(engine, trace_id)
trace_notes = [n for n in all_notes if n.message_seq is None]
selected = state.selected_pair()
found_seq = state.found_message()
# One list of the trace's problems (``db.queries.traces.pair_problems``) for the Problems tile,
# the outline, previous / next problem and the words on each pair's card.
markers = state.query(trace_markers, trace_id, loop_k=k)
problem_pairs = markers[markers["problem"]] if not markers.empty else markers
ctx = trace_blocks.BlockContext(
    k=k,
    budget=budget,
    trace=str(trace["display_id"]),
    selected=selected,
    labels=trace_blocks.notes_by_target(all_notes),
    token_counts=str(trace.get("token_counts") or "estimate"),
    problems=dict(zip(problem_pairs["pair"], problem_pairs["problems"], strict=True)),
    trace_id=trace_id,
    found=found_seq,
    words=tuple(search_words(state.found_words() or "")),
)

head, side = st.columns([3, 2])
with head:
    st.subheader(render.escape_markdown(str(trace["display_id"])))
    origin = f"{trace['source_file']}:{trace['source_line']}" if trace["source_line"] else ""
    st.text(
        " · ".join(
            str(v)
            for v in (trace["format"], trace["agent"], trace["model"], trace["started_at"], origin)
            if v
        )
    )
    if trace["same_display_id"] > 1:
        st.caption(f"{trace['same_display_id']} traces share this id; the first imported is shown.")
    _session_links(trace)
with side:
    # The report links back here when the browser said the dashboard's address.
    files_ui.report_download(
        engine, trace, loop_k=k, view_url=_share_link() if st.context.url else None
    )
    _review_status(trace, filters, k)
    st.caption("Copy link (this trace, pair and filters)")
    st.code(_share_link(), language=None, wrap_lines=True)

m = st.columns(6)
m[0].metric("Messages", f"{trace['message_count']:,}")
m[1].metric("Tool calls", f"{trace['tool_call_count']:,}")
m[2].metric("Errors", f"{trace['error_count']:,}")
m[3].metric(
    "Problems",
    f"{len(problem_pairs):,}",
    help=f"pairs with a problem, of {render.count_text(len(markers), 'pair')}: an error, a "
    f"pairing problem, a loop call (k = {k}), advice ignored or a finding. The outline and "
    "Previous / Next problem step through the same pairs; each pair names its problems.",
)
m[4].metric(
    "Tool result tokens",
    f"{trace['tool_result_tokens']:,}",
    help=f"of {trace['total_tokens']:,} tokens in the trace's transcript "
    f"({render.percent_text(trace['tool_result_tokens'], trace['total_tokens'])})",
)
m[5].metric("Wasted tokens", f"{trace['wasted_tokens']:,}", help="results of repeated calls")
st.caption(trace_blocks.token_counts_caption(ctx.token_counts))

pair = parse_pair(selected)
trace_outline.draw(
    markers,
    trace_id,
    str(trace["display_id"]),
    int(trace["message_count"]),
    pair,
    _first_seq_shown(),
)

with st.expander(
    "Timeline", expanded=True, key=f"timeline_box_{trace_id}", icon=":material/timeline:",
    on_change="rerun",
) as timeline_box:  # fmt: skip
    if timeline_box.open:
        trace_timeline.draw(trace_id, str(trace["display_id"]), selected)

# The boxes below draw their content only while open: a closed box's content is still laid
# out by the browser (a form, a table). Open by default when there are notes to read.
with st.expander(
    f"Notes and labels ({len(trace_notes)})",
    expanded=bool(trace_notes),
    key=f"trace_notes_{trace_id}",
    icon=":material/sticky_note_2:",
    on_change="rerun",
) as notes_box:
    on_pairs = len(all_notes) - len(trace_notes)
    if on_pairs:
        st.caption(f"{render.count_text(on_pairs, 'more note')} on pairs, shown under each pair.")
    if notes_box.open:
        review_ui.annotation_panel(engine, trace_id)

findings = state.query(trace_findings, trace_id)
_closed_section(
    f"Findings ({len(findings)})",
    key=f"findings_{trace_id}",
    icon=":material/flag:",
    draw=partial(_findings_table, findings, str(trace["display_id"]), trace_id),
)

sk = state.streak_k()
streaks = state.query(trace_streaks, trace_id, sk)
_closed_section(
    f"Error streaks ({len(streaks)}, k = {sk})",
    key=f"streaks_{trace_id}",
    icon=":material/repeat_one:",
    draw=partial(_streaks_table, streaks, sk, str(trace["display_id"]), trace_id),
)

metadata = trace["metadata"] or {}
_closed_section(
    f"Trace metadata ({render.count_text(len(metadata), 'field')})",
    key=f"trace_metadata_{trace_id}",
    icon=":material/data_object:",
    draw=partial(_metadata, metadata),
)

if pair is not None:
    detail = state.query(pair_detail, trace_id, pair)
    with (
        st.container(key=trace_blocks.SELECTED_KEY),
        st.expander("Selected pair", expanded=True, icon=":material/my_location:"),
    ):
        shown = _selected_pair(detail, ctx)
    if shown:
        _review_pair(trace_id, detail, pair, ctx)

page = _messages_page(trace_id, int(trace["message_count"]), pair, found_seq)
window = state.query(trace_window, trace_id, page=page, size=MESSAGES_PER_PAGE)
rows = trace_blocks.PageRows.of(window.calls, window.results)
if not window.calls.empty:
    st.caption(trace_blocks.SELECT_HINT)
for message in window.messages.to_dict("records"):
    trace_blocks.show_message(message, rows, ctx)
if window.pages > 1 and window.page + 1 < window.pages:
    st.caption(f"Page {window.page + 1:,} of {window.pages:,}: the next page is chosen above.")
# Land on the target: the search hit's message when it is on this page, else the pair.
if found_seq is not None and (window.messages["seq"] == found_seq).any():
    scroll.bring_into_view(trace_blocks.found_key(found_seq))
elif pair is not None:
    scroll.bring_into_view(trace_blocks.SELECTED_KEY)
