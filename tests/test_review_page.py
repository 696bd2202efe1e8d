"""The Review page and the review widgets (notes, corrections, downloads) in AppTest."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa
import streamlit as st
from incident import result_id
from streamlit.testing.v1 import AppTest

from dashboard.files_ui import table_csv, table_parquet
from dashboard.render import escape_markdown
from db.writes.annotations import add_annotation, annotations_on, update_annotation
from db.writes.corrections import result_review
from db.writes.review import review_queue

REVIEW_PAGE = Path(__file__).resolve().parents[1] / "dashboard" / "views" / "review.py"


@pytest.fixture
def store(
    incident_store: tuple[sa.Engine, dict[str, int]],
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[sa.Engine, dict[str, int]]:
    """The incident in a SQLite file that the dashboard opens (``TOOLLENS_DB``), Streamlit's
    caches emptied."""
    monkeypatch.setenv("TOOLLENS_DB", sqlite_url)
    st.cache_data.clear()
    st.cache_resource.clear()
    return incident_store


def rows(df: pd.DataFrame) -> list[tuple[object, ...]]:
    """A DataFrame's rows as plain tuples, missing values as ``None``."""
    return [tuple(None if pd.isna(v) else v for v in r) for r in df.itertuples(index=False)]


def review_page() -> AppTest:
    """The Review page, run once."""
    at = AppTest.from_file(str(REVIEW_PAGE), default_timeout=30)
    at.run()
    assert not at.exception
    return at


def widget_app(url: str, widget: str, *args: object) -> None:
    """A one-widget app: the author field and ``<widget>(engine, *args)`` of ``review_ui`` or
    ``files_ui``."""
    from dashboard import files_ui, review_ui
    from dashboard.state import get_engine

    review_ui.author_field()
    draw = getattr(review_ui, widget, None) or getattr(files_ui, widget)
    draw(get_engine(url), *args)


def widget(url: str, name: str, *args: Any) -> AppTest:
    """``widget_app`` in AppTest, run once."""
    at = AppTest.from_function(widget_app, args=(url, name, *args), default_timeout=30)
    at.run()
    assert not at.exception
    return at


def test_the_queue_lists_unreviewed_traces_with_problems_most_severe_first(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    at = review_page()
    queue = at.dataframe(key="review_queue").value
    columns = ["trace", "severity", "errors", "pairing", "loop_calls", "ignored", "notes"]
    assert queue[columns].values.tolist() == [
        ["incident-1", 8, 3, 1, 3, 1, 0],
        ["orphan-3", 1, 0, 1, 0, 0, 0],
    ]
    assert "2 traces to review" in [c.value for c in at.caption]


def test_without_a_name_nothing_can_be_marked_and_the_page_says_why(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    at = review_page()
    at.multiselect(key="to_mark").set_value([store[1]["incident-1"]]).run()
    assert at.button(key="mark_reviewed").disabled
    assert "Enter your name in the sidebar to write notes and corrections." in [
        c.value for c in at.caption
    ]


def test_marking_a_trace_reviewed_signs_it_and_takes_it_out_of_the_queue(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    at = review_page()
    at.text_input(key="reviewer").input("ana").run()
    at.multiselect(key="to_mark").set_value([ids["incident-1"]]).run()
    at.button(key="mark_reviewed").click().run()
    # Nothing is signed before the reviewer confirms.
    assert [w.value for w in at.warning] == [
        escape_markdown("Mark 1 trace reviewed as ana: incident-1?")
    ]
    assert review_queue(engine)["display_id"].tolist() == ["incident-1", "orphan-3"]
    at.button(key="confirm_mark").click().run()
    assert not at.exception
    assert at.dataframe(key="review_queue").value["trace"].tolist() == ["orphan-3"]
    stored = review_queue(engine, include_reviewed=True)
    assert stored[["display_id", "reviewed_by"]].values.tolist()[0] == ["incident-1", "ana"]
    at.toggle(key="reviewed").set_value(True).run()
    assert at.dataframe(key="review_queue").value["reviewed_by"].tolist()[0] == "ana"


def test_marking_offers_no_select_all_and_can_be_cancelled(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    at = review_page()
    # select_all = 0 in the widget's message: Streamlit shows no "Select all" option.
    assert at.multiselect(key="to_mark").proto.select_all == 0
    at.text_input(key="reviewer").input("ana").run()
    at.multiselect(key="to_mark").set_value([ids["incident-1"], ids["orphan-3"]]).run()
    at.button(key="mark_reviewed").click().run()
    assert [w.value for w in at.warning] == [
        escape_markdown("Mark 2 traces reviewed as ana: incident-1, orphan-3?")
    ]
    at.button(key="cancel_mark").click().run()
    assert (len(at.warning), len(review_queue(engine))) == (0, 2)
    # Changing the choice withdraws a pending confirmation.
    at.button(key="mark_reviewed").click().run()
    at.multiselect(key="to_mark").set_value([ids["orphan-3"]]).run()
    assert len(at.warning) == 0
    assert len(review_queue(engine)) == 2


def test_the_reviewer_name_is_kept_in_the_url(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    # The browser writes a bound field into the address (checked in the browser test); a
    # reload is a new session on that address, and it keeps the name.
    reloaded = AppTest.from_file(str(REVIEW_PAGE), default_timeout=30)
    reloaded.query_params["reviewer"] = "ana"
    reloaded.run()
    assert reloaded.text_input(key="reviewer").value == "ana"
    reloaded.multiselect(key="to_mark").set_value([store[1]["orphan-3"]]).run()
    assert not reloaded.button(key="mark_reviewed").disabled


def test_the_reviewer_name_defaults_to_toollens_user(
    store: tuple[sa.Engine, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLLENS_USER", "ops-bot")
    at = review_page()
    assert at.text_input(key="reviewer").value == "ops-bot"
    at.multiselect(key="to_mark").set_value([store[1]["orphan-3"]]).run()
    assert not at.button(key="mark_reviewed").disabled


def test_the_queue_narrows_to_one_kind_of_problem_and_says_when_nothing_is_left(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    at = review_page()
    at.selectbox(key="problem").set_value("pairing").run()
    assert at.dataframe(key="review_queue").value["trace"].tolist() == ["incident-1", "orphan-3"]
    # A link with the problem in the URL opens the narrowed queue.
    at = AppTest.from_file(str(REVIEW_PAGE), default_timeout=30)
    at.query_params["problem"] = "loops"
    at.run()
    assert at.selectbox(key="problem").value == "loops"
    assert at.dataframe(key="review_queue").value["trace"].tolist() == ["incident-1"]
    at.text_input(key="reviewer").input("ana").run()
    at.multiselect(key="to_mark").set_value([store[1]["incident-1"]]).run()
    at.button(key="mark_reviewed").click().run()
    at.button(key="confirm_mark").click().run()
    assert [s.value for s in at.success] == ["Nothing to review with these filters."]


def test_notes_list_their_trace_and_pair_and_filter_by_label_and_author(
    store: tuple[sa.Engine, dict[str, int]],
) -> None:
    engine, ids = store
    add_annotation(engine, ids["incident-1"], label="root-cause", note="first", author="ana")
    add_annotation(
        engine, ids["incident-1"], label="tool-bug", note="[x](http://e.x) **b**", author="bo",
        message_seq=2, call_index=0,
    )  # fmt: skip
    add_annotation(
        engine, ids["orphan-3"], label="tool-bug", note="lone", author="ana", message_seq=1
    )
    at = review_page()
    notes = at.dataframe(key="notes_table").value
    assert rows(notes[["trace", "pair", "tool", "label", "note", "author"]]) == [
        ("orphan-3", "r1", "(unknown)", "tool-bug", "lone", "ana"),
        ("incident-1", "2:0", "lookup_order", "tool-bug", "[x](http://e.x) **b**", "bo"),
        ("incident-1", None, None, "root-cause", "first", "ana"),
    ]
    assert at.multiselect(key="note_author").options == ["ana", "bo"]
    at.multiselect(key="note_label").set_value(["tool-bug"]).run()
    at.multiselect(key="note_author").set_value(["ana"]).run()
    assert at.dataframe(key="notes_table").value["note"].tolist() == ["lone"]
    linked = AppTest.from_file(str(REVIEW_PAGE), default_timeout=30)
    linked.query_params["note_author"] = "bo"
    linked.run()
    assert linked.dataframe(key="notes_table").value["note"].tolist() == ["[x](http://e.x) **b**"]


def test_annotation_panel_adds_edits_and_deletes_a_note_on_a_pair(
    store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    engine, ids = store
    trace = ids["incident-1"]
    at = widget(sqlite_url, "annotation_panel", trace, 2, 0)
    assert at.button[0].disabled  # no name yet
    at.text_input(key="reviewer").input("ana").run()
    at.selectbox[0].set_value("tool-bug")
    at.text_area[0].input("<b>ids</b> are ints, see [docs](http://e.x)")
    at.button[0].click().run()
    assert not at.exception
    (note,) = annotations_on(engine, trace, 2, 0)
    assert (note.label, note.note, note.author) == (
        "tool-bug",
        "<b>ids</b> are ints, see [docs](http://e.x)",
        "ana",
    )
    assert [t.value for t in at.text] == ["<b>ids</b> are ints, see [docs](http://e.x)"]
    assert annotations_on(engine, trace) == []  # not on the trace itself
    at.toggle[0].set_value(True).run()
    edit = next(t for t in at.text_area if t.value == note.note)
    edit.input("fixed upstream")
    next(b for b in at.button if b.label == "Save").click().run()
    assert [(n.note, n.version) for n in annotations_on(engine, trace, 2, 0)] == [
        ("fixed upstream", 2)
    ]
    at.toggle[0].set_value(True).run()
    next(b for b in at.button if b.label == "Delete").click().run()
    assert annotations_on(engine, trace, 2, 0) == []


def test_an_edit_after_someone_else_saved_shows_the_conflict_and_keeps_their_edit(
    store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    engine, ids = store
    note = add_annotation(engine, ids["incident-1"], label="needs-fix", note="v1", author="ana")
    at = widget(sqlite_url, "annotation_panel", ids["incident-1"])
    at.text_input(key="reviewer").input("bo").run()
    at.toggle[0].set_value(True).run()
    update_annotation(engine, note.id, version=1, label="root-cause", note="ana's", editor="ana")
    next(t for t in at.text_area if t.value == "v1").input("bo's")
    next(b for b in at.button if b.label == "Save").click().run()
    assert len(at.error) == 1
    assert "changed by ana" in at.error[0].value
    assert [n.note for n in annotations_on(engine, ids["incident-1"])] == ["ana's"]
    # bo has now seen ana's version above the form: saving again replaces it knowingly.
    next(b for b in at.button if b.label == "Save").click().run()
    assert [(n.note, n.version) for n in annotations_on(engine, ids["incident-1"])] == [("bo's", 3)]


def test_correction_form_corrects_a_verdict_and_shows_who_did(
    store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    engine, ids = store
    advice = result_id(engine, ids["incident-1"], 3)
    at = widget(sqlite_url, "correction_form", advice)
    assert [s.label for s in at.selectbox] == ["Error type", "Verdict"]
    assert at.selectbox[1].format_func(at.selectbox[1].value) == "as derived: ignored"
    at.text_input(key="reviewer").input("ana").run()
    at.selectbox[1].set_value("followed")
    at.button[0].click().run()
    assert not at.exception
    view = result_review(engine, advice)
    assert (view.verdict_corrected, view.error_type_corrected, view.corrected_by) == (
        "followed",
        None,
        "ana",
    )
    assert at.selectbox[1].value == "followed"
    assert at.caption[0].value.startswith("Corrected by ana ")
    at.selectbox[1].set_value("(as derived)")
    at.button[0].click().run()
    assert result_review(engine, advice).corrected_by is None


def test_correction_form_says_when_there_is_nothing_to_correct(
    store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    engine, ids = store
    at = widget(sqlite_url, "correction_form", result_id(engine, ids["clean-2"], 2))
    assert [c.value for c in at.caption] == [
        "Nothing to correct: this result is not an error and gives no suggestion."
    ]


def test_report_and_table_downloads_offer_every_format(
    store: tuple[sa.Engine, dict[str, int]], sqlite_url: str
) -> None:
    trace = {"id": store[1]["incident-1"], "display_id": "incident-1", "title": "Cancel order 7"}
    at = widget(sqlite_url, "report_download", trace)
    assert [b.label for b in at.get("download_button")] == ["Report (HTML)", "Markdown", "JSON"]
    tables = AppTest.from_function(table_app, default_timeout=30)
    tables.run()
    assert not tables.exception
    assert [b.label for b in tables.get("download_button")] == ["CSV", "Parquet"]


def table_app() -> None:
    """An app showing the table download buttons for a small table."""
    import pandas as pd

    from dashboard import files_ui

    files_ui.table_downloads(pd.DataFrame({"tool": ["get"], "tokens": [3]}))


def test_table_downloads_defuse_formulas_and_keep_json_cells_as_text() -> None:
    df = pd.DataFrame(
        {"tool": ["=HYPERLINK(1)", "get"], "arguments": [{"a": 1}, [2]], "tokens": [-3, 4]}
    )
    assert table_csv(df).decode() == (
        'tool,arguments,tokens\n\'=HYPERLINK(1),"{""a"":1}",-3\nget,[2],4\n'
    )
    back = pd.read_parquet(io.BytesIO(table_parquet(df)))
    assert back.values.tolist() == [["=HYPERLINK(1)", '{"a":1}', -3], ["get", "[2]", 4]]


def twice_app() -> None:
    """The name field asked for by both the entry script and the page."""
    import streamlit as st

    from dashboard import review_ui

    st.text(f"{review_ui.author_field()}|{review_ui.author_field()}")


def test_the_name_field_asked_for_twice_in_one_run_is_drawn_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLLENS_USER", "zed")
    at = AppTest.from_function(twice_app, default_timeout=30)
    at.run()
    assert not at.exception
    assert (len(at.sidebar.text_input), at.text[0].value) == (1, "zed|zed")
    at.text_input(key="reviewer").input("amy").run()
    assert at.text[0].value == "amy|amy"
