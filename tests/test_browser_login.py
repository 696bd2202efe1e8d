"""Login and roles end to end: ``toollens serve`` with ``[auth]`` pointing at a real OpenID
Connect provider (``oidc-provider-mock``, a maintained provider for tests) on loopback, driven in
headless Chromium. Skipped like ``tests/test_browser.py`` when Chromium or playwright is missing.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
import sqlalchemy as sa
from browser_support import (
    PAGE_TIMEOUT_MS,
    Server,
    first_error_pair,
    free_port,
    new_context,
    open_page,
    run_server,
    scenario_store,
)

from dashboard import pages
from db.engine import make_engine
from db.queries.filters import Filters
from db.queries.pairs import PairQuery, count_pairs
from db.queries.traces import filter_choices

pytestmark = pytest.mark.browser

REVIEWER = "rita@example.com"
VIEWER = "vic@partner.example"
STRANGER = "eve@elsewhere.example"
#: The Trace page's review box of a pair (``REVIEW_LABEL`` of the page script).
REVIEW_LABEL = "Notes and corrections on this pair"


@contextlib.contextmanager
def oidc_provider() -> Iterator[str]:
    """A real OpenID Connect provider on loopback; yields its issuer URL. Any client id and
    secret are accepted, and a subject typed on its form signs in with that e-mail."""
    import oidc_provider_mock

    with oidc_provider_mock.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


def secrets_toml(port: int, issuer: str) -> str:
    """The secrets of a team dashboard on ``port`` whose login is ``issuer``."""
    return f"""
[auth]
redirect_uri = "http://127.0.0.1:{port}/oauth2callback"
cookie_secret = "a-test-cookie-secret-of-enough-length"
client_id = "toollens"
client_secret = "toollens-secret"
server_metadata_url = "{issuer}/.well-known/openid-configuration"

[toollens.roles]
reviewer = ["{REVIEWER}"]
viewer = ["@partner.example"]
"""


@dataclass
class TeamServer:
    """The dashboard served with login, and the trace it holds."""

    server: Server
    #: A trace with an error result, and the ``pair`` parameter of that error's call.
    trace: str
    pair: str
    url: str


@pytest.fixture(scope="module")
def team_server(
    tmp_path_factory: pytest.TempPathFactory, module_db_url: str
) -> Iterator[TeamServer]:
    """The scenario store served by ``toollens serve --secrets`` with login, on each database."""
    folder = tmp_path_factory.mktemp("login")
    url = module_db_url
    engine, _ = scenario_store(folder, url)
    trace, pair = first_error_pair(engine)
    engine.dispose()
    port = free_port()
    with oidc_provider() as issuer:
        secrets = folder / "secrets.toml"
        secrets.write_text(secrets_toml(port, issuer))
        command = [
            sys.executable, "-m", "ingest.cli", "serve", "--db", url, "--port", str(port),
            "--secrets", str(secrets),
        ]  # fmt: skip
        with run_server(command, port, folder / "server.log") as server:
            yield TeamServer(server, trace, pair, url)


def sign_in(page: Any, server: Server, email: str) -> None:
    """Open the dashboard, click "Log in", and authorize ``email`` at the provider."""
    open_page(page, server.url + "/", text="ToolLens")
    authorize(page, server, email)
    open_page(page, server.url + "/", text=pages.OVERVIEW.title)


@contextlib.contextmanager
def signed_in(browser: Any, server: Server, email: str) -> Iterator[Any]:
    """A page of a fresh browser context, signed in as ``email`` (:func:`sign_in`); the
    context is closed afterwards."""
    context = new_context(browser)
    try:
        page = context.new_page()
        sign_in(page, server, email)
        yield page
    finally:
        context.close()


def authorize(page: Any, server: Server, email: str) -> None:
    """On the login screen: click "Log in" and authorize ``email`` at the provider; returns
    once the browser is back at the dashboard."""
    page.get_by_role("button", name="Log in").click()
    page.get_by_placeholder("sub").fill(email)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(f"{server.url}/**")


def sign_out(page: Any, server: Server, button: Any) -> None:
    """Click ``button`` ("Sign out"), end the session at the provider, and wait for the login
    screen the provider sends the browser back to."""
    button.click()
    page.get_by_role("button", name="End session").click()
    page.wait_for_url(f"{server.url}/**")
    open_page(page, server.url + "/", text="ToolLens")
    page.get_by_role("button", name="Log in").wait_for()


def trace_page(page: Any, team: TeamServer) -> Any:
    """The Trace page at the error's pair, with the trace's notes and the pair's review box
    open (they draw their forms only while open); returns the main area."""
    open_page(
        page, f"{team.server.url}{pages.TRACE.path}?trace={team.trace}&pair={team.pair}",
        selector="h3", text=team.trace,
    )  # fmt: skip
    main = page.locator('[data-testid="stMain"]')
    main.locator('[data-testid="stExpander"] summary', has_text="Notes and labels").click()
    main.locator('[data-testid="stExpander"] summary', has_text=REVIEW_LABEL).click()
    # The pair's box draws this caption once its rerun is done; then wait for the page to
    # settle (the trace's box reran before it).
    main.get_by_text("Correct what the rules derived").wait_for()
    page.wait_for_function(
        "() => window.__notReady() === null", timeout=PAGE_TIMEOUT_MS, polling=50
    )
    return main


def test_a_visitor_who_is_not_signed_in_sees_only_the_login_button(
    browser: Any, team_server: TeamServer
) -> None:
    context = new_context(browser)
    page = context.new_page()
    open_page(page, f"{team_server.server.url}{pages.TRACE.path}", text="ToolLens")
    main = page.locator('[data-testid="stMain"]')
    assert main.locator("h1").all_text_contents() == ["ToolLens"]
    assert page.get_by_role("button", name="Log in").count() == 1
    assert page.locator('[data-testid="stSidebar"]').count() == 0
    assert team_server.trace not in (main.text_content() or "")
    context.close()


def test_an_email_on_no_role_list_is_refused_and_can_sign_out(
    browser: Any, team_server: TeamServer
) -> None:
    server = team_server.server
    context = new_context(browser)
    page = context.new_page()
    open_page(page, server.url + "/", text="ToolLens")
    authorize(page, server, STRANGER)
    open_page(page, server.url + "/", selector="p", text="is not allowed")
    main = page.locator('[data-testid="stMain"]')
    assert main.get_by_text(f"{STRANGER} is not allowed to use this dashboard.").count() == 1
    assert page.locator('[data-testid="stSidebar"]').count() == 0
    sign_out(page, server, page.get_by_role("button", name="Sign out"))
    context.close()


def test_a_viewer_reads_but_gets_no_note_correction_upload_or_review_controls(
    browser: Any, team_server: TeamServer
) -> None:
    server = team_server.server
    with signed_in(browser, server, VIEWER) as page:
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert sidebar.get_by_text(f"Signed in as {VIEWER} (viewer)").count() == 1
        assert sidebar.get_by_role("button", name="Sign out").count() == 1
        assert sidebar.get_by_label("Your name").count() == 0
        main = trace_page(page, team_server)
        # The boxes are open and show what is stored, without a form.
        assert main.get_by_text("Correct what the rules derived").count() == 1
        assert main.get_by_role("button", name="Add note").count() == 0
        assert main.get_by_role("button", name="Save correction").count() == 0
        open_page(page, f"{server.url}{pages.IMPORTS.path}", text=pages.IMPORTS.title)
        assert main.get_by_text("Uploading traces needs the admin role.").count() == 1
        assert page.locator('[data-testid="stFileUploader"]').count() == 0
        open_page(page, f"{server.url}{pages.REVIEW.path}", text=pages.REVIEW.title)
        assert main.get_by_role("button", name="Mark reviewed").count() == 0
        # Signing out ends the session: the next visit asks to log in again.
        sign_out(page, server, sidebar.get_by_role("button", name="Sign out"))
        assert page.locator('[data-testid="stSidebar"]').count() == 0


def test_a_reviewer_adds_a_note_signed_with_the_email_but_cannot_upload(
    browser: Any, team_server: TeamServer
) -> None:
    server = team_server.server
    with signed_in(browser, server, REVIEWER) as page:
        assert page.get_by_text(f"Signed in as {REVIEWER} (reviewer)").count() == 1
        main = trace_page(page, team_server)
        assert main.get_by_role("button", name="Add note").count() == 2  # the trace, the pair
        assert main.get_by_role("button", name="Save correction").count() == 1
        form = main.locator(
            '[data-testid="stForm"]', has=page.get_by_role("button", name="Add note")
        )
        form.first.get_by_label("Note").fill("the retry storm starts here")
        form.first.get_by_role("button", name="Add note").click()
        page.get_by_text("the retry storm starts here").first.wait_for()
        open_page(page, f"{server.url}{pages.IMPORTS.path}", text=pages.IMPORTS.title)
        assert page.locator('[data-testid="stFileUploader"]').count() == 0
    engine = make_engine(team_server.url)
    with engine.connect() as conn:
        notes = conn.execute(sa.text("SELECT note, author, updated_by FROM annotations")).all()
    engine.dispose()
    assert [tuple(n) for n in notes] == [("the retry storm starts here", REVIEWER, REVIEWER)]


def test_signing_in_from_a_link_lands_on_that_link_with_its_query(
    browser: Any, team_server: TeamServer
) -> None:
    server = team_server.server
    engine = make_engine(team_server.url)
    tool = str(filter_choices(engine)["tool"][0])
    errors = count_pairs(engine, Filters(tool=tool), PairQuery(status="error"))
    engine.dispose()
    assert errors > 0
    opened = {"trace": team_server.trace, "pair": team_server.pair}
    links = (
        f"{server.url}{pages.CALLS.path}?{urlencode({'status': 'error', 'tool': tool})}",
        f"{server.url}{pages.TRACE.path}?{urlencode(opened)}",
    )
    for link in links:
        context = new_context(browser)
        page = context.new_page()
        open_page(page, link, text="ToolLens")
        assert page.get_by_role("button", name="Log in").count() == 1
        authorize(page, server, REVIEWER)
        # The provider's callback returns to the root; the dashboard goes on to the link.
        page.wait_for_url(link, timeout=PAGE_TIMEOUT_MS)
        if link.startswith(f"{server.url}{pages.CALLS.path}"):
            open_page(page, page.url, selector="p", text=f"{errors:,} rows · page 1")
            assert page.get_by_role("button", name=f"Tool: {tool}").count() == 1
        else:
            open_page(page, page.url, selector="h3", text=team_server.trace)
            here = f".st-key-here_{team_server.pair.replace(':', '_')}"
            assert page.locator(here).count() == 1
        assert page.url == link
        context.close()
