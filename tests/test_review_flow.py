"""The incident review flow through the whole dashboard, in AppTest: from the Overview to a
problem pair, a label and a note on it, a corrected verdict, a link and an HTML report; the
Tool calls downloads, the upload on the Imports page, and the "corrected by reviewers"
captions of the Errors and Suggestions pages.

Download buttons build their file when clicked; :class:`Downloads` keeps AppTest's in-memory
media store so that a test can read the bytes a click would send.
"""

from __future__ import annotations

import html
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pandas as pd
import pytest
import sqlalchemy as sa
import streamlit.testing.v1.app_test as app_test_module
from dbfixture import OpenPage
from incident import import_incident, result_id
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.media_file_storage import MediaFileStorage
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from dashboard import files_ui, pages, review_ui
from db.queries.filters import Filters
from db.queries.pairs import PairQuery, count_pairs
from db.queries.summary import summarize
from db.writes.annotations import add_annotation, annotations_on
from db.writes.corrections import correct_result, correction_counts, result_review
from db.writes.review import trace_header as review_header

CALLS, TRACE, ERRORS = pages.CALLS.script, pages.TRACE.script, pages.ERRORS.script
SUGGESTIONS, IMPORTS = pages.SUGGESTIONS.script, pages.IMPORTS.script
#: A note with characters HTML must escape and a URL a report must not make live.
NOTE = 'Ignored "use search_orders" <b>three times</b> & see https://evil.example/x'
NO_AUTHOR = review_ui.NO_AUTHOR_TEXT


class Downloads:
    """Records the media store of every AppTest run, to read what a download button sends."""

    def __init__(self) -> None:
        self.stores: list[tuple[MediaFileManager, MemoryMediaFileStorage]] = []

    def manager_class(self) -> type[MediaFileManager]:
        """A media file manager that registers itself (and its storage) here."""
        stores = self.stores

        class RecordingManager(MediaFileManager):
            def __init__(self, storage: MediaFileStorage) -> None:
                super().__init__(storage)
                assert isinstance(storage, MemoryMediaFileStorage)
                stores.append((self, storage))

        return RecordingManager

    def file(self, at: Any, key: str) -> Any:
        """The file (content, file name …) the download button ``key`` of the last run sends
        when clicked."""
        button = next(b for b in at.get("download_button") if b.key == key)
        manager, storage = self.stores[-1]
        proto = button.proto
        url = (
            manager.execute_deferred(proto.deferred_file_id)
            if proto.deferred_file_id
            else proto.url
        )
        return storage.get_file(url.rsplit("/", 1)[-1])

    def content(self, at: Any, key: str) -> bytes:
        """The file the download button ``key`` of the last run sends when clicked."""
        return bytes(self.file(at, key).content)


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> Downloads:
    """AppTest runs whose download files a test can read."""
    recorder = Downloads()
    monkeypatch.setattr(app_test_module, "MediaFileManager", recorder.manager_class())
    return recorder


def texts(at: Any, kind: str) -> list[str]:
    """The values of every element of one kind (``caption``, ``code``, ``text`` …)."""
    return [str(e.value) for e in getattr(at, kind)]


def expander(at: Any, label: str) -> Any:
    """The expander with this label."""
    return next(e for e in at.expander if e.label == label)


def review_box(at: Any) -> Any:
    """The expander holding the selected pair's notes and correction form."""
    return next(e for e in at.expander if e.label.startswith("Notes and corrections on this"))


def open_review_box(at: Any, trace_id: int, seq: int, call_index: int | None) -> None:
    """Open the selected pair's review box as a click would (its forms are drawn only while
    it is open) and rerun."""
    at.session_state[f"review_{trace_id}_{seq}_{call_index}"] = True
    at.run()
    assert not at.exception


def form_button(at: Any, form: str) -> Any:
    """The submit button of the form ``form``."""
    return next(b for b in at.button if b.form_id == form)


def add_note_on_page(at: Any, key: str, label: str, note: str) -> None:
    """Fill and submit the "add a note" form of the annotation panel ``key``."""
    at.selectbox(key=f"{key}_new_label").set_value(label)
    at.text_area(key=f"{key}_new_note").input(note)
    form_button(at, f"{key}_new").click().run()
    assert not at.exception


def test_a_reviewer_goes_from_the_overview_to_a_problem_pair_labels_corrects_and_shares_it(
    open_page: OpenPage,
    incident_store: tuple[sa.Engine, dict[str, int]],
    sqlite_url: str,
    downloads: Downloads,
) -> None:
    engine, ids = incident_store
    incident = ids["incident-1"]
    advice = result_id(engine, incident, 3)
    before = summarize(engine)["suggestions"]
    assert (before["followed"], before["ignored"], before["follow_rate"]) == (0, 1, 0.0)

    at = open_page(sqlite_url)
    assert texts(at, "title") == ["Overview"]
    followed = next(m for m in at.metric if m.label == "Suggestions followed")
    assert (followed.value, followed.delta) == ("0.0%", "0 of 1 decided")
    # The Overview says advice was ignored; the Tool calls page, narrowed to it, opens the pair.
    at.query_params["verdict"] = "ignored"
    at.switch_page(CALLS).run()
    assert at.dataframe(key="pairs_table").value[["trace", "pair"]].values.tolist() == [
        ["incident-1", "2:0"]
    ]
    at.session_state["pairs_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert texts(at, "title") == ["Trace"]
    assert (at.query_params["trace"], at.query_params["pair"]) == ("incident-1", "2:0")
    selected = expander(at, "Selected pair")
    problems, head = texts(selected, "markdown")[:2]
    assert problems == (
        r"**2 problems:** error \(the Tool Message has status error\)\; advice ignored \(the "
        r"model did not follow the advice the Tool Message gave\)"
    )
    assert head.startswith(r"**lookup\_order** · call 2:0")
    # The forms are in their own box, closed while the pair has no note, and drawn only open.
    assert review_box(at).label == "Notes and corrections on this pair (0 notes)"
    assert texts(review_box(at), "caption") == []

    # AppTest reruns the page last named to switch_page (Tool calls); the browser is on Trace.
    at.switch_page(TRACE)
    open_review_box(at, incident, 2, 0)
    assert texts(review_box(at), "caption").count(NO_AUTHOR) == 2  # both need a name
    at.text_input(key="reviewer").input("ana").run()
    add_note_on_page(at, f"notes_{incident}_2_0", "model-bug", NOTE)
    verdict = next(s for s in review_box(at).selectbox if s.label == "Verdict")
    assert verdict.format_func(verdict.value) == "as derived: ignored"
    verdict.set_value("followed")
    form_button(at, f"correct_{advice}").click().run()
    assert not at.exception

    (note,) = annotations_on(engine, incident, 2, 0)
    assert (note.label, note.note, note.author) == ("model-bug", NOTE, "ana")
    assert annotations_on(engine, incident) == []
    review = result_review(engine, advice)
    assert (review.verdict, review.verdict_corrected, review.corrected_by) == (
        "ignored",
        "followed",
        "ana",
    )
    after = summarize(engine)
    assert after["corrections"] == 1
    assert (after["suggestions"]["followed"], after["suggestions"]["ignored"]) == (1, 0)
    assert after["suggestions"]["follow_rate"] == 1.0
    # The page shows what is stored: the note as plain text, the verdict marked corrected.
    assert review_box(at).label == "Notes and corrections on this pair (1 note)"
    assert NOTE in texts(review_box(at), "text")
    assert "Notes and labels on this pair (1)" in texts(review_box(at), "caption")
    advice = texts(expander(at, "Selected pair"), "markdown")[3]
    assert advice.endswith(r":green-badge[verdict\: followed \(corrected\)]")

    link = texts(at, "code")[0]
    assert link == "/trace?trace=incident-1&pair=2:0"
    report = downloads.content(at, f"report_{incident}_html").decode()
    assert report.startswith("<!DOCTYPE html>")
    assert html.escape(NOTE).replace("://", "&#58;//") in report
    assert NOTE not in report and "<b>three times</b>" not in report
    assert "https://" not in report  # opens offline: nothing refers outside the file

    # The link opens the same pair, with the note, for a colleague.
    shared = open_page(sqlite_url, TRACE, dict(parse_qsl(urlsplit(link).query)))
    assert NOTE in texts(review_box(shared), "text")


def test_the_trace_page_counts_notes_per_pair_and_any_pair_can_be_selected(
    open_page: OpenPage, incident_store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    engine, ids = incident_store
    incident = ids["incident-1"]
    add_annotation(
        engine, incident, label="root-cause", note="loop on a missing order", author="bo"
    )
    for label in ("tool-bug", "root-cause", "tool-bug"):
        add_annotation(
            engine, incident, label=label, note="", author="bo", message_seq=4, call_index=0
        )
    at = open_page(sqlite_url, TRACE, {"trace": "incident-1"})
    notes = expander(at, "Notes and labels (1)")
    assert texts(notes, "text") == ["loop on a missing order"]
    assert texts(notes, "caption")[0] == "3 more notes on pairs, shown under each pair."
    assert r"3 notes\: tool\-bug\, root\-cause" in texts(at, "caption")  # escaped labels
    assert [b.key for b in at.button if b.key and b.key.startswith("select_")] == [
        "select_2:0", "select_4:0", "select_6:0", "select_8:0",
    ]  # fmt: skip
    assert texts(at, "code")[0] == "/trace?trace=incident-1"

    at.button(key="select_8:0").click().run()
    assert not at.exception
    assert at.query_params["pair"] == "8:0"
    selected = expander(at, "Selected pair")
    assert texts(selected, "warning") == ["No result ever came back for this call."]
    open_review_box(at, incident, 8, 0)
    assert "No Tool Message came back: there is nothing to correct." in texts(
        review_box(at), "caption"
    )
    assert [b.key for b in at.button if b.key and b.key.startswith("select_")] == [
        "select_2:0", "select_4:0", "select_6:0",
    ]  # fmt: skip
    assert texts(at, "code")[0] == "/trace?trace=incident-1&pair=8:0"


def test_a_lone_result_is_annotated_on_its_own_message(
    open_page: OpenPage, incident_store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    engine, ids = incident_store
    orphan = ids["orphan-3"]
    at = open_page(sqlite_url, TRACE, {"trace": "orphan-3", "pair": "r1"})
    selected = expander(at, "Selected pair")
    assert texts(selected, "warning") == ["Orphan result: no call in this trace has its id."]
    open_review_box(at, orphan, 1, None)
    assert "Nothing to correct: this result is not an error and gives no suggestion." in texts(
        review_box(at), "caption"
    )
    at.text_input(key="reviewer").input("ana").run()
    add_note_on_page(at, f"notes_{orphan}_1_None", "tool-bug", "answers a call nobody made")
    assert [(n.message_seq, n.call_index, n.note) for n in annotations_on(engine, orphan, 1)] == [
        (1, None, "answers a call nobody made")
    ]


def test_the_tool_calls_page_downloads_every_filtered_row_as_csv_and_parquet(
    open_page: OpenPage,
    incident_store: tuple[sa.Engine, dict[str, int]],
    sqlite_url: str,
    downloads: Downloads,
) -> None:
    engine, _ = incident_store
    at = open_page(sqlite_url, CALLS, {"status": "error"})
    assert [b.label for b in at.get("download_button")] == ["CSV", "Parquet"]
    assert "Downloads hold all 3 rows these filters match, not just this page." in texts(
        at, "caption"
    )
    csv = pd.read_csv(io.BytesIO(downloads.content(at, "toollens-calls_csv")))
    assert len(csv) == count_pairs(engine, query=PairQuery(status="error")) == 3
    assert csv[["trace", "pair", "status", "error_type"]].values.tolist() == [
        ["incident-1", "2:0", "error", "not_found"],
        ["incident-1", "4:0", "error", "not_found"],
        ["incident-1", "6:0", "error", "not_found"],
    ]
    parquet = pd.read_parquet(io.BytesIO(downloads.content(at, "toollens-calls_parquet")))
    assert parquet["pair"].tolist() == ["2:0", "4:0", "6:0"]


def test_a_download_over_the_row_cap_holds_the_first_rows_and_says_so(
    open_page: OpenPage,
    incident_store: tuple[sa.Engine, dict[str, int]],
    sqlite_url: str,
    downloads: Downloads,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(files_ui, "TABLE_DOWNLOAD_MAX_ROWS", 2)
    at = open_page(sqlite_url, CALLS)
    assert (
        "Downloads hold the first 2 of 6 rows, in this order; narrow the filters to get the rest."
        in texts(at, "caption")
    )
    csv = pd.read_csv(io.BytesIO(downloads.content(at, "toollens-calls_csv")))
    assert csv["pair"].tolist() == ["2:0", "4:0"]


def test_the_imports_page_offers_the_upload_also_on_an_empty_store(
    open_page: OpenPage,
    incident_store: tuple[sa.Engine, dict[str, int]],
    sqlite_url: str,
    tmp_path: Path,
) -> None:
    at = open_page(sqlite_url, IMPORTS)
    assert "### Upload traces" in texts(at, "markdown")
    assert [u.label for u in at.file_uploader] == [
        "Trace files (.json, .jsonl, .gz — up to 200 MB each)"
    ]
    empty = open_page(f"sqlite:///{tmp_path / 'empty.db'}", IMPORTS)
    assert len(empty.file_uploader) == 1


def test_errors_and_suggestions_pages_say_how_many_values_reviewers_corrected(
    open_page: OpenPage, incident_store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    engine, ids = incident_store
    errors = open_page(sqlite_url, ERRORS)
    suggestions = open_page(sqlite_url, SUGGESTIONS)
    for at in (errors, suggestions):
        assert not at.exception
        assert not [c for c in texts(at, "caption") if "corrected by reviewers" in c]
    incident = ids["incident-1"]
    correct_result(
        engine, result_id(engine, incident, 3), author="ana", error_type="unknown_tool",
        verdict="followed",
    )  # fmt: skip
    correct_result(engine, result_id(engine, incident, 5), author="ana", error_type="timeout")
    errors = open_page(sqlite_url, ERRORS)
    assert (
        "2 error types corrected by reviewers; the figures and charts use the corrected types."
        in texts(errors, "caption")
    )
    suggestions = open_page(sqlite_url, SUGGESTIONS)
    assert (
        "1 verdict corrected by reviewers; the figures and charts use the corrected verdicts."
        in texts(suggestions, "caption")
    )


def test_correction_counts_count_each_corrected_field_under_the_filters(
    engine: sa.Engine, tmp_path: Path
) -> None:
    ids = import_incident(engine, tmp_path)
    incident = ids["incident-1"]
    assert correction_counts(engine) == {"error_type": 0, "verdict": 0}
    correct_result(
        engine, result_id(engine, incident, 3), author="ana", error_type="unknown_tool",
        verdict="followed",
    )  # fmt: skip
    correct_result(engine, result_id(engine, incident, 7), author="bo", error_type="timeout")
    assert correction_counts(engine) == {"error_type": 2, "verdict": 1}
    assert summarize(engine)["corrections"] == 2
    assert correction_counts(engine, Filters(tool="lookup_order")) == {
        "error_type": 2,
        "verdict": 1,
    }
    assert correction_counts(engine, Filters(agent="mail-bot")) == {"error_type": 0, "verdict": 0}


def test_mark_reviewed_on_the_trace_page_opens_the_next_trace_of_the_queue(
    open_page: OpenPage, sqlite_url: str, incident_store: tuple[sa.Engine, dict[str, int]]
) -> None:
    engine, ids = incident_store
    at = open_page(sqlite_url, TRACE, {"trace": "incident-1"})
    assert at.button(key="mark_and_next").disabled
    at.text_input(key="reviewer").input("ana").run()
    at.button(key="mark_and_next").click().run()
    assert not at.exception
    assert at.query_params["trace"] == "orphan-3"
    assert at.subheader[0].value == "orphan\\-3"
    header = review_header(engine, ids["incident-1"])
    assert header is not None
    assert header["reviewed_by"] == "ana"
    # The last trace of the queue: marked, and the page says the queue is empty.
    at.button(key="mark_and_next").click().run()
    assert at.query_params["trace"] == "orphan-3"
    assert [t.value for t in at.toast] == ["Marked reviewed. The review queue is empty."]
    assert any(c.value.startswith("Reviewed by ana ") for c in at.caption)


def test_mark_reviewed_and_next_follows_the_queues_problem_filter(
    open_page: OpenPage, sqlite_url: str, incident_store: tuple[sa.Engine, dict[str, int]]
) -> None:
    """From the queue of loops, the next trace is the next one with a loop: orphan-3, next in
    the whole queue, has none, so the loops queue is empty after incident-1."""
    engine, ids = incident_store
    review = open_page(sqlite_url, pages.REVIEW.script, {"problem": "loops"})
    assert review.dataframe(key="review_queue").value["trace"].tolist() == ["incident-1"]
    review.session_state["review_queue"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    review.run()
    assert not review.exception
    assert (review.query_params["trace"], review.query_params["queue"]) == ("incident-1", "loops")

    at = open_page(sqlite_url, TRACE, {"trace": "incident-1", "queue": "loops"})
    at.text_input(key="reviewer").input("ana").run()
    at.button(key="mark_and_next").click().run()
    assert not at.exception
    assert at.query_params["trace"] == "incident-1"
    assert [t.value for t in at.toast] == ["Marked reviewed. The review queue of loops is empty."]
    assert review_header(engine, ids["orphan-3"])["reviewed_by"] is None  # type: ignore[index]


def test_the_report_buttons_name_the_file_by_title_and_day(
    open_page: OpenPage,
    sqlite_url: str,
    incident_store: tuple[sa.Engine, dict[str, int]],
    downloads: Downloads,
) -> None:
    """The incident's trace has no times: its report is dated the day it is made."""
    trace = incident_store[1]["incident-1"]
    today = datetime.now(UTC).date().isoformat()
    at = open_page(sqlite_url, TRACE, {"trace": "incident-1"})
    names = [downloads.file(at, f"report_{trace}_{fmt}").filename for fmt in ("html", "md", "json")]
    stem = "toollens-Cancel-order-7-script-alert-x-script-see-https-evil.example"
    assert names == [f"{stem}-{today}.{fmt}" for fmt in ("html", "md", "json")]
    # No link back: AppTest's browser gives no address.
    assert b"Made from this view" not in downloads.content(at, f"report_{trace}_md")
