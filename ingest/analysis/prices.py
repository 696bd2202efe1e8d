"""The price table: what a million tokens of each model cost, in USD, read from a TOML file.

The default table (``ingest/analysis/prices.toml``) is dated and names its sources; a team sets its
own with ``--prices FILE`` or :data:`PRICES_ENV` (the file replaces the default whole). A model the
table does not list has no price: its figures stay in tokens, never a guessed amount.

Prices are held as whole picodollars (10⁻¹² USD) per token, exact for any price per million
tokens with up to six decimals, so that a Tool Message's cost is an exact integer sum
(:func:`nano_usd` rounds it to the nanodollars stored).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, Final

PRICES_ENV: Final = "TOOLLENS_PRICES"
DEFAULT_PRICES: Final = Path(__file__).with_name("prices.toml")

#: What may follow a listed model id and still name that model: a date (``-20250929``,
#: ``-2024-08-06``), ``-latest``, a version tag (``@20250929``, ``-v1:0``).
_SUFFIXED = re.compile(r"(.+?)(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|@[\w.:-]+|-v\d+(?::\d+)?)+")


class PriceError(ValueError):
    """The price file cannot be read as a price table."""


@dataclass(frozen=True, slots=True)
class Price:
    """A model's prices, in picodollars per token (USD per million tokens × 10⁶)."""

    input: int
    cached_input: int
    cache_write: int
    output: int


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by model id, and where they came from (the file's ``[source]``)."""

    models: dict[str, Price]
    source: dict[str, str]
    path: str

    def price(self, model: str | None) -> Price | None:
        """The price of ``model``: its entry, or the entry it names with a date or version
        suffix or a provider prefix; ``None`` when the table has no entry for it.

        >>> table = PriceTable({"gpt-4o": Price(1, 1, 1, 1)}, {}, "")
        >>> [table.price(m) is not None for m in ("gpt-4o", "gpt-4o-2024-08-06",
        ...  "openai/gpt-4o", "gpt-4o-mini", None)]
        [True, True, True, False, False]
        """
        if not model:
            return None
        name = model.strip().lower()
        for candidate in (name, name.rsplit("/", 1)[-1]):
            if candidate in self.models:
                return self.models[candidate]
            suffixed = _SUFFIXED.fullmatch(candidate)
            if suffixed is not None and suffixed[1] in self.models:
                return self.models[suffixed[1]]
        return None


def _pico(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise PriceError(f"{where}: a price is a number ≥ 0 (USD per million tokens)")
    return int((Decimal(str(value)) * 1_000_000).to_integral_value())


def parse(text: str, path: str = "") -> PriceTable:
    """The price table a TOML text declares: ``[models.<id>]`` with ``input``,
    ``cached_input``, ``output`` and optionally ``cache_write`` (USD per million tokens), and
    an optional ``[source]`` of strings (date, pages).

    >>> table = parse('[models.m]\\ninput = 3\\ncached_input = 0.3\\noutput = 15\\n')
    >>> table.models["m"]
    Price(input=3000000, cached_input=300000, cache_write=3000000, output=15000000)
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PriceError(f"{path or 'prices'}: {exc}") from exc
    models = data.get("models")
    if not isinstance(models, dict):
        raise PriceError(f"{path or 'prices'}: no [models.<id>] tables")
    table: dict[str, Price] = {}
    for name, entry in models.items():
        where = f"{path or 'prices'}: models.{name}"
        if not isinstance(entry, dict):
            raise PriceError(f"{where}: not a table")
        missing = [k for k in ("input", "cached_input", "output") if k not in entry]
        if missing:
            raise PriceError(f"{where}: missing {', '.join(missing)}")
        unknown = sorted(set(entry) - {"input", "cached_input", "cache_write", "output"})
        if unknown:
            raise PriceError(f"{where}: unknown key {', '.join(unknown)}")
        table[name.lower()] = Price(
            input=_pico(entry["input"], where),
            cached_input=_pico(entry["cached_input"], where),
            cache_write=_pico(entry.get("cache_write", entry["input"]), where),
            output=_pico(entry["output"], where),
        )
    source = data.get("source", {})
    return PriceTable(
        table, {k: str(v) for k, v in source.items()} if isinstance(source, dict) else {}, path
    )


@cache
def load(path: str) -> PriceTable:
    """The price table of the file at ``path`` (read once per process)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceError(f"{path}: {exc.strerror or exc}") from exc
    return parse(text, path)


def current() -> PriceTable:
    """The table in force: the file :data:`PRICES_ENV` names, else the default."""
    return load(os.environ.get(PRICES_ENV) or str(DEFAULT_PRICES))


def nano_usd(pico: int) -> int:
    """Picodollars rounded half up to whole nanodollars (what ``tool_results`` stores).

    >>> nano_usd(1499), nano_usd(1500), nano_usd(0)
    (1, 2, 0)
    """
    return (pico + 500) // 1000
