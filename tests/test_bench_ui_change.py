"""``make bench-ui`` measures the filter change it is asked for: the most frequent model, or
(``--change days``) the first half of the store's days set in the sidebar's From / To dates."""

from __future__ import annotations

from datetime import date

import pytest
from dbfixture import open_app

from benchmarks.ui_bench import FilterChange, half_of_the_days


def _traces(at: object) -> str:
    return next(m.value for m in at.metric if m.label == "Traces")  # type: ignore[attr-defined]


def test_the_days_change_sets_the_first_half_of_the_stores_days_and_undoes_it(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fixture's traces start on 1, 2 and 5 November 2026: days 1-5, the first half 1-3.
    days = half_of_the_days(store_url)
    assert days == (date(2026, 11, 1), date(2026, 11, 3))
    change = FilterChange("gpt-4o", days)
    assert change.describe() == "From 2026-11-01 To 2026-11-03 (half the store's days)"
    at = open_app(monkeypatch, store_url)
    assert _traces(at) == "3"
    change.apply(at)
    at.run()
    assert (at.date_input(key="start").value, at.date_input(key="end").value) == days
    assert _traces(at) == "2"  # docs-3 starts on 5 November
    change.undo(at)
    at.run()
    assert (at.date_input(key="start").value, at.date_input(key="end").value) == (None, None)
    assert _traces(at) == "3"


def test_the_model_change_selects_the_model_and_undoes_it(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    change = FilterChange("gpt-4o")
    assert change.describe() == "model = gpt-4o"
    at = open_app(monkeypatch, store_url)
    change.apply(at)
    at.run()
    assert at.selectbox(key="model").value == "gpt-4o"
    change.undo(at)
    at.run()
    assert at.selectbox(key="model").value is None
