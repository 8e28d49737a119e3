"""The one async rule of ``docs/design.md``, checked over the package's source.

Sync and async are faces of one implementation in three ways only: a generator body that
yields its backend calls, run by a sync and an async driver (``read/_drive.py``'s read nodes,
``store/_internal/item_commit.py``'s item commit); the PostgreSQL engine's event-loop thread
(``store/postgres/_engine.py``); and worker threads for blocking compute
(``asyncio.to_thread``, a thread pool). Anything else that makes or drives an event loop by
hand — ``asyncio.run``, ``new_event_loop``, ``run_until_complete``,
``run_coroutine_threadsafe``, a hand-driven ``.send`` — is a one-off this test flags.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mnemon_langgraph

PACKAGE = Path(mnemon_langgraph.__file__).parent

FLAGGED = frozenset({"run", "new_event_loop", "run_until_complete", "run_coroutine_threadsafe"})
"""Names that make or drive an event loop (``run`` only as ``asyncio.run``)."""

ALLOWED: dict[str, frozenset[str] | None] = {
    "read/_drive.py": frozenset({"drive", "adrive"}),  # the read nodes' two drivers
    "store/_internal/item_commit.py": frozenset(
        {"drive", "adrive"}
    ),  # the item commit's two drivers
    "store/postgres/_engine.py": None,  # the loop thread (every function)
}
"""Where the rule lives: a module and the functions in it that may do it (``None``: all)."""


def _offences(tree: ast.AST, allowed: frozenset[str] | None) -> list[str]:
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if allowed is None or (function is not None and function in allowed):
            return
        if isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if node.attr in FLAGGED - {"run"} or (node.attr == "run" and owner == "asyncio"):
                found.append(f"line {node.lineno}: {owner or '…'}.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            for alias in node.names:
                if alias.name in FLAGGED:
                    found.append(f"line {node.lineno}: from asyncio import {alias.name}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "send"
        ):
            found.append(f"line {node.lineno}: a hand-driven .send()")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


def test_no_module_makes_or_drives_an_event_loop_outside_the_rule() -> None:
    offences = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = _offences(tree, ALLOWED.get(name, frozenset()))
        if found:
            offences[name] = found
    assert offences == {}


@pytest.mark.parametrize(
    "source",
    [
        "import asyncio\ndef f(c):\n    return asyncio.run(c)\n",
        "import asyncio\nloop = asyncio.new_event_loop()\n",
        "from asyncio import run_coroutine_threadsafe\n",
        "def f(loop, c):\n    return loop.run_until_complete(c)\n",
        "def run_without_loop(coro):\n    coro.send(None)\n",
    ],
)
def test_the_check_catches_each_one_off(source: str) -> None:
    assert _offences(ast.parse(source), frozenset()) != []


def test_the_rules_own_modules_exist() -> None:
    for name in ALLOWED:
        assert (PACKAGE / name).is_file(), name
