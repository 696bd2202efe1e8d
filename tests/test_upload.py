"""Uploading trace files on the Imports page: the same pipeline as ``toollens import``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
import streamlit as st
from incident import incident_bytes
from streamlit.testing.v1 import AppTest

from dashboard.files_ui import UNKNOWN_FORMAT_ADVICE
from dashboard.uploads import UploadTooLargeError, import_uploaded, upload_limit_mb
from db.engine import make_engine
from db.schema import ImportRun, RejectedRecord, TraceRow
from ingest.formats import format_names

#: A file whose second line is cut short: its first trace (``clean-2``) imports, line 2 does not.
BROKEN_FILE = incident_bytes().splitlines(keepends=True)[1] + b'{"id": "broken", "messages": [\n'


@pytest.fixture
def engine(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[sa.Engine]:
    """An empty store (SQLite file) that the upload app opens too."""
    monkeypatch.setenv("TOOLLENS_DB", sqlite_url)
    monkeypatch.delenv("TOOLLENS_UPLOAD_MAX_MB", raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    eng = make_engine(sqlite_url)
    yield eng
    eng.dispose()


def upload_app(url: str) -> None:
    """The upload panel on its own."""
    from dashboard import files_ui
    from dashboard.state import get_engine

    files_ui.upload_panel(get_engine(url))


def stored(engine: sa.Engine) -> tuple[list[tuple[object, ...]], list[str], list[str]]:
    """(imports as (origin, paths, traces, rejected), trace source files, rejected reasons)."""
    with engine.connect() as conn:
        imports = [
            tuple(r)
            for r in conn.execute(
                sa.select(
                    ImportRun.origin, ImportRun.paths, ImportRun.traces_imported, ImportRun.rejected
                ).order_by(ImportRun.id)
            )
        ]
        files = sorted(set(conn.execute(sa.select(TraceRow.source_file)).scalars()))
        reasons = list(conn.execute(sa.select(RejectedRecord.reason)).scalars())
    return imports, files, reasons


def test_the_upload_limit_comes_from_the_environment_or_is_200_mb(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOOLLENS_UPLOAD_MAX_MB", raising=False)
    assert upload_limit_mb() == 200
    monkeypatch.setenv("TOOLLENS_UPLOAD_MAX_MB", "5")
    assert upload_limit_mb() == 5
    assert (upload_limit_mb("lots"), upload_limit_mb("0")) == (200, 200)


def test_uploaded_files_are_imported_under_their_original_names(engine: sa.Engine) -> None:
    summary = import_uploaded(
        engine, [("runs.jsonl", incident_bytes()), ("../../etc/x.jsonl", incident_bytes())], 1
    )
    assert summary.line().startswith(
        "2 files, 3 traces imported, 0 updated, 3 unchanged, 0 rejected in "
    )
    imports, files, _ = stored(engine)
    assert imports == [("upload", ["runs.jsonl", "../../etc/x.jsonl"], 3, 0)]
    assert files == ["runs.jsonl"]


def test_a_file_over_the_limit_is_refused_before_anything_is_imported(engine: sa.Engine) -> None:
    big = b" " * (1024 * 1024 + 1)
    with pytest.raises(UploadTooLargeError) as caught:
        import_uploaded(engine, [("runs.jsonl", incident_bytes()), ("big.jsonl", big)], 1)
    assert str(caught.value) == (
        "big.jsonl is 1.0 MB; the upload limit is 1 MB (import bigger files with `toollens import`)"
    )
    assert stored(engine) == ([], [], [])


def test_uploading_on_the_page_imports_shows_the_summary_and_the_rejected_records(
    engine: sa.Engine, sqlite_url: str
) -> None:
    at = AppTest.from_function(upload_app, args=(sqlite_url,), default_timeout=60)
    at.run()
    assert not at.exception
    assert at.file_uploader[0].label == "Trace files (.json, .jsonl, .gz — up to 200 MB each)"
    assert at.file_uploader[0].accept_multiple_files
    at.file_uploader[0].set_value(
        [
            ("runs.jsonl", incident_bytes(), "application/jsonl"),
            ("broken.jsonl", BROKEN_FILE, "application/jsonl"),
        ]
    ).run()
    assert [b.label for b in at.button] == ["Import 2 files"]
    at.button[0].click().run()
    assert not at.exception
    assert len(at.success) == 1
    assert at.success[0].value.startswith(
        "2 files, 3 traces imported, 0 updated, 1 unchanged, 1 rejected in "
    )
    assert [w.value for w in at.warning] == ["1 record was rejected"]
    rejected = at.dataframe[0].value
    assert rejected[["location", "reason"]].values.tolist() == [
        ["broken.jsonl:2", "malformed_json"]
    ]
    assert rejected["message"][0].startswith("malformed JSON: unexpected end of data")
    # Human headings, as in every other table (tests/test_dashboard_tables.py).
    config = orjson.loads(at.dataframe[0].proto.columns)
    assert {column: config[column]["label"] for column in rejected.columns} == {
        "location": "Where", "reason": "Reason", "message": "Message",
    }  # fmt: skip
    assert at.dataframe[0].proto.placeholder == "—"
    assert stored(engine) == (
        [("upload", ["runs.jsonl", "broken.jsonl"], 3, 1)],
        ["runs.jsonl"],
        ["malformed_json"],
    )
    # The uploader starts empty again, so a rerun does not import the files twice.
    assert at.file_uploader[0].value == []
    assert at.button.len == 0


def test_a_file_over_the_limit_is_named_on_the_page_and_the_others_still_import(
    engine: sa.Engine, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLLENS_UPLOAD_MAX_MB", "1")
    at = AppTest.from_function(upload_app, args=(sqlite_url,), default_timeout=60)
    at.run()
    at.file_uploader[0].set_value(
        [
            ("runs.jsonl", incident_bytes(), "application/jsonl"),
            ("huge.jsonl", b" " * (3 * 1024 * 1024), "application/jsonl"),
        ]
    ).run()
    # Shown escaped (a file name is untrusted); without the escapes it reads:
    assert [e.value.replace("\\", "") for e in at.error] == [
        "huge.jsonl is 3.0 MB; the upload limit is 1 MB "
        "(import bigger files with `toollens import`)"
    ]
    assert [b.label for b in at.button] == ["Import 1 file"]
    at.button[0].click().run()
    assert stored(engine)[0] == [("upload", ["runs.jsonl"], 3, 0)]


@pytest.mark.realdata
def test_uploading_a_real_tau_bench_file_imports_it_like_the_cli(
    engine: sa.Engine, realdata: Path
) -> None:
    path = realdata / "openai-chat" / "tau-bench-gpt-4o-airline.json"
    summary = import_uploaded(engine, [(path.name, path.read_bytes())], 200)
    assert (summary.traces, summary.messages, summary.rejected) == (200, 5308, 0)
    assert stored(engine)[1] == ["tau-bench-gpt-4o-airline.json"]


def test_an_upload_that_imports_nothing_is_an_error_with_advice_the_form_can_follow(
    engine: sa.Engine, sqlite_url: str
) -> None:
    at = AppTest.from_function(upload_app, args=(sqlite_url,), default_timeout=60)
    at.run()
    at.file_uploader[0].set_value([("notes.txt", b"just some notes\n", "text/plain")]).run()
    at.button[0].click().run()
    assert not at.exception
    assert len(at.success) == 0
    assert [e.value.split(" in ")[0] for e in at.error] == [
        "Nothing was imported: 1 file, 0 traces imported, 0 updated, 0 unchanged, 1 rejected"
    ]
    message = at.dataframe[0].value["message"][0]
    assert message == UNKNOWN_FORMAT_ADVICE.format(formats=", ".join(format_names()))
    assert "pass --format" not in message
