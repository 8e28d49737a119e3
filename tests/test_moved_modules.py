"""Modules moved under a private name keep their old path for one release (issue 44 §3).

The file left at an old path calls :func:`mnemon_langgraph.errors.moved_module`: importing
it warns and gives the very module object of the new path. The package, its tests, graphs,
scripts and benchmarks use the new paths only (an old path would warn, and goes next
release), and ``docs/migration.md`` lists every moved module.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mnemon_langgraph"
USERS = ("mnemon_langgraph", "tests", "graphs", "scripts", "benchmarks")


def shim_target(path: Path) -> str | None:
    """The module an old-path file forwards to (``moved_module(__name__, "new")``), or None."""
    text = path.read_text(encoding="utf-8")
    if "moved_module" not in text:
        return None
    for node in ast.parse(text).body:
        call = node.value if isinstance(node, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "moved_module"
            and len(call.args) == 2
            and isinstance(call.args[1], ast.Constant)
        ):
            return str(call.args[1].value)
    return None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def moved() -> dict[str, str]:
    """old module → new module, for every old-path file in the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        target = shim_target(path)
        if target is not None:
            found[module_name(path)] = target
    return found


MOVED = moved()


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_is_the_new_module(old: str, monkeypatch: pytest.MonkeyPatch) -> None:
    new = importlib.import_module(MOVED[old])
    assert not any(part.startswith("_") for part in old.split(".")[1:])
    assert any(part.startswith("_") for part in MOVED[old].split(".")[1:])
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"module {old} is deprecated.*{MOVED[old]}"):
        served = importlib.import_module(old)
    assert served is new
    assert sys.modules[old] is new
    parent, _, name = old.rpartition(".")
    assert getattr(sys.modules[parent], name) is new


def test_moved_module_serves_the_same_module_and_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper itself, on a package made here (so the test means something before any
    module of the package has moved): same object, a warning naming the new path, attribute
    and ``from old import name`` both reach the new module."""
    pkg = tmp_path / "movedpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_real.py").write_text("VALUE = 1\n")
    (pkg / "old.py").write_text(
        "from mnemon_langgraph.errors import moved_module\n\n"
        'moved_module(__name__, "movedpkg._real")\n'
    )
    (tmp_path / "user.py").write_text("from movedpkg.old import VALUE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("movedpkg", "movedpkg._real", "movedpkg.old", "user"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning, match=r"module movedpkg\.old .*movedpkg\._real") as got:
        import user  # type: ignore[import-not-found]
    assert got[0].filename == str(tmp_path / "user.py"), "the warning points at the importer"
    real = importlib.import_module("movedpkg._real")
    assert user.VALUE == 1
    assert importlib.import_module("movedpkg.old") is real
    real.VALUE = 2
    assert sys.modules["movedpkg.old"].VALUE == 2
    assert shim_target(pkg / "old.py") == "movedpkg._real"
    assert shim_target(pkg / "_real.py") is None


def _old_path_uses(path: Path, old: set[str]) -> list[str]:
    """Imports of an old path in one file, and strings that name one (patch targets)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value.split(":")[0]] if node.value.startswith("mnemon_langgraph.") else []
        for name in names:
            parts = name.split(".")
            if any(".".join(parts[:n]) in old for n in range(2, len(parts) + 1)):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                found.append(f"{where}:{getattr(node, 'lineno', 0)} {name}")
    return found


def old_path_uses(old: set[str]) -> list[str]:
    found = []
    for place in USERS:
        for path in sorted((ROOT / place).rglob("*.py")):
            if path == Path(__file__) or shim_target(path) is not None:
                continue
            found += _old_path_uses(path, old)
    return found


def test_nothing_uses_an_old_path() -> None:
    assert old_path_uses(set(MOVED)) == []


def test_the_old_path_scan_finds_each_form(tmp_path: Path) -> None:
    """Negative control: every form the move rewrites is reported."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import mnemon_langgraph.read.pooling\n"
        "from mnemon_langgraph.read.pooling import first_pool\n"
        "from mnemon_langgraph.read import pooling, settings\n"
        'TARGET = "mnemon_langgraph.read.pooling.first_pool"\n'
    )
    found = _old_path_uses(sample, {"mnemon_langgraph.read.pooling"})
    assert [line.split()[0].rsplit(":", 1)[1] for line in found] == ["1", "2", "2", "3", "4"]


DOC_PLACES = ("README.md", "mkdocs.yml", "pyproject.toml", "docs", "notebooks")


def old_paths_in_docs(old: set[str]) -> list[str]:
    """Dotted old paths in the README, the site (``:::`` references too), the project file and
    the notebooks; ``docs/migration.md`` names them on purpose."""
    pattern = re.compile(r"(?<![\w.])mnemon_langgraph(?:\.\w+)+")
    files: list[Path] = []
    for place in DOC_PLACES:
        path = ROOT / place
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in {".md", ".py", ".ipynb"})
    found = []
    for path in files:
        if path == ROOT / "docs" / "migration.md":
            continue
        for match in pattern.finditer(path.read_text(encoding="utf-8")):
            parts = match.group(0).split(".")
            if any(".".join(parts[:n]) in old for n in range(2, len(parts) + 1)):
                found.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    return found


def test_the_docs_name_no_old_path() -> None:
    assert old_paths_in_docs(set(MOVED)) == []
    # negative control: the scan sees a dotted path it is told is old
    assert old_paths_in_docs({"mnemon_langgraph.loaders"}) != []


def test_the_migration_page_lists_every_moved_module() -> None:
    page = (ROOT / "docs" / "migration.md").read_text(encoding="utf-8")
    missing = [f"{old} → {new}" for old, new in MOVED.items() if f"`{old}` | `{new}`" not in page]
    assert missing == []
