"""Roles, the write gateway's refusals, the no-login banner and ``toollens serve``'s refusal to
listen beyond this machine without login."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import streamlit as st
from dbfixture import DASHBOARD_APP, OpenPage
from incident import import_incident
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from dashboard import pages
from dashboard.access import (
    ACTIONS,
    EXPOSED_ENV,
    RolePolicy,
    auth_configured,
    login_providers,
    permits,
    read_secrets,
)
from dashboard.auth import EXPOSED_TEXT
from dashboard.render import escape_markdown
from db.engine import make_engine
from ingest.cli import app

AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "secret",
    "client_id": "toollens",
    "client_secret": "s",
    "server_metadata_url": "http://127.0.0.1:9400/.well-known/openid-configuration",
}
ROLES = {"admin": ["ana@example.com"], "reviewer": ["example.com"], "viewer": ["@partner.org"]}
SECRETS_TOML = """
[auth]
redirect_uri = "http://127.0.0.1:8501/oauth2callback"
cookie_secret = "secret"
client_id = "toollens"
client_secret = "s"
server_metadata_url = "http://127.0.0.1:9400/.well-known/openid-configuration"
"""


def test_each_role_may_do_exactly_its_actions() -> None:
    allowed = {role: [a for a in ACTIONS if permits(role, a)] for role in ROLES}
    assert allowed == {
        "viewer": [],
        "reviewer": ["annotate", "correct", "mark_reviewed"],
        "admin": ["annotate", "correct", "mark_reviewed", "upload", "delete"],
    }


def test_the_highest_matching_role_wins_and_unlisted_emails_are_refused() -> None:
    policy = RolePolicy.from_config(ROLES)
    emails = ["Ana@Example.com", "bo@example.com", "cy@partner.org", "eve@example.com.evil.org",
              "eve@evil.org", "example.com", "", "eve@sub.example.com"]  # fmt: skip
    assert [policy.role_of(e) for e in emails] == [
        "admin", "reviewer", "viewer", None, None, None, None, None,
    ]  # fmt: skip


def test_a_role_list_with_an_unknown_role_or_a_bare_string_is_an_error() -> None:
    with pytest.raises(ValueError) as caught:
        RolePolicy.from_config({"owner": ["a@b.c"]})
    assert str(caught.value) == (
        "unknown role 'owner' in [toollens.roles]; roles are viewer, reviewer, admin"
    )
    with pytest.raises(ValueError) as caught:
        RolePolicy.from_config({"viewer": "a@b.c"})
    assert str(caught.value) == "[toollens.roles] viewer must be a list of e-mails or domains"


def test_login_counts_as_configured_only_with_every_setting_st_login_needs() -> None:
    named = {k: AUTH[k] for k in ("redirect_uri", "cookie_secret")} | {
        "corp": {k: AUTH[k] for k in ("client_id", "client_secret", "server_metadata_url")}
    }
    partial = {k: v for k, v in AUTH.items() if k != "client_secret"}
    assert [auth_configured(a) for a in (AUTH, named, partial, {}, None)] == [
        True, True, False, False, False,
    ]  # fmt: skip
    assert (login_providers(AUTH), login_providers(named)) == ([None], ["corp"])


def test_a_later_secrets_file_replaces_the_earlier_ones_tables(tmp_path: Path) -> None:
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text('[auth]\nclient_id = "one"\n[toollens.roles]\nviewer = ["x.org"]\n')
    second.write_text('[auth]\nclient_id = "two"\n')
    assert read_secrets([first, tmp_path / "missing.toml", second]) == {
        "auth": {"client_id": "two"},
        "toollens": {"roles": {"viewer": ["x.org"]}},
    }


# --- The write gateway in a running app ----------------------------------------------------


def write_app(url: str, action: str, trace_id: int) -> None:
    """An app that calls one gateway write directly, with no control in between, and shows
    the refusal or the note's author."""
    import streamlit as st

    from dashboard import auth, writes
    from dashboard.state import get_engine

    engine = get_engine(url)
    try:
        if action == "note":
            st.text(writes.add_note(engine, trace_id, label="root-cause", note="n").author)
        elif action == "mark":
            writes.mark_reviewed(engine, [trace_id])
        else:
            writes.upload(engine, [("x.jsonl", b"{}\n")], 1)
    except auth.PermissionDeniedError as exc:
        st.text(f"refused: {exc}")


@pytest.fixture
def store(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The incident in a SQLite file the dashboard opens."""
    engine = make_engine(sqlite_url)
    import_incident(engine, tmp_path)
    monkeypatch.setenv("TOOLLENS_DB", sqlite_url)
    st.cache_resource.clear()
    yield engine
    engine.dispose()


def signed_in(url: str, action: str, email: str) -> AppTest:
    """:func:`write_app` run once as ``email`` signed in with login configured."""
    at = AppTest.from_function(write_app, args=(url, action, 1), default_timeout=30)
    at.secrets["auth"] = AUTH
    at.secrets["toollens"] = {"roles": ROLES}
    at.user = {"is_logged_in": True, "email": email, "name": email}
    at.run()
    assert not at.exception
    return at


@pytest.mark.parametrize(
    ("action", "email", "shown"),
    [
        ("note", "cy@partner.org", "refused: cy@partner.org is a viewer and may not annotate"),
        ("mark", "cy@partner.org", "refused: cy@partner.org is a viewer and may not mark reviewed"),
        ("upload", "bo@example.com", "refused: bo@example.com is a reviewer and may not upload"),
        ("note", "eve@evil.org", "refused: sign in to annotate"),
    ],
)
def test_a_direct_write_call_refuses_a_role_without_the_right_and_writes_nothing(
    store: Any, sqlite_url: str, action: str, email: str, shown: str
) -> None:
    at = signed_in(sqlite_url, action, email)
    assert [t.value for t in at.text] == [shown]
    with store.connect() as conn:
        counts = conn.execute(
            sa.text(
                "SELECT (SELECT count(*) FROM annotations), (SELECT count(*) FROM imports), "
                "(SELECT count(*) FROM traces WHERE reviewed_by IS NOT NULL)"
            )
        ).one()
    assert tuple(counts) == (0, 1, 0)


def test_a_reviewers_note_is_signed_with_the_signed_in_email(store: Any, sqlite_url: str) -> None:
    at = signed_in(sqlite_url, "note", "Bo@Example.com")
    assert [t.value for t in at.text] == ["bo@example.com"]


def test_a_mistake_in_the_role_lists_lets_nobody_in_and_says_what_it_is(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    make_engine(sqlite_url).dispose()
    monkeypatch.setenv("TOOLLENS_DB", sqlite_url)
    at = AppTest.from_file(str(DASHBOARD_APP), default_timeout=30)
    at.secrets["auth"] = AUTH
    at.secrets["toollens"] = {"roles": {"owners": ["ana@example.com"]}}
    at.user = {"is_logged_in": True, "email": "ana@example.com"}
    at.run()
    assert [e.value for e in at.error] == [
        escape_markdown(
            "The dashboard's role configuration is wrong: unknown role 'owners' in "
            "[toollens.roles]; roles are viewer, reviewer, admin"
        )
    ]
    assert [t.value for t in at.title] == []


# --- The banner of a dashboard served with --no-auth -----------------------------------------


@pytest.mark.parametrize("page", [pages.OVERVIEW, pages.REVIEW])
def test_every_page_warns_when_served_beyond_this_machine_without_login(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch, sqlite_url: str, page: pages.Page
) -> None:
    make_engine(sqlite_url).dispose()
    monkeypatch.setenv(EXPOSED_ENV, "1")
    at = open_page(sqlite_url, None if page.default else page.script)
    assert [w.value for w in at.warning] == [EXPOSED_TEXT]
    monkeypatch.setenv(EXPOSED_ENV, "0")
    at = open_page(sqlite_url, None if page.default else page.script)
    assert [w.value for w in at.warning] == []


# --- toollens serve ------------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture
def no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory and home without any ``secrets.toml``; ``os.execve`` recorded
    instead of run (it would become the Streamlit server)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def served(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *options: str
) -> tuple[list[str], dict[str, str]]:
    """The command and environment ``toollens serve --db <folder>/t.db *options`` hands to
    ``os.execve`` (recorded instead of run), on a store made first: serve opens a store, never
    makes one."""
    make_engine(str(folder / "t.db")).dispose()
    calls: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(os, "execve", lambda _exe, cmd, env: calls.append((list(cmd), env)))
    assert runner.invoke(app, ["serve", "--db", str(folder / "t.db"), *options]).exit_code == 0
    [(command, env)] = calls
    return command, env


def test_serve_refuses_a_non_loopback_address_without_login(no_secrets: Path) -> None:
    result = runner.invoke(app, ["serve", "--db", str(no_secrets / "t.db"), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: refusing to serve on 0.0.0.0 without login: configure [auth] in "
        ".streamlit/secrets.toml (or --secrets FILE), pass --no-auth to serve anyway, or bind "
        "to 127.0.0.1\n"
    )
    assert not (no_secrets / "t.db").exists()


def test_serve_with_no_auth_starts_and_tells_every_page_to_warn(
    no_secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command, env = served(no_secrets, monkeypatch, "--host", "0.0.0.0", "--no-auth")
    assert command[command.index("--server.address") + 1] == "0.0.0.0"
    assert env[EXPOSED_ENV] == "1"


def test_serve_with_login_configured_listens_anywhere_and_reads_those_secrets(
    no_secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = no_secrets / "team.toml"
    secrets.write_text(SECRETS_TOML)
    command, env = served(no_secrets, monkeypatch, "--host", "0.0.0.0", "--secrets", str(secrets))
    files = [command[i + 1] for i, a in enumerate(command) if a == "--secrets.files"]
    assert files == [
        str(no_secrets / "home" / ".streamlit" / "secrets.toml"),
        str(no_secrets / ".streamlit" / "secrets.toml"),
        str(secrets),
    ]
    assert env[EXPOSED_ENV] == "0"


def test_serve_on_loopback_needs_no_login_and_shows_no_warning(
    no_secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command, env = served(no_secrets, monkeypatch)
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    assert env[EXPOSED_ENV] == "0"


# --- Every write goes through the gateway ----------------------------------------------------

WRITES = {
    "add_annotation", "update_annotation", "delete_annotation", "correct_result",
    "mark_reviewed", "clear_reviewed", "import_uploaded", "import_paths", "delete_rows",
    "ImportSession", "Maintenance",
}  # fmt: skip


def a_is_uploads(node: Any) -> bool:
    """``from dashboard import uploads``."""
    return node.module == "dashboard" and any(a.name == "uploads" for a in node.names)


def test_only_the_write_gateway_calls_a_db_write_or_the_upload_import() -> None:
    import ast

    dashboard = Path(__file__).resolve().parents[1] / "dashboard"
    callers: dict[str, set[str]] = {}
    for path in sorted(dashboard.rglob("*.py")):
        tree = ast.parse(path.read_text())
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names = {a.name for n in imports for a in n.names}
        # ``review.mark_reviewed(…)`` after ``from db import review`` counts too.
        modules = {
            a.asname or a.name
            for n in imports
            if (n.module or "").startswith("db") or a_is_uploads(n)
            for a in n.names
        }
        names |= {
            n.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id in modules
        }  # fmt: skip
        used = names & WRITES
        if used:
            callers[str(path.relative_to(dashboard))] = used
    assert callers == {
        "writes.py": {
            "add_annotation", "update_annotation", "delete_annotation", "correct_result",
            "mark_reviewed", "clear_reviewed", "import_uploaded", "Maintenance",
        },
        "uploads.py": {"import_paths"},
    }  # fmt: skip
