"""The Trace and Tokens pages in AppTest on a store holding images and usage
(``test_queries_images_usage``'s two traces, figures worked out there): an image is a
placeholder with its size and tokens, never its bytes; sizes say whether they are estimates;
each result shows its share of the input of the model call that read it."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbfixture import OpenPage
from page_support import captions, chart_spec
from test_queries_images_usage import _write

from dashboard import pages
from dashboard.render import escape_markdown
from db.engine import make_engine
from ingest.importing.pipeline import import_paths


@pytest.fixture
def image_store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'images.db'}"
    engine = make_engine(url)
    import_paths(engine, _write(tmp_path), workers=0)
    engine.dispose()
    return url


def _markdown(at: object) -> str:
    return "\n".join(m.value for m in at.markdown)  # type: ignore[attr-defined]


def test_the_trace_page_shows_an_image_as_a_placeholder_and_the_input_share(
    open_page: OpenPage, image_store: str
) -> None:
    at = open_page(image_store, pages.TRACE.script, {"trace": "run-img"})
    texts = [t.value for t in at.text]
    assert "[image png 1024×768, ~1,049 tokens]" in texts
    assert not any("iVBOR" in t for t in [*texts, _markdown(at)])  # no PNG bytes anywhere
    markdown = _markdown(at)
    assert escape_markdown("~1,052 tokens") in markdown
    assert escape_markdown("52.6% of the input of #3 (2,000 tokens)") in markdown
    assert any(c.startswith("Token counts: estimates (~)") for c in captions(at))


def test_an_exact_trace_marks_only_its_image_results_as_estimates(
    open_page: OpenPage, image_store: str
) -> None:
    at = open_page(image_store, pages.TRACE.script, {"trace": "chat-img"})
    assert "[image jpeg 2000×1000, ~1,105 tokens]" in [t.value for t in at.text]
    assert escape_markdown("~1,106 tokens") in _markdown(at)
    assert escape_markdown("2.2% of the input of #3 (50,000 tokens)") in _markdown(at)
    assert any(c.startswith("Token counts: exact") for c in captions(at))


def test_the_tokens_page_draws_the_input_shares(open_page: OpenPage, image_store: str) -> None:
    at = open_page(image_store, pages.TOKENS.script, {"tokens_tab": "Share of the model's input"})
    assert "2 of 3 Tool Messages" in captions(at)
    assert (
        "2 Tool Messages carry images, ~2,154 tokens by the providers' image rules "
        "(included above)." in captions(at)
    )
    shares = chart_spec(at, 0)
    assert shares["data"][0]["y"] == [0, 0, 1, 0, 0, 0, 1, 0]
    assert shares["data"][0]["x"][-1] == "≥ 100 %"
