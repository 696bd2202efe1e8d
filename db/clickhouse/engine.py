"""Opening a ClickHouse store as a SQLAlchemy engine: ``db.engine.make_engine``'s third kind.

The engine's dialect is :class:`db.clickhouse.dialect.ClickHouseDialect` over the store's
:class:`~db.clickhouse.client.Client`; :func:`client_of` and :func:`layout_of` give the writer
and the bulk readers what they need beyond SQL statements.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Engine, create_engine
from sqlalchemy.dialects import registry
from sqlalchemy.engine import URL

from db.clickhouse import rollups, schema
from db.clickhouse.client import ClickHouseError, connect
from db.clickhouse.dialect import CLIENTS, client_of, layout_of
from db.clickhouse.url import ClickHouseTarget, ClickHouseUrlError, parse

registry.register("clickhouse.toollens", "db.clickhouse.dialect", "ClickHouseDialect")

_LOCK = threading.Lock()


def is_clickhouse_engine(engine: Any) -> bool:
    """Whether ``engine`` (an engine or a connection) is a ClickHouse store's."""
    return bool(getattr(getattr(engine, "dialect", None), "name", None) == "clickhouse")


def clickhouse_engine(value: str, *, json_serializer: Any, json_deserializer: Any) -> Engine:
    """An engine for the ClickHouse store ``value`` names (:mod:`db.clickhouse.url`), its
    tables created where missing. :class:`ClickHouseUrlError` for a URL that cannot be read,
    :class:`ClickHouseError` for a server that does not answer (one line, no password)."""
    target: ClickHouseTarget = parse(value)
    client = connect(target)
    layout = schema.Layout(target.database, target.cluster)
    schema.create(client, layout)
    rollups.initialize(client, layout)
    with _LOCK:
        key = f"{len(CLIENTS)}"
        CLIENTS[key] = client
    engine = create_engine(
        URL.create("clickhouse+toollens", query={"client": key}),
        json_serializer=json_serializer,
        json_deserializer=json_deserializer,
    )
    engine.dialect.database = target.database  # type: ignore[attr-defined]
    return engine


__all__ = [
    "ClickHouseError",
    "ClickHouseUrlError",
    "clickhouse_engine",
    "client_of",
    "is_clickhouse_engine",
    "layout_of",
]
