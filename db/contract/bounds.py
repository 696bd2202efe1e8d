"""Values made to fit the columns that store them: odd input costs only itself.

SQLite stores a string of any length in a ``VARCHAR(200)`` and any date; PostgreSQL refuses an
over-long string and the whole batch with it, and a date near year 1 or 9999 breaks readers
once it is shifted into another zone. Every bounded value the import stores goes through here,
with the widths the schema's columns are declared with (:mod:`db.contract.widths`), so one odd
id or model name can neither abort an import nor differ between the two databases.

Example::

    >>> fit("traces", "model", "m" * 300) == "m" * 199 + "…"
    True
    >>> key = fit_key("traces", "dedupe_key", "k" * 300)
    >>> key[-17], len(key)
    ('~', 200)
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from db.contract.widths import column_width

#: Stored timestamps lie within these years (after conversion to UTC): outside them a value
#: is almost surely a placeholder (``0001-01-01``) or a unit mix-up, and near the ends of
#: Python's range it cannot be shifted into a reader's zone without overflowing.
FIRST_YEAR = 1900
LAST_YEAR = 9999
#: The last day is left out: a reader shifting into its own zone must not pass year 9999.
_LAST_INSTANT = datetime(LAST_YEAR, 12, 31, tzinfo=UTC)
#: Hex digits of the SHA-256 a shortened key ends with: distinct long ids stay distinct.
KEY_HASH_DIGITS = 16


def fit(table: str, column: str, value: str | None) -> str | None:
    """``value`` cut to the length of ``table.column`` (ending in ``…`` when cut); ``None``
    stays ``None``. For display values; keys that must stay distinct use :func:`fit_key`."""
    if value is None:
        return None
    length = column_width(table, column)
    if len(value) <= length:
        return value
    return value[: length - 1] + "…"


def fit_key(table: str, column: str, value: str) -> str:
    """``value`` cut to the length of ``table.column``, ending in ``~`` and a hash of the
    whole value when cut, so that two long values sharing a prefix stay two keys."""
    length = column_width(table, column)
    if len(value) <= length:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_HASH_DIGITS]
    return f"{value[: length - KEY_HASH_DIGITS - 1]}~{digest}"


def storable_time(value: datetime | None) -> datetime | None:
    """``value`` if it lies within :data:`FIRST_YEAR` .. :data:`LAST_YEAR` in UTC, else ``None``
    (the source's own text stays in the raw payload).

    >>> storable_time(datetime(1, 1, 1, 12, tzinfo=UTC)) is None
    True
    >>> storable_time(datetime(2025, 1, 1, tzinfo=UTC)).year
    2025
    """
    if value is None:
        return None
    try:
        utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    except (OverflowError, ValueError):
        return None
    if utc.year < FIRST_YEAR or utc >= _LAST_INSTANT:
        return None
    return utc


__all__ = [
    "FIRST_YEAR",
    "KEY_HASH_DIGITS",
    "LAST_YEAR",
    "fit",
    "fit_key",
    "storable_time",
]
