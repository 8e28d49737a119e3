"""The package's layers: lower layers never import higher ones, and packages form no cycle.

Reading order of the code follows the write, read and consolidate paths (docs/design.md,
"Layers"): base types, then records (chunking, schema) and search, then the store, loaders
and judges, then the read graph, consolidation, the integration surfaces, and last the tools
around them (eval, bench, cli). Every import counts — module level, inside functions and under
``TYPE_CHECKING`` — because a lazy import of a higher layer is still a cycle waiting to happen.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import mnemon_langgraph

PACKAGE = Path(mnemon_langgraph.__file__).parent

# Lowest first. A unit may import its own layer's units and any lower layer.
LAYERS: list[set[str]] = [
    {"errors", "types", "items"},
    {"records", "search"},
    # "sources": the loaders' old name, a deprecated alias of "loaders" for one release
    {"store", "loaders", "judges", "sources"},
    {"backends"},
    {"read"},
    {"consolidation"},
    {"integrations", "transfer", "ui"},
    {"eval"},
    {"bench"},
    {"cli"},
]
RANK = {unit: rank for rank, layer in enumerate(LAYERS) for unit in layer}


def _unit(module: str) -> str | None:
    """``mnemon_langgraph.search._bm25`` → ``search``; the package root itself → None."""
    parts = module.split(".")
    if parts[0] != "mnemon_langgraph" or len(parts) < 2:
        return None
    return parts[1].removesuffix(".py")


def _imports() -> dict[str, set[tuple[str, str]]]:
    """unit → {(imported unit, "file:line")} over every import statement in the package."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts == ("__init__.py",):
            continue  # the lazy public facade names every layer by design
        unit = rel.parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
                if node.module == "mnemon_langgraph":
                    targets = [f"mnemon_langgraph.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                other = _unit(target)
                if other is not None and other != unit:
                    found[unit].add((other, f"{rel}:{node.lineno}"))
    return found


def test_every_unit_has_a_layer() -> None:
    units = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()}
    units = {u for u in units if not u.startswith(("_", ".")) and u not in {"data", "py"}}
    units.discard("py.typed")
    assert units - set(RANK) == set(), "add new top-level modules/packages to LAYERS"


def test_no_import_goes_up_a_layer() -> None:
    upward = [
        f"{where}: {unit} imports {other}"
        for unit, edges in _imports().items()
        for other, where in edges
        if RANK[other] > RANK[unit]
    ]
    assert upward == []


def test_packages_form_no_cycle() -> None:
    graph = {unit: {other for other, _ in edges} for unit, edges in _imports().items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    cycles = sorted(u for u in graph if reaches(u, u, {u}))
    assert cycles == []


def test_the_checker_sees_imports() -> None:
    # A negative control: the scan must find the imports it polices, or the tests above
    # would pass on an empty result.
    edges = _imports()
    assert any(other == "errors" for other, _ in edges["records"])
    assert any(other == "read" for other, _ in edges["cli"])


def _private_imports() -> list[str]:
    """``from mnemon_langgraph.x.y import _name`` where ``_name`` is not a module of the
    importer's own package: a private helper used from another module."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        package = ".".join(("mnemon_langgraph", *path.relative_to(PACKAGE).parts[:-1]))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                continue
            if not node.module.startswith("mnemon_langgraph"):
                continue
            for alias in node.names:
                name = alias.name
                if not name.startswith("_") or name.startswith("__"):
                    continue
                own_module = node.module == package and (path.parent / f"{name}.py").exists()
                if not own_module:
                    rel = path.relative_to(PACKAGE)
                    found.append(f"{rel}:{node.lineno} {node.module}.{name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    """A name shared across modules is public there (named in ``__all__``, documented):
    a private helper imported elsewhere is a seam nobody sees when it changes."""
    assert _private_imports() == []


def test_private_import_scan_finds_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: the scan reports a private name imported from another module."""
    fake = tmp_path / "mnemon_langgraph"
    (fake / "bench").mkdir(parents=True)
    (fake / "bench" / "a.py").write_text("from mnemon_langgraph.bench.b import _helper\n")
    (fake / "bench" / "_common.py").write_text("")
    (fake / "bench" / "c.py").write_text("from mnemon_langgraph.bench import _common\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert _private_imports() == ["bench/a.py:1 mnemon_langgraph.bench.b._helper"]


# The PostgreSQL backend's parts (store/postgres/), lowest first: a part imports only parts
# of a lower rank, so the facade (``store``) is the one module that knows them all and no
# part reaches back into it.
PG_PARTS: list[set[str]] = [
    {"impact", "rows", "engine"},
    {"schema", "settings", "vector_cache"},
    {"frames"},  # BM25 frames: built by packs, read by bm25
    {"reads", "packs", "bm25", "dense", "stats", "kv_items"},
    {"writes", "search", "health", "items"},
    {"retention"},  # builds on writes (its deletion path, audit and VACUUM)
    {"store"},
]
PG_RANK = {part: rank for rank, layer in enumerate(PG_PARTS) for part in layer}
BACKENDS = {
    "embedded": "mnemon_langgraph.store.embedded",
    "postgres": "mnemon_langgraph.store.postgres",
}


def _module_imports(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
    return found


def _part(name: str) -> str:
    """A part's rank name: ``_engine`` (the module) and ``engine`` (its old path) are one."""
    return name.removeprefix("_")


def test_every_postgres_part_has_a_rank() -> None:
    paths = (PACKAGE / "store" / "postgres").glob("*.py")
    parts = {_part(p.stem) for p in paths if p.stem != "__init__"}
    assert parts == set(PG_RANK), "add new store/postgres modules to PG_PARTS"


def test_postgres_parts_import_only_lower_parts() -> None:
    prefix = "mnemon_langgraph.store.postgres."
    upward = []
    for path in (PACKAGE / "store" / "postgres").glob("*.py"):
        if path.stem == "__init__":
            continue
        for module, line in _module_imports(path):
            if module == "mnemon_langgraph.store.postgres":
                upward.append(f"{path.name}:{line} imports the package facade")
            other = _part(module.removeprefix(prefix).split(".")[0])
            lower = other not in PG_RANK or PG_RANK[other] < PG_RANK[_part(path.stem)]
            if module.startswith(prefix) and other != _part(path.stem) and not lower:
                upward.append(f"{path.name}:{line} imports {other}")
    assert upward == []


def test_backends_never_import_each_other() -> None:
    """Each backend stands alone on the shared base (store/base.py): what both need lives
    there once, and only the factory there names a backend."""
    crossing = []
    files = {
        "embedded": list((PACKAGE / "store" / "embedded").glob("*.py")),
        "postgres": list((PACKAGE / "store" / "postgres").glob("*.py")),
    }
    for backend, paths in files.items():
        other = next(m for b, m in BACKENDS.items() if b != backend)
        for path in paths:
            crossing += [
                f"{path.name}:{line} imports {module}"
                for module, line in _module_imports(path)
                if module == other or module.startswith(other + ".")
            ]
    assert crossing == []
    assert files["postgres"] and files["embedded"], "the scan must see both backends' files"
