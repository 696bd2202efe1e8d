"""Chart builders for the Trace page: the outline of a whole trace, one mark per pair, and its
timeline, one bar per model call and tool call.

Pure: a markers frame (``db.queries.traces.trace_markers``) in, a Plotly figure out. Each kind
of place (error, missing or late result, lone result, loop call, finding, plain call) has its
own row and its palette color, so a 1,000-message trace's problems show at a glance; clicking
a mark selects it (the page reads the point's ``customdata``: the ``pair`` value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard import palette
from dashboard.charts.plot_text import plot_text
from db.queries.timeline import NO_RESULT
from db.queries.traces import MARKER_KINDS

#: Row labels of the marker kinds, top to bottom.
KIND_LABELS: dict[str, str] = {
    "error": "error",
    "missing_result": "no result",
    "late_result": "late result",
    "lone_result": "lone result",
    "loop": "loop call",
    "ignored_advice": "advice ignored",
    "finding": "finding",
    "call": "call",
}


def outline_chart(markers: pd.DataFrame, messages: int, selected: str | None = None) -> go.Figure:
    """The outline strip: x is the message number (0 … ``messages`` - 1), one row per kind
    present, one mark per pair; the ``selected`` pair (``pair`` value) is ringed."""
    kinds = [k for k in MARKER_KINDS if k in set(markers["kind"])]
    traces: list[go.Scatter] = []
    for kind in kinds:
        rows = markers[markers["kind"] == kind]
        tools = [str(t) if isinstance(t, str) else "" for t in rows["tool"]]
        traces.append(
            go.Scatter(
                x=[int(s) for s in rows["seq"]],
                y=[KIND_LABELS[kind]] * len(rows),
                mode="markers",
                name=KIND_LABELS[kind],
                marker={"color": palette.MARKER[kind], "size": 9, "symbol": "line-ns-open"}
                if kind == "call"
                else {"color": palette.MARKER[kind], "size": 11, "symbol": "square"},
                customdata=[[str(p), t] for p, t in zip(rows["pair"], tools, strict=True)],
                hovertemplate="#%{x} %{customdata[1]}<br>" + KIND_LABELS[kind] + "<extra></extra>",
            )
        )
    chosen = markers[markers["pair"] == selected] if selected else markers.iloc[0:0]
    if not chosen.empty:
        traces.append(
            go.Scatter(
                x=[int(chosen["seq"].iloc[0])],
                y=[KIND_LABELS[str(chosen["kind"].iloc[0])]],
                mode="markers",
                name="selected",
                marker={
                    "color": "rgba(0,0,0,0)",
                    "size": 20,
                    "line": {"width": 2, "color": "#000"},
                },
                hoverinfo="skip",
            )
        )
    layout = {
        "height": 60 + 22 * max(1, len(kinds)),
        "margin": {"l": 10, "r": 10, "t": 10, "b": 30},
        "showlegend": False,
        "xaxis": {"range": [-0.5, max(messages, 1) - 0.5], "title": None, "tickformat": ",d"},
        "yaxis": {
            "categoryorder": "array",
            "categoryarray": [KIND_LABELS[k] for k in kinds][::-1],
            "title": None,
            "fixedrange": True,
        },
    }
    return go.Figure(data=traces, layout=layout)


#: The least width a timeline bar is drawn with, as a share of the whole time axis: a call of a
#: few milliseconds in an hour-long trace stays visible (its hover says its real duration).
MIN_BAR_SHARE = 0.004
#: Characters of a thread's name in a row label (a Claude Code side chain is named by a UUID).
BRANCH_CHARS = 13
#: Between the threads of a nested thread's path in its row label (tick labels are right-aligned:
#: an indent would not show).
NEST_SEPARATOR = " › "
#: Legend name and color of each kind of timeline bar (a tool call's by its answer's status).
TIMELINE_SERIES: dict[tuple[str, str | None], tuple[str, str]] = {
    ("model", None): ("model call", palette.NEUTRAL),
    ("tool", "success"): ("tool call", palette.STATUS["success"].hex),
    ("tool", "error"): ("tool call: error", palette.STATUS["error"].hex),
    ("tool", "partial"): ("tool call: partial", palette.STATUS["partial"].hex),
    ("tool", "unknown"): ("tool call: status unknown", palette.STATUS["unknown"].hex),
    ("tool", NO_RESULT): ("tool call: no result", palette.MARKER["missing_result"]),
}


def thread_paths(
    bars: pd.DataFrame, parents: Mapping[str, str] | None = None
) -> dict[Any, tuple[str, ...]]:
    """Each thread of ``bars`` (``None``: the main conversation) in the timeline's order, with
    its path: the threads it nests in, outermost first, then itself (the main conversation's
    path is empty). A sub-agent thread nests in the thread ``parents`` names
    (``db.queries.timeline.Timeline.parents``), else in the main conversation, and follows
    it, after its earlier children; siblings come in order of their first bar.

    >>> bars = pd.DataFrame({"branch": [None, "a", "b", "c"]})
    >>> thread_paths(bars, {"b": "a"})
    {None: (), 'a': ('a',), 'b': ('a', 'b'), 'c': ('c',)}
    """
    parents = parents or {}
    threads: list[str] = []
    for branch in bars["branch"]:
        if isinstance(branch, str) and branch not in threads:
            threads.append(branch)
    children: dict[str | None, list[str]] = {}
    for thread in threads:
        parent = parents.get(thread)
        children.setdefault(parent if parent in threads else None, []).append(thread)
    paths: dict[Any, tuple[str, ...]] = {}

    def visit(thread: str | None, path: tuple[str, ...]) -> None:
        paths[thread] = path
        for child in children.get(thread, []):
            if child not in paths:
                visit(child, (*path, child))

    visit(None, ())
    for thread in threads:  # in a cycle of parents: under the main conversation
        if thread not in paths:
            visit(thread, (thread,))
    return paths


def timeline_rows(bars: pd.DataFrame, parents: Mapping[str, str] | None = None) -> list[str]:
    """The timeline's rows, top to bottom: the main conversation's model calls and tool calls,
    then each sub-agent thread's, nested with ``↳`` under the thread it nests in
    (:func:`thread_paths`), their path in the label."""
    rows: list[str] = []
    for branch, path in thread_paths(bars, parents).items():
        for kind in ("model", "tool"):
            if ((bars["kind"] == kind) & _in_branch(bars, branch)).any():
                rows.append(_row_label(kind, path))
    return rows


def _in_branch(bars: pd.DataFrame, branch: str | None) -> pd.Series:
    if branch is None:
        return bars["branch"].isna()
    return bars["branch"] == branch


def _row_label(kind: str, path: Sequence[str]) -> str:
    """``"model calls"`` of the main conversation, ``"↳ planner › researcher: tool calls"``
    of a thread nested in another, each thread's name cut to :data:`BRANCH_CHARS`."""
    what = "model calls" if kind == "model" else "tool calls"
    if not path:
        return what
    shorts = (b if len(b) <= BRANCH_CHARS else b[: BRANCH_CHARS - 1] + "…" for b in path)
    return f"↳ {NEST_SEPARATOR.join(plot_text(b) for b in shorts)}: {what}"


def _duration(ms: float) -> str:
    """``"71 ms"``, ``"2.46 s"``, ``"3 min 5 s"``: the bar's hover."""
    if ms < 1000:
        return f"{ms:,.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    minutes, seconds = divmod(int(ms // 1000), 60)
    return f"{minutes} min {seconds} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def timeline_chart(
    bars: pd.DataFrame, selected: str | None = None, parents: Mapping[str, str] | None = None
) -> go.Figure:
    """The timeline of a trace (``db.queries.timeline.Timeline.bars``): one horizontal bar per
    model call and tool call on a time axis (UTC), from its start for its duration, one row per
    kind of call and thread, nested as the threads nest (``parents``, :func:`timeline_rows`);
    a tool call colored by its answer's status.
    Each bar's ``customdata[0]`` is the ``pair`` it opens (empty for a model call that called
    no tool); the ``selected`` pair's bars are outlined."""
    starts = pd.to_datetime(bars["start"], utc=True)
    ends = pd.to_datetime(bars["end"], utc=True)
    span_ms = (ends.max() - starts.min()).total_seconds() * 1000 if len(bars) else 0.0
    least = span_ms * MIN_BAR_SHARE
    traces: list[go.Bar] = []
    paths = thread_paths(bars, parents)
    for (kind, status), (name, color) in TIMELINE_SERIES.items():
        mask = bars["kind"] == kind
        if status is not None:
            mask &= bars["status"] == status
        rows = bars[mask]
        if rows.empty:
            continue
        labels = [
            _row_label(kind, paths.get(b if isinstance(b, str) else None, (str(b),)))
            for b in rows["branch"]
        ]
        pairs = [p if isinstance(p, str) else "" for p in rows["pair"]]
        hover = [
            f"#{int(seq)} {plot_text(label)}: {_duration(float(ms))}"
            for seq, label, ms in zip(rows["seq"], rows["label"], rows["duration_ms"], strict=True)
        ]
        chosen = [bool(selected) and p == selected for p in pairs]
        traces.append(
            go.Bar(
                orientation="h",
                name=name,
                y=labels,
                base=[t.isoformat() for t in starts[mask]],
                x=[max(float(ms), least) for ms in rows["duration_ms"]],
                customdata=[[p, h] for p, h in zip(pairs, hover, strict=True)],
                hovertemplate="%{customdata[1]}<extra></extra>",
                marker={
                    "color": color,
                    "line": {
                        "color": ["#000" if c else color for c in chosen],
                        "width": [2 if c else 0 for c in chosen],
                    },
                },
            )
        )
    rows_shown = timeline_rows(bars, parents)
    layout = {
        "height": 90 + 34 * max(1, len(rows_shown)),
        "margin": {"l": 10, "r": 10, "t": 10, "b": 30},
        "barmode": "overlay",
        "legend": {"orientation": "h", "y": -0.25 if len(rows_shown) < 4 else -0.1},
        "xaxis": {"type": "date", "title": None},
        "yaxis": {
            "categoryorder": "array",
            "categoryarray": rows_shown[::-1],
            "title": None,
            "fixedrange": True,
        },
    }
    return go.Figure(data=traces, layout=layout)
