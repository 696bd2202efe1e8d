"""The Imports page in Streamlit's AppTest: import history and rejected records as plain text,
narrowed by the import filter.

On ``analysis_store_url``: exact figures, cross-checked against ``summarize`` where it has them.
"""

from dbfixture import PAGES2_LONG_RAW, OpenStorePage
from page_support import captions

from dashboard import pages
from dashboard.render import escape_markdown

IMPORTS = pages.IMPORTS.script


def test_imports_page_lists_history_and_rejected_records_as_plain_text(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(IMPORTS)
    history = at.dataframe[0].value
    assert list(history["id"]) == [2, 1]
    assert list(history["paths"]) == ["c.jsonl, bad.jsonl", "ab.jsonl"]
    assert [e.label for e in at.expander] == [
        escape_markdown("bad.jsonl:3 · invalid_json (import 2)"),
        escape_markdown("bad.jsonl:7 · unknown_format (import 2)"),
    ]
    assert [t.value for t in at.text] == [
        "bad.jsonl:3: not valid JSON",
        "bad.jsonl:7: no format recognizes this",
    ]
    preview = at.code[1].value
    assert preview == PAGES2_LONG_RAW[:2048].decode("utf-8", errors="replace")
    assert "Raw input: first 2,048 of 5,000 bytes" in captions(at)


def test_the_import_filter_narrows_the_rejected_records(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(IMPORTS, {"import": "1"})
    assert [s.value for s in at.main.subheader] == [
        "Import history",
        "Files of import 1",
        "Traces updated by import 1",
        "Rejected records (import 1)",
    ]
    assert "This import replaced no stored trace." in captions(at)
    assert "No record was rejected." in captions(at)
    assert len(at.expander) == 0


def test_the_import_filter_names_imports_by_file_and_time(
    open_analysis_page: OpenStorePage,
) -> None:
    # A link's bare id selects the import, and so does the label a chosen import puts in the URL.
    at = open_analysis_page(IMPORTS, {"import": "1"})
    picker = at.sidebar.selectbox(key="import")
    assert picker.value == "1"
    labels = picker.options
    assert len(labels) == 2
    assert all(" UTC" in label and " · " in label for label in labels)
    assert labels[0].startswith("2 · c.jsonl +1 · ")
    assert labels[1].startswith("1 · ab.jsonl · ")
    at = open_analysis_page(IMPORTS, {"import": labels[0]})
    assert at.sidebar.selectbox(key="import").value == "2"
    assert "Rejected records (import 2)" in [s.value for s in at.main.subheader]
