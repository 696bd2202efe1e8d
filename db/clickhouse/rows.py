"""Rows of a ClickHouse store's tables as the client inserts them: each value converted to
the same text and JSON the relational writer stores (:class:`StoredRows`). Shared by the
import door (:mod:`db.clickhouse.session`) and the copy (:mod:`db.clickhouse.copy`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from db import dialect
from db.clickhouse.client import Client, epoch_us
from db.clickhouse.schema import Layout, relational, stored_columns


def _converter(table: str, name: str, kind: str) -> Callable[[Any], Any]:
    """How a Python value of column ``name`` becomes what the client inserts (``kind``: its
    ClickHouse type): the same text and JSON the relational writer stores."""
    column = relational(table).c.get(name)
    kind_name = type(column.type).__name__ if column is not None else ""
    nullable = kind.startswith("Nullable(")
    base = kind[9:-1] if nullable else kind
    default: Any = None if nullable else ("" if base == "String" else 0)
    convert: Callable[[Any], Any]
    if kind_name == "UtcTimeStamp":
        convert = lambda v: v if v.__class__ is int else epoch_us(v)  # noqa: E731
    elif kind_name == "JSON":
        convert = dialect.json_dumps
    elif kind_name == "LargeBinary":
        convert = bytes  # raw bytes, as read (the client writes them unchanged)
    elif base == "String":
        convert = lambda v: dialect.storable_text(v if v.__class__ is str else str(v))  # noqa: E731
    elif base == "Float64":
        convert = float
    else:
        convert = int
    return lambda v: default if v is None else convert(v)


class StoredRows:
    """Rows of one stored table in the store's column order, converted for the client; each
    row given as values in ``given`` order (default: the store's), missing columns defaulted."""

    def __init__(self, table: str, given: Sequence[str] | None = None) -> None:
        self.table = table
        stored = stored_columns(table)
        self.columns = [name for name, _ in stored]
        at = {name: i for i, name in enumerate(given or self.columns)}
        self._plan = [(at.get(n), _converter(table, n, k)) for n, k in stored]
        self.rows: list[tuple[Any, ...]] = []

    def add(self, values: Sequence[Any]) -> None:
        self.rows.append(tuple(f(None if i is None else values[i]) for i, f in self._plan))

    def add_mapping(self, values: Mapping[str, Any]) -> None:
        self.add([values.get(n) for n in self.columns])

    def write(self, client: Client, layout: Layout) -> None:
        client.insert(layout.every_row(self.table), self.columns, self.rows)
        self.rows = []
