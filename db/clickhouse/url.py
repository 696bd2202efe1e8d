"""The ClickHouse URLs ``--db`` takes, and where their password comes from.

``clickhouse://[user[:password]@]host:port[,host:port...]/database[?cluster=NAME][&secure=1]``
names servers by their native protocol port (9000; 9440 with TLS), one per shard, and the
cluster of their ``<remote_servers>``: with ``cluster`` the store's tables are Distributed over
every server, without it the store lives on the first server alone. The password is best kept
out of the URL: ``TOOLLENS_CLICKHOUSE_PASSWORD_FILE`` names a file holding it, else
``TOOLLENS_DB_PASSWORD`` holds it (as for PostgreSQL).

``chdb://[PATH][?database=NAME]`` is the in-process engine (chdb): its data in the folder
``PATH``, or the process's own in-memory engine without one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

#: A file holding the password of the ClickHouse user (its first line).
PASSWORD_FILE_ENV = "TOOLLENS_CLICKHOUSE_PASSWORD_FILE"
#: The password of any server store, as ``db.engine`` takes it.
PASSWORD_ENV = "TOOLLENS_DB_PASSWORD"
SCHEMES = ("clickhouse", "chdb")
DEFAULT_DATABASE = "toollens"
DEFAULT_PORT = 9000


class ClickHouseUrlError(ValueError):
    """A ClickHouse URL that cannot be read; the message says what is wrong (no password)."""


@dataclass(frozen=True)
class ClickHouseTarget:
    """Where a ClickHouse store lives: servers (one per shard) or a chdb folder."""

    engine: str
    database: str
    hosts: tuple[tuple[str, int], ...] = ()
    user: str = "default"
    password: str = field(default="", repr=False)
    cluster: str | None = None
    secure: bool = False
    path: str | None = None

    def display(self) -> str:
        """The target fit to print: never the password."""
        if self.engine == "chdb":
            return f"chdb://{self.path or ''}?database={self.database}"
        servers = ",".join(f"{h}:{p}" for h, p in self.hosts)
        who = f"{self.user}{':***' if self.password else ''}@"
        query = f"?cluster={self.cluster}" if self.cluster else ""
        return f"clickhouse://{who}{servers}/{self.database}{query}"


def is_clickhouse(value: str) -> bool:
    """Whether ``value`` is a ClickHouse URL (``clickhouse://`` or ``chdb://``)."""
    return value.split("://", 1)[0].lower() in SCHEMES and "://" in value


def _password(given: str | None) -> str:
    if given:
        return given
    path = os.environ.get(PASSWORD_FILE_ENV)
    if path:
        try:
            lines = Path(path).expanduser().read_text().splitlines()
        except OSError as exc:
            raise ClickHouseUrlError(
                f"cannot read the password file {path} ({PASSWORD_FILE_ENV}): {exc.strerror}"
            ) from None
        return lines[0] if lines else ""
    return os.environ.get(PASSWORD_ENV, "")


def parse(value: str) -> ClickHouseTarget:
    """Read a ``clickhouse://`` or ``chdb://`` URL.

    >>> parse("clickhouse://ann@h1:9000,h2:9001/traces?cluster=c").hosts
    (('h1', 9000), ('h2', 9001))
    >>> parse("chdb:///tmp/store").path
    '/tmp/store'
    """
    scheme, rest = value.split("://", 1)
    scheme = scheme.lower()
    parts = urlsplit(f"x://{rest}")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    if scheme == "chdb":
        path = unquote((parts.netloc or "") + (parts.path or "")) or None
        return ClickHouseTarget("chdb", query.get("database", DEFAULT_DATABASE), path=path)
    netloc = parts.netloc
    user, password = "default", None
    if "@" in netloc:
        auth, netloc = netloc.rsplit("@", 1)
        name, _, secret = auth.partition(":")
        user = unquote(name) or "default"
        password = unquote(secret) if secret else None
    hosts = []
    for item in netloc.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host:
            host, port = port, ""
        if not host:
            raise ClickHouseUrlError("the URL names no server (clickhouse://host:port/database)")
        try:
            hosts.append((host, int(port) if port else DEFAULT_PORT))
        except ValueError:
            raise ClickHouseUrlError(f"the port of {host} is not a number: {port!r}") from None
    database = unquote(parts.path.strip("/")) or DEFAULT_DATABASE
    if not database.replace("_", "").isalnum():
        raise ClickHouseUrlError(f"the database name {database!r} is not a plain name")
    cluster = query.get("cluster") or None
    if cluster is not None and not cluster.replace("_", "").isalnum():
        raise ClickHouseUrlError(f"the cluster name {cluster!r} is not a plain name")
    return ClickHouseTarget(
        "native",
        database,
        tuple(hosts),
        user,
        _password(password),
        cluster,
        query.get("secure") in ("1", "true", "yes"),
    )
