"""Trace: one conversation rebuilt in order, each tool call beside the Tool Message answering it.

Missing, orphan and duplicate results show where they happen; the pair named in the URL
(``pair``) is shown first, expanded, under "Selected pair". Long traces are read in windows of
:data:`WINDOW` messages. All trace content is untrusted and shown as code or escaped text.
"""

from __future__ import annotations

from typing import Any

import orjson
import pandas as pd
import streamlit as st

from dashboard import render, state
from dashboard.render import BadgeKind
from db.queries.pairs import pair_choices
from db.queries.traces import (
    filter_choices,
    find_trace,
    page_of_seq,
    pair_detail,
    parse_pair,
    search_traces,
    trace_findings,
    trace_window,
)

WINDOW = 100
TRACE_PICKER_COLUMNS = ("trace", "agent", "model", "started_at", "messages", "errors", "problems")
STATUS_KIND: dict[str, BadgeKind] = {
    "success": "ok",
    "error": "error",
    "partial": "warning",
    "unknown": "muted",
}
VERDICT_KIND: dict[str, BadgeKind] = {
    "followed": "ok",
    "ignored": "error",
    "unclear": "muted",
    "no_next_action": "muted",
}
LONE_RESULT_TEXT = {
    "orphan_result": "Orphan result: no call in this trace has its id.",
    "duplicate_result": "Duplicate result: a second answer to the call at {call}.",
    "result_before_call": "Result before call: it arrived before any call with its id.",
}


def _value(row: Any, key: str) -> Any:
    value = row.get(key)
    return (
        None if value is None or (not isinstance(value, list | dict) and pd.isna(value)) else value
    )


def _call_badges(call: Any, k: int) -> list[tuple[str, BadgeKind]]:
    items: list[tuple[str, BadgeKind]] = []
    state_name = str(call["pair_state"])
    items.append((state_name, "ok" if state_name == "paired" else "error"))
    occurrence = int(call["occurrence"])
    if occurrence > 1:
        items.append(
            (f"{render.ordinal(occurrence)} time", "error" if occurrence >= k else "warning")
        )
    for flag, label in (
        ("retry_after_error", "retry after error"),
        ("ping_pong", "ping-pong"),
        ("reused_id", "reused id"),
        ("name_mismatch", "name mismatch"),
    ):
        if bool(_value(call, flag)):
            items.append((label, "warning"))
    if _value(call, "schema_issue"):
        items.append((str(call["schema_issue"]), "error"))
    if _value(call, "pairing_method") == "position":
        items.append(("paired by position", "muted"))
    return items


def _show_call(call: Any, k: int) -> None:
    st.markdown(
        f"**{render.escape_markdown(str(call['tool_name']))}** · call "
        f"{int(call['message_seq'])}:{int(call['call_index'])}"
    )
    render.badges(_call_badges(call, k))
    if _value(call, "tool_call_id"):
        st.text(f"id: {call['tool_call_id']}")
    if bool(call["args_valid"]):
        arguments = _value(call, "arguments")
        text = orjson.dumps(arguments).decode() if arguments is not None else ""
        render.show_content(text or str(_value(call, "arguments_raw") or ""))
    else:
        st.text(f"Arguments are not valid JSON: {_value(call, 'args_error') or 'parse error'}")
        render.show_content(str(_value(call, "arguments_raw") or ""))
    if _value(call, "schema_detail"):
        st.text(str(call["schema_detail"]))


def _source_text(result: Any) -> str:
    source = str(result["status_source"])
    rule = _value(result, "rule")
    if source == "inferred":
        return f"inferred by rule {rule}" if rule else "inferred"
    if source == "explicit":
        return f"explicit ({_value(result, 'explicit_source') or rule or 'flag'})"
    return source


def _show_result(result: Any, budget: int) -> None:
    status = str(result["status"])
    tokens = int(result["tokens"])
    items: list[tuple[str, BadgeKind]] = [(status, STATUS_KIND.get(status, "muted"))]
    if _value(result, "error_type"):
        corrected = _value(result, "error_type_corrected") is not None
        label = str(result["error_type"]) + (" (corrected)" if corrected else "")
        items.append((label, "error"))
    items.append((_source_text(result), "muted"))
    items.append((render.count_text(tokens, "token"), "error" if tokens > budget else "info"))
    if str(result["pair_state"]) != "paired":
        items.append((str(result["pair_state"]), "error"))
    if bool(_value(result, "name_mismatch")):
        items.append((f"named {_value(result, 'provided_name')}", "warning"))
    st.markdown(f"Tool Message · seq {int(result['message_seq'])}")
    render.badges(items)
    if _value(result, "suggestion"):
        st.caption("Suggestion")
        st.text(str(result["suggestion"]))
        verdict = _value(result, "verdict")
        if verdict:
            render.badges([(f"verdict: {verdict}", VERDICT_KIND.get(str(verdict), "muted"))])
            if _value(result, "verdict_reason"):
                st.text(str(result["verdict_reason"]))
    render.show_content(
        _value(result, "content") or "", tokens=tokens, chars=int(_value(result, "chars") or 0)
    )


def _answers(results: pd.DataFrame, seq: int, index: int) -> list[Any]:
    if results.empty:
        return []
    hits = results[(results["call_seq"] == seq) & (results["call_index"] == index)]
    return [row for _, row in hits.iterrows()]


def _show_pair(call: Any, answers: list[Any], k: int, budget: int) -> None:
    left, right = st.columns(2)
    with left:
        _show_call(call, k)
    with right:
        if not answers:
            st.warning("No result ever came back for this call.", icon=":material/help:")
        for answer in answers:
            _show_result(answer, budget)


def _show_lone_result(result: Any, budget: int) -> None:
    call_seq = _value(result, "call_seq")
    where = f"{int(call_seq)}:{int(result['call_index'])}" if call_seq is not None else "?"
    text = LONE_RESULT_TEXT.get(str(result["pair_state"]), "Result without a call.")
    st.warning(text.format(call=where), icon=":material/link_off:")
    _show_result(result, budget)


def _show_message(msg: Any, window: Any, max_tokens: int, k: int, budget: int) -> None:
    seq = int(msg["seq"])
    tokens = int(msg["tokens"])
    with st.container(border=True):
        head, bar = st.columns([3, 2])
        stamp = "" if pd.isna(msg["timestamp"]) else f" · {msg['timestamp']:%Y-%m-%d %H:%M:%S}"
        head.markdown(f"{render.badge_text(str(msg['role']), 'highlight')} **#{seq}**{stamp}")
        bar.progress(
            min(1.0, tokens / max_tokens) if max_tokens else 0.0,
            text=render.count_text(tokens, "token"),
        )
        if msg["role"] == "tool":
            _show_tool_message(seq, window, budget)
            return
        if msg["content"]:
            render.show_content(str(msg["content"]), chars=int(msg["chars"]))
        calls = window.calls[window.calls["message_seq"] == seq]
        for _, call in calls.iterrows():
            _show_pair(call, _answers(window.results, seq, int(call["call_index"])), k, budget)


def _show_tool_message(seq: int, window: Any, budget: int) -> None:
    rows = window.results[window.results["message_seq"] == seq]
    if rows.empty:
        st.caption("Tool Message without derived facts.")
        return
    result = rows.iloc[0]
    call_seq = _value(result, "call_seq")
    lone = call_seq is None or result["pair_state"] == "duplicate_result"
    if lone:
        _show_lone_result(result, budget)
        return
    call_shown = not window.calls[
        (window.calls["message_seq"] == call_seq)
        & (window.calls["call_index"] == result["call_index"])
    ].empty
    ref = f"{int(call_seq)}:{int(result['call_index'])}"
    if not call_shown:
        st.caption(f"Answers the call {ref} (on another page of this trace).")
        _show_result(result, budget)
        return
    where = "below" if int(call_seq) > seq else "above"
    note = f"Result of the call {ref}, shown beside it {where}."
    if result["pair_state"] == "late_result":
        note += " It arrived late: the model spoke again before it came back."
    st.caption(note)


def _picker(f: Any) -> None:
    tools = state.query(filter_choices)["tool"]
    error_types = state.query(pair_choices, f)["error_type"]
    cols = st.columns([3, 2, 2])
    text = cols[0].text_input("Trace id contains", key="trace_search")
    tool = cols[1].selectbox("Calls tool", tools, index=None, key="trace_tool", placeholder="Any")
    error_type = cols[2].selectbox(
        "Has error type", error_types, index=None, key="trace_error", placeholder="Any"
    )
    found = state.query(search_traces, f, text=text or None, tool=tool, error_type=error_type)
    if found.empty:
        st.caption("No trace matches.")
        return
    st.caption(f"{len(found)} traces shown, most problems first (select one to open it)")
    event = st.dataframe(
        found,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key="trace_picker",
        column_order=TRACE_PICKER_COLUMNS,
    )
    if event is not None and event.selection.rows:
        chosen = str(found.iloc[event.selection.rows[0]]["trace"])
        # The selection outlives the rerun; acting only on a change keeps it from looping.
        if chosen != state.selected_trace():
            state.select_trace(chosen)
            st.rerun()


st.title("Trace")
if state.store_is_empty():
    render.empty_store()
    st.stop()

filters = state.filters()
display_id = state.selected_trace()
with st.expander("Find a trace", expanded=display_id is None, icon=":material/search:"):
    _picker(filters)
if display_id is None:
    st.info("Pick a trace above, or open one from the Tool calls page.")
    st.stop()

trace = state.query(find_trace, display_id)
if trace is None:
    st.warning(f"No trace has the id {render.escape_markdown(display_id)}.")
    st.stop()

k, budget = state.loop_k(), state.token_budget()
trace_id = int(trace["id"])
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
m = st.columns(6)
m[0].metric("Messages", f"{trace['message_count']:,}")
m[1].metric("Tool calls", f"{trace['tool_call_count']:,}")
m[2].metric("Errors", f"{trace['error_count']:,}")
m[3].metric("Problems", f"{trace['problem_count']:,}", help="errors + pairing + loops + ignored")
m[4].metric(
    "Tool result tokens",
    f"{trace['tool_result_tokens']:,}",
    help=f"of {trace['total_tokens']:,} tokens in the trace "
    f"({render.percent_text(trace['tool_result_tokens'], trace['total_tokens'])})",
)
m[5].metric("Wasted tokens", f"{trace['wasted_tokens']:,}", help="results of repeated calls")

findings = state.query(trace_findings, trace_id)
with st.expander(f"Findings ({len(findings)})", icon=":material/flag:"):
    st.dataframe(findings, hide_index=True)

pair = parse_pair(state.selected_pair())
if pair is not None:
    detail = state.query(pair_detail, trace_id, pair)
    with st.expander("Selected pair", expanded=True, icon=":material/my_location:"):
        if detail.calls.empty and detail.results.empty:
            st.caption("This trace has no such pair.")
        for _, call in detail.calls.iterrows():
            answers = _answers(detail.results, int(call["message_seq"]), int(call["call_index"]))
            _show_pair(call, answers, k, budget)
        if detail.calls.empty:
            for _, result in detail.results.iterrows():
                _show_lone_result(result, budget)

start_page = state.query(page_of_seq, trace_id, pair.seq, size=WINDOW) if pair else 0
total_pages = max(1, -(-int(trace["message_count"]) // WINDOW))
if total_pages > 1:
    page = st.number_input(
        f"Messages page (of {total_pages}, {WINDOW} messages each)",
        min_value=1,
        max_value=total_pages,
        value=min(start_page + 1, total_pages),
        key=f"window_{trace_id}_{state.selected_pair()}",
    )
else:
    page = 1
window = state.query(trace_window, trace_id, page=int(page) - 1, size=WINDOW)
max_tokens = int(trace["max_message_tokens"])
for _, message in window.messages.iterrows():
    _show_message(message, window, max_tokens, k, budget)
