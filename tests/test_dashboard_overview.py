"""The dashboard shell (entry script, sidebar filters in the URL, safe rendering) and the Overview
page, run with Streamlit's AppTest on the fixture store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from dbfixture import DASHBOARD_APP, OpenPage

from dashboard import pages, render, state
from db.queries.filters import Filters
from db.queries.summary import summarize


def _metrics(at: object) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}  # type: ignore[attr-defined]


def _deltas(at: object) -> dict[str, str]:
    return {m.label: m.delta for m in at.metric if m.delta}  # type: ignore[attr-defined]


def test_overview_headline_metrics_equal_the_summary(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url)
    summary = summarize(sa.create_engine(store_url))
    metrics = _metrics(at)
    assert metrics["Traces"] == str(summary["traces"]) == "3"
    assert metrics["Tool calls"] == str(summary["tool_calls"]) == "8"
    assert metrics["Errors"] == str(summary["status"]["error"]) == "4"
    assert metrics["Error rate"] == "44.4%"
    problems = sum(n for state, n in summary["pair_states"].items() if state != "paired")
    assert metrics["Pairing problems"] == str(problems) == "4"
    assert metrics["Loop calls (k=3)"] == str(summary["loops"]["calls"]) == "3"
    assert metrics["Suggestions followed"] == "50.0%"
    # The counts under the rate: a rate is never shown without them.
    assert _deltas(at) == {"Suggestions followed": "1 of 2 decided"}
    # The one result over the 2,000-token budget (weather-1's 3,000-token forecast).
    assert metrics["Over budget"] == "1"


def test_overview_applies_filters_and_k_from_the_url(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, params={"agent": "support-bot", "k": "2"})
    assert at.sidebar.selectbox(key="agent").value == "support-bot"
    # The lines under the sidebar's two popovers say what is in use.
    assert [c.value for c in at.sidebar.caption][:2] == [
        "In use: Agent",
        "Loop threshold k 2 · error streak k 3 · token budget 2,000",
    ]
    metrics = _metrics(at)
    expected = summarize(
        sa.create_engine(store_url), loop_k=2, filters=Filters(agent="support-bot")
    )
    assert metrics["Traces"] == str(expected["traces"]) == "2"
    assert metrics["Errors"] == str(expected["status"]["error"]) == "2"
    assert metrics["Loop calls (k=2)"] == str(expected["loops"]["calls"]) == "3"
    assert metrics["Pairing problems"] == "1"


def test_overview_date_range_is_inclusive_of_the_end_day(
    open_page: OpenPage, store_url: str
) -> None:
    at = open_page(store_url, params={"start": "2026-11-02", "end": "2026-11-02"})
    assert _metrics(at)["Traces"] == "1"


def test_overview_scorecard_lists_every_tool_with_its_follow_rate(
    open_page: OpenPage, store_url: str
) -> None:
    at = open_page(store_url, params={"overview_tab": "Scorecard"})
    card = next(df.value for df in at.dataframe if "follow" in df.value.columns)
    assert card["tool"].tolist() == [
        "get_weather", "lookup_order", "search_docs", "send_email", "send_sms",
    ]  # fmt: skip
    assert card["follow"].tolist() == ["100% (1 of 1)", "0% (0 of 1)", "—", "—", "—"]
    # Rates as percentages for the one-decimal columns; p50 / p95 tokens in one cell.
    # send_email's call never got an answer: no error rate, no token figures.
    assert card["error_pct"].round(1).fillna(-1).tolist() == [33.3, 66.7, 50.0, -1, 0.0]
    assert card["tokens"].tolist()[2:4] == ["6 / 9", "—"]


def test_overview_findings_read_as_words(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, params={"overview_tab": "Top problems"})
    findings = next(df.value for df in at.dataframe if "finding" in df.value.columns)
    kinds = list(summarize(sa.create_engine(store_url))["findings"])
    assert findings["finding"].tolist() == kinds  # what a selected row filters the calls to
    assert findings["label"].tolist() == [render.humanize(name) for name in kinds]
    assert "Error without suggestion" in findings["label"].tolist()


def test_sidebar_names_the_token_encoding(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url)
    assert [c.value for c in at.sidebar.caption][:3] == [
        "None in use: every trace counts",
        "Loop threshold k 3 · error streak k 3 · token budget 2,000",
        "Token counts: o200k_base",
    ]


def test_the_filters_in_use_are_named_in_the_sidebars_order() -> None:
    values = {"tool": "lookup", "since": "", "model": None, "start": "2026-11-30", "import": "2"}
    assert state.filters_in_use(values) == "In use: From, Import, Tool"
    assert state.filters_in_use({"since": "", "agent": None}) == "None in use: every trace counts"


def test_a_filter_matching_nothing_says_so(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url, params={"start": "2030-01-01"})
    assert [i.value for i in at.info] == [render.NO_MATCH_TEXT]


def test_db_url_comes_from_the_command_line_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLLENS_DB", "postgresql://u@h/d")
    assert state.db_url(["--db", "runs.db"]) == "sqlite:///runs.db"
    assert state.db_url([]) == "postgresql+psycopg://u@h/d"
    monkeypatch.delenv("TOOLLENS_DB")
    assert state.db_url([]) == "sqlite:///toollens.db"


def test_safe_url_hides_the_password() -> None:
    assert state.safe_url("postgresql+psycopg://me:secret@h/d") == "postgresql+psycopg://me:***@h/d"


def test_escape_markdown_leaves_no_link_image_or_directive() -> None:
    hostile = "[click](http://evil.example) ![x](y.png) :red[alarm] <b>hi</b> $x$\nnext"
    escaped = render.escape_markdown(hostile)
    assert escaped == (
        "\\[click\\]\\(http\\:\u200b\\/\\/evil\\.example\\) "
        r"\!\[x\]\(y\.png\) \:red\[alarm\] "
        r"\<b\>hi\<\/b\> \$x\$ next"
    )
    # Every punctuation character is escaped, so no markdown syntax survives.
    assert re.search(r"(?<!\\)[\[\]()<>:!$]", escaped) is None


def test_badge_text_escapes_its_label() -> None:
    assert render.badge_text("a]b", "red") == r":red-badge[a\]b]"


def test_rates_are_shown_with_their_counts() -> None:
    assert render.rate_text(31, 50) == "62% (31 of 50)"
    assert render.rate_text(0, 0) == "– (0 of 0)"
    assert render.percent_text(4, 9) == "44.4%"
    assert render.percent_text(1, 0) == "–"


def test_counts_agree_in_number() -> None:
    assert render.count_text(1, "token") == "1 token"
    assert render.count_text(3210, "token") == "3,210 tokens"
    assert render.size_text(12345, 1) == "12,345 chars, 1 token"


def test_ordinals_read_naturally() -> None:
    assert [render.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st",
    ]  # fmt: skip


def test_pretty_indents_json_and_leaves_text_alone() -> None:
    assert render.pretty('{"b":1,"a":[1,2]}') == (
        '{\n  "b": 1,\n  "a": [\n    1,\n    2\n  ]\n}',
        "json",
    )
    assert render.pretty("Error: {not json") == ("Error: {not json", None)
    assert render.pretty("{broken") == ("{broken", None)


def test_the_page_registry_lists_every_page_file_once_with_one_default() -> None:
    listed = [p.script for p in pages.PAGES]
    on_disk = sorted(f"views/{p.name}" for p in (DASHBOARD_APP.parent / "views").glob("*.py"))
    assert sorted(listed) == on_disk
    assert len(listed) == len(set(listed))
    assert (
        len({p.key for p in pages.PAGES}) == len({p.url_path for p in pages.PAGES}) == len(listed)
    )
    assert [p.key for p in pages.PAGES if p.default] == ["overview"]
    assert [p.path for p in pages.PAGES][:3] == ["/", "/calls", "/trace"]


def test_every_registered_page_opens_with_its_title(open_page: OpenPage, store_url: str) -> None:
    at = open_page(store_url)
    assert [t.value for t in at.title] == [pages.OVERVIEW.title]
    for page in pages.PAGES:
        at.switch_page(page.script).run()
        assert not at.exception, page.key
        assert [t.value for t in at.title] == [page.title], page.key


FORBIDDEN_RENDERING = ("unsafe_allow_html=True", "st.html(", "components.html(", "components.v1")


def test_the_dashboard_never_renders_html() -> None:
    """No page draws HTML or markdown markup; the one exception is ``address.run_script``,
    which runs the dashboard's own fixed scripts (history, sign-in return, scrolling): every
    call passes a module constant, or the scroll template filled with a checked widget key."""
    sources = sorted(DASHBOARD_APP.parent.rglob("*.py"))
    assert Path(DASHBOARD_APP) in sources
    calls = []
    for source in sources:
        text = source.read_text()
        for forbidden in ("unsafe_allow_html=True", "components.html(", "components.v1"):
            assert forbidden not in text, f"{source.name} uses {forbidden}"
        drawn = re.findall(r"\.html\(", text)
        assert not drawn or source.name == "address.py", f"{source.name} draws HTML"
        calls += [(source.name, arg) for arg in re.findall(r"(?<!def )run_script\(([^,)]+)", text)]
    assert sorted(calls) == [
        ("address.py", "HISTORY_SCRIPT"),
        ("address.py", "REMEMBER_SCRIPT"),
        ("address.py", "RETURN_SCRIPT"),
        ("scroll.py", "body"),
    ]


def test_selecting_a_loop_on_the_overview_opens_its_first_call(
    open_page: OpenPage, store_url: str
) -> None:
    at = open_page(store_url, params={"k": "2", "overview_tab": "Top problems"})
    loops = next(df.value for df in at.dataframe if "calls" in df.value.columns)
    first = loops.iloc[0]
    at.session_state["top_loops"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert (at.query_params.get("trace"), at.query_params.get("pair")) == (
        first["trace"],
        f"{first['first_seq']}:{first['first_call_index']}",
    )
    assert [t.value for t in at.title] == ["Trace"]


def test_selecting_an_error_group_on_the_overview_opens_it_on_the_errors_page(
    open_page: OpenPage, store_url: str
) -> None:
    at = open_page(store_url, params={"overview_tab": "Top problems"})
    groups = next(df.value for df in at.dataframe if "fingerprint" in df.value.columns)
    at.session_state["top_errors"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert at.query_params.get("fingerprint") == groups.iloc[0]["fingerprint"]
    assert [t.value for t in at.title] == ["Errors"]


def test_escaped_labels_give_markdown_no_autolink_to_start_from() -> None:
    text = render.escape_markdown("see https://evil.example and www.evil.com or a@b.com")
    assert "://" not in text.replace("\\", "")
    assert "https\\:\u200b\\/\\/evil" in text
    assert "www\u200b\\.evil" in text
    assert "a\\@\u200bb" in text
