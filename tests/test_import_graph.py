"""The arrows between the parts point one way: read from the source (AST), every import of the
project's own modules, at the top of a module or inside a function, is checked.

* parsers (``ingest.formats``), input (``ingest.input``: bytes → records) and analysis
  (``ingest.analysis.trace``) import nothing of ``db``
  but its contract (``db.contract``: vocabulary, row contracts, column widths), which needs no
  database library;
* ``db`` imports neither ``ingest`` nor ``dashboard``;
* nothing but the CLI imports ``dashboard``;
* no import circle, of modules or through lazy imports;
* outside ``db``, a write of ``db`` (a function or class that opens a write transaction, or
  calls one that does) is used only through the door (``db.session``), but for the
  dashboard's gateway of its one-row writes (``dashboard.writes``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

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


# --- Writes go through the door ---------------------------------------------------------------

#: A call of one of these names opens a write transaction (``db.writes.transaction.writing``,
#: ``Engine.begin``) or rewrites tables (``db.dialect.reclaim_space``).
WRITE_CALLS = frozenset({"writing", "begin", "reclaim_space"})
#: The door (``db.session``: import runs, the store's upkeep, a copy) and the way in
#: (``db.engine``: opening a store brings its schema and rollups up to date), whose writes
#: anyone may use.
DOOR = frozenset({"db.session", "db.engine"})
#: The one module outside ``db`` that may import ``db``'s one-row writes itself: the dashboard's
#: gateway, which checks the signed-in role before each.
WRITE_GATEWAYS = frozenset({"dashboard.writes"})


def _names(module: str, source: str, sources: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The names ``module`` binds to a ``db`` module (``(module, "")``) or to a name of one
    (``(module, name)``), by the name they have in ``module``."""
    bound: dict[str, tuple[str, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in sources:
                    bound[alias.asname] = (alias.name, "")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                local = alias.asname or alias.name
                if sub in sources:
                    bound[local] = (sub, "")
                elif node.module in sources:
                    bound[local] = (node.module, alias.name)
    return bound


def _called(node: ast.AST, bound: Mapping[str, tuple[str, str]], module: str) -> set[Any]:
    """What the calls within ``node`` name: ``(module, name)`` of the project where known,
    else the called name alone (a ``str``)."""
    found: set[Any] = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        f = call.func
        if isinstance(f, ast.Name):
            found.add(bound.get(f.id, (module, f.id)))
            found.add(f.id)
        elif isinstance(f, ast.Attribute):
            found.add(f.attr)
            if isinstance(f.value, ast.Name) and bound.get(f.value.id, ("", "x"))[1] == "":
                found.add((bound[f.value.id][0], f.attr))
    return found


def writers(sources: Mapping[str, str]) -> set[tuple[str, str]]:
    """The functions and classes of ``db`` that write, as ``(module, name)``: those that open
    a write transaction, or call one that does (of their module, or imported from ``db``)."""
    calls: dict[tuple[str, str], set[Any]] = {}
    for module, source in sources.items():
        if _part(module) != "db":
            continue
        bound = _names(module, source, sources)
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                calls[(module, node.name)] = _called(node, bound, module)
    found = {name for name, called in calls.items() if called & WRITE_CALLS}
    while True:
        more = {name for name, called in calls.items() if name not in found and called & found}
        if not more:
            return found
        found |= more


def writes_past_the_door(sources: Mapping[str, str]) -> list[str]:
    """Every use of a ``db`` write outside ``db`` but through the door (or the dashboard's
    gateway), as ``module -> db module.name``."""
    writing = {w for w in writers(sources) if w[0] not in DOOR}
    found = []
    for module, source in sorted(sources.items()):
        if _part(module) == "db" or module in WRITE_GATEWAYS:
            continue
        bound = _names(module, source, sources)
        used = {b for b in bound.values() if b in writing}
        used |= {c for c in _called(ast.parse(source), bound, module) if c in writing}
        found += [f"{module} -> {target}.{name}" for target, name in sorted(used)]
    return found


def test_the_writes_of_db_are_found() -> None:
    found = writers(project_sources())
    # Directly, through a module alias, through a function of the same module, a class.
    for name in (
        ("db.writes.deletion", "delete_rows"),
        ("db.writes.deletion", "vacuum"),
        ("db.rollups.upkeep", "rebuild"),
        ("db.bulk.stored", "replace_derived"),
        ("db.writes.traces", "write_traces"),
        ("db.session", "Maintenance"),
        ("db.bulk.copy_across", "copy_store"),
    ):
        assert name in found, name
    assert ("db.writes.deletion", "count_rows") not in found
    assert ("db.bulk.stored", "load_traces") not in found


def test_every_write_outside_db_goes_through_the_door() -> None:
    assert writes_past_the_door(project_sources()) == []


def test_a_planted_write_past_the_door_fails_the_check() -> None:
    sources = project_sources()
    sources["ingest.planted_vacuum"] = "from db.writes.deletion import vacuum\n"
    sources["dashboard.planted_rebuild"] = (
        "def go(engine):\n"
        "    from db.rollups import upkeep as rollups\n"
        "    return rollups.rebuild(engine)\n"
    )
    assert writes_past_the_door(sources) == [
        "dashboard.planted_rebuild -> db.rollups.upkeep.rebuild",
        "ingest.planted_vacuum -> db.writes.deletion.vacuum",
    ]
