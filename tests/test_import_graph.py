"""The arrows between the parts point one way: read from the source (AST), every import of the
project's own modules, at the top of a module or inside a function, is checked.

* parsers (``ingest.formats``), input (``ingest.input``: bytes → records) and analysis
  (``ingest.analysis.trace``) import nothing of ``db``
  but its contract (``db.contract``: vocabulary, row contracts, column widths), which needs no
  database library;
* ``db`` imports neither ``ingest`` nor ``dashboard``;
* nothing but the CLI imports ``dashboard``;
* no import circle, of modules or through lazy imports.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("db", "ingest", "dashboard")

#: The parts of ``ingest`` that read bytes into records, parse formats or analyze traces, and
#: the canonical model and protocol they share: pure, so they import only the contract of ``db``.
PURE_INGEST = (
    "ingest.input",
    "ingest.formats",
    "ingest.analysis.trace",
    "ingest.model",
    "ingest.protocol",
)
CLI = "ingest.cli"


def project_sources() -> dict[str, str]:
    """Every module of the parts (migrations aside: Alembic loads them by path), by name."""
    sources = {}
    for part in PARTS:
        for path in (ROOT / part).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            sources[name.removesuffix(".__init__")] = path.read_text()
    return sources


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module → the project's modules it imports (a name imported from a package is the
    submodule when there is one, else the package)."""

    def known(name: str) -> str | None:
        while name and name not in sources:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        targets: set[str] = set()
        for base, names in _imports(source):
            full = [f"{base}.{n}" if f"{base}.{n}" in sources else base for n in names] or [base]
            for name in full:
                found = known(name)
                if found is not None and found != module:
                    targets.add(found)
        graph[module] = targets
    return graph


@cache
def _imports(source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The absolute imports of ``source``: ``(module, ())`` for ``import module``, ``(module,
    names)`` for ``from module import names``."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, tuple(alias.name for alias in node.names)))
    return tuple(found)


def _part(module: str) -> str:
    return module.split(".", 1)[0]


def wrong_way(graph: Mapping[str, set[str]]) -> list[str]:
    """Every import that points the wrong way, as ``importer -> imported: why``."""
    found = []
    for module, targets in sorted(graph.items()):
        pure = any(module == p or module.startswith(f"{p}.") for p in PURE_INGEST)
        for target in sorted(targets):
            if pure and _part(target) == "db" and not target.startswith("db.contract"):
                found.append(f"{module} -> {target}: a parser or analysis goes past the contract")
            if _part(module) == "db" and _part(target) in ("ingest", "dashboard"):
                found.append(f"{module} -> {target}: storage imports a part above it")
            if _part(target) == "dashboard" and _part(module) != "dashboard" and module != CLI:
                found.append(f"{module} -> {target}: only the CLI starts the dashboard")
    return found


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected groups of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_import_of_the_project_points_the_right_way() -> None:
    graph = import_graph(project_sources())
    assert len(graph) > 150  # the whole project was read
    assert wrong_way(graph) == []


def test_the_project_has_no_import_circle() -> None:
    assert circles(import_graph(project_sources())) == []


def test_a_planted_wrong_way_import_fails_the_check() -> None:
    sources = project_sources()
    sources["ingest.formats.planted"] = "def widths():\n    from db.schema import Base\n"
    sources["db.planted"] = "from ingest.model import Trace\n"
    sources["ingest.planted_page"] = "import dashboard.render\n"
    assert wrong_way(import_graph(sources)) == [
        "db.planted -> ingest.model: storage imports a part above it",
        "ingest.formats.planted -> db.schema: a parser or analysis goes past the contract",
        "ingest.planted_page -> dashboard.render: only the CLI starts the dashboard",
    ]


def test_a_planted_lazy_circle_fails_the_check() -> None:
    sources = project_sources()
    sources["db.planted_a"] = "import db.planted_b\n"
    sources["db.planted_b"] = "def later():\n    from db.planted_a import x\n"
    assert circles(import_graph(sources)) == [["db.planted_a", "db.planted_b"]]
