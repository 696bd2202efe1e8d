"""Every page of the registry, on an empty store, explains how to import."""

from pathlib import Path

import pytest
from dbfixture import OpenPage, stamp_newer_schema

from dashboard import pages
from dashboard.render import EMPTY_STORE_TEXT


@pytest.mark.parametrize("page", pages.PAGES, ids=[p.key for p in pages.PAGES])
def test_every_page_explains_how_to_import_when_the_store_is_empty(
    open_page: OpenPage, tmp_path: Path, page: pages.Page
) -> None:
    at = open_page(f"sqlite:///{tmp_path / 'empty.db'}", page.script)
    assert [i.value for i in at.info] == [EMPTY_STORE_TEXT]
    assert "toollens import FILE" in EMPTY_STORE_TEXT
    # The upload is one click away.
    assert [link.proto.page for link in at.get("page_link")][-1:] == [pages.IMPORTS.url_path]


def test_a_store_of_a_newer_toollens_shows_one_error_line(
    open_page: OpenPage, tmp_path: Path
) -> None:
    path = tmp_path / "newer.db"
    stamp_newer_schema(f"sqlite:///{path}")
    at = open_page(f"sqlite:///{path}")
    assert [e.value for e in at.error] == [
        f"toollens: the database at {path} was written by a newer ToolLens (schema 0999); "
        "upgrade ToolLens"
    ]
