"""One palette: every chart and badge colors a status, pair state, verdict or error type with the
color :mod:`dashboard.palette` gives it, and no other module keeps a color map of its own."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pandas as pd

import dashboard
from dashboard import palette, trace_blocks
from dashboard.charts import errors, overview, suggestions
from db.contract.vocabulary import ERROR_TYPES, PAIR_STATES, STATUS_SOURCES, STATUSES, VERDICTS

VOCABULARIES: dict[palette.Kind, tuple[str, ...]] = {
    "status": STATUSES,
    "status_source": STATUS_SOURCES,
    "pair_state": PAIR_STATES,
    "verdict": VERDICTS,
    "error_type": ERROR_TYPES,
}
BADGE_COLORS = {"red", "orange", "yellow", "green", "blue", "violet", "gray"}


def test_every_value_of_every_vocabulary_has_its_own_color() -> None:
    for kind, values in VOCABULARIES.items():
        tables = {
            "status": palette.STATUS,
            "status_source": palette.STATUS_SOURCE,
            "pair_state": palette.PAIR_STATE,
            "verdict": palette.VERDICT,
            "error_type": palette.ERROR_TYPE,
        }
        assert tuple(tables[kind]) == values, kind
        hexes = [palette.color(kind, v) for v in values]
        assert len(set(hexes)) == len(values), kind
        assert {palette.badge(kind, v) for v in values} <= BADGE_COLORS


def test_an_unknown_value_takes_a_stable_extra_color_never_one_of_the_vocabulary() -> None:
    # CRC-32 of the name: the same on every page, in every process, for every store.
    assert palette.swatch("error_type", "payment_declined") == palette.Swatch("#5F5F5F", "gray")
    assert palette.swatch("error_type", "my_protocol_type") == palette.Swatch("#D7B5A6", "orange")
    assert palette.swatch("error_type", "my_protocol_type") in palette.EXTRA
    vocabulary_hexes = {palette.color(k, v) for k, values in VOCABULARIES.items() for v in values}
    assert not {s.hex for s in palette.EXTRA} & vocabulary_hexes
    assert len({s.hex for s in palette.EXTRA}) == len(palette.EXTRA) == 11


def test_green_means_a_good_outcome_and_no_error_type_is_green() -> None:
    assert palette.badge("status", "success") == "green"
    assert palette.badge("pair_state", "paired") == "green"
    assert palette.badge("verdict", "followed") == "green"
    assert "green" not in {palette.badge("error_type", t) for t in ERROR_TYPES}
    assert "green" not in {s.badge for s in palette.EXTRA}


def test_error_charts_color_each_error_type_and_source_with_the_palette() -> None:
    df = pd.DataFrame(
        {
            "tool": ["a", "a", "b"],
            "bucket": ["d1", "d1", "d2"],
            "error_type": ["timeout", "payment_declined", "auth"],
            "errors": [1, 2, 3],
        }
    )
    expected = {t: palette.color("error_type", t) for t in df["error_type"]}
    for fig in (errors.error_types_by_tool_chart(df), errors.errors_over_time_chart(df, "day")):
        assert {t.name: t.marker.color for t in fig.data} == expected
    by_type = overview.errors_by_type_chart(df[["error_type", "errors"]])
    assert list(by_type.data[0].marker.color) == [
        palette.color("error_type", t) for t in ("auth", "payment_declined", "timeout")
    ]
    sources = errors.error_sources_chart(
        pd.DataFrame(
            {
                "status_source": ["inferred", "explicit", "protocol"],
                "rule": ["r", "f", "p"],
                "errors": [1, 1, 1],
            }
        )
    )
    assert list(sources.data[0].x) == ["explicit", "protocol", "inferred"]
    assert list(sources.data[0].marker.color) == [
        palette.color("status_source", s) for s in ("explicit", "protocol", "inferred")
    ]


def test_verdict_and_outcome_charts_color_with_the_palette() -> None:
    verdicts = overview.verdict_chart(
        pd.DataFrame({"verdict": list(VERDICTS), "results": [4, 3, 2, 1]})
    )
    assert list(verdicts.data[0].marker.color) == [
        palette.color("verdict", v) for v in reversed(VERDICTS)
    ]
    rates = suggestions.follow_rate_chart(
        pd.DataFrame({"tool": ["a"], "followed": [1], "decided": [2], "follow_rate": [0.5]}),
        "tool",
    )
    assert rates.data[0].marker.color == palette.color("verdict", "followed")
    recovery = suggestions.recovery_chart(
        pd.DataFrame(
            {"group": ["with"], "recovered": [1], "not_recovered": [1], "no_next_call": [1]}
        )
    )
    assert [t.marker.color for t in recovery.data] == [
        palette.color("status", "success"),
        palette.color("status", "error"),
        palette.GRAY.hex,
    ]


def test_trace_badges_color_status_error_type_pair_state_and_verdict_with_the_palette() -> None:
    result = pd.Series(
        {
            "message_seq": 4, "status": "partial", "error_type": "timeout",
            "error_type_corrected": None, "status_source": "protocol", "tokens": 10,
            "pair_state": "late_result", "name_mismatch": False,
        }
    )  # fmt: skip
    assert trace_blocks.result_header(result, 2000) == (
        "Tool Message · seq 4\n\n:yellow-badge[partial] :orange-badge[timeout] "
        ":gray-badge[protocol] :blue-badge[10 tokens] :yellow-badge[late\\_result]"
    )
    advice = pd.Series(
        {"suggestion": "ask the user", "suggestion_kind": "ask_user", "content": "",
         "verdict": "no_next_action", "verdict_corrected": None}
    )  # fmt: skip
    assert trace_blocks.advice_line(advice) == (
        r":blue-badge[advice\: ask the user] :gray-badge[verdict\: no\_next\_action]"
    )
    call = pd.Series(
        {"tool_name": "t", "message_seq": 1, "call_index": 0, "tool_call_id": None,
         "pair_state": "missing_result", "occurrence": 1}
    )  # fmt: skip
    assert trace_blocks.call_header(call, 3) == "**t** · call 1:0\n\n:red-badge[missing\\_result]"


def _color_maps(module: object) -> list[str]:
    """Names of the module's own dicts mapping two or more vocabulary values to colors."""
    words = {v for values in VOCABULARIES.values() for v in values}
    found = []
    for name, value in vars(module).items():
        if module is not palette and any(value is v for v in vars(palette).values()):
            continue  # the palette's own map, imported
        if isinstance(value, dict) and len(set(map(str, value)) & words) >= 2:
            colors = [c.hex if isinstance(c, palette.Swatch) else c for c in value.values()]
            if all(isinstance(c, str) and (c.startswith("#") or c in BADGE_COLORS) for c in colors):
                found.append(name)
    return found


def test_only_the_palette_maps_vocabulary_values_to_colors() -> None:
    # Every module but the app script (the pages in views/ are scripts too, run by it).
    modules = [
        importlib.import_module(f"dashboard.{m.name}")
        for m in pkgutil.iter_modules(dashboard.__path__)
        if not m.ispkg and m.name != "app"
    ]
    modules += [
        importlib.import_module(f"dashboard.charts.{m.name}")
        for m in pkgutil.iter_modules(importlib.import_module("dashboard.charts").__path__)
    ]
    owners = {m.__name__: _color_maps(m) for m in modules}
    assert {name: maps for name, maps in owners.items() if maps} == {
        "dashboard.palette": [
            "STATUS", "STATUS_SOURCE", "PAIR_STATE", "VERDICT", "ERROR_TYPE", "MARKER",
        ]
    }  # fmt: skip


def test_every_outline_marker_kind_has_its_color() -> None:
    from db.queries.traces import MARKER_KINDS

    assert tuple(palette.MARKER) == MARKER_KINDS
    assert palette.MARKER["error"] == palette.color("status", "error")
    assert palette.MARKER["late_result"] == palette.color("pair_state", "late_result")


def test_the_chart_layer_does_not_import_ingest() -> None:
    code = (
        "import sys, dashboard.charts.errors, dashboard.charts.overview, "
        "dashboard.charts.suggestions, dashboard.charts.tokens, dashboard.charts.loops, "
        "dashboard.palette; print(sorted(m for m in sys.modules if m.split('.')[0] == 'ingest'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
