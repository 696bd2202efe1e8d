"""Every analysis page on an empty store explains how to import."""

from pathlib import Path

import pytest
from dbfixture import open_app

from dashboard import pages
from dashboard.render import EMPTY_STORE_TEXT

ERRORS = pages.ERRORS.script
TOKENS = pages.TOKENS.script
LOOPS = pages.LOOPS.script
SUGGESTIONS = pages.SUGGESTIONS.script
IMPORTS = pages.IMPORTS.script


@pytest.mark.parametrize("page", [ERRORS, TOKENS, LOOPS, SUGGESTIONS, IMPORTS])
def test_every_page_explains_how_to_import_when_the_store_is_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, page: str
) -> None:
    at = open_app(monkeypatch, f"sqlite:///{tmp_path / 'empty.db'}", page=page)
    assert not at.exception
    assert [i.value for i in at.info] == [EMPTY_STORE_TEXT]
