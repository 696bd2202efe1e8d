"""Annotations, the review queue, the reviewed flag and corrections, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from incident import UNTRUSTED_USER, import_incident, result_id

from db.engine import make_engine
from db.migrate import downgrade, upgrade
from db.queries.filters import Filters
from db.queries.summary import summarize
from db.writes import annotations, review
from db.writes.annotations import (
    AnnotationConflictError,
    ReviewError,
    UnknownTargetError,
    add_annotation,
    annotations_on,
    delete_annotation,
    list_annotations,
    update_annotation,
)
from db.writes.corrections import correct_result, result_review
from db.writes.review import mark_reviewed, review_queue
from ingest.importing.reanalyze import reanalyze

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def ids(engine: sa.Engine, tmp_path: Path) -> dict[str, int]:
    """The incident imported into each database; trace ids by display id."""
    return import_incident(engine, tmp_path)


def rows(df: pd.DataFrame) -> list[tuple[object, ...]]:
    """A DataFrame's rows as plain tuples, missing values (NaN, NaT, None) as ``None``."""
    return [tuple(None if pd.isna(v) else v for v in r) for r in df.itertuples(index=False)]


def test_labels_come_from_toollens_labels_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLLENS_LABELS", raising=False)
    assert annotations.configured_labels() == (
        "root-cause", "tool-bug", "model-bug", "prompt-bug", "false-alarm", "needs-fix",
    )  # fmt: skip
    monkeypatch.setenv("TOOLLENS_LABELS", "flaky, root-cause ,,flaky")
    assert annotations.configured_labels() == ("flaky", "root-cause")
    monkeypatch.setenv("TOOLLENS_LABELS", " , ")
    assert annotations.configured_labels() == annotations.DEFAULT_LABELS


def test_notes_on_a_trace_and_on_a_pair_are_stored_apart_with_author_and_time(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    trace = ids["incident-1"]
    on_trace = add_annotation(
        engine, trace, label="root-cause", note="lookup_order 404s", author="ana", now=T0
    )
    on_call = add_annotation(
        engine, trace, label="tool-bug", note="ids are ints", author="bo", message_seq=2,
        call_index=0, now=T0 + timedelta(minutes=1),
    )  # fmt: skip
    on_orphan = add_annotation(
        engine, ids["orphan-3"], label="false-alarm", note="", author="bo", message_seq=1
    )
    assert (on_trace.target, on_call.target, on_orphan.target) == ("trace", "call", "result")
    assert annotations_on(engine, trace) == [on_trace]
    assert annotations_on(engine, trace, 2, 0) == [on_call]
    stored = annotations_on(engine, trace, 2, 0)[0]
    assert (stored.label, stored.note, stored.author, stored.version) == (
        "tool-bug",
        "ids are ints",
        "bo",
        1,
    )
    assert stored.created_at == T0 + timedelta(minutes=1)
    assert stored.created_at.tzinfo is not None


def test_a_note_on_a_call_that_does_not_exist_is_refused_with_the_reason(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    with pytest.raises(UnknownTargetError, match="has no call 5 of message 2"):
        add_annotation(
            engine, ids["incident-1"], label="tool-bug", note="x", author="ana",
            message_seq=2, call_index=5,
        )  # fmt: skip
    with pytest.raises(UnknownTargetError, match="no trace with id 999"):
        add_annotation(engine, 999, label="tool-bug", note="x", author="ana")
    with pytest.raises(ReviewError, match="unknown label 'blame'"):
        add_annotation(engine, ids["incident-1"], label="blame", note="x", author="ana")
    with pytest.raises(ReviewError, match="author is empty"):
        add_annotation(engine, ids["incident-1"], label="tool-bug", note="x", author="  ")
    assert rows(list_annotations(engine)) == []


def test_an_edit_based_on_an_old_version_is_a_conflict_and_the_first_edit_stays(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    note = add_annotation(engine, ids["incident-1"], label="needs-fix", note="v1", author="ana")
    first = update_annotation(
        engine, note.id, version=1, label="root-cause", note="ana's edit", editor="ana"
    )
    assert (first.version, first.updated_by, first.author) == (2, "ana", "ana")
    with pytest.raises(AnnotationConflictError, match=r"was changed by ana .* version 1\)"):
        update_annotation(engine, note.id, version=1, label="tool-bug", note="bo's", editor="bo")
    with pytest.raises(AnnotationConflictError, match="was changed by ana"):
        delete_annotation(engine, note.id, version=1)
    (kept,) = annotations_on(engine, ids["incident-1"])
    assert (kept.label, kept.note, kept.version) == ("root-cause", "ana's edit", 2)
    delete_annotation(engine, note.id, version=2)
    assert annotations_on(engine, ids["incident-1"]) == []
    with pytest.raises(AnnotationConflictError, match="no longer exists"):
        update_annotation(engine, note.id, version=2, label="tool-bug", note="", editor="bo")


def test_notes_are_listed_newest_first_with_the_tool_and_filter_by_label_and_author(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    trace = ids["incident-1"]
    add_annotation(engine, trace, label="root-cause", note="a", author="ana", now=T0)
    add_annotation(
        engine, trace, label="tool-bug", note="b", author="bo", message_seq=8, call_index=0,
        now=T0 + timedelta(hours=1),
    )  # fmt: skip
    add_annotation(
        engine, ids["orphan-3"], label="tool-bug", note="c", author="ana", message_seq=1,
        now=T0 + timedelta(hours=2),
    )  # fmt: skip
    listed = list_annotations(engine)
    assert list(listed.columns) == list(annotations.ANNOTATION_COLUMNS)
    picked = listed[["display_id", "message_seq", "call_index", "tool", "label", "author"]]
    assert rows(picked) == [
        ("orphan-3", 1, None, "(unknown)", "tool-bug", "ana"),
        ("incident-1", 8, 0, "send_email", "tool-bug", "bo"),
        ("incident-1", None, None, None, "root-cause", "ana"),
    ]
    assert list(list_annotations(engine, labels=["tool-bug"], authors=["ana"])["note"]) == ["c"]
    assert list(list_annotations(engine, authors=["bo", "ana"])["note"]) == ["c", "b", "a"]
    assert annotations.annotation_choices(engine) == {
        "label": ["root-cause", "tool-bug"],
        "author": ["ana", "bo"],
    }


def test_the_queue_lists_unreviewed_traces_with_problems_most_severe_first(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    add_annotation(engine, ids["incident-1"], label="root-cause", note="", author="ana")
    queue = review_queue(engine)
    assert list(queue.columns) == list(review.QUEUE_COLUMNS)
    cols = ["display_id", "severity", "errors", "pairing", "loop_calls", "ignored", "notes"]
    assert rows(queue[cols]) == [
        ("incident-1", 8, 3, 1, 3, 1, 1),
        ("orphan-3", 1, 0, 1, 0, 0, 0),
    ]
    # Titles: the first user message (shown as plain text in the queue).
    assert queue["title"].tolist() == [UNTRUSTED_USER, "Send it"]
    assert review.queue_size(engine) == 2
    assert list(review_queue(engine, problem="pairing")["display_id"]) == ["incident-1", "orphan-3"]
    assert list(review_queue(engine, problem="loops")["display_id"]) == ["incident-1"]
    assert list(review_queue(engine, problem="ignored")["display_id"]) == ["incident-1"]
    assert list(review_queue(engine, problem="errors", loop_k=4)["display_id"]) == ["incident-1"]
    assert list(review_queue(engine, problem="loops", loop_k=4)["display_id"]) == []
    assert list(review_queue(engine, limit=1, offset=1)["display_id"]) == ["orphan-3"]
    # Under a filter, paged: the same order, cut the same way.
    first_import = Filters(import_id=1)
    assert list(review_queue(engine, filters=first_import)["display_id"]) == [
        "incident-1",
        "orphan-3",
    ]
    assert list(review_queue(engine, filters=first_import, limit=1)["display_id"]) == ["incident-1"]
    page_two = review_queue(engine, filters=first_import, limit=1, offset=1)
    assert rows(page_two[cols]) == [("orphan-3", 1, 0, 1, 0, 0, 0)]
    assert review_queue(engine, filters=Filters(model="gpt-4o"), offset=1).empty


def test_marking_a_trace_reviewed_takes_it_out_of_the_queue_until_cleared(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    mark_reviewed(engine, ids["incident-1"], "ana", now=T0)
    assert list(review_queue(engine)["display_id"]) == ["orphan-3"]
    everything = review_queue(engine, include_reviewed=True)
    assert rows(everything[["display_id", "reviewed_by"]]) == [
        ("incident-1", "ana"),
        ("orphan-3", None),
    ]
    assert everything["reviewed_at"].iloc[0] == T0
    review.clear_reviewed(engine, ids["incident-1"])
    assert review.queue_size(engine) == 2
    with pytest.raises(UnknownTargetError, match="no trace with id 999"):
        mark_reviewed(engine, 999, "ana")


def test_corrections_win_in_the_summary_and_the_queue_and_are_counted(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    trace = ids["incident-1"]
    advice = result_id(engine, trace, 3)
    before = summarize(engine)
    assert before["error_types"] == {"not_found": 3}
    assert (before["suggestions"]["ignored"], before["corrections"]) == (1, 0)
    corrected = correct_result(
        engine, advice, author="ana", error_type="invalid_params", verdict="followed", now=T0
    )
    assert (corrected.error_type, corrected.error_type_corrected) == ("not_found", "invalid_params")
    assert (corrected.verdict, corrected.verdict_corrected) == ("ignored", "followed")
    assert (corrected.corrected_by, corrected.corrected_at) == ("ana", T0)
    after = summarize(engine)
    assert after["error_types"] == {"not_found": 2, "invalid_params": 1}
    assert after["suggestions"]["followed"] == 1
    assert after["suggestions"]["ignored"] == 0
    assert after["suggestions"]["follow_rate"] == 1.0
    assert after["corrections"] == 1
    assert list(review_queue(engine, problem="ignored")["display_id"]) == []


def test_clearing_one_correction_keeps_the_other_and_clearing_both_forgets_who(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    advice = result_id(engine, ids["incident-1"], 3)
    correct_result(engine, advice, author="ana", error_type="conflict", verdict="unclear")
    one = correct_result(engine, advice, author="bo", error_type=None)
    assert (one.error_type_corrected, one.verdict_corrected, one.corrected_by) == (
        None,
        "unclear",
        "bo",
    )
    none = correct_result(engine, advice, author="bo", verdict=None)
    assert (none.verdict_corrected, none.corrected_by, none.corrected_at) == (None, None, None)
    assert summarize(engine)["corrections"] == 0


def test_corrections_that_make_no_sense_are_refused_with_the_reason(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    success = result_id(engine, ids["clean-2"], 2)
    no_advice = result_id(engine, ids["incident-1"], 5)
    with pytest.raises(ReviewError, match="has status success: only errors have an error type"):
        correct_result(engine, success, author="ana", error_type="timeout")
    with pytest.raises(ReviewError, match="gives no suggestion: there is no verdict"):
        correct_result(engine, no_advice, author="ana", verdict="followed")
    with pytest.raises(ReviewError, match="unknown verdict 'maybe'"):
        correct_result(engine, no_advice, author="ana", verdict="maybe")
    with pytest.raises(ReviewError, match="'Not Found' is not a snake_case name"):
        correct_result(engine, no_advice, author="ana", error_type="Not Found")
    with pytest.raises(UnknownTargetError, match="no tool result with id 99999"):
        result_review(engine, 99999)


def test_reanalyze_recomputes_derived_facts_but_keeps_human_corrections_and_notes(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    trace = ids["incident-1"]
    advice = result_id(engine, trace, 3)
    correct_result(engine, advice, author="ana", error_type="invalid_params", verdict="followed")
    add_annotation(engine, trace, label="root-cause", note="kept", author="ana", message_seq=3)
    mark_reviewed(engine, trace, "ana", now=T0)
    assert reanalyze(engine) == 3
    again = result_review(engine, result_id(engine, trace, 3))
    assert (again.error_type, again.error_type_corrected) == ("not_found", "invalid_params")
    assert (again.verdict, again.verdict_corrected, again.corrected_by) == (
        "ignored",
        "followed",
        "ana",
    )
    assert [a.note for a in annotations_on(engine, trace, 3)] == ["kept"]
    assert rows(review_queue(engine, include_reviewed=True)[["reviewed_by"]]) == [("ana",), (None,)]
    assert summarize(engine)["corrections"] == 1


def test_two_reviewers_writing_fifty_notes_each_at_once_lose_nothing(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    trace = ids["incident-1"]
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def write(author: str) -> None:
        start.wait()
        try:
            for i in range(50):
                add_annotation(
                    engine, trace, label="needs-fix", note=f"{author} {i}", author=author
                )
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(who,)) for who in ("ana", "bo")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    notes = list_annotations(engine, trace_id=trace)
    assert len(notes) == 100
    assert sorted(notes["note"]) == sorted(f"{w} {i}" for w in ("ana", "bo") for i in range(50))


def test_two_reviewers_editing_the_same_note_at_once_keep_exactly_one_edit(
    engine: sa.Engine, ids: dict[str, int]
) -> None:
    note = add_annotation(engine, ids["incident-1"], label="needs-fix", note="v1", author="ana")
    start = threading.Barrier(2)
    outcome: dict[str, str] = {}

    def edit(editor: str) -> None:
        start.wait()
        try:
            update_annotation(
                engine, note.id, version=1, label="root-cause", note=editor, editor=editor
            )
            outcome[editor] = "saved"
        except AnnotationConflictError:
            outcome[editor] = "conflict"

    threads = [threading.Thread(target=edit, args=(who,)) for who in ("ana", "bo")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcome.values()) == ["conflict", "saved"]
    (kept,) = annotations_on(engine, ids["incident-1"])
    winner = next(who for who, what in outcome.items() if what == "saved")
    assert (kept.note, kept.version) == (winner, 2)


def test_downgrading_the_review_migration_keeps_every_imported_trace(
    db_url: str, tmp_path: Path
) -> None:
    engine = make_engine(db_url)
    import_incident(engine, tmp_path)
    downgrade(engine, "0001")
    with engine.connect() as conn:
        counts = [
            conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one()
            for t in ("traces", "messages", "tool_calls", "tool_results")
        ]
        columns = {c["name"] for c in sa.inspect(conn).get_columns("traces")}
    assert counts == [3, 17, 5, 5]
    assert "reviewed_at" not in columns
    upgrade(engine)
    assert review_queue(engine)["display_id"].tolist() == ["incident-1", "orphan-3"]
    engine.dispose()
