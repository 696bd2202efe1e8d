"""One definition of the pairs: ``toollens pairs`` lists exactly what the Tool calls page shows.

The fixture store (``dbfixture.build_fixture``) has paired calls, a call without answer, a
result answering no call, a second answer, corrected error types and verdicts, and advice; the
page's table comes from ``db.queries.pairs.list_pairs`` (the function the page calls), the CLI's
rows from its CSV and JSON Lines output.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pandas as pd
import pytest
from dbfixture import fixture_store, open_app
from typer.testing import CliRunner

from dashboard import pages
from db.engine import make_engine
from db.queries.pairs import PAIR_COLUMNS, POSITION_COLUMNS, count_pairs, list_pairs
from ingest.cli import app

runner = CliRunner()


def _csv_cell(value: Any) -> str:
    """A page table cell as the csv module writes it (empty for a missing value)."""
    return "" if value is None or pd.isna(value) else str(value)


@pytest.fixture
def pairs_store(db_url: str) -> str:
    """The fixture store on each database; its URL."""
    return fixture_store(db_url)


def test_the_cli_csv_lists_the_pages_pairs_with_the_same_values(pairs_store: str) -> None:
    engine = make_engine(pairs_store)
    total = count_pairs(engine)
    page = list_pairs(engine, limit=total)
    engine.dispose()
    assert total == 10
    assert list(page.columns) == [*PAIR_COLUMNS, *POSITION_COLUMNS]

    result = runner.invoke(app, ["pairs", "--db", pairs_store, "--format", "csv"])
    assert result.exit_code == 0
    table = list(csv.reader(io.StringIO(result.stdout)))
    assert table[0] == list(PAIR_COLUMNS)
    shown = [[_csv_cell(v) for v in row] for row in page[list(PAIR_COLUMNS)].itertuples(False)]
    assert table[1:] == shown
    # The fixture's pairs in all their kinds, so the comparison covers every column.
    assert {row[PAIR_COLUMNS.index("pair_state")] for row in table[1:]} >= {
        "paired", "missing_result", "orphan_result", "duplicate_result",
    }  # fmt: skip
    for column in ("call_id", "suggestion", "verdict", "verdict_reason", "status_source"):
        assert any(row[PAIR_COLUMNS.index(column)] for row in table[1:]), column


def test_the_cli_jsonl_keeps_the_pages_types(pairs_store: str) -> None:
    engine = make_engine(pairs_store)
    page = list_pairs(engine, limit=count_pairs(engine))[list(PAIR_COLUMNS)]
    engine.dispose()
    lines = runner.invoke(app, ["pairs", "--db", pairs_store]).stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [list(r) for r in rows] == [list(PAIR_COLUMNS)] * len(page)
    expected = [
        [None if pd.isna(v) else (int(v) if isinstance(v, int) else v) for v in row]
        for row in page.astype(object).itertuples(False)
    ]
    assert [list(r.values()) for r in rows] == expected


def test_the_page_shows_the_cli_columns_in_the_cli_order(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    at = open_app(monkeypatch, fixture_store(sqlite_url), page=pages.CALLS.script)
    assert not at.exception
    assert list(at.dataframe[0].proto.column_order) == list(PAIR_COLUMNS)
