"""Every public module's names are pinned (issue 44 §3): adding or removing a name from a
module's ``__all__`` (or a public module) is a conscious change, made with the snapshot.

A public module is one whose dotted path has no part with a leading underscore
(``cli._common`` is private). A module moved under a private name leaves a file at its old
path that serves the new module with a warning for one release
(``mnemon_langgraph.errors.moved_module``; tests/test_moved_modules.py): such an old path is
not pinned, it goes next release. ``tests/public_names.json`` holds the ``__all__`` of each
(``null``: a package that names nothing). Not every pinned module is meant to stay public:
``docs/migration.md`` ("Modules that become private") lists the ones that move under a
private name next; until then their names are pinned too, so that nothing changes by
accident. To accept a deliberate change, regenerate the snapshot::

    MNEMON_UPDATE_PUBLIC_NAMES=1 python -m pytest tests/test_public_modules.py

and say in ``docs/migration.md`` what a removed or renamed name became.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mnemon_langgraph"
SNAPSHOT = Path(__file__).parent / "public_names.json"
UPDATE = "MNEMON_UPDATE_PUBLIC_NAMES"

Names = dict[str, list[str] | None]


def is_moved(path: Path) -> bool:
    """The file left at a moved module's old path: ``moved_module(__name__, "…")``."""
    text = path.read_text(encoding="utf-8")
    if "moved_module" not in text:
        return False
    return any(
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "moved_module"
        for node in ast.parse(text).body
    )


def public_modules() -> list[tuple[str, Path]]:
    """``(dotted name, file)`` of every module of the package with no private part (the
    old paths of moved modules left out)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if not any(p.startswith("_") for p in parts[1:]) and not is_moved(path):
            found.append((".".join(parts), path))
    return found


def declared_names(module: str, path: Path) -> list[str] | None:
    """The module's ``__all__``: read from the source when it is a literal (no import,
    so no optional dependency is needed), else from the imported module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    literal: list[str] | None = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        try:
            value = list(ast.literal_eval(node.value))  # type: ignore[union-attr]
        except ValueError:  # computed (e.g. a deprecated alias re-exporting a package)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return sorted(importlib.import_module(module).__all__)
        literal = value if not isinstance(node, ast.AugAssign) else [*(literal or []), *value]
    return None if literal is None else sorted(literal)


def current() -> Names:
    return {module: declared_names(module, path) for module, path in public_modules()}


def differences(pinned: Names, now: Names) -> list[str]:
    """What changed, one line per module, in words a reviewer can act on."""
    lines = []
    for module in sorted(pinned.keys() - now.keys()):
        lines.append(f"module removed or made private: {module}")
    for module in sorted(now.keys() - pinned.keys()):
        lines.append(f"new public module: {module} with __all__ = {now[module]}")
    for module in sorted(pinned.keys() & now.keys()):
        old, new = set(pinned[module] or ()), set(now[module] or ())
        if pinned[module] is None and now[module] is not None:
            lines.append(f"{module}: declares __all__ now")
        if pinned[module] is not None and now[module] is None:
            lines.append(f"{module}: no longer declares __all__")
        if new - old:
            lines.append(f"{module}: names added: {sorted(new - old)}")
        if old - new:
            lines.append(f"{module}: names removed: {sorted(old - new)}")
    return lines


def test_every_public_modules_names_are_pinned() -> None:
    now = current()
    if os.environ.get(UPDATE):
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        pytest.skip(f"{SNAPSHOT.name} regenerated ({len(now)} modules): review and commit it")
    pinned: Names = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    changed = differences(pinned, now)
    assert not changed, (
        "the public names changed:\n  "
        + "\n  ".join(changed)
        + f"\nIf this is deliberate, regenerate the snapshot ({UPDATE}=1 python -m pytest "
        "tests/test_public_modules.py), commit tests/public_names.json and list removed or "
        "renamed names in docs/migration.md."
    )


def test_the_snapshot_covers_the_package_and_the_check_sees_a_change() -> None:
    pinned: Names = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert len(pinned) > 100 and "mnemon_langgraph.store" in pinned
    assert "MnemonStore" in (pinned["mnemon_langgraph"] or [])
    assert not any(p.startswith("_") for m in pinned for p in m.split(".")[1:])
    edited = {**pinned, "mnemon_langgraph": [*(pinned["mnemon_langgraph"] or []), "Extra"]}
    del edited["mnemon_langgraph.errors"]
    edited["mnemon_langgraph.new_module"] = ["thing"]
    assert differences(pinned, edited) == [
        "module removed or made private: mnemon_langgraph.errors",
        "new public module: mnemon_langgraph.new_module with __all__ = ['thing']",
        "mnemon_langgraph: names added: ['Extra']",
    ]


def test_a_computed_all_is_read_from_the_module() -> None:
    """The deprecated ``sources`` alias computes its ``__all__``: the loaders' names."""
    from mnemon_langgraph import loaders

    path = PACKAGE / "sources" / "__init__.py"
    assert declared_names("mnemon_langgraph.sources", path) == sorted(loaders.__all__)


def test_an_old_path_of_a_moved_module_is_not_pinned(tmp_path: Path) -> None:
    old = tmp_path / "old.py"
    old.write_text(
        'from mnemon_langgraph.errors import moved_module\n\nmoved_module(__name__, "x._y")\n'
    )
    assert is_moved(old)
    old.write_text(
        "from mnemon_langgraph.errors import moved_module\n\n__all__ = ['moved_module']\n"
    )
    assert not is_moved(old)
