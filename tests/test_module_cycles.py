"""No import circles between the modules of one room (a top-level unit such as ``store`` or
``judges``, with its subfolders).

``tests/test_layering.py`` keeps the rooms themselves in order; inside a room, two modules
that import each other (at module level or inside a function, where the import only waits
for its first call) cannot be read, tested or moved one without the other, and a lazy import
that hides a circle breaks as soon as someone hoists it. A shared part goes into a module
both import. The scan is :mod:`ast` over every import statement, so it needs no import of
the package; imports under ``TYPE_CHECKING`` count too (a circle for the type checker is
still two modules that cannot be understood apart).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mnemon_langgraph"

# Circles known and left to another change, each as the set of its modules; keep it short.
# An entry that no longer matches a circle fails the test: remove it.
ALLOWED: dict[frozenset[str], str] = {}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(node: ast.AST, module: str, is_package: bool, known: set[str]) -> Iterable[str]:
    """The package's modules an import statement names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name
        return
    if not isinstance(node, ast.ImportFrom):
        return
    if node.level:
        base = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        source = f"{base}.{node.module}" if node.module else base
    else:
        source = node.module or ""
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in known:
            yield sub
        elif source in known:
            yield source


def import_graph(root: Path) -> dict[str, set[str]]:
    """module → the modules of the same room it imports (module level and in functions)."""
    paths = sorted(root.rglob("*.py"))
    names = {module_name(p, root): p for p in paths}
    known = set(names)
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in names.items():
        room = module.split(".")[:2]
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(node, module, is_package, known):
                if target != module and target.split(".")[:2] == room and len(room) == 2:
                    graph[module].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(circle: frozenset[str]) -> str:
    return " <-> ".join(sorted(m.removeprefix("mnemon_langgraph.") for m in circle))


def test_no_import_circle_inside_a_room() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 50, "the scan found too few importing modules to mean anything"
    found = circles(graph)
    new = [c for c in found if not any(c <= allowed for allowed in ALLOWED)]
    assert not new, (
        "import circles inside a room (move the shared part into a module both import):\n"
        + "\n".join(_describe(c) for c in new)
    )
    stale = [a for a in ALLOWED if not any(c <= a for c in found)]
    assert not stale, f"allowed circles that no longer exist, remove them: {stale}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_scan_finds_a_planted_circle(tmp_path: Path) -> None:
    """Negative control: a circle through a function-level import, a relative import and a
    package ``__init__`` is found; an import of another room is not a circle of this one."""
    pkg = tmp_path / "mnemon_langgraph"
    (pkg / "room" / "sub").mkdir(parents=True)
    (pkg / "other").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "room" / "__init__.py").write_text("from mnemon_langgraph.room.a import f\n")
    (pkg / "room" / "a.py").write_text("def f():\n    from .sub import b\n    return b\n")
    (pkg / "room" / "sub" / "__init__.py").write_text("")
    (pkg / "room" / "sub" / "b.py").write_text("from mnemon_langgraph.room import a\n")
    (pkg / "room" / "c.py").write_text("import mnemon_langgraph.other.d\n")
    (pkg / "other" / "__init__.py").write_text("")
    (pkg / "other" / "d.py").write_text("from mnemon_langgraph.room import c\n")
    found = circles(import_graph(pkg))
    assert found == [frozenset({"mnemon_langgraph.room.a", "mnemon_langgraph.room.sub.b"})]


@pytest.mark.parametrize("statement", ["import mnemon_langgraph.room.b", "from . import b"])
def test_each_import_form_is_an_edge(tmp_path: Path, statement: str) -> None:
    pkg = tmp_path / "mnemon_langgraph"
    (pkg / "room").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "room" / "__init__.py").write_text("")
    (pkg / "room" / "a.py").write_text(statement + "\n")
    (pkg / "room" / "b.py").write_text("from mnemon_langgraph.room.a import x\n")
    assert circles(import_graph(pkg)) == [
        frozenset({"mnemon_langgraph.room.a", "mnemon_langgraph.room.b"})
    ]
