"""Review: the queue of traces with problems nobody has reviewed yet, and every reviewer's notes.

The queue is ordered by severity (errors + pairing problems + loop calls + ignored advice) and
honours the shared sidebar filters; selecting a row opens the trace, and reviewed traces leave
the queue. The notes table filters by label and author (kept in the URL, so a filtered list is
a link); selecting a note opens its trace at the pair it is about. Reads are not cached: this
page writes, and must show its own writes at once. Viewers see the queue and the notes without
the controls that mark traces reviewed.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy import Engine

from dashboard import auth, render, review_ui, state, widgets, writes
from db import door
from db.writes import annotations as notes_store
from db.writes import review

QUEUE_PAGE = 25
#: Session key of the traces waiting for the reviewer to confirm marking them.
CONFIRM_KEY = "_confirm_mark"
NOTES_LIMIT = 500
QUEUE_COLUMNS = (
    "trace", "severity", "errors", "pairing", "loop_calls", "ignored", "notes", "agent", "model",
    "started_at", "reviewed_by",
)  # fmt: skip
NOTES_COLUMNS = ("trace", "pair", "tool", "label", "note", "author", "created_at", "updated_by")
PROBLEMS: tuple[review.Problem, ...] = ("errors", "pairing", "loops", "ignored")
PROBLEM_HELP = (
    "errors: results with status error · pairing: calls without a result, results without a "
    "call · loops: a call repeated k or more times · ignored: advice the model did not follow"
)


def _pair(seq: float, index: float) -> str | None:
    """The Trace page's ``pair`` value of a note (None for a note on the whole trace)."""
    if pd.isna(seq):
        return None
    return f"r{int(seq)}" if pd.isna(index) else f"{int(seq)}:{int(index)}"


def _queue(engine: Engine, author: str) -> None:
    st.subheader("Review queue")
    left, right = st.columns([2, 1])
    # No format_func: a bound selectbox puts the text it shows in the URL (``problem=loops``).
    problem = left.selectbox(
        "Problem", PROBLEMS, index=None, placeholder="Any problem", key="problem",
        bind="query-params", help=PROBLEM_HELP,
    )  # fmt: skip
    include = right.toggle("Include reviewed traces", key="reviewed", bind="query-params")
    f, k = state.filters(), state.loop_k()
    total = review.queue_size(
        engine, filters=f, problem=problem, include_reviewed=include, loop_k=k
    )
    if total == 0:
        narrowed = problem is not None or not f.is_empty()
        st.success(
            "Nothing to review with these filters."
            if narrowed
            else "Nothing to review: every trace with a problem has been reviewed."
        )
        return
    offset = widgets.page_offset(total, QUEUE_PAGE, key="queue_page", noun="traces to review")
    queue = review.review_queue(
        engine, filters=f, problem=problem, include_reviewed=include, loop_k=k,
        limit=QUEUE_PAGE, offset=offset,
    )  # fmt: skip
    widgets.trace_table(
        queue.assign(trace=queue["display_id"], pair=None),
        key="review_queue",
        # The Trace page's "Mark reviewed, open the next" follows this queue's problem filter.
        open_params={review_ui.QUEUE_PARAM: problem or review_ui.QUEUE_ANY},
        column_order=QUEUE_COLUMNS,
        column_config={
            "trace": st.column_config.TextColumn("Trace"),
            "severity": widgets.count_column("Severity", help="sum of the problems"),
            "errors": widgets.count_column("Errors"),
            "pairing": widgets.count_column("Pairing", help="unanswered calls, lone results"),
            "loop_calls": widgets.count_column("Loop calls", help="calls in loops at k"),
            "ignored": widgets.count_column("Ignored advice"),
            "notes": widgets.count_column("Notes"),
            "title": st.column_config.TextColumn(
                "Title", width="medium", help="the trace's first user message"
            ),
            "agent": st.column_config.TextColumn("Agent"),
            "model": st.column_config.TextColumn("Model"),
            "started_at": st.column_config.DatetimeColumn(
                "Started (UTC)", format="YYYY-MM-DD HH:mm"
            ),
            "reviewed_by": st.column_config.TextColumn("Reviewed by"),
        },
    )
    if not auth.can("mark_reviewed"):
        return  # viewers read the queue; marking traces is not theirs
    names = dict(zip(queue["trace_id"], queue["display_id"], strict=True))
    # No "Select all": marking is a signed statement about each trace, made one by one.
    picked = st.multiselect(
        "Traces on this page", list(names), format_func=names.__getitem__, key="to_mark",
        placeholder="Choose traces to mark", select_all=False,
    )  # fmt: skip
    mark, back = st.columns(2)
    if mark.button("Mark reviewed", disabled=not (picked and author), key="mark_reviewed"):
        st.session_state[CONFIRM_KEY] = list(picked)
    if back.button("Back to the queue", disabled=not picked, key="unmark_reviewed"):
        try:
            writes.clear_reviewed(engine, [int(t) for t in picked])
        except auth.PermissionDeniedError as exc:
            render.show_error(exc)
            return
        st.rerun()
    pending = st.session_state.get(CONFIRM_KEY)
    if pending and pending == picked and author:
        _confirm_marking(engine, [names[t] for t in picked], picked, author)
    else:
        st.session_state.pop(CONFIRM_KEY, None)
    if not author:
        st.caption(review_ui.NO_AUTHOR_TEXT)


def _confirm_marking(engine: Engine, shown: list[str], picked: list[int], author: str) -> None:
    """Ask once more before signing: how many traces, which, and under whose name."""
    listed = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
    st.warning(
        render.escape_markdown(
            f"Mark {render.count_text(len(picked), 'trace')} reviewed as {author}: {listed}?"
        ),
        icon=":material/done_all:",
    )
    yes, no = st.columns(2)
    if yes.button("Yes, mark reviewed", type="primary", key="confirm_mark"):
        st.session_state.pop(CONFIRM_KEY, None)
        try:
            writes.mark_reviewed(engine, [int(t) for t in picked])
        except auth.PermissionDeniedError as exc:
            render.show_error(exc)
            return
        st.toast(
            f"{render.count_text(len(picked), 'trace')} marked reviewed", icon=":material/done_all:"
        )
        st.rerun()
    if no.button("Cancel", key="cancel_mark"):
        st.session_state.pop(CONFIRM_KEY, None)
        st.rerun()


def _notes(engine: Engine) -> None:
    st.subheader("Notes")
    choices = notes_store.annotation_choices(engine)
    labels = sorted({*notes_store.configured_labels(), *choices["label"]})
    left, right = st.columns(2)
    chosen_labels = left.multiselect(
        "Label", labels, key="note_label", bind="query-params", placeholder="All labels"
    )
    chosen_authors = right.multiselect(
        "Author", choices["author"], key="note_author", bind="query-params",
        placeholder="All authors",
    )  # fmt: skip
    notes = notes_store.list_annotations(
        engine, labels=chosen_labels, authors=chosen_authors, limit=NOTES_LIMIT
    )
    if notes.empty:
        st.caption("No notes yet: write them on the Trace page, beside a trace or a pair.")
        return
    st.caption(
        f"{render.count_text(len(notes), 'note')}, newest first "
        "(select one to open its trace and pair)"
    )
    pairs = [_pair(s, i) for s, i in zip(notes["message_seq"], notes["call_index"], strict=True)]
    widgets.trace_table(
        notes.assign(trace=notes["display_id"], pair=pairs),
        key="notes_table",
        column_order=NOTES_COLUMNS,
        column_config={
            "trace": st.column_config.TextColumn("Trace"),
            "pair": st.column_config.TextColumn("Pair", help="seq:call index, r = lone result"),
            "tool": st.column_config.TextColumn("Tool"),
            "label": st.column_config.TextColumn("Label"),
            "note": st.column_config.TextColumn("Note", width="large"),
            "author": st.column_config.TextColumn("Author"),
            "created_at": st.column_config.DatetimeColumn("Written (UTC)"),
            "updated_by": st.column_config.TextColumn("Last edit by"),
        },
    )


st.title("Review")
author = review_ui.author_field()
state.end_on_empty_store()
engine = state.engine()
refused = door.review_refused(engine)
if refused is not None:
    st.info(refused)
    state.end_page()
_queue(engine, author)
_notes(engine)
