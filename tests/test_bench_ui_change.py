"""``make bench-ui`` measures the filter change it is asked for: the most frequent model, or
(``--change days``) the first half of the store's days set in the sidebar's From / To dates."""

from __future__ import annotations

from datetime import date

from dbfixture import OpenPage

from benchmarks.ui_bench import FilterChange, half_of_the_days


def _traces(at: object) -> str:
    return next(m.value for m in at.metric if m.label == "Traces")  # type: ignore[attr-defined]


def test_the_days_change_sets_the_first_half_of_the_stores_days_and_undoes_it(
    open_page: OpenPage, store_url: str
) -> None:
    # The fixture's traces start on 1, 2 and 5 November 2026: days 1-5, the first half 1-3.
    days = half_of_the_days(store_url)
    assert days == (date(2026, 11, 1), date(2026, 11, 3))
    change = FilterChange("gpt-4o", days)
    assert change.describe() == "From 2026-11-01 To 2026-11-03 (half the store's days)"
    at = open_page(store_url)
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
    open_page: OpenPage, store_url: str
) -> None:
    change = FilterChange("gpt-4o")
    assert change.describe() == "model = gpt-4o"
    at = open_page(store_url)
    change.apply(at)
    at.run()
    assert at.selectbox(key="model").value == "gpt-4o"
    change.undo(at)
    at.run()
    assert at.selectbox(key="model").value is None


def test_the_bench_measures_every_page_every_other_section_and_one_trace() -> None:
    from benchmarks.ui_bench import page_cases
    from dashboard import pages

    cases = page_cases("run-7", "3:0")
    labels = [c.label for c in cases]
    assert labels[:7] == [
        "overview", "overview: Activity", "overview: Distributions", "overview: Execution time",
        "overview: Scorecard", "calls", "trace",
    ]  # fmt: skip
    assert labels[7] == "trace (one trace)"
    assert cases[7].url_query() == "?trace=run-7&pair=3%3A0"
    errors = next(c for c in cases if c.label == "errors: Over time")
    assert (errors.path, errors.url_query()) == ("/errors", "?errors_tab=Over+time")
    others = sum(len(p.sections[1:]) for p in pages.PAGES)
    assert (len(pages.PAGES), others, len(cases)) == (13, 17, 13 + 1 + 17)
