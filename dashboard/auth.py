"""Login, the signed-in identity and what it may do: the one place the dashboard asks.

Two modes. With an ``[auth]`` table in ``.streamlit/secrets.toml`` (see :mod:`dashboard.access`)
every visitor signs in with OpenID Connect (``st.login``); only e-mails on the
``[toollens.roles]`` lists get in, each with a role, and the e-mail signs their notes and
corrections. Without it, ToolLens is one person's local tool: everything is allowed and the
name typed in the sidebar (default ``$TOOLLENS_USER``) signs. :func:`can` answers for the
controls (a control the role lacks is not drawn) and :func:`require` for the writes
(:mod:`dashboard.writes` calls it before each one).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from dashboard import address
from dashboard.access import (
    EXPOSED_ENV,
    LOCAL_ADMIN_ENV,
    AccessRole,
    Action,
    RolePolicy,
    auth_configured,
    login_providers,
    permits,
)
from dashboard.render import escape_markdown

#: Session key holding the name typed in the sidebar (local mode).
AUTHOR_KEY = "toollens_author"
USER_ENV = "TOOLLENS_USER"
EXPOSED_TEXT = (
    "This dashboard is reachable from other machines without login (started with --no-auth): "
    "anyone who can reach it can read every trace and change notes, corrections and imports."
)


class PermissionDeniedError(PermissionError):
    """A write the signed-in identity's role does not allow; the message says which."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is using the dashboard."""

    #: The signed-in e-mail (lower-cased); empty in local mode.
    email: str
    #: The provider's display name, or the name typed in the sidebar in local mode.
    name: str
    role: AccessRole
    #: True when the identity comes from login (False: local mode).
    signed_in: bool

    @property
    def signature(self) -> str:
        """What signs notes, corrections and reviews: the e-mail, or the typed name locally."""
        return self.email if self.signed_in else self.name


def _secrets_table(name: str) -> Mapping[str, Any] | None:
    try:
        table = st.secrets.get(name)
    except (FileNotFoundError, OSError, ValueError):  # no secrets file, or one that is not TOML
        return None
    return table if isinstance(table, Mapping) else None


def login_required() -> bool:
    """True when ``[auth]`` in the secrets configures OpenID Connect login."""
    return auth_configured(_secrets_table("auth"))


def policy() -> RolePolicy:
    """The role lists of ``[toollens.roles]`` (nobody gets in when there are none)."""
    toollens = _secrets_table("toollens") or {}
    return RolePolicy.from_config(toollens.get("roles", {}))


def local_name() -> str:
    """The name typed in the sidebar, else ``$TOOLLENS_USER``, else empty (local mode)."""
    return str(st.session_state.get(AUTHOR_KEY, os.environ.get(USER_ENV, ""))).strip()


def identity() -> Identity | None:
    """Who is using the dashboard; ``None`` when login is required and nobody allowed in is
    signed in (no one, or an e-mail on no role list)."""
    if not login_required():
        return Identity(email="", name=local_name(), role="admin", signed_in=False)
    if not st.user.is_logged_in:
        return None
    email = str(st.user.get("email") or "").strip().lower()
    # A provider that says the address is unverified gives no proof of who this is.
    if not email or st.user.get("email_verified") is False:
        return None
    role = policy().role_of(email)
    if role is None:
        return None
    return Identity(email=email, name=str(st.user.get("name") or email), role=role, signed_in=True)


def _allowed(person: Identity, action: Action) -> bool:
    if action == "delete" and not person.signed_in:
        return os.environ.get(LOCAL_ADMIN_ENV) == "1"
    return permits(person.role, action)


def can(action: Action) -> bool:
    """True when whoever uses the dashboard may do ``action`` (draw its control). Without
    login everything is allowed, except deleting, which needs ``TOOLLENS_ADMIN=1``."""
    person = identity()
    return person is not None and _allowed(person, action)


def require(action: Action) -> Identity:
    """The identity doing ``action``; :class:`PermissionDeniedError` when it may not."""
    person = identity()
    if person is None:
        raise PermissionDeniedError(f"sign in to {action.replace('_', ' ')}")
    if not _allowed(person, action):
        raise PermissionDeniedError(
            f"{person.email or person.name} is a {person.role} and may not "
            f"{action.replace('_', ' ')}"
        )
    return person


def _login_screen() -> None:
    st.title("ToolLens")
    st.write("Sign in to open the dashboard.")
    # Signing in comes back at the root: the address opened is kept to return to.
    address.remember_link_for_sign_in()
    for provider in login_providers(_secrets_table("auth") or {}):
        label = "Log in" if provider is None else f"Log in with {provider}"
        if st.button(label, type="primary", key=f"login_{provider}"):
            if provider is None:
                st.login()
            else:
                st.login(provider)


def gate() -> Identity | None:
    """Stop the run at a login screen until someone allowed in is signed in; a signed-in
    e-mail on no role list is told so and offered "Sign out". Returns the identity."""
    if not login_required():
        return identity()
    try:
        policy()
    except ValueError as exc:  # a mistake in [toollens.roles]: say which, let nobody in
        st.error(escape_markdown(f"The dashboard's role configuration is wrong: {exc}"))
        st.stop()
    if not st.user.is_logged_in:
        _login_screen()
        st.stop()
    person = identity()
    if person is None:
        st.title("ToolLens")
        who = str(st.user.get("email") or "this account")
        st.error(escape_markdown(f"{who} is not allowed to use this dashboard."))
        if st.button("Sign out", key="signout_refused"):
            st.logout()
        st.stop()
    return person


def sidebar_identity(person: Identity) -> None:
    """The signed-in identity and its role, and "Sign out", in the sidebar (login mode)."""
    bar = st.sidebar
    bar.caption(escape_markdown(f"Signed in as {person.email} ({person.role})"))
    if bar.button("Sign out", key="signout", icon=":material/logout:"):
        st.logout()


def exposure_banner() -> None:
    """On every page, the warning that no login guards a dashboard other machines can reach."""
    if os.environ.get(EXPOSED_ENV) == "1":
        st.warning(EXPOSED_TEXT, icon=":material/warning:")
