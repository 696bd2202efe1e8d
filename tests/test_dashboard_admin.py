"""Admin controls in AppTest: deleting an import or a trace, with the confirmation step, only
for an admin (``TOOLLENS_ADMIN=1``); the Imports page shows what each import redacted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from dbfixture import OpenPage, build_pages2_database

from dashboard import pages
from db.engine import make_engine
from db.writes.traces import finish_import, start_import

IMPORTS = pages.IMPORTS.script
TRACE = pages.TRACE.script


@pytest.fixture
def own_store(tmp_path: Path) -> str:
    """A store of its own (the tests delete from it): the pages-2 store."""
    url = f"sqlite:///{tmp_path / 'toollens.db'}"
    engine = make_engine(url)
    build_pages2_database(engine)
    engine.dispose()
    return url


def _count(url: str, table: str) -> int:
    engine = make_engine(url)
    with engine.connect() as conn:
        n = int(conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one())
    engine.dispose()
    return n


def _buttons(at: object) -> list[str]:
    return [b.label for b in at.button]  # type: ignore[attr-defined]


def test_without_the_admin_flag_there_is_no_delete_button(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch, own_store: str
) -> None:
    monkeypatch.delenv("TOOLLENS_ADMIN", raising=False)
    at = open_page(own_store, IMPORTS, {"import": "2"})
    assert "Delete this import" not in _buttons(at)
    at = open_page(own_store, TRACE, {"trace": "run-a"})
    assert "Delete this trace" not in _buttons(at)


def test_an_admin_deletes_an_import_after_confirming(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch, own_store: str
) -> None:
    monkeypatch.setenv("TOOLLENS_ADMIN", "1")
    at = open_page(own_store, IMPORTS, {"import": "2"})
    at.button(key="delete_import").click().run()
    assert [w.value for w in at.warning] == [
        "Delete import 2? This removes imports 1, rejected_records 2, traces 1, findings 2, "
        "messages 11, tool_calls 5, tool_results 5. It cannot be undone."
    ]
    at.button(key="delete_import_cancel").click().run()
    assert len(at.warning) == 0
    assert _count(own_store, "imports") == 2
    at.button(key="delete_import").click().run()
    at.button(key="delete_import_yes").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == [
        "Deleted import 2 with its traces and rejected records."
    ]
    assert (_count(own_store, "imports"), _count(own_store, "rejected_records")) == (1, 0)
    assert _count(own_store, "traces") == 2


def test_an_admin_deletes_a_trace_after_confirming(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch, own_store: str
) -> None:
    monkeypatch.setenv("TOOLLENS_ADMIN", "1")
    at = open_page(own_store, TRACE, {"trace": "run-a"})
    at.button(key="delete_trace").click().run()
    assert at.warning[0].value.startswith("Delete trace run-a? This removes traces 1, ")
    at.button(key="delete_trace_yes").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Deleted trace run\\-a."]
    assert "trace" not in at.query_params
    assert _count(own_store, "traces") == 2
    engine = make_engine(own_store)
    with engine.connect() as conn:
        left = conn.execute(sa.text("SELECT display_id FROM traces ORDER BY display_id"))
        assert left.scalars().all() == ["run-b", "run-c"]
    engine.dispose()


def test_the_imports_page_shows_what_each_import_redacted(
    open_page: OpenPage, own_store: str
) -> None:
    engine = make_engine(own_store)
    third = start_import(engine, origin="cli", paths=["x.jsonl"], encoding="o200k_base")
    finish_import(engine, third, state="done", redactions={"openai_key": 3, "jwt": 9})
    fourth = start_import(engine, origin="cli", paths=["y.jsonl"], encoding="o200k_base")
    finish_import(engine, fourth, state="done", redactions={})
    engine.dispose()
    at = open_page(own_store, IMPORTS)
    history = at.dataframe[0].value
    assert list(history["id"]) == [4, 3, 2, 1]
    # Imports 1 and 2 were written before redaction existed: nothing is known of them.
    assert _cells(history["secrets_redacted"]) == [0, 12, None, None]
    assert _cells(history["redactions"]) == [None, "jwt 9, openai_key 3", None, None]


def _cells(column: pd.Series) -> list[object]:
    return [None if pd.isna(v) else v for v in column]
