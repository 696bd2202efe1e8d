"""Incident reports: contents, escaping of untrusted content, and ``toollens export``."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from incident import UNTRUSTED_ANSWER, UNTRUSTED_USER, import_incident, result_id
from typer.testing import CliRunner

from db.engine import make_engine
from db.writes.annotations import add_annotation
from db.writes.corrections import correct_result
from db.writes.review import mark_reviewed, review_queue
from ingest.cli import app
from ingest.importing.pipeline import import_paths
from ingest.outputs.report import (
    UnknownTraceError,
    build_report,
    report_file_name,
    to_json,
    to_markdown,
)
from ingest.outputs.report_html import _view_link, to_html

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOSTILE_NOTE = "<script>steal()</script> see https://evil.example/a.png url(//x) @import 'y'"


@pytest.fixture
def store(engine: sa.Engine, tmp_path: Path) -> tuple[sa.Engine, dict[str, int]]:
    """The incident imported into each database."""
    return engine, import_incident(engine, tmp_path)


class _Inventory(HTMLParser):
    """Every tag, attribute and text run of an HTML document."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str, str | None]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += [(tag, name, value) for name, value in attrs]
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def assert_self_contained(document: str) -> None:
    """No script, no external reference of any kind, anywhere in the file."""
    lowered = document.lower()
    for needle in ("<script", "<link", "<iframe", "<img", "src=", "href=", "url(", "@import"):
        assert needle not in lowered, needle
    assert re.search(r"https?://", lowered) is None
    inventory = _Inventory()
    inventory.feed(document)
    allowed = {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table", "tr",
        "th", "td", "div", "span", "pre", "b", "section",
    }  # fmt: skip
    assert inventory.tags <= allowed
    assert {name for _, name, _ in inventory.attributes} <= {
        "lang", "charset", "http-equiv", "content", "name", "class",
    }  # fmt: skip
    assert not any("url" in style or "import" in style for style in inventory.styles)


#: What incident-1's Tool Messages add (GPT-4o, $2.50 a million; no usage, so estimated): the
#: advice (13 tokens) is read by the calls at seq 4, 6 and 8 (8 and 9 are one turn), the two
#: repeats (8 tokens each) by two and one: 13 × 2 + 8 re-read; (39 + 16 + 8) × $2.50 a million.
INCIDENT_COST = {
    "tokens_added": 29, "later_calls": 6, "reread_tokens": 34, "reread_cached": 0,
    "cost_usd": 0.0001575, "priced_results": 3, "measured_results": 0, "estimated_results": 3,
}  # fmt: skip


def test_the_report_holds_the_key_figures_the_flagged_pairs_and_the_conversation(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, _ = store
    report = build_report(engine, "incident-1", now=T0)
    assert report["generated_at"] == "2026-11-30T09:00:00+00:00"
    assert report["trace"]["display_id"] == "incident-1"
    assert report["figures"] == {
        "messages": 10, "tool_calls": 4, "tool_results": 3, "errors": 3, "problems": 8,
        "total_tokens": 68, "tool_result_tokens": 29, "tool_result_share": 0.4265,
        "wasted_tokens": 16, "max_occurrence": 3, "tool_cost": INCIDENT_COST, "flagged_pairs": 4,
        "corrections": 0, "annotations": 0,
    }  # fmt: skip
    assert [(p["pair"], p["reasons"]) for p in report["flagged"]] == [
        ("2:0", ["error: not_found", "ignored suggestion"]),
        ("4:0", ["retry after error", "error: not_found", "finding: error_without_suggestion"]),
        (
            "6:0",
            [
                "loop: identical call #3 (k=3)",
                "retry after error",
                "error: not_found",
                "finding: error_without_suggestion",
            ],
        ),
        ("8:0", ["missing_result"]),
    ]
    first = report["flagged"][0]
    assert first["call"]["arguments"] == '{"id":7}'
    assert first["result"]["suggestion"] == "Use search_orders instead."
    assert first["result"]["verdict_reason"] == "repeated the identical failing call"
    conversation = report["conversation"]
    assert [m["role"] for m in conversation][:4] == ["system", "user", "assistant", "tool"]
    assert conversation[1]["content"] == UNTRUSTED_USER
    assert conversation[3]["result"]["pair"] == "2:0"
    assert conversation[8]["calls"] == [
        {"pair": "8:0", "tool": "send_email", "arguments": '{"to":"a@b.c"}',
         "pair_state": "missing_result"},
    ]  # fmt: skip


def test_a_lone_result_is_flagged_under_its_own_seq(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    report = build_report(engine, ids["orphan-3"])
    assert [(p["pair"], p["reasons"], "call" in p) for p in report["flagged"]] == [
        ("r1", ["orphan_result"], False)
    ]


def test_notes_corrections_and_the_review_appear_in_the_report(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    trace = ids["incident-1"]
    add_annotation(engine, trace, label="root-cause", note="ids are ints", author="ana", now=T0)
    add_annotation(
        engine, trace, label="tool-bug", note="no 404 advice", author="bo", message_seq=4,
        call_index=0, now=T0,
    )  # fmt: skip
    correct_result(engine, result_id(engine, trace, 3), author="ana", verdict="followed")
    mark_reviewed(engine, trace, "ana", now=T0)
    report = build_report(engine, trace)
    assert [(n["on"], n["label"], n["author"]) for n in report["annotations"]] == [
        ("trace", "root-cause", "ana"),
        ("4:0", "tool-bug", "bo"),
    ]
    assert (report["figures"]["corrections"], report["figures"]["annotations"]) == (1, 2)
    first, second = report["flagged"][:2]
    assert first["reasons"] == ["error: not_found"]  # the corrected verdict is no longer ignored
    assert (first["result"]["verdict"], first["result"]["verdict_derived"]) == (
        "followed",
        "ignored",
    )
    assert [n["note"] for n in second["notes"]] == ["no 404 advice"]
    assert report["trace"]["reviewed_by"] == "ana"
    md = to_markdown(report)
    assert "Corrected by `ana`: verdict `ignored` → `followed`\n" in md
    assert "| Reviewed | `2026-11-30T09:00:00+00:00 by ana` |" in md


def test_the_html_report_runs_no_script_and_references_nothing_outside_the_file(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    add_annotation(engine, ids["incident-1"], label="root-cause", note=HOSTILE_NOTE, author="ana")
    document = to_html(build_report(engine, "incident-1"))
    assert_self_contained(document)
    # The content is all there, as inert text.
    assert (
        "Cancel order 7 &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; see https&#58;//"
        in document
    )
    assert "&lt;img src&#61;https&#58;//evil.example/pixel.gif&gt;" in document
    assert (
        "&lt;script&gt;steal()&lt;/script&gt; see https&#58;//evil.example/a.png url&#40;//x)"
        in document
    )
    assert "&#64;import" in document
    assert "default-src &#x27;none&#x27;" not in document  # the CSP itself is not escaped
    assert "content=\"default-src 'none'; style-src 'unsafe-inline'" in document


def test_markdown_keeps_trace_content_in_fences_it_cannot_close(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, _ = store
    md = to_markdown(build_report(engine, "incident-1"))
    assert f"````text\n{UNTRUSTED_ANSWER}\n````" in md
    assert f"```text\n{UNTRUSTED_USER}\n```" in md
    assert md.startswith("# Incident report: `incident-1`\n")
    # Outside the fences every value is a code span: nothing becomes a link or HTML.
    outside = re.sub(r"(`{3,})text\n.*?\n\1|(`{3,})json\n.*?\n\2", "", md, flags=re.S)
    assert "http" not in outside
    assert "<" not in outside


def test_the_json_report_is_the_report_dict(store: tuple[sa.Engine, dict[str, int]]) -> None:
    engine, _ = store
    report = build_report(engine, "incident-1")
    assert orjson.loads(to_json(report)) == report


def test_long_messages_are_cut_and_say_how_long_they_were(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, _ = store
    report = build_report(engine, "incident-1", max_chars=10)
    user = report["conversation"][1]
    assert (user["content"], user["chars"], user["truncated"]) == ("Cancel ord", 73, True)
    whole = build_report(engine, "incident-1", max_chars=0)["conversation"][1]
    assert (whole["content"], whole["truncated"]) == (UNTRUSTED_USER, False)


def test_an_unknown_trace_has_no_report(store: tuple[sa.Engine, dict[str, int]]) -> None:
    engine, _ = store
    with pytest.raises(UnknownTraceError, match="no trace with id 'nope'"):
        build_report(engine, "nope")


def test_export_prints_markdown_and_writes_html_and_json_files(
    store: tuple[sa.Engine, dict[str, int]], db_url: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    printed = runner.invoke(app, ["export", "incident-1", "--db", db_url])
    assert printed.exit_code == 0
    assert printed.stdout.startswith("# Incident report: `incident-1`\n")
    out = tmp_path / "incident.html"
    wrote = runner.invoke(
        app, ["export", "incident-1", "--db", db_url, "--format", "html", "--out", str(out)]
    )
    assert wrote.exit_code == 0
    assert wrote.stderr == f"wrote {out} (4 flagged pairs)\n"
    assert_self_contained(out.read_text(encoding="utf-8"))
    as_json = runner.invoke(app, ["export", "orphan-3", "--db", db_url, "--format", "json"])
    assert orjson.loads(as_json.stdout)["figures"]["problems"] == 1


def test_export_of_an_unknown_trace_or_format_is_a_usage_error(
    store: tuple[sa.Engine, dict[str, int]], db_url: str
) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["export", "nope", "--db", db_url])
    assert missing.exit_code == 2
    assert missing.stderr == (
        "Error: no trace with id 'nope'; `toollens pairs` lists the trace ids\n"
    )
    pdf = runner.invoke(app, ["export", "incident-1", "--db", db_url, "--format", "pdf"])
    assert pdf.exit_code == 2
    assert pdf.stderr == "Error: unknown report format 'pdf'; use md, html or json\n"


@pytest.mark.realdata
def test_the_most_severe_tau_bench_trace_exports_with_its_exact_figures(
    realdata: Path, sqlite_url: str
) -> None:
    engine = make_engine(sqlite_url)
    import_paths(engine, [realdata / "openai-chat" / "tau-bench-gpt-4o-airline.json"])
    queue = review_queue(engine, limit=2)
    assert queue[["display_id", "severity", "errors", "loop_calls"]].values.tolist() == [
        ["05b2b7ef45ce", 12, 5, 7],
        ["a82b3e581b56", 9, 6, 3],
    ]
    report = build_report(engine, "05b2b7ef45ce")
    figures = report["figures"]
    assert (figures["messages"], figures["tool_calls"], figures["errors"]) == (62, 23, 5)
    assert (figures["tool_result_tokens"], figures["flagged_pairs"]) == (3213, 10)
    assert report["flagged"][-1]["reasons"][0] == "loop: identical call #4 (k=3)"
    assert_self_contained(to_html(report))


def test_the_json_export_carries_the_trace_metadata_as_imported(
    engine: sa.Engine, tmp_path: Path
) -> None:
    source = Path(__file__).parent / "golden" / "openai_chat" / "conversations" / "input.jsonl"
    import_paths(engine, [source], workers=0)
    url = engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(app, ["export", "conv-weather-1", "--db", url, "--format", "json"])
    assert result.exit_code == 0, result.output
    trace = orjson.loads(result.stdout)["trace"]
    assert trace["display_id"] == "conv-weather-1"
    assert trace["metadata"] == {"user": "u-17", "env": "staging"}
    assert "tools" not in trace and "tags" not in trace


def test_a_correction_that_confirms_the_derived_values_is_not_listed(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    trace = ids["incident-1"]
    advice = result_id(engine, trace, 3)
    correct_result(engine, advice, author="ana", error_type="not_found", verdict="ignored")
    report = build_report(engine, trace)
    assert report["figures"]["corrections"] == 0
    first = report["flagged"][0]
    assert (first["result"]["error_type_corrected"], first["result"]["verdict_corrected"]) == (
        "not_found",
        "ignored",
    )
    assert "Corrected by" not in to_markdown(report)
    assert "Corrected by" not in to_html(report)
    # Half a change is listed as that half.
    correct_result(engine, advice, author="ana", error_type="timeout", verdict="ignored")
    report = build_report(engine, trace)
    assert report["figures"]["corrections"] == 1
    assert "Corrected by `ana`: error type `not_found` → `timeout`\n" in to_markdown(report)
    assert "<p>Corrected by ana: error type not_found → timeout</p>" in to_html(report)


VIEW = "http://127.0.0.1:8501/trace?trace=incident-1&pair=4:0&model=gpt-4o"


def test_the_report_links_back_to_the_view_it_was_made_from(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, _ = store
    report = build_report(engine, "incident-1", view_url=VIEW)
    assert report["view_url"] == VIEW
    assert f"Made from this view: <{VIEW}>\n" in to_markdown(report)
    document = to_html(report)
    href = VIEW.replace("&", "&amp;")
    link = f'<p><a href="{href}" rel="noreferrer">Open this view in ToolLens</a></p>'
    assert document.count("<a ") == 1 and link in document
    # Apart from that one link, the file stays self-contained.
    assert_self_contained(document.replace(link, ""))
    # Without a known address there is no link at all.
    plain = build_report(engine, "incident-1")
    assert plain["view_url"] is None
    assert "Made from this view" not in to_markdown(plain)
    assert "<a " not in to_html(plain)


def test_only_a_web_address_is_linked() -> None:
    with pytest.raises(ValueError, match="not a web address"):
        _view_link("javascript:alert(1)")


@pytest.mark.parametrize(
    ("title", "display_id", "day", "name"),
    [
        (
            "Cancel order 7",
            "incident-1",
            date(2026, 11, 30),
            "toollens-Cancel-order-7-2026-11-30.md",
        ),
        ("Ärger mit <script> & /etc", "x", None, "toollens-Arger-mit-script-etc.md"),
        ("", "run/../../7", date(2026, 1, 2), "toollens-run-7-2026-01-02.md"),
        ("?!", "", None, "toollens-trace.md"),
        (
            "word " * 40,
            "x",
            None,
            "toollens-word-word-word-word-word-word-word-word-word-word-word-word.md",
        ),
    ],
)
def test_report_files_are_named_by_title_and_day_safely(
    title: str, display_id: str, day: date | None, name: str
) -> None:
    assert report_file_name(title, display_id, day, "md") == name


def test_the_report_gives_what_each_tool_message_costs_and_the_trace_in_all(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, _ = store
    report = build_report(engine, "incident-1", now=T0)
    costs = [
        {k: p["result"][k] for k in ("seq", "later_calls", "reread_tokens", "reread_cached",
                                     "reread_measured", "cost_usd")}
        for p in report["flagged"] if "result" in p
    ]  # fmt: skip
    assert costs == [
        {"seq": 3, "later_calls": 3, "reread_tokens": 26, "reread_cached": None,
         "reread_measured": False, "cost_usd": 0.0000975},
        {"seq": 5, "later_calls": 2, "reread_tokens": 8, "reread_cached": None,
         "reread_measured": False, "cost_usd": 0.00004},
        {"seq": 7, "later_calls": 1, "reread_tokens": 0, "reread_cached": None,
         "reread_measured": False, "cost_usd": 0.00002},
    ]  # fmt: skip
    assert report["conversation"][3]["result"]["reread_tokens"] == 26
    markdown = to_markdown(report)
    assert (
        "| What the Tool Messages cost (read again by later calls) | `29 tokens added, 34 re-read "
        "by 6 later calls; $0.000158; 3 estimated` |"
    ) in markdown
    assert "Cost: `read by ~3 later calls · ~26 re-read · $0.000098`" in markdown
    assert (
        "- result of `4:0` `lookup_order`: `error`, `not_found`, `paired` · `read by ~2 later "
        "calls · ~8 re-read · $0.000040`"
    ) in markdown
    document = to_html(report)
    assert "<div class=muted>Cost: read by ~1 later call · ~0 re-read · $0.000020</div>" in document
    assert_self_contained(document)


def test_a_report_on_a_model_without_a_price_says_tokens_only_and_a_measured_one_its_cache(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cost_traces import stored_traces

    from ingest.analysis.prices import PRICES_ENV
    from ingest.importing.pipeline import import_traces

    monkeypatch.delenv(PRICES_ENV, raising=False)
    engine = make_engine(db_url)
    import_traces(engine, stored_traces())
    unpriced = build_report(engine, "unpriced", now=T0)
    assert unpriced["figures"]["tool_cost"] == {
        "tokens_added": 70, "later_calls": 2, "reread_tokens": 70, "reread_cached": 0,
        "cost_usd": None, "priced_results": 0, "measured_results": 0, "estimated_results": 1,
    }  # fmt: skip
    markdown = to_markdown(unpriced)
    assert (
        "`70 tokens added, 70 re-read by 2 later calls; tokens only (no price for the model); "
        "1 estimated`"
    ) in markdown
    assert "· `read by ~2 later calls · ~70 re-read · tokens only`" in markdown
    measured = build_report(engine, "measured", now=T0)
    # Claude Sonnet 4.5 with usage (tests/test_costs.py): 2,000 + 1,200 re-read, 2,000 + 700 of
    # them cached, $0.0036 + $0.00342 + $0.0009 + $0.0006.
    assert measured["figures"]["tool_cost"] == {
        "tokens_added": 2700, "later_calls": 7, "reread_tokens": 3200, "reread_cached": 2700,
        "cost_usd": 0.00852, "priced_results": 4, "measured_results": 4, "estimated_results": 0,
    }  # fmt: skip
    lines = to_markdown(measured).splitlines()
    assert (
        "| What the Tool Messages cost (read again by later calls) | `2,700 tokens added, 3,200 "
        "re-read (2,700 cached) by 7 later calls; $0.008520` |"
    ) in lines
    assert (
        "- result of `1:0` `a`: `success`, `paired` · `read by 3 later calls · 2,000 re-read "
        "(2,000 cached) · $0.003600`"
    ) in lines
    engine.dispose()


def test_a_report_of_a_trace_stored_before_its_costs_were_derived_says_so(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE tool_results SET later_calls = NULL, reread_tokens = NULL,"
                " reread_cached = NULL, reread_measured = NULL, cost_nano_usd = NULL"
                " WHERE trace_id = :trace"
            ),
            {"trace": ids["incident-1"]},
        )
    report = build_report(engine, "incident-1", now=T0)
    assert report["figures"]["tool_cost"] is None
    assert report["flagged"][0]["result"]["later_calls"] is None
    markdown = to_markdown(report)
    assert (
        "| What the Tool Messages cost (read again by later calls) | `not derived for this trace "
        "yet (toollens reanalyze derives it)` |"
    ) in markdown
    assert "Cost:" not in markdown
