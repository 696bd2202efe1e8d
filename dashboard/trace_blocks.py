"""The blocks of the Trace page: messages, each tool call beside its Tool Message, lone results.

Every pair block ends with its review controls: how many notes it carries (with their labels)
and a "Select" button that puts the pair in the URL (``pair``), where the page shows it first
with its notes and the correction form. All trace content is untrusted and shown as plain text,
code or escaped markdown; note labels are escaped too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import palette, render, state
from dashboard.palette import TONE, BadgeColor
from db.contract import exact_json
from db.contract.vocabulary import PROBLEM_DESCRIPTION, PROBLEM_LABEL, finding_level
from db.queries.traces import message_text
from db.writes.annotations import Annotation
from ingest.outputs.cost_text import message_cost_text

LONE_RESULT_TEXT = {
    "orphan_result": "Orphan result: no call in this trace has its id.",
    "duplicate_result": "Duplicate result: a second answer to the call at {call}.",
    "result_before_call": "Result before call: it arrived before any call with its id.",
}
SELECTED_TEXT = "Selected: its notes and corrections are at the top, under the selected pair."
#: Said once above the messages: a tooltip on every Select button costs the browser time.
SELECT_HINT = "Select shows a pair first, to label it, write a note or correct it."

#: Key prefix of the box around the selected pair where it stands among the messages (tests
#: and the browser find it by the class Streamlit derives from the key).
HERE_KEY = "here_"
#: The head of that box: a badge in the palette's highlight hue (no page-wide style: the
#: dashboard renders no HTML).
HERE_TEXT = ":material/my_location: Selected pair"

#: Key of the box around the Selected pair above the messages (the browser scrolls to it when
#: a link lands on the pair).
SELECTED_KEY = "selected_pair"
#: Key prefix of the box around the message a search hit opened (:func:`found_key`).
FOUND_KEY = "found_"
#: The head of that box.
FOUND_TEXT = ":material/search: Search match"

#: What a note is about: (message seq, call index) of a call, (seq, None) of a lone result.
Target = tuple[int, int | None]


@dataclass(frozen=True, slots=True)
class BlockContext:
    """What every block of one page run needs: the analysis settings, the trace's display id,
    the selected pair (URL value) and the labels of the notes on each pair."""

    k: int
    budget: int
    trace: str
    selected: str | None = None
    labels: Mapping[Target, Sequence[str]] = field(default_factory=dict)
    #: The trace's ``token_counts``: ``exact`` (the model's own tokenizer) or ``estimate``.
    token_counts: str = "exact"
    #: The problems of each pair with any, by its ``pair`` value (``"4:0"``, ``"r8"``): the
    #: outline's markers (``db.queries.traces.pair_problems``).
    problems: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: The trace's row id: content cut short by the query is read whole from it on demand.
    trace_id: int | None = None
    #: The seq of the message a search hit opened (boxed, its match marked), and the words
    #: searched (``db.dialect.search_words``).
    found: int | None = None
    words: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class PageRows:
    """One page's calls and Tool Messages as plain rows, looked up by place: the calls each
    message seq makes, the Tool Message at each seq, the answers to each call (seq, index).
    Filtering DataFrames per message cost more server time than drawing the page."""

    calls_at: Mapping[int, Sequence[Mapping[str, Any]]]
    result_at: Mapping[int, Mapping[str, Any]]
    answers_to: Mapping[tuple[int, int], Sequence[Mapping[str, Any]]]

    @classmethod
    def of(cls, calls: pd.DataFrame, results: pd.DataFrame) -> PageRows:
        """The lookups of a page's ``calls`` and ``results`` frames (rows keep frame order)."""
        calls_at: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        for call in calls.to_dict("records"):
            calls_at[int(call["message_seq"])].append(call)
        result_at: dict[int, Mapping[str, Any]] = {}
        answers_to: dict[tuple[int, int], list[Mapping[str, Any]]] = defaultdict(list)
        for result in results.to_dict("records"):
            result_at.setdefault(int(result["message_seq"]), result)
            if _value(result, "call_seq") is not None:
                key = (int(result["call_seq"]), int(result["call_index"]))
                answers_to[key].append(result)
        return cls(dict(calls_at), result_at, dict(answers_to))

    def answers(self, seq: int, index: int) -> Sequence[Mapping[str, Any]]:
        """The Tool Messages answering the call ``seq:index`` (empty when none)."""
        return self.answers_to.get((seq, index), ())

    def shows_call(self, seq: int, index: int) -> bool:
        """True when the call ``seq:index`` is on this page."""
        return any(int(c["call_index"]) == index for c in self.calls_at.get(seq, ()))


def notes_by_target(notes: Iterable[Annotation]) -> dict[Target, list[str]]:
    """The labels of the notes on each pair (trace-level notes left out), oldest first."""
    grouped: dict[Target, list[str]] = defaultdict(list)
    for note in notes:
        if note.message_seq is not None:
            grouped[(note.message_seq, note.call_index)].append(note.label)
    return dict(grouped)


def pair_value(seq: int, call_index: int | None) -> str:
    """The ``pair`` URL value of a call (``"12:0"``) or of a lone Tool Message (``"r12"``)."""
    return f"r{seq}" if call_index is None else f"{seq}:{call_index}"


def notes_text(labels: Sequence[str]) -> str:
    """``"2 notes: root-cause, tool-bug"`` (each label once), escaped for a caption."""
    distinct = ", ".join(dict.fromkeys(labels))
    return render.escape_markdown(f"{render.count_text(len(labels), 'note')}: {distinct}")


def _value(row: Any, key: str) -> Any:
    value = row.get(key)
    return (
        None if value is None or (not isinstance(value, list | dict) and pd.isna(value)) else value
    )


def pair_controls(ctx: BlockContext, target: Target) -> None:
    """The review line under a pair block: its notes count and a Select button (or, for the
    selected pair, where its review widgets are)."""
    value = pair_value(*target)
    labels = ctx.labels.get(target, ())
    if value == ctx.selected:
        st.caption(SELECTED_TEXT + (" " + notes_text(labels) if labels else ""))
        return
    # A lone button unless there are notes to name beside it: fewer elements per pair.
    row = st.container(horizontal=True, vertical_alignment="center") if labels else st
    row.button(
        "Select",
        key=f"select_{value}",
        on_click=state.select_trace,
        args=(ctx.trace, value),
        icon=":material/my_location:",
        type="tertiary",
    )
    if labels:
        row.caption(notes_text(labels))


def _call_badges(call: Any, k: int) -> list[tuple[str, BadgeColor]]:
    items: list[tuple[str, BadgeColor]] = []
    state_name = str(call["pair_state"])
    items.append((state_name, palette.badge("pair_state", state_name)))
    occurrence = int(call["occurrence"])
    if occurrence > 1:
        items.append(
            (
                f"{render.ordinal(occurrence)} time",
                TONE["error"] if occurrence >= k else TONE["warning"],
            )
        )
    for flag, label in (
        ("retry_after_error", "retry after error"),
        ("ping_pong", "ping-pong"),
        ("reused_id", "reused id"),
        ("name_mismatch", "name mismatch"),
    ):
        if bool(_value(call, flag)):
            items.append((label, TONE["warning"]))
    if _value(call, "schema_issue"):
        issue = str(call["schema_issue"])
        items.append((issue, TONE[finding_level(issue)]))
    if _value(call, "pairing_method") == "position":
        items.append(("paired by position", TONE["muted"]))
    return items


def call_header(call: Any, k: int) -> str:
    """The markdown of a call's head: tool name, where it is, its id, then its badges (every
    piece of trace content escaped)."""
    head = (
        f"**{render.escape_markdown(str(call['tool_name']))}** · call "
        f"{int(call['message_seq'])}:{int(call['call_index'])}"
    )
    if _value(call, "tool_call_id"):
        head += f" · id {render.escape_markdown(str(call['tool_call_id']))}"
    badges = " ".join(render.badge_text(label, color) for label, color in _call_badges(call, k))
    return head + ("\n\n" + badges if badges else "")


def whole_text(ctx: BlockContext, seq: int) -> Callable[[], str] | None:
    """What reads the whole content of the message at ``seq`` (``None`` without the trace's
    row id): for content the windows cut at ``db.queries.traces.CONTENT_CHARS``."""
    trace_id = ctx.trace_id
    if trace_id is None:
        return None
    return lambda: state.query(message_text, trace_id, seq)


def content_key(ctx: BlockContext, box: str, seq: int, part: str) -> str:
    """The key of a content block's "Show all" expander: ``box`` ``"sel"`` (Selected pair) or
    ``"page"``, ``part`` ``"args0"`` (arguments of call 0) or ``"text"``."""
    return f"all_{box}_{ctx.trace}_{seq}_{part}"


def _show_call(call: Any, ctx: BlockContext, box: str) -> None:
    # One markdown element for name, id and badges: a long trace has hundreds of calls.
    st.markdown(call_header(call, ctx.k))
    key = content_key(ctx, box, int(call["message_seq"]), f"args{int(call['call_index'])}")
    if bool(call["args_valid"]):
        arguments = _value(call, "arguments")
        text = exact_json.dumps(arguments) if arguments is not None else ""
        render.show_content(text or str(_value(call, "arguments_raw") or ""), key=key)
    else:
        st.text(f"Arguments are not valid JSON: {_value(call, 'args_error') or 'parse error'}")
        render.show_content(str(_value(call, "arguments_raw") or ""), key=key)
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


def _seconds_text(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g} ms"
    if seconds < 120:
        return f"{seconds:g} s"
    return f"{seconds / 60:g} min"


def suggestion_text(
    kind: str | None, sentence: str | None, detail: Mapping[str, Any] | None, content: str
) -> str:
    """The advice a Tool Message gives, in a few words, without repeating the message.

    The stored suggestion is the sentence holding the advice, which for a one-line error is the
    whole message shown right below; so the kinds with a machine-readable detail are said in
    words, and a free-form hint is shown only when it is not the whole message (``""`` then).

    >>> suggestion_text("retry_after", "Error: 429. Retry after 6s", {"seconds": 6.0}, "")
    'retry after 6 s'
    >>> suggestion_text("other", "Read it first.", None, "Not read yet. Read it first.")
    'Read it first.'
    """
    detail = detail or {}
    if kind == "retry_after" and detail.get("seconds") is not None:
        return f"retry after {_seconds_text(float(detail['seconds']))}"
    if kind == "missing_param" and detail.get("param"):
        return f"supply the parameter {detail['param']}"
    if kind == "use_instead" and detail.get("tool"):
        return f"use {detail['tool']} instead"
    if kind == "ask_user":
        return "ask the user"
    advice = (sentence or "").strip()
    return "" if advice == content.strip() else advice


def image_placeholder(image: Mapping[str, Any]) -> str:
    """What stands for one image of a Tool Message (never its bytes): kind, size, tokens.

    >>> image_placeholder({"media": "png", "width": 1024, "height": 768, "tokens": 1049})
    '[image png 1024×768, ~1,049 tokens]'
    >>> image_placeholder({"media": None, "width": None, "height": None, "tokens": 1600})
    '[image, size unknown, ≤1,600 tokens]'
    """
    media = f" {image['media']}" if image.get("media") else ""
    tokens = int(image["tokens"])
    if image.get("width") and image.get("height"):
        size = f"{int(image['width'])}×{int(image['height'])}"
        return f"[image{media} {size}, ~{tokens:,} tokens]"
    return f"[image{media}, size unknown, ≤{tokens:,} tokens]"


def token_counts_caption(token_counts: str) -> str:
    """What the trace's token counts are: the model's own tokenizer's, or estimates."""
    if token_counts == "exact":
        return (
            "Token counts: exact, counted with this model's own tokenizer "
            "(images, marked ~, are estimates by the provider's image rule)."
        )
    return (
        "Token counts: estimates (~), counted with an OpenAI encoding, not this model's own "
        "tokenizer (or the trace names no model). Shares of a model call's input compare them "
        "with the input tokens the provider reported."
    )


def token_text(result: Any, token_counts: str) -> str:
    """A Tool Message's size: ``N tokens``, with ``~`` when it is an estimate (the trace is
    not counted with its model's tokenizer, or the result holds images)."""
    tokens = int(result["tokens"])
    estimate = token_counts != "exact" or int(_value(result, "image_tokens") or 0) > 0
    return ("~" if estimate else "") + render.count_text(tokens, "token")


def input_share_text(result: Any) -> str | None:
    """``N % of the input of #seq``: the result's share of the input tokens of the model call
    that read it (``None`` when the trace has no usage for that call)."""
    read_input = _value(result, "read_input_tokens")
    read_by = _value(result, "read_by_seq")
    if read_input is None or read_by is None or int(read_input) <= 0:
        return None
    share = render.percent_text(int(result["tokens"]), int(read_input))
    return f"{share} of the input of #{int(read_by)} ({int(read_input):,} tokens)"


def cost_text(result: Any) -> str | None:
    """What the Tool Message adds to the model calls after it, as the incident report says it
    (``ingest.outputs.cost_text``); ``None`` when not analyzed for it (a store from before,
    until ``toollens reanalyze``).

    >>> cost_text({"later_calls": 6, "reread_tokens": 4960, "reread_cached": 4956,
    ...            "reread_measured": True, "cost_nano_usd": 5218800})
    'read by 6 later calls · 4,960 re-read (4,956 cached) · $0.005219'
    """
    calls, cached = _value(result, "later_calls"), _value(result, "reread_cached")
    cost = _value(result, "cost_nano_usd")
    return message_cost_text(
        None if calls is None else int(calls),
        int(_value(result, "reread_tokens") or 0),
        None if cached is None else int(cached),
        bool(_value(result, "reread_measured")),
        None if cost is None else int(cost) / 1e9,
    )


def result_header(result: Any, budget: int, token_counts: str = "exact") -> str:
    """The markdown of a Tool Message's head: where it is, then its badges (status, effective
    error type marked when corrected, how the status was recognized, size, its share of the
    input of the model call that read it, execution time, pairing problems)."""
    status = str(result["status"])
    tokens = int(result["tokens"])
    items: list[tuple[str, BadgeColor]] = [(status, palette.badge("status", status))]
    if _value(result, "error_type"):
        error_type = str(result["error_type"])
        corrected = _value(result, "error_type_corrected") is not None
        label = error_type + (" (corrected)" if corrected else "")
        items.append((label, palette.badge("error_type", error_type)))
    items.append((_source_text(result), TONE["muted"]))
    tokens_tone = TONE["error"] if tokens > budget else TONE["info"]
    items.append((token_text(result, token_counts), tokens_tone))
    share = input_share_text(result)
    if share:
        items.append((share, TONE["muted"]))
    cost = cost_text(result)
    if cost:
        items.append((cost, TONE["muted"]))
    duration = _value(result, "duration_ms")
    if duration is not None:
        # The execution time of the call it answers (a span's, or result time − call time).
        label = f"took {render.duration_text(float(duration))}"
        items.append((label, TONE["warning"] if float(duration) < 0 else TONE["muted"]))
    pair_state = str(result["pair_state"])
    if pair_state != "paired":
        items.append((pair_state, palette.badge("pair_state", pair_state)))
    if bool(_value(result, "name_mismatch")):
        items.append((f"named {_value(result, 'provided_name')}", TONE["warning"]))
    badges = " ".join(render.badge_text(label, color) for label, color in items)
    return f"Tool Message · seq {int(result['message_seq'])}\n\n{badges}"


def advice_line(result: Any) -> str | None:
    """The markdown of the advice badge and the verdict badge of a result with a suggestion
    (``None`` without one): only the advice, never the message text again."""
    if not (_value(result, "suggestion") or _value(result, "suggestion_kind")):
        return None
    detail = _value(result, "suggestion_detail")
    advice = suggestion_text(
        _value(result, "suggestion_kind"),
        _value(result, "suggestion"),
        detail if isinstance(detail, dict) else None,
        str(_value(result, "content") or ""),
    )
    items: list[tuple[str, BadgeColor]] = [
        (f"advice: {advice}" if advice else "advice: the message below", TONE["info"])
    ]
    verdict = _value(result, "verdict")
    if verdict:
        corrected = _value(result, "verdict_corrected") is not None
        label = f"verdict: {verdict}" + (" (corrected)" if corrected else "")
        items.append((label, palette.badge("verdict", str(verdict))))
    return " ".join(render.badge_text(label, color) for label, color in items)


def show_result(result: Any, ctx: BlockContext, box: str) -> None:
    """One Tool Message: its head (:func:`result_header`), the advice and verdict
    (:func:`advice_line`) with the verdict's reason, then the content."""
    st.markdown(result_header(result, ctx.budget, ctx.token_counts))
    advice = advice_line(result)
    if advice:
        st.markdown(advice)
        if _value(result, "verdict_reason"):
            st.caption(render.escape_markdown(str(result["verdict_reason"])))
    images = _value(result, "images")
    if isinstance(images, list) and images:
        st.text("\n".join(image_placeholder(image) for image in images))
    render.show_content(
        _value(result, "content") or "",
        tokens=int(result["tokens"]),
        chars=int(_value(result, "chars") or 0),
        key=content_key(ctx, box, int(result["message_seq"]), "text"),
        load=whole_text(ctx, int(result["message_seq"])),
    )


def problems_text(problems: Sequence[str], k: int) -> str | None:
    """The markdown naming each problem of a pair in words, most severe first (``None``
    without one): ``**2 problems:** error (the Tool Message has status error); bare status
    (the Tool Message says only a status word (ok, error, done …))``; ``k`` is the loop
    threshold the loop problem names."""
    if not problems:
        return None
    named = "; ".join(
        f"{PROBLEM_LABEL.get(p, p.replace('_', ' '))} ({PROBLEM_DESCRIPTION.get(p, p).format(k=k)})"
        for p in problems
    )
    head = render.count_text(len(problems), "problem")
    return f"**{head}:** {render.escape_markdown(named)}"


def _show_problems(ctx: BlockContext, value: str) -> None:
    text = problems_text(ctx.problems.get(value, ()), ctx.k)
    if text is not None:
        st.markdown(text)


def show_pair(
    call: Any, answered_by: Sequence[Any], ctx: BlockContext, controls: bool = True
) -> None:
    """A call on the left, the Tool Message(s) answering it on the right, then the review
    line (unless ``controls`` is False, as in the Selected pair box)."""
    box = "page" if controls else "sel"
    target = (int(call["message_seq"]), int(call["call_index"]))
    with _here(ctx, target, controls):
        _show_problems(ctx, pair_value(*target))
        left, right = st.columns(2)
        with left:
            _show_call(call, ctx, box)
        with right:
            if not answered_by:
                st.warning("No result ever came back for this call.", icon=":material/help:")
            for answer in answered_by:
                show_result(answer, ctx, box)
        if controls:
            pair_controls(ctx, target)


def _here(ctx: BlockContext, target: Target, controls: bool) -> Any:
    """A highlighted box (:data:`HERE_KEY`) around the selected pair where it stands among
    the messages; no box for the others (fewer elements) or in the Selected pair box."""
    value = pair_value(*target)
    if not (controls and value == ctx.selected):
        return nullcontext()
    box = st.container(border=True, key=f"{HERE_KEY}{value.replace(':', '_')}")
    # Our own text with an icon: not escaped (escaping would break the icon's colons).
    box.markdown(f":{TONE['highlight']}-badge[{HERE_TEXT}]")
    return box


def show_lone_result(result: Any, ctx: BlockContext, controls: bool = True) -> None:
    """A Tool Message no call shows as its answer, with a warning saying why."""
    call_seq = _value(result, "call_seq")
    where = f"{int(call_seq)}:{int(result['call_index'])}" if call_seq is not None else "?"
    text = LONE_RESULT_TEXT.get(str(result["pair_state"]), "Result without a call.")
    target = (int(result["message_seq"]), None)
    with _here(ctx, target, controls):
        st.warning(text.format(call=where), icon=":material/link_off:")
        _show_problems(ctx, pair_value(*target))
        # A duplicate answer is also shown beside its call: its own box keeps the keys apart.
        show_result(result, ctx, "lone" if controls else "sel")
        if controls:
            pair_controls(ctx, target)


def message_header(msg: Any) -> str:
    """The markdown of a message's head: role badge, ``#seq``, time and size."""
    seq, tokens = int(msg["seq"]), int(msg["tokens"])
    stamp = "" if pd.isna(msg["timestamp"]) else f" · {msg['timestamp']:%Y-%m-%d %H:%M:%S}"
    size = render.badge_text(render.count_text(tokens, "token"), TONE["muted"])
    return f"{render.badge_text(str(msg['role']), TONE['highlight'])} **#{seq}**{stamp} {size}"


def found_key(seq: int) -> str:
    """The widget key of the box around the message at ``seq`` a search hit opened."""
    return f"{FOUND_KEY}{seq}"


def match_line(text: str, words: Sequence[str]) -> str:
    """Markdown of where ``words`` stand in ``text``: the words around them, the match marked
    (every part escaped, :func:`dashboard.render.marked_text`); a plain sentence when the
    words are not in ``text`` as written (the match is in a call's arguments, or was read past
    the stored index's prefix).

    >>> print(match_line("an *error* here", ["error"]))
    an \\*:violet-background[error]\\* here
    >>> match_line("nothing", ["error"])
    'The searched words are in this message or its calls.'
    """
    span = render.phrase_span(text, words)
    if span is None:
        return "The searched words are in this message or its calls."
    return render.marked_text(text, span)


def _found_box(msg: Any, rows: PageRows, ctx: BlockContext) -> Any:
    """A highlighted box around the message a search hit opened, with the match marked in
    one line above it; no box for the other messages."""
    seq = int(msg["seq"])
    if seq != ctx.found:
        return nullcontext()
    box = st.container(border=True, key=found_key(seq))
    if not ctx.words:
        box.markdown(f":{TONE['highlight']}-badge[{FOUND_TEXT}]")
        return box
    texts = [str(msg["content"] or "")]
    texts += [str(_value(c, "arguments_raw") or "") for c in rows.calls_at.get(seq, ())]
    text = next((t for t in texts if render.phrase_span(t, ctx.words)), texts[0])
    # Our own badge text: not escaped (escaping would break the icon's colons).
    box.markdown(f":{TONE['highlight']}-badge[{FOUND_TEXT}] " + match_line(text, ctx.words))
    return box


def show_message(msg: Any, rows: PageRows, ctx: BlockContext) -> None:
    """One message of the conversation, with its calls (each beside its answer). A Tool
    Message answering a call shown on this page is a single line saying where it is. The
    message a search hit opened is boxed, the match marked above it."""
    with _found_box(msg, rows, ctx):
        _show_message(msg, rows, ctx)


def _show_message(msg: Any, rows: PageRows, ctx: BlockContext) -> None:
    seq = int(msg["seq"])
    if msg["role"] == "tool":
        note = answered_here(seq, rows)
        if note is not None:
            st.caption(f"#{seq} tool · {render.count_text(int(msg['tokens']), 'token')} · {note}")
            return
    with st.container(border=True):
        st.markdown(message_header(msg))
        if msg["role"] == "tool":
            _show_tool_message(seq, rows, ctx)
            return
        if msg["content"]:
            key = content_key(ctx, "page", seq, "text")
            render.show_content(
                str(msg["content"]),
                chars=int(msg["chars"]),
                key=key,
                load=whole_text(ctx, seq),
            )
        for call in rows.calls_at.get(seq, ()):
            show_pair(call, rows.answers(seq, int(call["call_index"])), ctx)


def answered_here(seq: int, rows: PageRows) -> str | None:
    """For the Tool Message at ``seq``: where its call is shown beside it on this page
    (``None`` when it is lone, or its call is on another page)."""
    result = rows.result_at.get(seq)
    if result is None:
        return None
    call_seq = _value(result, "call_seq")
    if call_seq is None or result["pair_state"] == "duplicate_result":
        return None
    if not rows.shows_call(int(call_seq), int(result["call_index"])):
        return None
    where = "below" if int(call_seq) > seq else "above"
    note = (
        f"Result of the call {int(call_seq)}:{int(result['call_index'])}, shown beside it {where}."
    )
    if result["pair_state"] == "late_result":
        note += " It arrived late: the model spoke again before it came back."
    return note


def _show_tool_message(seq: int, rows: PageRows, ctx: BlockContext) -> None:
    """A Tool Message not shown beside its call: a lone result, or the answer to a call on
    another page."""
    result = rows.result_at.get(seq)
    if result is None:
        st.caption("Tool Message without derived facts.")
        return
    call_seq = _value(result, "call_seq")
    if call_seq is None or result["pair_state"] == "duplicate_result":
        show_lone_result(result, ctx)
        return
    ref = f"{int(call_seq)}:{int(result['call_index'])}"
    st.caption(f"Answers the call {ref} (on another page of this trace).")
    show_result(result, ctx, "page")
    pair_controls(ctx, (int(call_seq), int(result["call_index"])))
