"""Team defaults for ``toollens lint`` from ``pyproject.toml`` ``[tool.toollens.lint]``.

The nearest ``pyproject.toml`` from the working directory up that has the table is used (as
ruff and pytest find their settings), so a lint step in CI needs no flags::

    [tool.toollens.lint]
    ignore = ["oversized", "late_result"]   # finding kinds not reported
    max-findings = 10                       # exit 1 above this many
    format = "sarif"                        # text, json, sarif or junit
    loop-k = 4

Command-line options win over the file; ``--ignore`` adds to the file's ``ignore``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The table in ``pyproject.toml``.
TABLE = ("tool", "toollens", "lint")


class LintConfigError(ValueError):
    """A ``[tool.toollens.lint]`` table ToolLens cannot use; the message names the file."""


@dataclass(slots=True, frozen=True)
class LintConfig:
    """Lint defaults; ``path`` is the file they came from (``None``: built-in defaults)."""

    ignore: tuple[str, ...] = ()
    max_findings: int | None = None
    output: str | None = None
    loop_k: int | None = None
    path: Path | None = None


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` with a ``[tool.toollens.lint]``
    table (files that cannot be read or parsed are reported by :func:`load_config`)."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                document = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return candidate  # load_config says what is wrong with it
            if _table(document) is not None:
                return candidate
    return None


def _table(document: dict[str, Any]) -> Any:
    node: Any = document
    for key in TABLE:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def load_config(path: Path | None, kinds: Collection[str], outputs: Collection[str]) -> LintConfig:
    """The lint defaults in ``path`` (``None``: none), checked against the known finding
    ``kinds`` and output formats; raises :class:`LintConfigError`."""
    if path is None:
        return LintConfig()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LintConfigError(f"{path}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise LintConfigError(f"{path}: not valid TOML: {exc}") from exc
    table = _table(document)
    where = f"{path}: [tool.toollens.lint]"
    if table is None:
        return LintConfig(path=path)
    if not isinstance(table, dict):
        raise LintConfigError(f"{where} is not a table")
    unknown = sorted(set(table) - {"ignore", "max-findings", "format", "loop-k"})
    if unknown:
        raise LintConfigError(f"{where}: unknown key {unknown[0]!r}")
    ignore = table.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(k, str) for k in ignore):
        raise LintConfigError(f"{where}: ignore must be a list of finding kinds")
    for kind in ignore:
        if kind not in kinds:
            raise LintConfigError(f"{where}: ignore: unknown finding kind {kind!r}")
    max_findings = table.get("max-findings")
    if max_findings is not None and not (
        isinstance(max_findings, int) and not isinstance(max_findings, bool) and max_findings >= 0
    ):
        raise LintConfigError(f"{where}: max-findings must be an integer >= 0")
    output = table.get("format")
    if output is not None and output not in outputs:
        raise LintConfigError(f"{where}: format must be one of {', '.join(outputs)}")
    loop_k = table.get("loop-k")
    if loop_k is not None and not (
        isinstance(loop_k, int) and not isinstance(loop_k, bool) and loop_k >= 2
    ):
        raise LintConfigError(f"{where}: loop-k must be an integer >= 2")
    return LintConfig(tuple(ignore), max_findings, output, loop_k, path)
