"""Who may use a shared dashboard and what each person may do: roles, the allow-list, and
whether login is configured.

Plain data and pure functions (no Streamlit import), read by the dashboard's login gate
(:mod:`dashboard.auth`) and by ``toollens serve``, which refuses to listen beyond this machine
without login. The configuration lives in ``.streamlit/secrets.toml``::

    [auth]                      # Streamlit's OpenID Connect login
    redirect_uri = "https://toollens.example.com/oauth2callback"
    cookie_secret = "…"
    client_id = "…"
    client_secret = "…"
    server_metadata_url = "https://accounts.example.com/.well-known/openid-configuration"

    [toollens.roles]            # e-mail addresses, or domains written "@example.com"
    admin = ["ana@example.com"]
    reviewer = ["@example.com"]
    viewer = ["@partner.example"]

Whoever matches no list is not let in: the role lists are the allow-list. A person matching
several lists gets the highest role.
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, get_args

AccessRole = Literal["viewer", "reviewer", "admin"]
#: Roles from least to most rights.
ACCESS_ROLES: Final[tuple[AccessRole, ...]] = get_args(AccessRole)

Action = Literal["annotate", "correct", "mark_reviewed", "upload", "delete"]
ACTIONS: Final[tuple[Action, ...]] = get_args(Action)
#: The least role allowed each write. Viewers only read.
LEAST_ROLE: Final[dict[Action, AccessRole]] = {
    "annotate": "reviewer",
    "correct": "reviewer",
    "mark_reviewed": "reviewer",
    "upload": "admin",
    "delete": "admin",
}
#: Set to ``1`` by ``toollens serve --no-auth`` when it listens beyond this machine without
#: login: every page then warns.
EXPOSED_ENV: Final = "TOOLLENS_EXPOSED_WITHOUT_LOGIN"
#: The provider settings Streamlit's ``st.login`` needs besides ``redirect_uri`` and
#: ``cookie_secret``, in ``[auth]`` itself or in a named provider's ``[auth.NAME]``.
PROVIDER_KEYS: Final = ("client_id", "client_secret", "server_metadata_url")


def permits(role: AccessRole, action: Action) -> bool:
    """True when ``role`` may do ``action``.

    >>> permits("reviewer", "annotate"), permits("reviewer", "upload"), permits("viewer", "correct")
    (True, False, False)
    """
    return ACCESS_ROLES.index(role) >= ACCESS_ROLES.index(LEAST_ROLE[action])


def _entry(value: str) -> str:
    entry = value.strip().lower()
    if not entry:
        raise ValueError("an empty entry in [toollens.roles]")
    # A bare domain ("example.com") is the same as "@example.com".
    return entry if "@" in entry else f"@{entry}"


@dataclass(frozen=True, slots=True)
class RolePolicy:
    """The role lists: per role, e-mail addresses (``ana@example.com``) and domains
    (``@example.com``), lower-cased."""

    entries: Mapping[AccessRole, frozenset[str]]

    @classmethod
    def from_config(cls, roles: Mapping[str, Any]) -> RolePolicy:
        """The policy of a ``[toollens.roles]`` table; ``ValueError`` names a bad key or value.

        >>> RolePolicy.from_config({"viewer": ["example.com"]}).role_of("Bo@Example.com")
        'viewer'
        """
        unknown = sorted(set(roles) - set(ACCESS_ROLES))
        if unknown:
            raise ValueError(
                f"unknown role {unknown[0]!r} in [toollens.roles]; roles are "
                + ", ".join(ACCESS_ROLES)
            )
        entries: dict[AccessRole, frozenset[str]] = {}
        for role in ACCESS_ROLES:
            values = roles.get(role, [])
            if isinstance(values, str) or not isinstance(values, Iterable):
                raise ValueError(f"[toollens.roles] {role} must be a list of e-mails or domains")
            entries[role] = frozenset(_entry(str(v)) for v in values)
        return cls(entries)

    def role_of(self, email: str) -> AccessRole | None:
        """The highest role whose list names ``email`` or its domain; ``None``: not allowed in.

        >>> policy = RolePolicy.from_config({"admin": ["ana@x.org"], "reviewer": ["@x.org"]})
        >>> policy.role_of("ana@x.org"), policy.role_of("bo@x.org"), policy.role_of("bo@y.org")
        ('admin', 'reviewer', None)
        """
        address = email.strip().lower()
        if "@" not in address:
            return None
        domain = address[address.rindex("@") :]
        for role in reversed(ACCESS_ROLES):
            if address in self.entries[role] or domain in self.entries[role]:
                return role
        return None


def auth_configured(auth: Mapping[str, Any] | None) -> bool:
    """True when an ``[auth]`` table lets ``st.login`` run: ``redirect_uri``, ``cookie_secret``
    and a provider (the :data:`PROVIDER_KEYS` in the table or in one of its sub-tables)."""
    if not auth or not auth.get("redirect_uri") or not auth.get("cookie_secret"):
        return False
    providers = [auth, *(v for v in auth.values() if isinstance(v, Mapping))]
    return any(all(p.get(k) for k in PROVIDER_KEYS) for p in providers)


def login_providers(auth: Mapping[str, Any]) -> list[str | None]:
    """The providers to offer: the named ones (``[auth.NAME]``), else ``[None]`` (the default
    provider configured in ``[auth]`` itself)."""
    named = [k for k, v in auth.items() if isinstance(v, Mapping)]
    return list(named) if named else [None]


def read_secrets(paths: Iterable[Path]) -> dict[str, Any]:
    """The secrets as Streamlit reads them: each existing TOML file in order, a later file's
    top-level tables replacing an earlier one's."""
    merged: dict[str, Any] = {}
    for path in paths:
        if path.is_file():
            with path.open("rb") as handle:
                merged.update(tomllib.load(handle))
    return merged


def default_secrets_paths(cwd: Path) -> list[Path]:
    """Where Streamlit looks for ``secrets.toml`` by default: the user's, then the project's."""
    return [Path.home() / ".streamlit" / "secrets.toml", cwd / ".streamlit" / "secrets.toml"]


def is_loopback(host: str) -> bool:
    """True when ``host`` is reachable from this machine only.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


#: Without login (one person's local dashboard), deleting still needs this set to ``1`` by
#: whoever runs ``toollens serve``: a stray click must not drop traces.
LOCAL_ADMIN_ENV = "TOOLLENS_ADMIN"
