"""JSON read and written with integers exact at any size, fast where they fit 64 bits.

orjson reads an integer beyond 64 bits as a float (``18446744073709551616`` becomes
``1.8446744073709552e19``) and refuses to write one. Text that may hold such an integer (a run
of 19+ digits) is read again by the standard library, whose integers have no size limit, and a
value orjson refuses is written by it; PostgreSQL's ``jsonb`` keeps such a number exactly (its
``numeric``), SQLite keeps the JSON text as written.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

#: 19 digits or more in a row: the only numbers that can leave the 64-bit range.
_LONG_DIGITS = re.compile(r"\d{19}")
_LONG_DIGITS_BYTES = re.compile(rb"\d{19}")


def loads(text: str | bytes) -> Any:
    """``text`` parsed as JSON, integers exact (``orjson.JSONDecodeError`` if not JSON).

    >>> loads('{"n": 18446744073709551616, "x": 1.5}')
    {'n': 18446744073709551616, 'x': 1.5}
    """
    value = orjson.loads(text)
    pattern = _LONG_DIGITS_BYTES if isinstance(text, bytes) else _LONG_DIGITS
    if isinstance(value, dict | list | float) and pattern.search(text) is not None:  # type: ignore[arg-type]
        value = json.loads(text)
    return value


def dumps(value: Any, *, sort_keys: bool = False, indent: bool = False) -> str:
    """``value`` as compact JSON text (``indent``: indented by two spaces), integers beyond 64
    bits written exactly; other values orjson cannot write as their ``str``.

    >>> dumps({"n": 18446744073709551616})
    '{"n":18446744073709551616}'
    """
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    option |= orjson.OPT_INDENT_2 if indent else 0
    return dumps_bytes(value, option).decode()


def dumps_bytes(value: Any, option: int = 0) -> bytes:
    """``orjson.dumps(value, option=option, default=str)``, except that an integer beyond 64
    bits (which orjson refuses) is written exactly: the one JSON writer for values that came
    from a trace. ``option`` may hold ``OPT_SORT_KEYS``, ``OPT_NON_STR_KEYS``, ``OPT_INDENT_2``.

    >>> dumps_bytes([1, {"b": 2, "a": -18446744073709551616}], orjson.OPT_SORT_KEYS)
    b'[1,{"a":-18446744073709551616,"b":2}]'
    """
    try:
        return orjson.dumps(value, option=option, default=str)
    except TypeError:  # an integer beyond 64 bits
        indent = bool(option & orjson.OPT_INDENT_2)
        return json.dumps(
            value,
            sort_keys=bool(option & orjson.OPT_SORT_KEYS),
            indent=2 if indent else None,
            separators=(",", ": ") if indent else (",", ":"),
            ensure_ascii=False,
            default=str,
        ).encode()
